import Foundation
import JournalCluster
import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalTestSupport
import JournalWire
import Testing

/// Leases a test plays (`BoardLeases`): who holds each board, and whether this node's claims
/// are still in force.
final class PlayedLeases: BoardLeases {
    struct State {
        /// Boards another node holds (its name).
        var elsewhere: [BoardName: String] = [:]
        var held: Set<BoardName> = []
        /// False: this node's renewals lapsed (it was frozen, or cut off).
        var inForce = true
        var released: [BoardName] = []
        /// Claims wait for `answerClaims` while this is set (a lost node's lease lapsing).
        var holdingClaims = false
        var waitingClaims: [CheckedContinuation<Void, Never>] = []
        /// Boards another node wants, and how often it said so (`wantedElsewhere`).
        var wants: [BoardName: UInt64] = [:]
    }

    let state = Locked(State())
    let claimWait = 0.0

    /// Claims held so far (waiting in `claim`).
    var heldClaims: Int { state.withLock { $0.waitingClaims.count } }

    /// Lets every held claim be answered, and the claims after them without waiting.
    func answerClaims() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.holdingClaims = false
            defer { state.waitingClaims = [] }
            return state.waitingClaims
        }
        for continuation in waiting { continuation.resume() }
    }

    func claim(_ board: BoardName, wait: Double) async -> LeaseClaim {
        if state.withLock({ $0.holdingClaims }) {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    guard state.holdingClaims else { return true }
                    state.waitingClaims.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
        return state.withLock { state in
            if let other = state.elsewhere[board] { return .heldElsewhere(other) }
            state.held.insert(board)
            return .held(fence: UInt64(state.held.count))
        }
    }

    func release(_ board: BoardName) async {
        state.withLock { state in
            state.held.remove(board)
            state.released.append(board)
        }
    }

    func wantedElsewhere() async -> [BoardName: UInt64] { state.withLock { state in state.wants.filter { state.held.contains($0.key) } } }

    func holds(_ board: BoardName) -> Bool { state.withLock { $0.inForce && $0.held.contains(board) } }
    var isLive: Bool { state.withLock { $0.inForce } }
}

