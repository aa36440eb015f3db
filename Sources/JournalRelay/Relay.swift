import JournalKeys
import JournalLive
import JournalPlatform
import JournalStorage
import JournalWire

/// Boards served from one data directory: `DIR/<board>` is the journal of board `<board>`,
/// an ordinary journal (sync, merge and every command work on it). A board is opened on its
/// first connection and stays open, holding its journal's writer lock, until it has had no
/// connection for `idleBoardSeconds` (`closeIdleBoards`) or the relay closes.
public final class Relay: Sendable {
    public let dataDirectory: String
    public let boardOptions: BoardOptions
    /// A board without a connection this long is closed: its segments sealed (sync can then
    /// publish everything), its writer lock released, its threads ended. Nil: never.
    public let idleBoardSeconds: Double?
    public let limits: RelayLimits
    /// Who may connect (invariant 12).
    public let access: RelayAccess
    /// Where the relays of a cluster share boards; nil: this relay's disk alone.
    public let sharing: BoardSharing?
    /// When an event is acknowledged: fsynced here, or in the shared store too (needs `sharing`).
    public let ackMode: AckMode
    /// One owner per board in a cluster: a board is served only under its lease; nil: none.
    public let leases: BoardLeases?

    struct Boards {
        var open: [BoardName: RelayBoard] = [:]
        /// Boards being closed: a connection to one waits for the close, then opens it anew
        /// (the journal's lock is held until the close ends).
        var closing: [BoardName: Task<Void, Never>] = [:]
        /// Boards whose journals are being read (`connect(to:)` opens them off the lock): a
        /// connection to one waits for it. They count toward `--max-boards`.
        var opening: [BoardName: Task<Result<Void, RelayError>, Never>] = [:]
        var closed = false
    }

    let boards = Locked(Boards())
    /// Boards shared-ack rounds published since the periodic pass last looked, and how many
    /// passes have left each alone (`shareOpenBoardsOnce`).
    let publishedByRounds = Locked(RoundPublications())
    /// Counters an operator reads (`metricsText`).
    public let metrics: RelayMetrics
    /// Who hears of boards opened and closed (a server's log), called with no lock held.
    private let activityHandler = SharedHandler<RelayActivity>()

    /// Reports boards opened and closed to `handler` (one at a time; a later call replaces it).
    public func observe(_ handler: @escaping @Sendable (RelayActivity) -> Void) {
        activityHandler.set(handler)
    }

    func report(_ activity: RelayActivity) {
        activityHandler(activity)
    }
    let catchUps: CatchUpGate
    /// Events each token's connections may send (nil: no bound), on every board alike.
    let eventBudgets: EventBudgets?
    /// Opens boards' journals, one at a time: opening a big journal decodes every event, for
    /// seconds. Under the relay's lock, on a task-pool thread, that held up every connection
    /// of every board (each takes the lock) and half the pool; here it holds up only the
    /// connections of the board being opened, and bounds the CPU opens take to one core.
    private let opener = WorkerThread()
    /// The key every board here seals its native clients' replicas with, as their host
    /// (`journal serve --host-key`); nil: each board's own key.
    private let hostKey: ReplicaKey?
    /// Whether boards created here get membership, founded by `hostKey` (`BoardFounding`).
    private let foundsBoards: Bool

