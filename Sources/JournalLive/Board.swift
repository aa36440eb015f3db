import JournalCommit
import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage

/// A journal open for live drawing: the object an app holds.
///
/// Threading (see README, "Live boards", and docs/LIVE.md, "The committer and its stream"):
/// - `append` runs on the caller's thread and never touches the disk: the committer gives the
///   event its id and clock and queues it, and the board folds it into the in-memory drawing.
/// - One `Committer` owns every writer of the folder: the board's own replica and the replicas
///   it hosts (`HostedReplicas`, a relay's native clients), one group commit, one seal policy,
///   compaction after each seal, one failure path; `flush()` and `sealNow()` await it.
/// - A watcher thread waits for new segment files (inotify; a timed rescan elsewhere) and an
///   integrator thread reads them outside the lock, then folds them in under it.
/// - What happened is published once, to observers (`observe`): durable seqs, hosted rounds,
///   events sync brought (as decoded), seals and compactions.
/// - The board's shared state lives in one `Locked` value, its observers in another; each
///   lock is held for in-memory work only. The committer's lock is taken before the board's
///   (an append folds under both), never after it.
public final class Board: Sendable {
    public let directory: JournalDirectory
    public let replica: ReplicaID
    public let options: BoardOptions
    /// What opening the journal found and repaired (a torn tail cut, a copied folder).
    public let recovery: RecoveryReport
    private let state: Locked<State>
    /// Group commits, seals and compactions of every writer of the folder.
    private let committer: Committer
    /// Who the board's journal is (its replica, its keys), read once when it opened.
    public var identity: JournalIdentity { committer.identity }
    private let integrator = WorkerThread()
    private let watcherThread = WorkerThread()
    private let watcher: FolderWatcher?
    private let observers = Locked<(next: Int, handlers: [Int: @Sendable (JournalActivity) -> Void])>((0, [:]))
    /// Where the committer's reports go once the board is made (it starts before the board is).
    private let committed = SharedHandler<JournalActivity>()

    struct Subscriber {
        var continuation: AsyncStream<BoardUpdate>.Continuation
        var includesLocal = true
        /// An update was dropped (the app is not reading): it gets a `.reset` next.
        var missedUpdates = false
    }

    struct State {
        var live: LiveReplay
        /// Own events that a reload (which reads the files) might not find yet.
        var ownTail: [Event] = []
        var subscribers: [Int: Subscriber] = [:]
        var nextSubscriber = 0
        var reloadRequested = false
        /// A reload is reading the files: own events must stay in `ownTail` until it is done.
        var reloading = false
        var closed = false
    }

    /// Opens (or creates, with `create`) the journal at `path` and loads its drawing,
    /// starting from the newest snapshot.
    public convenience init(path: String, create: Bool = false, options: BoardOptions = BoardOptions()) throws(JournalError) {
        let directory = create ? try JournalDirectory.openOrCreate(at: path) : try JournalDirectory.open(at: path)
        try self.init(directory: directory, options: options)
    }

    public init(directory: JournalDirectory, options: BoardOptions = BoardOptions()) throws(JournalError) {
        self.directory = directory
        self.options = options
        let committed = committed
        committer = try Committer(directory: directory, policy: options.commit) { activity in committed(activity) }
        replica = committer.replica
        recovery = committer.recovery
        let (live, _) = LiveReplay.load(directory, hostedSegments: false, keepsDrawing: options.keepsDrawing)
        state = Locked(State(live: live))
        if options.watchForSegments {
            try? FileSystem.createDirectory(directory.replicasPath)
            // Without one (no inotify), a timed rescan alone looks for new files.
            watcher = try? FolderWatcher(roots: [directory.replicasPath], depth: 1)
        } else {
            watcher = nil
        }
        committed.set { [weak self] activity in self?.committerDid(activity) }
        if options.watchForSegments { startWatching() }
        committer.requestCompaction(of: replica)
    }

    deinit {
        // `close()` is the way out (it also ends the other threads, which idle until then);
        // this only ends the watcher's wait.
        watcher?.stop()
    }

    // MARK: Drawing

