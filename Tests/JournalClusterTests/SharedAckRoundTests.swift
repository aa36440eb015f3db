import JournalFormat
import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalStorage
import JournalTestSupport
import JournalWire
import Testing

/// `Relay` under `--ack shared` through a store the test plays, without sockets: an ack means
/// the store holds the frame's events, whatever the store does meanwhile.
@Suite struct SharedAckRoundTests {
    /// What a connection was sent, collected as it comes (a negative check reads it after the
    /// progress that would have produced the message, never after a fixed wait).
    final class Received: Sendable {
        let texts = Locked<[String]>([])
        private let reader: Task<Void, Never>

        init(_ connection: RelayConnection) {
            let texts = texts
            reader = Task {
                for await text in connection.outbound { texts.withLock { $0.append(text) } }
            }
        }

        var acks: [UInt64] {
            texts.withLock { $0 }.compactMap { text in
                if case .ack(let upTo)? = try? ServerMessage(parsing: text) { return upTo }
                return nil
            }
        }

        func stop() { reader.cancel() }
    }

    static func point(_ index: Int) -> String {
        ##"{"type":"point","stroke":"0123456789abcdef0123456789abcdef","x":"## + String(index) + ##","y":1,"color":"#1E88E5FF","width":2}"##
    }

    /// A connection of `relay`'s board `name`, in text mode, live.
    static func connect(_ relay: Relay, _ name: String) async throws -> RelayConnection {
        let connection = try await relay.connect(to: BoardName(name))
        await connection.receive(text: #"{"type":"hello"}"#)
        connection.goLive(caughtUp: 0)
        return connection
    }

    /// A store that fails every round holds every ack back (and says why, each round); once it
    /// works, the next round acknowledges everything.
    @Test func aFailingStoreHoldsAcksBackUntilARoundSucceeds() async throws {
        let temp = TemporaryDirectory("cluster-failing-store")
        defer { temp.remove() }
        let store = PlayedStore()
        store.state.withLock { $0.failing = "the store is down"; $0.repairs = StoreRepairs(damagedReplaced: 1, lostRestored: 2) }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              limits: RelayLimits(storeFailureSeconds: 0.001), sharing: store, ackMode: .shared)
        let failures = Locked(0)
        #expect(relay.isServing)
        relay.observe { activity in if case .shareFailed = activity { failures.withLock { $0 += 1 } } }
        let connection = try await Self.connect(relay, "wall")
        let received = Received(connection)
        await connection.receive(text: Self.point(1))
        await connection.receive(text: Self.point(2))
        // Three failed rounds, each begun after the frames were durable: an ack would be out.
        #expect(await eventually(within: 120) { store.state.withLock { $0.failedRounds } >= 3 })
        #expect(received.acks.isEmpty, "acknowledged while the store failed: \(received.acks)")
        #expect(failures.withLock { $0 } >= 3)
        // The balancer is told: this node acknowledges nothing while its store fails.
        #expect(!relay.isServing && relay.unhealthyBecause?.contains("shared store") == true, "\(relay.unhealthyBecause ?? "serving")")

        store.state.withLock { $0.failing = nil }
        #expect(await eventually(within: 120) { received.acks.last == 2 }, "acks after the store came back: \(received.acks)")
        #expect(relay.isServing)
        // The operator saw it all: the failed syncs, then one that worked, and the acks' wait.
        let metrics = relay.metricsText
        func sample(_ prefix: String) -> Double? {
            metrics.split(separator: "\n").first { $0.hasPrefix(prefix + " ") }.flatMap { Double($0.dropFirst(prefix.count + 1)) }
        }
        #expect((sample(#"strokejournal_store_syncs_total{outcome="failed"}"#) ?? 0) >= 3, "\(metrics)")
        #expect((sample(#"strokejournal_store_syncs_total{outcome="ok"}"#) ?? 0) >= 1)
        #expect((sample(#"strokejournal_share_rounds_total{outcome="failed"}"#) ?? 0) >= 3)
        #expect((sample(#"strokejournal_ack_seconds_count{mode="shared"}"#) ?? 0) >= 1)
        // Each sync said it replaced one damaged copy and restored two lost ones: counted.
        #expect((sample(#"strokejournal_store_repairs_total{kind="damaged-replaced"}"#) ?? 0) >= 1)
        #expect((sample(#"strokejournal_store_repairs_total{kind="lost-restored"}"#) ?? 0) >= 2)
        received.stop()
        await relay.close()
    }

    /// A round takes what had arrived when it began: frames that come while its store write is
    /// in flight wait for the next round, which acknowledges them; none fails a round (a pen
    /// that never pauses is acknowledged round after round).
    @Test func framesArrivingDuringASlowRoundGoInTheNextAndFailNone() async throws {
        let temp = TemporaryDirectory("cluster-slow-round")
        defer { temp.remove() }
        let store = PlayedStore()
        store.state.withLock { $0.holding = true }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              sharing: store, ackMode: .shared)
        let failures = Locked<[String]>([])
        relay.observe { activity in if case .shareFailed(_, let why) = activity { failures.withLock { $0.append(why) } } }
        let connection = try await Self.connect(relay, "pen")
        let received = Received(connection)
        await connection.receive(text: Self.point(1))
        #expect(await eventually(within: 120) { store.heldRounds == 1 }, "no round began for frame 1")
        // The pen goes on while the round's store write is in flight.
        for index in 2...20 { await connection.receive(text: Self.point(index)) }
        let board = try relay.board(BoardName("pen")).board
        #expect(await eventually(within: 120) { board.durableSeq >= 20 }, "frames 2…20 never became durable")
        #expect(received.acks.isEmpty, "acknowledged before the round's store write ended: \(received.acks)")