    /// `foundsBoards`: boards created here get membership, `hostKey` their first admin
    /// (`journal serve` without `--open`); without a `hostKey` they are created open.
    public init(
        dataDirectory: String, access: RelayAccess, boardOptions: BoardOptions = .relay, idleBoardSeconds: Double? = 60,
        limits: RelayLimits = RelayLimits(), sharing: BoardSharing? = nil, ackMode: AckMode = .local, hostKey: ReplicaKey? = nil,
        foundsBoards: Bool = false, leases: BoardLeases? = nil
    ) throws(RelayError) {
        self.leases = leases
        self.dataDirectory = dataDirectory
        self.hostKey = hostKey
        self.foundsBoards = foundsBoards && hostKey != nil
        self.access = access
        let metrics = RelayMetrics()
        self.metrics = metrics
        self.sharing = sharing.map { MeasuredSharing(store: $0, metrics: metrics) }
        self.ackMode = sharing == nil ? .local : ackMode
        // A relay sends events and never reads a drawing: its boards keep none, whatever the
        // options say, so that an open board costs the same memory however big it is.
        var boardOptions = boardOptions
        boardOptions.keepsDrawing = false
        self.boardOptions = boardOptions
        self.idleBoardSeconds = idleBoardSeconds
        self.limits = limits
        catchUps = CatchUpGate(limit: limits.maxConcurrentCatchUps)
        eventBudgets = limits.maxEventsPerSecond.map(EventBudgets.init(rate:))
        do {
            if !FileSystem.exists(dataDirectory) { try FileSystem.createDirectory(dataDirectory) }
        } catch {
            throw .journal(board: "(data directory)", .io(error))
        }
    }

    /// The board named `name`, opened (and created, if new) on first use, on the caller's
    /// thread and under the relay's lock: for tests and tools. Throws while the board is being
    /// closed or opened (`connect(to:)` waits instead, and opens off the lock).
    public func board(_ name: BoardName) throws(RelayError) -> RelayBoard {
        try boards.withLock { boards throws(RelayError) -> RelayBoard in
            if boards.closed { throw .closed }
            if let board = boards.open[name] { return board }
            guard boards.closing[name] == nil else { throw .disconnected("board \(name.text) is being closed; connect again") }
            guard boards.opening[name] == nil else { throw .disconnected("board \(name.text) is being opened; connect again") }
            try makeRoomIfFull(&boards)
            let board = try openJournal(name)
            boards.open[name] = board
            return board
        }
    }

    /// Opens board `name`'s journal (reading all of it) and starts its work; no lock held.
    private func openJournal(_ name: BoardName) throws(RelayError) -> RelayBoard {
        let path = FileSystem.join(dataDirectory, name.text)
        let directory: JournalDirectory
        do throws(JournalError) {
            // Boards are named by whoever connects: a symlink planted in the data folder (as
            // the board, or as its `replicas/`) would send one board's strokes into any journal
            // it points to, writing as that journal's replica beside its writer. (A symlinked
            // `local/` is refused by the board's `JournalWriter`, as for every journal.)
            if let planted = Self.plantedSymlink(path) { throw .io(IOError.symbolicLink("open board", path: planted)) }
            directory = try JournalDirectory.openOrCreate(at: path)
            // Before anything is hosted: what a previous run left is sealed with it too.
            if let hostKey { try directory.installHostKey(hostKey) }
        } catch {
            throw .journal(board: name.text, error)
        }
        let founding = hostKey.map { BoardFounding(founder: $0) }
        if foundsBoards, let founding {
            // Before the board reads its files: its first client already meets its membership.
            do throws(MembershipError) { try founding.prepare(directory, name: name) } catch {
                throw .membership(board: name.text, error.description)
            }
        }
        do throws(JournalError) {
            let board = try Board(directory: directory, options: boardOptions)
            var sharedAcks: SharedAcks?
            let coverage = StoreCoverage()
            if ackMode == .shared, let sharing {
                sharedAcks = SharedAcks(round: { [metrics, publishedByRounds] in
                    let started = ProcessInfoLite.monotonicSeconds()
                    let why = await Self.shareRound(board, name, path: path, through: sharing, recordingIn: coverage)
                    metrics.round(of: name.text, succeeded: why == nil, seconds: ProcessInfoLite.monotonicSeconds() - started)
                    if why == nil { publishedByRounds.withLock { $0.published.insert(name) } }
                    return why
                }, failed: { [weak self] why in self?.report(.shareFailed(name, why: why)) })
            }
            let relayBoard = RelayBoard(name: name, board: board, catchUps: catchUps, maxNativeReplicas: limits.maxNativeReplicasPerBoard,
                                        eventBudgets: eventBudgets,
                                        sharedAcks: sharedAcks, storeCoverage: coverage, founding: founding, metrics: metrics,
                                        leaseHeld: Self.leaseCheck(leases, name))
            relayBoard.onLeaseLost.set { [weak self, weak relayBoard] (name: BoardName) in
                guard let self, let relayBoard else { return }
                self.leaseLapsed(name, relayBoard)
            }
            relayBoard.start()
            report(.opened(name))
            return relayBoard
        } catch {
            throw .journal(board: name.text, error)
        }
    }

