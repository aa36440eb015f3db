import JournalLive
import JournalPlatform
import JournalWire

/// The cluster's side of a relay (`journal serve --share`): boards synced with the store once
/// at start, periodically while open, in shared-ack rounds; and what an operator reads of it.
extension Relay {
    /// Syncs every board of the data folder that is not open with the cluster's store, once:
    /// what a relay killed before its periodic sync acknowledged (and a crash left in open
    /// segments, sealed here) reaches the store when it starts again, even if its boards are
    /// served elsewhere by then.
    public func shareClosedBoardsOnce() async {
        guard let sharing else { return }
        for entry in (try? FileSystem.list(dataDirectory)) ?? [] where entry.kind == .directory {
            let path = FileSystem.join(dataDirectory, entry.name)
            guard let name = try? BoardName(entry.name), !boards.withLock({ $0.open[name] != nil || $0.opening[name] != nil }),
                  FileSystem.isDirectory(path + "/replicas"), Self.plantedSymlink(path) == nil else { continue }
            if let why = await sharing.sync(name, journal: FileSystem.join(dataDirectory, name.text), open: false) {
                report(.shareFailed(name, why: why))
            }
        }
    }

    /// Syncs every open board with the cluster's store every `sharing.interval` seconds until
    /// the task is cancelled or the relay closes (nothing to do without a store).
    public func shareOpenBoardsPeriodically() async {
        guard let sharing else { return }
        while !Task.isCancelled && !boards.withLock({ $0.closed }) {
            do { try await Task.sleep(for: .milliseconds(Int(max(0.05, sharing.interval) * 1000))) } catch { return }
            await shareOpenBoardsOnce()
        }
    }

    /// One periodic pass: each open board synced, one after the other; a failure is reported
    /// and the next pass tries again. Shared-ack rounds only publish (`publishSealed`), so
    /// this is where an open board's store is listed, read and repaired; but a board a round
    /// published since the last pass is synced only every `wholeSyncEveryPasses`-th pass:
    /// what it seals already reaches the store, and a whole sync each pass would spend a
    /// store listing (an rclone process, for S3) per board per interval beside its rounds.
    /// Returns the boards synced.
    @discardableResult
    public func shareOpenBoardsOnce() async -> [BoardName] {
        guard let sharing else { return [] }
        let open = openBoards
        let due = publishedByRounds.withLock { state in
            state.prune(keeping: Set(open))
            return state.due(open, every: Self.wholeSyncEveryPasses)
        }
        var synced: [BoardName] = []
        for name in open where due.contains(name) {
            synced.append(name)
            if let why = await sharing.sync(name, journal: FileSystem.join(dataDirectory, name.text), open: true) {
                report(.shareFailed(name, why: why))
            }
        }
        return synced
    }

    /// While rounds publish a board, one periodic pass in this many syncs it whole.
    static let wholeSyncEveryPasses = 4

    /// One shared-ack round: seals what the board holds and publishes it (only what the store
    /// was not seen to hold: listing and repairs are the periodic sync's); on success the store
    /// holds all of it (`coverage`). Nil, or why it failed.
    static func shareRound(
        _ board: Board, _ name: BoardName, path: String, through sharing: BoardSharing, recordingIn coverage: StoreCoverage
    ) async -> String? {
        // Everything held now is sealed by the seal below and published by the sync.
        let held = RelayBoard.held(by: board)
        if let failure = await board.sealNow() { return "the seal failed: \(failure)" }
        if let why = await sharing.publishSealed(name, journal: path) { return why }
        coverage.record(held)
        return nil
    }

    /// What an operator watches (`GET /metrics`): the counters, and the gauges as they are now.
    public var metricsText: String {
        let (open, connections) = boards.withLock { boards in
            (boards.open.count, boards.open.values.reduce(0) { $0 + $1.connectionCount })
        }
        let catchUpCounts = catchUps.counts
        return metrics.text(RelayMetrics.Gauges(
            boardsOpen: open, connections: connections, catchUpsRunning: catchUpCounts.running, catchUpsWaiting: catchUpCounts.waiting))
    }

    /// Whether the relay serves (`GET /healthz`): not once it is shutting down, nor while its
    /// leases cannot be renewed, nor (under `--ack shared`) while a board's rounds have failed
    /// for `RelayLimits.storeFailureSeconds`: it could acknowledge nothing, and a balancer should send its
    /// clients to a node that can.
    public var isServing: Bool { unhealthyBecause == nil }