    /// Records one event and folds it into the drawing at once; durable within
    /// `commitDelayMilliseconds` (await `flush()` to know). Never waits for the disk.
    @discardableResult
    public func append(_ payload: Payload) throws(JournalError) -> EventID {
        try record(payload).id
    }

    /// `append`, returning the whole event (its clock and wall time too): what a relay
    /// broadcasts once `whenDurable` says it is durable.
    public func record(_ payload: Payload) throws(JournalError) -> Event {
        var wakeIntegrator = false
        let event = try committer.append(payload) { event in
            wakeIntegrator = state.withLock { state -> Bool in
                var changes: [DrawingChange] = []
                var wake = false
                if (state.live.applyOwn(event, changes: &changes) == .needsReload || state.live.needsReload) && !state.reloadRequested {
                    // Rare (see docs/LIVE.md); the integrator, woken below, reloads.
                    state.reloadRequested = true
                    wake = true
                }
                state.ownTail.append(event)
                if !changes.isEmpty { Self.deliver(BoardUpdate(origin: .local, changes: changes), to: &state) }
                return wake
            }
        }
        if wakeIntegrator { integrator.submit { [weak self] in _ = self?.integrateNewSegments() } }
        return event
    }

    /// Raises the board's clock past events it learned of outside its files (a relay's native
    /// clients), so that its next event follows them (invariant 4).
    public func observe(lamport: UInt64) {
        committer.observe(lamport: lamport)
    }