/// One owner per board (`Relay` with `BoardLeases`): a board another node holds is refused with
/// `notOwner` before anything of it is read or written here; once this node's lease lapses,
/// nothing more is taken or acknowledged, every connection is closed with `notOwner`, and the
/// board is closed and its claim given up.
@Suite struct BoardLeaseTests {
    @Test func aBoardAnotherNodeHoldsIsRefusedWithNotOwnerAndNothingIsWritten() async throws {
        let temp = TemporaryDirectory("lease-elsewhere")
        defer { temp.remove() }
        let leases = PlayedLeases()
        leases.state.withLock { $0.elsewhere[try! BoardName("wall")] = "node-b" }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              sharing: PlayedStore(), leases: leases)
        await #expect {
            _ = try await relay.connect(to: BoardName("wall"))
        } throws: { error in
            guard let error = error as? RelayError else { return false }
            return error.code == .notOwner && error.description.contains("node-b")
        }
        #expect(!FileSystem.exists(temp.path + "/wall"), "the refused board's journal was created")
        #expect(relay.metricsText.contains("strokejournal_lease_refusals_total 1"))
        await relay.close()
    }

    /// A board this node does not hold is fetched from the store while its lease is awaited
    /// (a lost node's lease takes its time to live to lapse), and put in place only once the
    /// lease is held: refused, nothing of it is left here; held, it opens.
    @Test(arguments: [false, true])
    func aBoardIsFetchedWhileItsLeaseIsAwaitedAndInstalledOnlyOnceHeld(heldHere: Bool) async throws {
        let temp = TemporaryDirectory("lease-prefetch")
        defer { temp.remove() }
        let leases = PlayedLeases()
        let wall = try BoardName("wall")
        leases.state.withLock { state in
            state.holdingClaims = true
            if !heldHere { state.elsewhere[wall] = "node-b" }
        }
        let store = PlayedStore()
        store.state.withLock { $0.storeHasBoard = true }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              sharing: store, leases: leases)
        let connecting = Task { try await relay.connect(to: wall) }
        // The fetch began while the claim still waits.
        #expect(await eventually(within: 60) { leases.heldClaims == 1 && store.state.withLock { $0.adoptions } == 1 },
                "the store was not asked for the board while the lease is awaited")
        #expect(!FileSystem.exists(temp.path + "/wall"), "installed before the lease was held")
        leases.answerClaims()
        let outcome = await connecting.result
        if heldHere {
            #expect((try? outcome.get()) != nil)
            #expect(FileSystem.exists(temp.path + "/wall"))
            #expect(store.state.withLock { $0.adoptions } == 1, "fetched once, not again after the claim")
            // The operator sees where the opening's time went: the claim held back until
            // answered, then the store.
            let metrics = relay.metricsText
            #expect(metrics.contains(#"strokejournal_board_opening_seconds_count{step="lease"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"strokejournal_board_opening_seconds_count{step="store"} 1"#), "\(metrics)")
            let leaseSum = metrics.split(separator: "\n").first { $0.hasPrefix(#"strokejournal_board_opening_seconds_sum{step="lease"} "#) }
            #expect(leaseSum.flatMap { Double($0.split(separator: " ").last ?? "") }.map { $0 > 0 } == true, "\(metrics)")
        } else {
            #expect((try? outcome.get()) == nil)
            // The fetch may still be finishing: it installs nothing either way.
            #expect(await eventually(within: 60) { store.state.withLock { $0.adoptions } == 1 })
            #expect(!FileSystem.exists(temp.path + "/wall"), "a board held elsewhere was installed here")
        }
        await relay.close()
    }

    @Test(arguments: [AckMode.local, .shared])
    func aLapsedLeaseAcknowledgesNothingMoreClosesEveryConnectionAndGivesTheBoardUp(ack: AckMode) async throws {
        let temp = TemporaryDirectory("lease-lapsed")
        defer { temp.remove() }
        let leases = PlayedLeases()
        let store = PlayedStore()
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              sharing: store, ackMode: ack, leases: leases)
        let lost = Locked(0)
        relay.observe { activity in if case .leaseLost = activity { lost.withLock { $0 += 1 } } }
        let connection = try await SharedAckRoundTests.connect(relay, "wall")
        let received = SharedAckRoundTests.Received(connection)
        await connection.receive(text: SharedAckRoundTests.point(1))
        #expect(await eventually(within: 120) { received.acks == [1] }, "the first frame was not acknowledged: \(received.acks)")

        // Frame 2 is durable (and, shared, in a round the store holds back) when the lease lapses.
        if ack == .shared { store.state.withLock { $0.holding = true } }
        await connection.receive(text: SharedAckRoundTests.point(2))
        if ack == .shared {
            #expect(await eventually(within: 120) { store.heldRounds >= 1 })
            leases.state.withLock { $0.inForce = false }
            store.release()
        } else {
            leases.state.withLock { $0.inForce = false }
            // The next frame meets the lapsed lease (the ack of frame 2 may have gone out before).
            await connection.receive(text: SharedAckRoundTests.point(3))
        }
        #expect(await eventually(within: 120) { connection.closeRefusal?.code == .notOwner }, "no not-owner close: \(String(describing: connection.closeRefusal))")
        // The close is the progress an ack would have come before: after it, none comes.
        #expect(!received.acks.contains(3))
        if ack == .shared { #expect(received.acks == [1], "acknowledged after the lease lapsed: \(received.acks)") }
        #expect(await eventually(within: 120) { relay.openBoards.isEmpty && leases.state.withLock { $0.released.count } == 1 },
                "the board was not closed and given up")
        #expect(lost.withLock { $0 } == 1)
        #expect(!relay.isServing, "a node without its lease says so to the balancer")
        received.stop()
        await relay.close()
    }
    /// A board this node took over while the node its balancer sends it to was down: once that
    /// node is back, its clients are refused there while the board stays here. A want that
    /// keeps growing hands the board over (its clients told `notOwner`, its lease given up once
    /// closed); a want seen once, or not grown, or a board here for less than its tenure, moves
    /// nothing.
    @Test func aBoardAnotherNodeKeepsWantingIsHandedOver() async throws {
        let temp = TemporaryDirectory("lease-handover")
        defer { temp.remove() }
        let leases = PlayedLeases()
        let wall = try BoardName("wall")
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              sharing: PlayedStore(), ackMode: .shared, leases: leases)
        let connection = try await SharedAckRoundTests.connect(relay, "wall")
        let received = SharedAckRoundTests.Received(connection)
        await connection.receive(text: SharedAckRoundTests.point(1))
        #expect(await eventually(within: 120) { received.acks == [1] })

        leases.state.withLock { $0.wants[wall] = 1 }
        var seen = await relay.handOverWanted(leases, seenBefore: [:], tenure: 0)
        #expect(seen == [wall: 1])
        seen = await relay.handOverWanted(leases, seenBefore: seen, tenure: 0)
        leases.state.withLock { $0.wants[wall] = 2 }
        seen = await relay.handOverWanted(leases, seenBefore: seen, tenure: 3600)
        #expect(relay.openBoards == [wall] && connection.closeRefusal == nil, "handed over on a want seen once, not grown, or within its tenure")

        leases.state.withLock { $0.wants[wall] = 3 }
        _ = await relay.handOverWanted(leases, seenBefore: seen, tenure: 0)
        #expect(await eventually(within: 120) { connection.closeRefusal?.code == .notOwner }, "\(String(describing: connection.closeRefusal))")
        #expect(await eventually(within: 120) { relay.openBoards.isEmpty && leases.state.withLock { $0.released } == [wall] },
                "the board was not closed and given up")
        #expect(relay.metricsText.contains("strokejournal_boards_handed_over_total 1"))
        received.stop()
        await relay.close()
    }

    /// A node frozen after it decided an ack but before its socket took it wakes with the ack
    /// still queued: the queue asks the lease again as the socket takes it, so it is dropped.
    @Test func anAckQueuedBeforeTheLeaseLapsedIsNeverSent() async throws {
        let temp = TemporaryDirectory("lease-queued-ack")
        defer { temp.remove() }
        let leases = PlayedLeases()
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              sharing: PlayedStore(), ackMode: .local, leases: leases)
        // Nobody reads the connection yet: its ack waits in the queue, as it would for a
        // writer that was frozen.
        let connection = try await SharedAckRoundTests.connect(relay, "wall")
        let before = connection.outbound.count
        await connection.receive(text: SharedAckRoundTests.point(1))
        #expect(await eventually(within: 120) { connection.outbound.count > before }, "the ack was never queued")
        leases.state.withLock { $0.inForce = false }
        let received = SharedAckRoundTests.Received(connection)
        // The lapse is noticed (the next frame meets it) and the connection closes: what the
        // socket was given by then is all it ever gets.
        await connection.receive(text: SharedAckRoundTests.point(2))
        #expect(await eventually(within: 120) { connection.closeRefusal?.code == .notOwner })
        connection.outbound.finish()
        #expect(await eventually(within: 120) { connection.outbound.count == 0 })
        #expect(received.acks.isEmpty, "an ack went out after the lease lapsed: \(received.acks)")
        received.stop()
        await relay.close()
    }
}