        store.release()
        #expect(await eventually(within: 120) { received.acks.last == 20 }, "acks: \(received.acks)")
        // Frame 1's round acknowledged frame 1 alone: the others came after it began.
        #expect(received.acks.first == 1, "acks: \(received.acks)")
        #expect(failures.withLock { $0 }.isEmpty, "rounds failed: \(failures.withLock { $0 })")
        received.stop()
        await relay.close()
    }

    /// Rounds only publish (`publishSealed`), so the periodic pass is where an open board's
    /// store is listed, read and repaired: a board a round published since the pass before is
    /// left alone, but only for three passes in a row (the fourth syncs it whole), and a board
    /// no round published since is synced at the next pass.
    @Test func aBoardRoundsKeepPublishingIsSyncedWholeEveryFourthPass() async throws {
        let temp = TemporaryDirectory("cluster-periodic-pass")
        defer { temp.remove() }
        let store = PlayedStore()
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              sharing: store, ackMode: .shared)
        let pen = try await Self.connect(relay, "pen")
        let quiet = try await Self.connect(relay, "quiet")
        let received = Received(pen)
        var passes: [[String]] = []
        for point in 1...4 {
            await pen.receive(text: Self.point(point))
            #expect(await eventually(within: 120) { received.acks.last == UInt64(point) }, "acks: \(received.acks)")
            passes.append(await relay.shareOpenBoardsOnce().map(\.text).sorted())
        }
        #expect(passes == [["quiet"], ["quiet"], ["quiet"], ["pen", "quiet"]])
        // No round since: synced at once.
        #expect(await relay.shareOpenBoardsOnce().map(\.text).sorted() == ["pen", "quiet"])
        received.stop()
        _ = quiet
        await relay.close()
    }

    /// Under shared acks a joiner is shown only what the store holds: an event durable on the
    /// relay whose rounds keep failing is in no catch-up (were the relay lost with its disk, the
    /// joiner would show a stroke no journal holds); once a round puts it in the store, the
    /// catch-up sends it.
    @Test func aCatchUpSendsOnlyWhatTheStoreHolds() async throws {
        let temp = TemporaryDirectory("cluster-exact-catch-up")
        defer { temp.remove() }
        let store = PlayedStore()
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              sharing: store, ackMode: .shared)
        let writer = try await Self.connect(relay, "wall")
        let writerReceived = Received(writer)
        await writer.receive(text: Self.point(1))
        #expect(await eventually(within: 120) { writerReceived.acks == [1] })
        // The store goes down; the next event is durable here and in no store.
        store.state.withLock { $0.failing = "the store is down" }
        await writer.receive(text: Self.point(2))
        let board = try relay.board(BoardName("wall")).board
        #expect(await eventually(within: 120) { board.durableSeq >= 2 })

        let joiner = try await relay.connect(to: BoardName("wall"))
        let sent = Locked<[ServerMessage]>([])
        let catchUp = Task { try await joiner.catchUp(lacking: Have(), write: { message in sent.withLock { $0.append(message) } }) }
        let failedBefore = store.state.withLock { $0.failedRounds }
        // Two rounds failed since the joiner asked: a catch-up that did not wait for the store
        // would be done by now.
        #expect(await eventually(within: 120) { store.state.withLock { $0.failedRounds } >= failedBefore + 2 })
        #expect(sent.withLock { $0 }.isEmpty, "sent before the store held it: \(sent.withLock { $0 })")

        store.state.withLock { $0.failing = nil }
        try await catchUp.value
        let events = sent.withLock { $0 }.compactMap { try? $0.event() }.compactMap { $0 }
        #expect(events.map(\.id.seq) == [1, 2], "catch-up: \(sent.withLock { $0 })")
        #expect(await eventually(within: 120) { writerReceived.acks.last == 2 })
        writerReceived.stop()
        await relay.close()
    }

    /// A board this relay never held, asked for with a token that may not create boards: it
    /// is adopted from the store when the store has it, and refused with code `forbidden`
    /// when it does not (nothing is left on disk).
    @Test func aBoardIsAdoptedFromTheStoreOrRefusedWithItsCode() async throws {
        let temp = TemporaryDirectory("cluster-adoption")
        defer { temp.remove() }
        let store = PlayedStore()
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              sharing: store, ackMode: .shared)
        let elsewhere = try BoardName("elsewhere")
        let drawer = Grant(tokenID: "0123456789abcdef", scope: .draw, expiresAtMilliseconds: nil)
        do {
            _ = try await relay.connect(to: elsewhere, grant: drawer)
            Issue.record("a board the store lacks was opened for a draw token")
        } catch {
            #expect(error.code == .forbidden && error.refusal.message.contains("does not exist"), "\(error)")
        }
        #expect(!FileSystem.exists(temp.path + "/elsewhere"))

        store.state.withLock { $0.storeHasBoard = true }
        let connection = try await relay.connect(to: elsewhere, grant: drawer)
        #expect(connection.closeReason == nil)
        #expect(store.state.withLock { $0.adoptions } == 2)

        // A draw token issued for exactly this board (its node created it and died before
        // publishing it): the store lacks it, and it is created again for the token's holder.
        let lost = try BoardName("lost")
        store.state.withLock { $0.storeHasBoard = false }
        let promised = Grant(tokenID: "0123456789abcdef", scope: .draw, expiresAtMilliseconds: nil, board: lost)
        let recreated = try await relay.connect(to: lost, grant: promised)
        #expect(recreated.closeReason == nil && FileSystem.isDirectory(temp.path + "/lost/replicas"))
        // A token for many boards (a prefix, `*`) does not create one.
        await #expect(throws: RelayError.self) { _ = try await relay.connect(to: BoardName("other"), grant: drawer) }
        await relay.close()
    }
}