    /// Returns once every event appended before the call is durable (fsynced).
    public func flush() async throws(JournalError) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, JournalError>, Never>) in
            whenDurable { continuation.resume(returning: $0) }
        }
        try result.get()
    }

    /// Seals now every durable event not yet in a sealed segment: this board's own and its
    /// hosted replicas'. For a relay that acknowledges only what a shared store holds
    /// (`journal serve --ack shared`): it seals, publishes, then acknowledges. Returns the
    /// failure that stopped the journal, if any; a hosted file that could not be sealed stays
    /// open, and its events unpublished, until a later seal.
    ///
    /// Only what was recorded before the call must be sealed: events a pen keeps adding
    /// meanwhile belong to the next seal (counted, they failed every round of a relay whose
    /// clients never paused).
    public func sealNow() async -> SealNowFailure? {
        await committer.sealNow()
    }

    /// Why `sealNow` did not seal everything.
    public typealias SealNowFailure = SealFailure

    /// What `whenDurable` calls: every event appended before it was durable, or the journal failed.
    public typealias DurableNotice = @Sendable (Result<Void, JournalError>) -> Void

    /// Calls `notify` once every event appended before this call is durable (at once, on this
    /// thread, if they are), or with the failure that stopped them. Otherwise it is called on
    /// the committer thread, right after the fsync, with no lock of the board held: keep it
    /// short (the next commit waits for it). For callers that must not pay a task hop per
    /// commit, as a relay acknowledging hundreds of commits a second does; `flush()` is the
    /// same, awaited.
    public func whenDurable(_ notify: @escaping DurableNotice) {
        committer.whenDurable(notify)
    }

    /// The whole drawing now (a copy: O(points) under the lock; prefer `stroke(_:)` for
    /// what an update names). Empty on a board that keeps no drawing (`BoardOptions.keepsDrawing`).
    public var drawing: Drawing { state.withLock { $0.live.drawing.drawing } }

    public func stroke(_ id: StrokeID) -> Drawing.Stroke? { state.withLock { $0.live.drawing.stroke(id) } }

    /// A stroke's place in z-order (0: drawn first).
    public func zIndex(of id: StrokeID) -> Int? { state.withLock { $0.live.drawing.zIndex(of: id) } }

    public var strokeCount: Int { state.withLock { $0.live.drawing.strokeCount } }
    public var pointCount: Int { state.withLock { $0.live.drawing.pointCount } }
    /// Every own event up to this seq is durable.
    public var durableSeq: UInt64 { committer.durableSeq }
    /// Why the board stopped recording (a write or fsync failed: a full disk, no descriptor
    /// left), or nil. Every later append and flush fails with it; what was acknowledged is
    /// durable, and reopening the journal (a new `Board`) cuts what the failed write left.
    public var failure: JournalError? { committer.failure }
    /// Seq ranges of every replica folded into the drawing.
    public var covered: [ReplicaID: SeqRanges] { state.withLock { $0.live.covered } }
    /// Who may draw, as of the last load (nil or open: a board without membership). A new
    /// statement makes the board reload (`JournalActivity.reloaded`), which updates it.
    public var membership: Membership? { state.withLock { $0.live.membership } }
    /// Whether a membership decides who draws (a board that has one and is not open): asked
    /// for every frame a relay takes, so the membership is not copied out to answer it.
    public var membershipDecides: Bool { state.withLock { $0.live.membership.map { !$0.isOpen } ?? false } }

    /// The drawing as it is (one `.current` update, `[.reset]`), then every change from now on,
    /// one batch per append or integration. An app that stops reading misses nothing silently:
    /// once its buffer fills, changes are dropped and the next one it can take is a `.reset`
    /// (redraw everything). Without `includingLocal`, the board's own appends are left out (a
    /// reader that only wants what sync brings is then not woken for every pen point).
    public func updates(bufferingLimit: Int = 4096, includingLocal: Bool = true) -> AsyncStream<BoardUpdate> {
        let (stream, continuation) = AsyncStream<BoardUpdate>.makeStream(bufferingPolicy: .bufferingOldest(bufferingLimit))
        let key = state.withLock { state -> Int in
            if state.closed {
                continuation.finish()
                return -1
            }
            let key = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[key] = Subscriber(continuation: continuation, includesLocal: includingLocal)
            // Under the lock that every delivery takes: no change falls between this and the next.
            continuation.yield(BoardUpdate(origin: .current, changes: [.reset]))
            return key
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) != nil }
        }
        return stream
    }

    private static func deliver(_ update: BoardUpdate, to state: inout State) {
        for (key, var subscriber) in state.subscribers where subscriber.includesLocal || update.origin != .local {
            if subscriber.missedUpdates {
                guard case .enqueued = subscriber.continuation.yield(BoardUpdate(origin: .reload, changes: [.reset])) else { continue }
                subscriber.missedUpdates = false
                state.subscribers[key] = subscriber
                continue
            }
            if case .dropped = subscriber.continuation.yield(update) {
                subscriber.missedUpdates = true
                state.subscribers[key] = subscriber
            }
        }
    }

    // MARK: Observers

    /// Calls `handler` with everything that happens to the journal from now on
    /// (`JournalActivity`), until `stopObserving`. It runs on the committer thread (durable
    /// seqs, hosted rounds, seals), the integrator thread (events sync brought, reloads) or the
    /// compaction thread, with no lock of the board held, in the order each thread saw things:
    /// keep it short, for the thread's next commit or integration waits for it. Nothing is
    /// buffered and nothing is dropped, which is what a follower that must not miss an event
    /// needs (an app that redraws wants `updates`).
    @discardableResult
    public func observe(_ handler: @escaping @Sendable (JournalActivity) -> Void) -> Int {
        observers.withLock { observers -> Int in
            observers.next += 1
            observers.handlers[observers.next] = handler
            return observers.next
        }
    }

    public func stopObserving(_ token: Int) {
        _ = observers.withLock { $0.handlers.removeValue(forKey: token) }
    }

    private func publish(_ activity: JournalActivity) {
        let handlers = observers.withLock { Array($0.handlers.values) }
        for handler in handlers { handler(activity) }
    }

    /// What the committer did: the board's own part (own events durable need not wait in
    /// `ownTail`; an own seal may hold a file the watcher saw before its name was known), then
    /// every observer's.
    private func committerDid(_ activity: JournalActivity) {
        switch activity {
        case .durable(let durable):
            state.withLock { state in
                // Durable events are in the files a reload reads: no need to keep them here.
                // (Not while a reload reads the files: it needs every event it may not have read.)
                guard !state.reloading else { return }
                if let kept = state.ownTail.firstIndex(where: { $0.id.seq > durable }) {
                    state.ownTail.removeFirst(kept)
                } else {
                    state.ownTail.removeAll(keepingCapacity: true)
                }
            }
        case .sealed(let sealed) where sealed.contains(where: { $0.replica == replica }):
            // A look at the journal right away: the watcher may have woken before the name
            // was known, and the file was then left for later.
            integrator.submit { [weak self] in _ = self?.integrateNewSegments() }
        default:
            break
        }
        publish(activity)
    }

    // MARK: Hosted replicas

    // The replicas this board stores for others (a relay's native clients, docs/PROTOCOL.md
    // "Native mode"), under their own ids, committed and sealed by the board's committer.

    /// Stores `events` of a hosted replica (checked by the caller: consecutive runs that follow
    /// what the journal holds) in the next group commit, as one batch of `submitter`'s; the
    /// round is published as `.hosted` once durable (or failed).
    public func host(_ events: [Event], of replica: ReplicaID, from submitter: Int) throws(JournalError) {
        try committer.host(events, of: replica, from: submitter)
    }

    /// The first step of `host`, for a caller that stages under a lock of its own (so that
    /// what it accepted and what is staged never disagree). Returns true when the caller must
    /// then call `commitHostedSoon()`, after releasing that lock (a commit may run on its
    /// thread).
    public func stageHosted(_ events: [Event], of replica: ReplicaID, from submitter: Int) throws(JournalError) -> Bool {
        try committer.stageHosted(events, of: replica, from: submitter)
    }

    /// The second step of `host`: asks the committer for the group commit of what is staged.
    public func commitHostedSoon() {
        committer.commitHostedSoon()
    }

    /// Drops what is staged of `replica` (its batches still settle with the next round):
    /// events accepted after a round of the replica failed would follow a hole.
    public func unstageHosted(_ replica: ReplicaID) {
        committer.unstageHosted(replica)
    }

    /// Seqs durable in the hosted files, per replica.
    public var hostedStored: [ReplicaID: SeqRanges] { committer.hostedStored }

    /// The hosted open segments as they are now, every byte of them fsynced.
    public func scanHosted() -> (scans: [ScannedSegment], problems: [Problem]) {
        committer.scanHosted()
    }

    /// Takes over hosted open segments a previous run left, sealing them (before the board
    /// takes connections). Returns the seqs found in them: durable, so held.
    public func recoverHostedLeftovers() -> [ReplicaID: SeqRanges] {
        committer.recoverHostedLeftovers()
    }

    // MARK: Segments from other machines (the watcher and integrator threads)

    private func startWatching() {
        guard let watcher else {
            // No notifications (inotify exhausted, or not Linux): the timed rescan alone.
            scheduleRescan()
            return
        }
        let interval = options.rescanIntervalSeconds
        watcherThread.submit { [weak self] in
            while true {
                // A wait on the watcher's descriptor, which `close()` (through `stop()`) ends.
                guard watcher.wait(timeoutSeconds: interval) != .stopped else { return }
                watcher.rescan()
                guard let board = self, !board.state.withLock({ $0.closed }) else { return }
                board.integrator.submit { [weak board] in _ = board?.integrateNewSegments() }
            }
        }
    }

    /// A look at the folder every `rescanIntervalSeconds`, a deadline on the integrator's loop.
    private func scheduleRescan() {
        integrator.submit(after: options.rescanIntervalSeconds) { [weak self] in
            guard let self, !self.state.withLock({ $0.closed }) else { return }
            _ = self.integrateNewSegments()
            self.scheduleRescan()
        }
    }

    /// Folds in the segments that appeared in the journal since the last look (sync put
    /// them there). Returns the number of events that changed the drawing's input.
    @discardableResult
    public func refresh() async -> Int {
        // After close there is nothing to fold into (and no thread should start again).
        guard !state.withLock({ $0.closed }) else { return 0 }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            integrator.submit { [weak self] in continuation.resume(returning: self?.integrateNewSegments() ?? 0) }
        }
    }

    /// Runs on the integrator thread only, so integrations never overlap.
    private func integrateNewSegments() -> Int {
        let look = state.withLock { state -> (cursor: LiveReplay.Cursor, reload: Bool)? in
            guard !state.closed else { return nil }
            return (state.live.readCursor, state.reloadRequested || state.live.needsReload)
        }
        guard let look else { return 0 }
        if !look.reload {
            // Read after the cursor: a file sealed since is named here, or its seal is in flight.
            let own = committer.ownSealedFiles()
            let increment = LiveReplay.readNew(directory, after: look.cursor, own: replica, ownSealed: own.names,
                                               ownSealInFlight: own.sealInFlight)
            if increment.isEmpty { return 0 }
            let integrated = state.withLock { state -> [Event]? in
                guard !state.closed else { return [] }
                var changes: [DrawingChange] = []
                // What observers hear of: the events the board did not hold (own events an
                // append applied meanwhile are in the increment too).
                var fresh: [Event] = []
                guard state.live.integrate(increment, changes: &changes, applied: &fresh) else { return nil }
                // A board without a drawing has no changes to name, and its subscribers (a
                // relay's forwarding) still need to know that events arrived.
                if !changes.isEmpty || (!options.keepsDrawing && !increment.events.isEmpty) {
                    Self.deliver(BoardUpdate(origin: .remote, changes: changes.coalesced()), to: &state)
                }
                return fresh
            }
            if let integrated {
                // Causality (invariant 4): what this board records next follows what it saw.
                if let newest = increment.events.map(\.lamport).max() { committer.observe(lamport: newest) }
                if !integrated.isEmpty { publish(.integrated(integrated)) }
                if increment.membership != nil { publish(.membershipChanged) }
                return increment.events.count
            }
        }
        let count = reloadFromJournal()
        publish(.reloaded)
        return count
    }

    /// Rebuilds the drawing from the files (outside the lock), with the own events the files
    /// may not hold yet. The answer of last resort, exact by construction.
    ///
    /// No seal starts while it runs (a seal renames the open segment, and a load that listed
    /// the sealed files before the rename and opened the open segment after it would miss
    /// those events), and own events stay in `ownTail` until it is done.
    private func reloadFromJournal() -> Int {
        committer.pauseSeals()
        var tail = state.withLock { state -> [Event] in
            state.reloading = true
            return state.ownTail
        }
        var newest: UInt64 = 0
        defer {
            state.withLock { $0.reloading = false }
            // Causality (invariant 4): what this board records next follows what it now shows.
            committer.observe(lamport: newest)
            committer.resumeSeals()
        }
        for attempt in 0..<3 {
            let last = attempt == 2
            // The last attempt holds the lock throughout: no append can slip in between.
            let (fresh, report): (LiveReplay?, ReplayReport) = last
                ? (nil, ReplayReport())
                : LiveReplay.load(directory, useSnapshots: false, extra: tail, hostedSegments: false, keepsDrawing: options.keepsDrawing)
            let count = state.withLock { state -> Int? in
                guard !state.closed else { return 0 }
                var live: LiveReplay
                var loaded = report
                if let fresh {
                    live = fresh
                    var ignored: [DrawingChange] = []
                    // Appended while the files were read: they follow every own event, but
                    // may sort inside a stroke the load brought in; then load again with them.
                    for event in state.ownTail where live.covered[replica]?.contains(event.id.seq) != true {
                        guard live.applyOwn(event, changes: &ignored) == .applied else { return nil }
                    }
                } else {
                    (live, loaded) = LiveReplay.load(
                        directory, useSnapshots: false, extra: state.ownTail, hostedSegments: false, keepsDrawing: options.keepsDrawing)
                }
                state.live = live
                state.reloadRequested = false
                newest = loaded.maxLamport
                Self.deliver(BoardUpdate(origin: .reload, changes: [.reset]), to: &state)
                return loaded.eventCount
            }
            if let count { return count }
            tail = state.withLock { $0.ownTail }
        }
        return 0
    }

    // MARK: Closing

    /// Makes everything durable, seals the open segment (so sync can publish it), releases
    /// the writer lock and ends every update stream.
    public func close() async throws(JournalError) {
        watcher?.stop()
        let outcome = await committer.close()
        let streams = state.withLock { state -> [AsyncStream<BoardUpdate>.Continuation] in
            state.closed = true
            defer { state.subscribers.removeAll() }
            return state.subscribers.values.map(\.continuation)
        }
        // Outside the lock: finishing a stream runs its termination handler, which locks.
        for stream in streams { stream.finish() }
        integrator.stop()
        watcherThread.stop()
        try outcome.get()
    }
}