/// `EtcdLeases` against a real etcd (Debian's etcd-server), started for the test on free ports.
@Suite(.serialized, .enabled(if: EtcdServer.binary != nil, "etcd is not installed (Debian: apt-get install etcd-server)"))
struct EtcdLeaseTests {
    /// node-a and node-b on `server`, renewing (stopped by the caller).
    static func twoLiveNodes(_ server: EtcdServer, followingBalancer: Bool = false) async -> (EtcdLeases, EtcdLeases) {
        let a = EtcdLeases(host: "127.0.0.1", port: server.port, node: "node-a", ttlSeconds: 2, prefix: "/test/boards/",
                           followsBalancer: followingBalancer)
        let b = EtcdLeases(host: "127.0.0.1", port: server.port, node: "node-b", ttlSeconds: 2, prefix: "/test/boards/",
                           followsBalancer: followingBalancer)
        a.start()
        b.start()
        #expect(await eventually(within: 60) { a.isLive && b.isLive }, "\(a.lastProblem ?? "") \(b.lastProblem ?? "")")
        return (a, b)
    }

    @Test func oneNodeHoldsABoardUntilItsLeaseLapsesAndTheNextClaimHasALargerFence() async throws {
        let server = try await EtcdServer()
        defer { server.stop() }
        let (a, b) = await Self.twoLiveNodes(server)
        defer { a.stop(); b.stop() }
        let board = try BoardName("wall")

        guard case .held(let first) = await a.claim(board, wait: 0) else { Issue.record("node-a could not claim a free board"); return }
        #expect(a.holds(board))
        #expect(await b.claim(board, wait: 0) == .heldElsewhere("node-a"))
        // Claimed again by its holder: the same claim.
        #expect(await a.claim(board, wait: 0) == .held(fence: first))

        // node-a stops renewing, as a frozen node does: it stops counting itself the owner
        // before etcd lets the lease lapse, so node-b's claim never overlaps its own.
        a.stopRenewing()
        let claimed = await b.claim(board, wait: 30)
        let aHeldWhenBGotIt = a.holds(board)
        guard case .held(let second) = claimed else { Issue.record("node-b never got the board: \(claimed)"); return }
        #expect(!aHeldWhenBGotIt, "two nodes held the board at once")
        #expect(second > first)
        #expect(b.holds(board))

        // Given up, it is free at once.
        await b.release(board)
        #expect(!b.holds(board))
        let c = EtcdLeases(host: "127.0.0.1", port: server.port, node: "node-c", ttlSeconds: 2, prefix: "/test/boards/")
        c.start()
        defer { c.stop() }
        #expect(await eventually(within: 60) { c.isLive })
        guard case .held(let third) = await c.claim(board, wait: 0) else { Issue.record("a released board stayed taken"); return }
        #expect(third > second)
    }