    /// Why `/healthz` says 503, in words; nil while the relay serves.
    public var unhealthyBecause: String? {
        if boards.withLock({ $0.closed }) { return "shutting down" }
        if leases?.isLive == false { return "no lease: this node cannot acknowledge now" }
        let failing = metrics.longestFailingSeconds
        if ackMode == .shared, failing > 0, failing >= limits.storeFailureSeconds {
            return "the shared store has failed a board's rounds for \(Int(failing)) s: nothing is acknowledged"
        }
        return nil
    }

    // MARK: Leases (one owner per board)

    /// Claims board `name`'s lease for this node; nil once held, else the refusal a client gets.
    func claimLease(_ name: BoardName) async -> Refusal? {
        guard let leases else { return nil }
        switch await leases.claim(name, wait: leases.claimWait) {
        case .held:
            return nil
        case .heldElsewhere(let node):
            metrics.leaseRefused(name.text)
            return Refusal(.notOwner, "board \(name.text) is served by node \(node) of this cluster: connect again through the cluster's balancer")
        case .unavailable(let why):
            report(.leaseFailed(name, why: why))
            return Refusal(.unavailable, "board \(name.text) is not served until this node holds its lease, and the lease service could not be asked (its operator's log says why); connect again")
        }
    }

    /// A board whose lease lapsed (its connections were closed with `notOwner`) is closed
    /// here: another node serves it now.
    func leaseLapsed(_ name: BoardName, _ board: RelayBoard) {
        metrics.leaseLost(name.text)
        report(.leaseLost(name))
        boards.withLock { boards in
            guard boards.open[name] === board else { return }
            startClosing(name, board, &boards)
        }
    }

    /// Looks at every open board's lease every `interval` seconds until cancelled: a board
    /// nobody draws on (its viewers only) must still learn that it lapsed.
    /// Every other look, it also hands over the boards another node wants (`handOverWanted`).
    public func watchLeasesPeriodically(interval: Double = 0.25) async {
        guard let leases else { return }
        var wants: [BoardName: UInt64] = [:]
        var looks = 0
        while !Task.isCancelled && !boards.withLock({ $0.closed }) {
            do { try await Task.sleep(for: .milliseconds(Int(interval * 1000))) } catch { return }
            let open = boards.withLock { Array($0.open.values) }
            for board in open { _ = board.holdsLease() }
            looks += 1
            if looks % 2 == 0, !open.isEmpty { wants = await handOverWanted(leases, seenBefore: wants) }
        }
    }

    /// A board this node took over while the node its balancer sends the board to was down
    /// stays here while any connection to it lives, and every new client (sent to the other
    /// node, now back) is refused there with `notOwner` until then: minutes, with a viewer that
    /// stays. So a board whose want grew since the last look (`seenBefore`: the other node's
    /// clients kept coming for at least that long; one refused and gone elsewhere moves
    /// nothing) and that has been here `tenure` seconds (two nodes' clients cannot toss it back
    /// and forth faster) is closed, its clients told `notOwner` to connect again through the
    /// balancer, and its lease given up once what it held is in the store. Returns the wants seen.
    func handOverWanted(_ leases: any BoardLeases, seenBefore: [BoardName: UInt64], tenure: Double = 2) async -> [BoardName: UInt64] {
        let wanted = await leases.wantedElsewhere()
        let now = ProcessInfoLite.monotonicSeconds()
        for (name, revision) in wanted {
            guard let before = seenBefore[name], revision > before else { continue }
            boards.withLock { boards in
                guard let board = boards.open[name], now - board.openedAt >= tenure else { return }
                metrics.boardHandedOver()
                startClosing(name, board, &boards, handingOver: true)
            }
        }
        return wanted
    }
}

/// Which open boards the periodic pass syncs whole: every board no round published since the
/// pass before, and one that rounds keep publishing every `every`-th pass.
struct RoundPublications {
    /// Published by a round since the last pass.
    var published: Set<BoardName> = []
    /// Passes in a row that left each board alone.
    private var skipped: [BoardName: Int] = [:]

    /// Forgets boards no longer open (bounded by the boards open).
    mutating func prune(keeping open: Set<BoardName>) {
        skipped = skipped.filter { open.contains($0.key) }
    }

    /// The boards of `open` this pass syncs; starts the next pass's count.
    mutating func due(_ open: [BoardName], every: Int) -> Set<BoardName> {
        var due: Set<BoardName> = []
        for name in open {
            if published.contains(name), skipped[name, default: 0] + 1 < every {
                skipped[name, default: 0] += 1
            } else {
                skipped[name] = nil
                due.insert(name)
            }
        }
        published = []
        return due
    }
}