    private static func leaseCheck(_ leases: BoardLeases?, _ name: BoardName) -> (@Sendable () -> Bool)? {
        guard let leases else { return nil }
        return { leases.holds(name) }
    }

    /// A symlink where board folder `path` or its `replicas/` belongs, if there is one.
    static func plantedSymlink(_ path: String) -> String? {
        [path, path + "/replicas"].first { FileSystem.linkStatus($0)?.kind == .symlink }
    }

    /// Starts opening board `name` on the opener thread; called under the lock, with room made.
    /// The task's result is the opening's: the board is in `open` once it succeeded.
    /// `adoptingOrRefusing`: the board is not here and the client may not create it: it is
    /// brought from the cluster's store first, or the opening fails with this refusal.
    /// `orCreating`: when the store lacks it too, it is created (a draw token issued for
    /// exactly this board, whose node died before publishing it).
    private func startOpening(
        _ name: BoardName, _ boards: inout Boards, adoptingOrRefusing refusal: String? = nil, orCreating mayCreate: Bool = false
    ) -> Task<Result<Void, RelayError>, Never> {
        let task = Task { [self] () -> Result<Void, RelayError> in
            let path = FileSystem.join(dataDirectory, name.text)
            // The lease first: before this node writes anything of the board here or opens it,
            // the node that served it before has stopped acknowledging it. A board this node
            // does not hold is fetched from the store meanwhile, beside its place, and put in
            // place only once the lease is held (a lost node's lease takes up to its time to
            // live to lapse; fetching a board from an object store, most of a second); the
            // sync below then brings what was published since.
            let began = ProcessInfoLite.monotonicSeconds()
            let claim = Task { await claimLease(name) }
            let prefetch: Task<Bool, Never>? = if let sharing, leases != nil, !FileSystem.exists(path), Self.plantedSymlink(path) == nil {
                Task { await sharing.adopt(name, journal: path, installing: { await claim.value == nil }) }
            } else {
                nil
            }
            if let refusal = await claim.value {
                self.boards.withLock { _ = $0.opening.removeValue(forKey: name) }
                return .failure(.refused(refusal))
            }
            let claimed = ProcessInfoLite.monotonicSeconds()
            if let sharing {
                func fail(_ error: RelayError) -> Result<Void, RelayError> {
                    self.boards.withLock { _ = $0.opening.removeValue(forKey: name) }
                    if let leases = self.leases { Task { await leases.release(name) } }
                    return .failure(error)
                }
                // Checked before any sync touches the folder (`openJournal` says why).
                if let planted = Self.plantedSymlink(path) {
                    return fail(.journal(board: name.text, .io(IOError.symbolicLink("open board", path: planted))))
                }
                // Not found while the lease was awaited: asked again, as the node before may
                // have published the board's first files since.
                let adopted = await prefetch?.value ?? false
                if let refusal, !adopted, await !sharing.adopt(name, journal: path), !mayCreate {
                    return fail(.forbidden(.notAllowed(refusal)))
                }
                // A cluster's board opens with what the store holds: a relay taking it over from
                // a lost one must not serve (and catch clients up from) less than was published.
                if let why = await sharing.sync(name, journal: path, open: false) { return fail(.sharedStore(board: name.text, why)) }
            }
            metrics.boardOpening(leaseSeconds: leases.map { _ in claimed - began },
                                 storeSeconds: sharing.map { _ in ProcessInfoLite.monotonicSeconds() - claimed })
            let opened = await withCheckedContinuation { (continuation: CheckedContinuation<Result<RelayBoard, RelayError>, Never>) in
                opener.submit { [self] in
                    do throws(RelayError) { continuation.resume(returning: .success(try openJournal(name))) } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
            let closedMeanwhile = self.boards.withLock { boards -> Bool in
                boards.opening[name] = nil
                guard case .success(let board) = opened, !boards.closed else { return boards.closed }
                boards.open[name] = board
                return false
            }
            if case .failure = opened, let leases { await leases.release(name) }
            if closedMeanwhile, case .success(let board) = opened {
                await board.close()
                return .failure(.closed)
            }
            return opened.map { _ in () }
        }
        boards.opening[name] = task
        return task
    }

    /// A new connection to board `name`, which is opened if needed (after a close under way
    /// ends). Registered under the same lock that `closeIdleBoards` takes, so no connection
    /// ever lands on a board being closed.
    /// `grant`: what `access.authorize` granted the client; nil (no token) is refused unless
    /// the relay is open.
    public func connect(
        to name: BoardName, grant presented: Grant? = nil, helloPromised: Bool = false, challenge: [UInt8]? = nil
    ) async throws(RelayError) -> RelayConnection {
        let grant: Grant
        switch (presented, access) {
        case (let given?, _): grant = given
        case (nil, .open): grant = .open
        case (nil, .tokens): throw .forbidden(.missing)
        }
        enum Step {
            case connected(RelayConnection)
            /// The board is being closed or opened: wait, then try again.
            case wait(Task<Void, Never>)
            case opening(Task<Result<Void, RelayError>, Never>)
        }
        while true {
            let step = try boards.withLock { boards throws(RelayError) -> Step in
                if boards.closed { throw .closed }
                if let closing = boards.closing[name], boards.open[name] == nil { return .wait(closing) }
                if let opening = boards.opening[name] { return .wait(Task { _ = await opening.value }) }
                if let failed = boards.open[name], failed.board.failure != nil {
                    // Its journal failed (a full disk, descriptors exhausted): every frame would
                    // fail until the relay restarted. Reopened instead, which cuts what the
                    // failed write left, recording resumes once the cause is gone.
                    startClosing(name, failed, &boards)
                    return .wait(boards.closing[name] ?? Task {})
                }
                // Counted under the lock every connection is made under: never past the limit.
                let connections = boards.open.values.reduce(0) { $0 + $1.connectionCount }
                guard connections < limits.maxConnections else {
                    throw .atCapacity("the relay serves \(connections) connections, its limit (--max-connections); try again later")
                }
                if let token = grant.tokenID {
                    let holding = boards.open.values.reduce(0) { $0 + $1.connectionCount(tokenID: token) }
                    guard holding < limits.maxConnectionsPerToken else {
                        throw .atCapacity("token \(token) holds \(holding) connections, the relay's limit per token (--max-connections-per-token); close one first")
                    }
                }
                // Creating a board is an admin's (a name anyone may type would otherwise make
                // a journal on the relay's disk).
                var adopting: String?
                // A draw token an admin issued for exactly this board: the board was promised to
                // its holder. In a cluster whose node created it and died before publishing it,
                // neither the disk nor the store has it: created again, never a token error.
                let promised = grant.allows(.draw) && grant.board == name && sharing != nil
                if boards.open[name] == nil && !grant.allows(.admin) && !FileSystem.exists(FileSystem.join(dataDirectory, name.text)) {
                    let refusal = "board \(name.text) does not exist; only a token of scope admin may create it (this one's scope is \(grant.scope))"
                    // In a cluster, a board another relay holds is no new board here: it is
                    // brought from the store, as the opening's first step (one at a time, and
                    // counted as an opening board), and refused if the store has none.
                    guard sharing != nil else { throw .forbidden(.notAllowed(refusal)) }
                    adopting = refusal
                }
                if let board = boards.open[name] {
                    return .connected(board.connect(grant: grant, helloPromised: helloPromised, challenge: challenge))
                }
                try makeRoomIfFull(&boards)
                return .opening(startOpening(name, &boards, adoptingOrRefusing: adopting, orCreating: promised))
            }
            switch step {
            case .connected(let connection): return connection
            case .wait(let task): await task.value
            case .opening(let task):
                // This connection's own opening: its failure is this connection's to report
                // (the others waiting for it try once more, and report their own).
                try await task.value.get()
            }
        }
    }

    /// Every board open costs threads (committer, watcher, reader...), descriptors and memory,
    /// and anyone who can connect names boards: at the limit, the board idle the longest is
    /// closed to make room, and when every open board has a connection the new one is refused.
    /// Boards being opened count: each holds the same threads and descriptors once open.
    private func makeRoomIfFull(_ boards: inout Boards) throws(RelayError) {
        guard boards.open.count + boards.opening.count >= limits.maxOpenBoards else { return }
        let idle = boards.open.compactMap { name, board in board.idleSince.map { (name, board, $0) } }
        guard let (name, board, _) = idle.min(by: { $0.2 < $1.2 }) else {
            throw .atCapacity("the relay has \(boards.open.count) boards open, each with a connection, its limit (--max-boards); try again later")
        }
        startClosing(name, board, &boards)
    }

    func startClosing(_ name: BoardName, _ board: RelayBoard, _ boards: inout Boards, handingOver: Bool = false) {
        boards.open[name] = nil
        let reason = board.board.failure.map {
            Refusal(.unavailable, "board \(name.text): its journal failed (\($0)); it is being opened again: reconnect, and resend what was not acknowledged")
        } ?? (handingOver ? Refusal(.notOwner, "board \(name.text) moves to the node of this cluster that its clients are sent to: connect again through the cluster's balancer, and resend what was not acknowledged") : RelayError.closed.refusal)
        let why = board.board.failure.map { "its journal failed: \($0)" }
            ?? (handingOver ? "handed over to the node another client was sent to" : board.idleSince == nil ? "closed" : "idle")
        boards.closing[name] = Task { [weak self] in
            await board.close(reason: reason)
            // Published before the board can open again here: what the close sealed is then
            // in the store for any relay of the cluster.
            if let self, let sharing = self.sharing,
               let why = await sharing.sync(name, journal: FileSystem.join(self.dataDirectory, name.text), open: false) {
                self.report(.shareFailed(name, why: why))
            }
            // Given up once what it held is in the store: the next owner opens with all of it.
            if let leases = self?.leases { await leases.release(name) }
            _ = self?.boards.withLock { $0.closing.removeValue(forKey: name) }
            ProcessInfoLite.returnFreeMemory()
            self?.metrics.boardClosed(name.text)
            self?.report(.closed(name, why: why))
        }
    }

    /// Names of the boards open now.
    public var openBoards: [BoardName] { boards.withLock { Array($0.open.keys) } }

    /// Closes every board without a connection for `idleBoardSeconds`, and every board whose
    /// journal failed (its connections are told; the next one opens it anew, which recovers
    /// what the failed write left). Returns their names.
    @discardableResult
    public func closeIdleBoards() -> [BoardName] {
        let now = ProcessInfoLite.monotonicSeconds()
        return boards.withLock { boards -> [BoardName] in
            var closed: [BoardName] = []
            for (name, board) in boards.open {
                let idle = idleBoardSeconds.map { seconds in board.idleSince.map { now - $0 >= seconds } ?? false } ?? false
                guard idle || board.board.failure != nil else { continue }
                startClosing(name, board, &boards)
                closed.append(name)
            }
            return closed
        }
    }

    /// Closes the connections whose token expired or was revoked since they connected (their
    /// clients are told why). Returns how many.
    @discardableResult
    public func closeConnectionsWithoutAccess() -> Int {
        guard !access.isOpen else { return 0 }
        let now = ProcessInfoLite.wallClockMilliseconds()
        let open = boards.withLock { Array($0.open.values) }
        var closed = 0
        let revoked = access.revokedTokenIDs()
        for board in open {
            board.revokeKeys(ofRevokedTokens: revoked)
            board.closeConnections { grant in
                let error = access.stillHolds(grant, nowMilliseconds: now)
                if error != nil { closed += 1 }
                return error
            }
        }
        return closed
    }

    /// Calls `closeConnectionsWithoutAccess` every second until the task is cancelled or the
    /// relay closes (nothing to do on an open relay).
    public func closeConnectionsWithoutAccessPeriodically() async {
        guard !access.isOpen else { return }
        while !Task.isCancelled && !boards.withLock({ $0.closed }) {
            closeConnectionsWithoutAccess()
            do { try await Task.sleep(for: .seconds(1)) } catch { return }
        }
    }

    /// Every half of `WireLimits.signOfLifeSeconds`, a sign of life to each client whose frames
    /// wait for their ack and who was sent nothing for that long (`signOfLifeIfQuiet`), until
    /// the task is cancelled or the relay closes.
    public func sendSignsOfLifePeriodically() async {
        let quiet = WireLimits.signOfLifeSeconds
        while !Task.isCancelled && !boards.withLock({ $0.closed }) {
            let now = ProcessInfoLite.monotonicSeconds()
            for board in boards.withLock({ Array($0.open.values) }) {
                for connection in board.connections.withLock({ Array($0.values) }) {
                    connection.signOfLifeIfQuiet(quietSeconds: quiet, now: now)
                }
            }
            do { try await Task.sleep(for: .milliseconds(Int(quiet * 500))) } catch { return }
        }
    }

    /// Calls `closeIdleBoards` every quarter of `idleBoardSeconds` (at most every 10 s) until
    /// the task is cancelled or the relay closes.
    public func closeIdleBoardsPeriodically() async {
        let interval = min(10, max(0.05, (idleBoardSeconds ?? .infinity) / 4))
        while !Task.isCancelled && !boards.withLock({ $0.closed }) {
            closeIdleBoards()
            do { try await Task.sleep(for: .milliseconds(Int(interval * 1000))) } catch { return }
        }
    }

    /// Closes every board: what was acknowledged is durable already; this seals the open
    /// segments (so sync can publish them) and releases the writer locks. Connections still
    /// open get no more messages.
    public func close() async {
        let (open, closing, opening) = boards.withLock { boards in
            boards.closed = true
            defer { boards.open.removeAll() }
            return (Array(boards.open.values), Array(boards.closing.values), Array(boards.opening.values))
        }
        for board in open {
            await board.close()
            report(.closed(board.name, why: "the relay stops"))
            if let sharing, let why = await sharing.sync(board.name, journal: FileSystem.join(dataDirectory, board.name.text), open: false) {
                report(.shareFailed(board.name, why: why))
            }
            if let leases { await leases.release(board.name) }
        }
        for task in closing { await task.value }
        // A board opened meanwhile is closed by its own opening, which sees the relay closed.
        for task in opening { _ = await task.value }
        opener.close()
    }
}

/// What a relay reports of its boards (`Relay.observe`).
public enum RelayActivity: Sendable, Equatable {
    /// A board's journal was opened (created if new).
    case opened(BoardName)
    /// A board was closed: its open segments sealed, its lock released; `why` in words.
    case closed(BoardName, why: String)
    /// A sync of a board with the cluster's store failed (`why`); the next one tries again.
    case shareFailed(BoardName, why: String)
    /// The lease service could not be asked for a board's lease (`why`); it was not opened.
    case leaseFailed(BoardName, why: String)
    /// A board's lease lapsed here (a renewal failed, the node was frozen): its connections
    /// were closed with `notOwner` and the board is being closed.
    case leaseLost(BoardName)
}