    /// Behind a balancer, a node whose client waits for a board another node holds says so while
    /// the claim waits (a claim that does not wait says nothing); the holder reads it with a
    /// number that grows each time it is said again, which is what `Relay.handOverWanted` acts on.
    @Test func aWaitingClaimSaysTheBoardIsWantedAgainAndAgain() async throws {
        let server = try await EtcdServer()
        defer { server.stop() }
        let board = try BoardName("wall")
        let (a, b) = await Self.twoLiveNodes(server, followingBalancer: true)
        defer { a.stop(); b.stop() }
        guard case .held = await a.claim(board, wait: 0) else { Issue.record("node-a could not claim a free board"); return }
        #expect(await b.claim(board, wait: 0) == .heldElsewhere("node-a"))
        #expect(await a.wantedElsewhere().isEmpty, "a claim that did not wait said the board was wanted")
        // A node whose clients pick a node themselves says nothing of the kind.
        let direct = EtcdLeases(host: "127.0.0.1", port: server.port, node: "node-c", ttlSeconds: 2, prefix: "/test/boards/")
        direct.start()
        defer { direct.stop() }
        #expect(await eventually(within: 60) { direct.isLive })
        #expect(await direct.claim(board, wait: 0.3) == .heldElsewhere("node-a"))
        #expect(await a.wantedElsewhere().isEmpty, "a node not behind a balancer said the board was wanted")

        // A read that fails (etcd slow to answer on a loaded machine) says nothing is wanted:
        // read again, as the holder does twice a second.
        func wanted(at holder: EtcdLeases) async -> UInt64? {
            for _ in 0..<20 {
                if let revision = await holder.wantedElsewhere()[board] { return revision }
                await patientSleep(seconds: 0.1)
            }
            return nil
        }
        // A claim whose wait runs out during its first request (1 ms: any request to etcd is
        // longer) still says the board is wanted: its client was refused here all the same.
        #expect(await b.claim(board, wait: 0.001) == .heldElsewhere("node-a"))
        let first = try #require(await wanted(at: a))
        #expect(await b.wantedElsewhere().isEmpty, "node-b holds nothing")
        #expect(await b.claim(board, wait: 0.3) == .heldElsewhere("node-a"))
        let second = try #require(await wanted(at: a))
        #expect(second > first)

        // Handed over: node-b gets it; what node-a's own waiting claim says is now node-b's to read.
        await a.release(board)
        guard case .held = await b.claim(board, wait: 0) else { Issue.record("a released board stayed taken"); return }
        #expect(await a.claim(board, wait: 0.3) == .heldElsewhere("node-b"))
        #expect(await wanted(at: b) != nil)
    }

    /// A node killed outright frees its boards at once: the shell beside it revokes its lease
    /// when the pipe from it closes. The lease lives 60 s, so a claim by another node within
    /// the 50 s waited for here is one that a lapse cannot explain.
    @Test func aNodeWhoseProcessEndsFreesItsBoardsWithoutWaitingForTheLeaseToLapse() async throws {
        let server = try await EtcdServer()
        defer { server.stop() }
        let dying = EtcdLeases(host: "127.0.0.1", port: server.port, node: "dying", ttlSeconds: 60, prefix: "/test/boards/",
                               revokesWhenProcessEnds: true)
        let next = EtcdLeases(host: "127.0.0.1", port: server.port, node: "next", ttlSeconds: 60, prefix: "/test/boards/")
        dying.start()
        next.start()
        defer { dying.stop(); next.stop() }
        #expect(dying.revocationProblem == nil)
        #expect(await eventually(within: 60) { dying.isLive && next.isLive }, "\(dying.lastProblem ?? "") \(next.lastProblem ?? "")")
        let board = try BoardName("wall")
        guard case .held = await dying.claim(board, wait: 0) else { Issue.record("the first node could not claim a free board"); return }
        #expect(await next.claim(board, wait: 0) == .heldElsewhere("dying"))

        // The 55 s bound is not a speed expected (a revocation takes milliseconds): a claim
        // within it cannot be a lapse, which needs 60 s without a renewal.
        let ended = ContinuousClock.now
        dying.endAsAKilledProcessWould()
        var claimed = LeaseClaim.unavailable("not asked")
        while ContinuousClock.now - ended < .seconds(55) {
            claimed = await next.claim(board, wait: 0)
            if case .held = claimed { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        guard case .held = claimed else {
            Issue.record("the board stayed the ended node's (\(claimed)): its lease was not revoked")
            return
        }
        #expect(ContinuousClock.now - ended < .seconds(60))
    }

    /// Asked for 1 s, an etcd with the default election timeout (1 s) grants 2 (its minimum
    /// is 1.5 times that, rounded up): other nodes' claims last that long, so a claim waits
    /// for the grant, not for what was asked.
    @Test func aClaimWaitsAsLongAsEtcdsGrantNotTheTimeAsked() async throws {
        let server = try await EtcdServer()
        defer { server.stop() }
        let leases = EtcdLeases(host: "127.0.0.1", port: server.port, node: "short", ttlSeconds: 1, prefix: "/test/boards/")
        leases.start()
        defer { leases.stop() }
        #expect(leases.claimWait == 2)
        #expect(await eventually(within: 60) { leases.grantedTtlSeconds != nil }, "\(leases.lastProblem ?? "")")
        // EtcdServer runs etcd's default timing (100 ms heartbeats, 1 s elections).
        #expect(leases.grantedTtlSeconds == 2)
        #expect(leases.claimWait == 3)
    }

    @Test func anUnreachableServiceIsUnavailableAndTheNodeIsNotLive() async throws {
        let leases = EtcdLeases(host: "127.0.0.1", port: try EtcdServer.freePort(), node: "lonely", ttlSeconds: 2)
        leases.start()
        defer { leases.stop() }
        guard case .unavailable(let why) = await leases.claim(try BoardName("wall"), wait: 0) else {
            Issue.record("a claim without etcd succeeded"); return
        }
        #expect(why.contains("127.0.0.1"))
        #expect(!leases.isLive)
    }
}

/// An etcd of the test's own, on free ports, its data in a temporary folder.
final class EtcdServer {
    static let binary: String? = ["/usr/bin/etcd", "/usr/local/bin/etcd"].first { FileManager.default.isExecutableFile(atPath: $0) }

    let port: Int
    private let process = Process()
    private let folder = TemporaryDirectory("etcd")

    init() async throws {
        port = try Self.freePort()
        let peer = try Self.freePort()
        process.executableURL = URL(fileURLWithPath: Self.binary ?? "/usr/bin/etcd")
        process.arguments = [
            "--data-dir", folder.path + "/data", "--name", "test",
            "--listen-client-urls", "http://127.0.0.1:\(port)", "--advertise-client-urls", "http://127.0.0.1:\(port)",
            "--listen-peer-urls", "http://127.0.0.1:\(peer)", "--initial-advertise-peer-urls", "http://127.0.0.1:\(peer)",
            "--initial-cluster", "test=http://127.0.0.1:\(peer)",
        ]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        let port = port
        let up = await eventually(within: 60) {
            (try? HTTPExchange.post(host: "127.0.0.1", port: port, path: "/v3/maintenance/status", json: Array("{}".utf8), timeoutSeconds: 1))?.status == 200
        }
        if !up { stop() }
        try #require(up, "etcd did not answer on port \(port)")
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            try? process.waitForExit(within: 60)
        }
        folder.remove()
    }

    /// A TCP port nothing listens on now (the system's pick for port 0).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound, "no free port")
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
