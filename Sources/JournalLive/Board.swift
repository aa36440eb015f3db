import Dispatch
import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage

/// How a live board commits, seals and looks for new segments.
public struct BoardOptions: Sendable {
    /// Group commit: pending events are made durable this long after the first of them
    /// was appended (one fsync for every event of the window).
    public var commitDelayMilliseconds: Int
    /// Seal the open segment after this long without an append, so that `journal sync`
    /// (which cannot seal while the board holds the writer lock) can publish the strokes.
    /// Nil: seal only when the segment is full or the board closes.
    public var sealAfterIdleMilliseconds: Int?
    /// Seal at the latest this long after the first unsealed event, even while drawing goes
    /// on without a pause: the bound on how late other machines see a stroke. Each seal is a
    /// small file; sealing less often means fewer, larger ones.
    public var sealAfterMilliseconds: Int
    /// Each seal's `sealAfterMilliseconds` deadline is drawn at random between (1 - spread)
    /// and 1 times it. Boards that start together (a relay's, after a restart) would otherwise
    /// seal together every period, and their summed seals stall every board's acks at once.
    public var sealSpread: Double
    /// Seal the open segment once it holds this many events.
    public var sealEveryEvents: Int
    /// Look for new segments at least this often, notification or not (a shared folder on
    /// NFS notifies nobody; where inotify works this is only a safety net).
    public var rescanIntervalSeconds: Double
    /// Watch the journal for segments that sync brings in (off: only `refresh()` does).
    public var watchForSegments: Bool
    /// Fold events into a drawing (`drawing`, `stroke(_:)`, the changes in updates). Off, the
    /// board tracks only which events it holds (`covered`): its memory does not grow with the
    /// journal, its drawing reads empty, and an update from sync carries no changes. A relay's
    /// boards, which send events and never read a drawing, keep none (invariant 13).
    public var keepsDrawing: Bool
    /// Compact the board's sealed segments in the background after each seal
    /// (`BackgroundCompaction`, docs/FORMAT.md §16.5): a board seals a small file at every pause.
    public var automaticCompaction: Bool

    public init(commitDelayMilliseconds: Int = 5, sealAfterIdleMilliseconds: Int? = 300, sealAfterMilliseconds: Int = 500,
                sealSpread: Double = 0, sealEveryEvents: Int = 262_144,
                rescanIntervalSeconds: Double = 2, watchForSegments: Bool = true, keepsDrawing: Bool = true,
                automaticCompaction: Bool = true) {
        self.automaticCompaction = automaticCompaction
        self.commitDelayMilliseconds = max(0, commitDelayMilliseconds)
        self.sealAfterIdleMilliseconds = sealAfterIdleMilliseconds
        self.sealAfterMilliseconds = max(0, sealAfterMilliseconds)
        self.sealSpread = sealSpread.isFinite ? min(1, max(0, sealSpread)) : 0
        self.sealEveryEvents = sealEveryEvents
        self.rescanIntervalSeconds = max(0.05, rescanIntervalSeconds)
        self.watchForSegments = watchForSegments
        self.keepsDrawing = keepsDrawing
    }
}

extension BoardOptions {
    /// A relay's boards (`journal serve`): sealed 1 s after a pause and at the latest 5 s after
    /// the first unsealed event, not 0.3 s and 0.5 s. Many clients draw there without a common
    /// pause, and each seal is a file that every reader lists from then on: at 0.5 s, 20 boards
    /// under 240 Hz pens spend a fifth of the relay's CPU sealing (docs/history/PERFORMANCE-RUNS.md, "Third run").
    /// Other machines see a board's strokes that much later through sync; its clients, at once.
    /// Deadlines spread over 3.5–5 s: 50 boards sealing in step every 5 s stall every ack for
    /// up to 0.4 s (docs/history/PERFORMANCE-RUNS.md, "Fifth run").
    public static var relay: BoardOptions {
        BoardOptions(sealAfterIdleMilliseconds: 1000, sealAfterMilliseconds: 5000, sealSpread: 0.3, keepsDrawing: false)
    }

    /// One seal's `sealAfterMilliseconds`, in seconds, drawn within `sealSpread`.
    public func drawSealAge() -> Double {
        let age = Double(sealAfterMilliseconds) / 1000
        return sealSpread > 0 ? age * Double.random(in: (1 - sealSpread)...1) : age
    }
}

/// What changed on a board, as one batch an app redraws from.
public struct BoardUpdate: Sendable, Equatable {
    public enum Origin: Sendable, Equatable {
        /// Events appended on this board.
        case local
        /// Segments that arrived from other machines (through sync).
        case remote
        /// The drawing was rebuilt from the journal (`changes` is `[.reset]`).
        case reload
        /// The drawing as it was when `updates()` was called (`changes` is `[.reset]`): the
        /// first update of every stream. A reader draws the whole board, then applies what
        /// follows, so it misses nothing whichever runs first, `updates()` or an `append`.
        case current
    }
    public var origin: Origin
    public var changes: [DrawingChange]

    public init(origin: Origin, changes: [DrawingChange]) {
        self.origin = origin
        self.changes = changes
    }
}

/// A journal open for live drawing: the object an app holds.
///
/// Threading (see README, "Live boards", and docs/LIVE.md, "The committer and its stream"):
/// - `append` runs on the caller's thread and never touches the disk: it assigns the
///   event's id and clock, folds it into the in-memory drawing and queues it.
/// - One committer owns every writer of the folder: the board's own replica and the replicas
///   it hosts (`HostedReplicas`, a relay's native clients). Its thread is a deadline loop
///   (`WorkerThread.submit(at:)`): one group commit for all of them (`commitDelayMilliseconds`),
///   one seal policy (after a pause, at an age, at a size), compaction requested after each
///   seal, one failure path; `flush()` awaits it.
/// - A watcher thread waits for new segment files (inotify; the committer's timed rescan
///   elsewhere) and an integrator thread reads them outside the lock, then folds them in
///   under it.
/// - What happened is published once, to observers (`observe`): durable seqs, hosted rounds,
///   events sync brought (as decoded), seals and compactions.
/// - The board's shared state lives in one `Locked` value, its observers in another; each
///   lock is held for in-memory work only (the seal and the fsync run outside it).
public final class Board: Sendable {
    public let directory: JournalDirectory
    public let replica: ReplicaID
    public let options: BoardOptions
    /// What opening the journal found and repaired (a torn tail cut, a copied folder).
    public let recovery: RecoveryReport
    private let state: Locked<State>
    /// The committer: group commits, seals and the deadlines that start them.
    private let committer = WorkerThread()
    private let integrator = WorkerThread()
    private let watcherThread = WorkerThread()
    private let watcher: FolderWatcher?
    /// The replicas this board stores for others (a relay's native clients), committed here.
    package let hosted: HostedReplicas
    private let observers = Locked<(next: Int, handlers: [Int: @Sendable (JournalActivity) -> Void])>((0, [:]))
    /// A test's fault hook where the board was opened: the committer's writes and fsyncs run
    /// on a thread of the board's own, which the test's task-local hook does not reach.
    private let faultHook = FaultInjection.current

    struct Subscriber {
        var continuation: AsyncStream<BoardUpdate>.Continuation
        var includesLocal = true
        /// An update was dropped (the app is not reading): it gets a `.reset` next.
        var missedUpdates = false
    }

    struct State {
        var writer: JournalWriter?
        var live: LiveReplay
        /// Own events that a reload (which reads the files) might not find yet.
        var ownTail: [Event] = []
        var durableSeq: UInt64
        var failure: JournalError?
        var commitScheduled = false
        var idleSealScheduled = false
        var lastAppend = 0.0
        /// When the oldest event not yet in a sealed segment was appended.
        var unsealedSince: Double?
        var waiters: [(seq: UInt64, notify: DurableNotice)] = []
        var subscribers: [Int: Subscriber] = [:]
        var nextSubscriber = 0
        var reloadRequested = false
        /// A reload is reading the files: own events must stay in `ownTail`, and no seal may
        /// start, until it is done.
        var reloading = false
        /// A seal is being written: a reload waits for it (`sealEnded`).
        var sealInFlight = false
        var sealEnded: [DispatchSemaphore] = []
        /// When the committer looks at the hosted files next (seal, close), if it will.
        var hostedCheckAt: Double?
        /// A compaction was asked for: close waits for it.
        var compactionRequested = false
        /// A seal was due during a reload: it runs when the reload is done.
        var sealDeferred = false
        /// Sealed files this board wrote ("replica/name"): its own events, already folded.
        var ownSealed: Set<String> = []
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
        // The board decides when to commit; the writer never flushes on its own.
        // Compaction too: the committer asks for it after each seal, of every replica it writes.
        let writer = try JournalWriter(directory: directory, options: WriterOptions(
            flushEveryEvents: Int.max, flushIntervalMilliseconds: nil, sealEveryEvents: options.sealEveryEvents,
            sealOnClose: true, automaticCompaction: false))
        replica = writer.replica
        recovery = writer.recovery
        hosted = HostedReplicas(directory: directory, options: options)
        let (live, _) = LiveReplay.load(directory, hostedSegments: false, keepsDrawing: options.keepsDrawing)
        state = Locked(State(writer: writer, live: live, durableSeq: writer.durableSeq))
        if options.watchForSegments {
            try? FileSystem.createDirectory(directory.replicasPath)
            // Without one (no inotify), the committer's timed rescan alone looks for new files.
            watcher = try? FolderWatcher(roots: [directory.replicasPath], depth: 1)
            startWatching()
        } else {
            watcher = nil
        }
        requestCompaction(of: replica)
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
        let (event, scheduleCommit, wakeIntegrator) = try state.withLock { state throws(JournalError) -> (Event, Bool, Bool) in
            guard let writer = state.writer, !state.closed else { throw .closed }
            if let failure = state.failure { throw failure }
            let event = try writer.appendEvent(payload)
            var changes: [DrawingChange] = []
            var wake = false
            if (state.live.applyOwn(event, changes: &changes) == .needsReload || state.live.needsReload) && !state.reloadRequested {
                // Rare (see docs/LIVE.md); the integrator, woken below, reloads.
                state.reloadRequested = true
                wake = true
            }
            state.ownTail.append(event)
            state.lastAppend = ProcessInfoLite.monotonicSeconds()
            if state.unsealedSince == nil { state.unsealedSince = state.lastAppend }
            if !changes.isEmpty { Self.deliver(BoardUpdate(origin: .local, changes: changes), to: &state) }
            let schedule = !state.commitScheduled
            state.commitScheduled = true
            return (event, schedule, wake)
        }
        if scheduleCommit { scheduleCommitJob(delayed: true) }
        if wakeIntegrator { integrator.submit { [weak self] in _ = self?.integrateNewSegments() } }
        return event
    }

    /// Raises the board's clock past events it learned of outside its files (a relay's native
    /// clients), so that its next event follows them (invariant 4).
    public func observe(lamport: UInt64) {
        state.withLock { $0.writer?.observe(lamport: lamport) }
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
        if state.withLock({ $0.closed }) { return .journal(.closed) }
        let recorded = state.withLock { ($0.writer?.nextSeq ?? 1) - 1 }
        return await withCheckedContinuation { (continuation: CheckedContinuation<SealNowFailure?, Never>) in
            // On the committer, behind the commits queued before: what they make durable is sealed too.
            committer.submit { [weak self] in
                guard let self else { return continuation.resume(returning: .journal(.closed)) }
                self.commit(seal: true)
                let sealed = FaultInjection.withThreadHook(self.faultHook) { self.hosted.sealOpen() }
                self.afterHostedSeals(sealed)
                // A seal can be put off (a reload reading the files) or fail without stopping
                // the journal (a full disk): then something durable is still unsealed, and
                // whoever asked must not take this seal for one.
                let (failure, ownUnsealed) = self.state.withLock { ($0.failure, $0.writer?.unsealedEvents(through: recorded) ?? 0) }
                if let failure { return continuation.resume(returning: .journal(failure)) }
                let hostedUnsealed = self.hosted.unsealedEvents()
                if ownUnsealed + hostedUnsealed > 0 {
                    return continuation.resume(returning: .stillUnsealed(own: ownUnsealed, hosted: hostedUnsealed))
                }
                continuation.resume(returning: nil)
            }
        }
    }

    /// Why `sealNow` did not seal everything.
    public enum SealNowFailure: Error, Sendable, CustomStringConvertible {
        case journal(JournalError)
        /// Events still unsealed after the seal: the board's own, and hosted ones (or hosted
        /// files with events that this board does not write now).
        case stillUnsealed(own: Int, hosted: Int)

        public var description: String {
            switch self {
            case .journal(let error): return error.description
            case .stillUnsealed(let own, let hosted):
                return "\(own) event(s) of the board's own and \(hosted) hosted event(s) or file(s) are still unsealed (a seal was put off or failed); tried again"
            }
        }
    }

    /// What `whenDurable` calls: every event appended before it was durable, or the journal failed.
    public typealias DurableNotice = @Sendable (Result<Void, JournalError>) -> Void

    /// Calls `notify` once every event appended before this call is durable (at once, on this
    /// thread, if they are), or with the failure that stopped them. Otherwise it is called on
    /// the committer thread, right after the fsync, with no lock of the board held: keep it
    /// short (the next commit waits for it). For callers that must not pay a task hop per
    /// commit, as a relay acknowledging hundreds of commits a second does; `flush()` is the
    /// same, awaited.
    public func whenDurable(_ notify: @escaping DurableNotice) {
        let (now, schedule) = state.withLock { state -> (Result<Void, JournalError>?, Bool) in
            if let failure = state.failure { return (.failure(failure), false) }
            let target = (state.writer?.nextSeq ?? 1) - 1
            guard state.durableSeq < target else { return (.success(()), false) }
            state.waiters.append((target, notify))
            let schedule = !state.commitScheduled
            state.commitScheduled = true
            return (nil, schedule)
        }
        if let now { notify(now) }
        if schedule { scheduleCommitJob(delayed: false) }
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
    public var durableSeq: UInt64 { state.withLock { $0.durableSeq } }
    /// Why the board stopped recording (a write or fsync failed: a full disk, no descriptor
    /// left), or nil. Every later append and flush fails with it; what was acknowledged is
    /// durable, and reopening the journal (a new `Board`) cuts what the failed write left.
    public var failure: JournalError? { state.withLock { $0.failure } }
    /// Seq ranges of every replica folded into the drawing.
    public var covered: [ReplicaID: SeqRanges] { state.withLock { $0.live.covered } }
    /// Who may draw, as of the last load (nil or open: a board without membership). A new
    /// statement makes the board reload (`JournalActivity.reloaded`), which updates it.
    public var membership: Membership? { state.withLock { $0.live.membership } }

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

    // MARK: Hosted replicas

    /// Stores `events` of a hosted replica (checked by the caller: consecutive runs that follow
    /// what the journal holds) in the next group commit, as one batch of `submitter`'s; the
    /// round is published as `.hosted` once durable (or failed).
    package func host(_ events: [Event], of replica: ReplicaID, from submitter: Int) throws(JournalError) {
        if try hosted.stage(events, of: replica, from: submitter) { commitHostedSoon() }
    }

    /// The second step of `host`, for a caller that stages (`hosted.stage`) under a lock of its
    /// own: called after that lock is released, when staging returned true. A commit can run on
    /// the caller (a process out of threads), and it publishes the round.
    package func commitHostedSoon() {
        let schedule = state.withLock { state -> Bool in
            defer { state.commitScheduled = true }
            return !state.commitScheduled
        }
        if schedule { scheduleCommitJob(delayed: true) }
    }

    /// Takes over hosted open segments a previous run left, sealing them (before the board
    /// takes connections). Returns the seqs found in them: durable, so held.
    package func recoverHostedLeftovers() -> [ReplicaID: SeqRanges] {
        let (found, sealed) = hosted.recoverLeftovers()
        for replica in sealed { requestCompaction(of: replica) }
        return found
    }

    /// Looks at the hosted files when the next of them is due to be sealed or closed.
    private func scheduleHostedCheck(at due: Double) {
        let schedule = state.withLock { state -> Bool in
            guard !state.closed, state.hostedCheckAt.map({ due < $0 }) ?? true else { return false }
            state.hostedCheckAt = due
            return true
        }
        guard schedule else { return }
        let queued = committer.submit(at: due) { [weak self] in
            guard let self else { return }
            let now = ProcessInfoLite.monotonicSeconds()
            let scheduled = self.state.withLock { state -> Bool in
                // Superseded by an earlier check, or the board closed: that one (or close) does it.
                guard !state.closed, let at = state.hostedCheckAt, at <= now else { return false }
                state.hostedCheckAt = nil
                return true
            }
            guard scheduled else { return }
            let (sealed, next) = FaultInjection.withThreadHook(self.faultHook) { self.hosted.sealDue(now: now) }
            self.afterHostedSeals(sealed)
            if let next { self.scheduleHostedCheck(at: next) }
        }
        // Refused (the board is closing, or no thread could start): a later check may ask again.
        if !queued { state.withLock { $0.hostedCheckAt = nil } }
    }

    private func afterHostedSeals(_ sealed: [SealedSegment]) {
        guard !sealed.isEmpty else { return }
        publish(.sealed(sealed))
        for replica in Set(sealed.map(\.replica)) { requestCompaction(of: replica) }
    }

    /// After a seal, and once at open: the committer is the folder's one compaction scheduler.
    private func requestCompaction(of replica: ReplicaID) {
        guard options.automaticCompaction else { return }
        state.withLock { $0.compactionRequested = true }
        BackgroundCompaction.request(directory, replica: replica) { [weak self] report in
            guard !report.covers.isEmpty || !report.retired.isEmpty else { return }
            self?.publish(.compacted(report))
        }
    }

    // MARK: Durability (the committer thread)

    private func scheduleCommitJob(delayed: Bool) {
        let delay = delayed ? options.commitDelayMilliseconds : 0
        let job: @Sendable () -> Void = { [weak self] in self?.commit(seal: false) }
        // A deadline on the committer's loop, not a sleep on it: a seal due meanwhile runs.
        if delay == 0 || !committer.submit(after: Double(delay) / 1000, job) { committer.submit(job) }
    }

    /// Makes what is pending durable (and seals, when asked or when the open segment is
    /// full), then wakes the waiters. The board decides every seal (the writer's own policy
    /// is off), so that it knows which sealed files under its id are its own, and so that no
    /// seal renames the open segment while a reload reads it.
    private func commit(seal requested: Bool) {
        FaultInjection.withThreadHook(faultHook) { commitNow(seal: requested) }
    }

    private func commitNow(seal requested: Bool) {
        var failed = DueWaiters()
        let (ticket, sealing) = state.withLock { state -> (FlushTicket?, Bool) in
            if !requested { state.commitScheduled = false }
            guard let writer = state.writer, state.failure == nil else { return (nil, false) }
            var seal = requested || writer.unsealedEvents >= options.sealEveryEvents
            if seal && state.reloading {
                seal = false
                state.sealDeferred = true
            }
            do throws(JournalError) {
                let ticket = try writer.startFlush(seal: seal, sealWhenFull: false)
                if ticket != nil && seal { state.sealInFlight = true }
                return (ticket, seal && ticket != nil)
            } catch {
                state.failure = error
                failed = Self.dueWaiters(&state)
                return (nil, false)
            }
        }
        failed.notifyAll()
        // The fsync (and a seal) happen here, with the lock free: appends go on meanwhile.
        ticket?.run()
        // The hosted replicas' events of the same window: one group commit for the folder.
        let hostedCommit = hosted.hasStaged ? hosted.commitStaged() : nil
        if let hostedCommit { finishHosted(hostedCommit.round, sealed: hostedCommit.sealed) }
        guard let ticket else { return }
        var due = DueWaiters()
        let (again, idle, sealed, durable) = state.withLock { state -> (Bool, Bool, [SealedSegment], UInt64) in
            guard let writer = state.writer else { return (false, false, [], 0) }
            var sealEnded: [DispatchSemaphore] = []
            if sealing {
                state.sealInFlight = false
                swap(&sealEnded, &state.sealEnded)
            }
            defer { for waiter in sealEnded { waiter.signal() } }
            do throws(JournalError) {
                try writer.finishFlush(ticket)
                state.durableSeq = max(state.durableSeq, ticket.throughSeq)
                // Durable events are in the files a reload reads: no need to keep them here.
                // (Not while a reload reads the files: it needs every event it may not have read.)
                let durable = state.reloading ? 0 : state.durableSeq
                if let kept = state.ownTail.firstIndex(where: { $0.id.seq > durable }) {
                    state.ownTail.removeFirst(kept)
                } else {
                    state.ownTail.removeAll(keepingCapacity: true)
                }
                // Events appended while the seal ran are in the next open segment.
                if sealing { state.unsealedSince = writer.unsealedEvents > 0 ? ProcessInfoLite.monotonicSeconds() : nil }
            } catch {
                state.failure = error
            }
            let names = writer.takeSealedNames()
            for name in names { state.ownSealed.insert(name.relativePath(in: replica)) }
            due = Self.dueWaiters(&state)
            // Events appended during the flush, with a waiter: commit them without delay.
            let again = !state.waiters.isEmpty && !state.commitScheduled
            if again { state.commitScheduled = true }
            let idle = options.sealAfterIdleMilliseconds != nil && !state.idleSealScheduled && !sealing
            if idle { state.idleSealScheduled = true }
            return (again, idle, names.map { SealedSegment(replica: replica, name: $0) }, state.failure == nil ? state.durableSeq : 0)
        }
        due.notifyAll()
        if durable > 0 { publish(.durable(throughSeq: durable)) }
        if again { scheduleCommitJob(delayed: false) }
        if idle, let wait = options.sealAfterIdleMilliseconds { scheduleIdleSeal(after: wait) }
        if !sealed.isEmpty {
            publish(.sealed(sealed))
            requestCompaction(of: replica)
            // A look at the journal right away: the watcher may have woken before the name was
            // known, and the file was then left for later.
            integrator.submit { [weak self] in _ = self?.integrateNewSegments() }
        }
    }

    /// A hosted round is durable (or failed): the clock follows it (invariant 4), it is
    /// published, and the files' next seal or close is scheduled.
    private func finishHosted(_ round: HostedRound, sealed: [SealedSegment]) {
        if let newest = round.stored.values.joined().map(\.lamport).max() {
            state.withLock { $0.writer?.observe(lamport: newest) }
        }
        publish(.hosted(round))
        afterHostedSeals(sealed)
        if !round.stored.isEmpty {
            let (more, next) = hosted.sealDue(now: ProcessInfoLite.monotonicSeconds())
            afterHostedSeals(more)
            if let next { scheduleHostedCheck(at: next) }
        }
    }

    /// Waiters whose events are durable (or failed), taken out under the lock and notified
    /// after it: a notice may append, flush or lock other things.
    struct DueWaiters {
        var notices: [DurableNotice] = []
        var outcome: Result<Void, JournalError> = .success(())

        func notifyAll() {
            for notify in notices { notify(outcome) }
        }
    }

    private static func dueWaiters(_ state: inout State) -> DueWaiters {
        if let failure = state.failure {
            defer { state.waiters.removeAll() }
            return DueWaiters(notices: state.waiters.map(\.notify), outcome: .failure(failure))
        }
        let durable = state.durableSeq
        var due = DueWaiters()
        state.waiters.removeAll { waiter in
            guard waiter.seq <= durable else { return false }
            due.notices.append(waiter.notify)
            return true
        }
        return due
    }

    /// Seals the open segment after a pause in drawing, or once its oldest event is
    /// `sealAfterMilliseconds` old, so that sync can publish it: a deadline on the committer's
    /// loop, moved on while drawing goes on.
    private func scheduleIdleSeal(after idleMilliseconds: Int) {
        let idle = Double(idleMilliseconds) / 1000
        let maxAge = options.drawSealAge()
        committer.submit { [weak self] in self?.idleSealCheck(idle: idle, maxAge: maxAge) }
    }

    private func idleSealCheck(idle: Double, maxAge: Double) {
        enum Next: Sendable { case wait(Double), seal, done }
        let next = state.withLock { state -> Next in
            guard !state.closed, (state.writer?.unsealedEvents ?? 0) > 0 || state.unsealedSince != nil else {
                state.idleSealScheduled = false
                return .done
            }
            let now = ProcessInfoLite.monotonicSeconds()
            let since = state.unsealedSince ?? now
            let due = min(state.lastAppend + idle, since + maxAge)
            guard due <= now else { return .wait(due) }
            state.idleSealScheduled = false
            return .seal
        }
        switch next {
        case .done: return
        case .seal: commit(seal: true)
        case .wait(let due):
            let queued = committer.submit(at: due) { [weak self] in self?.idleSealCheck(idle: idle, maxAge: maxAge) }
            if !queued { state.withLock { $0.idleSealScheduled = false } }
        }
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

    /// A look at the folder every `rescanIntervalSeconds`, a deadline on the committer's loop.
    private func scheduleRescan() {
        committer.submit(after: options.rescanIntervalSeconds) { [weak self] in
            guard let self, !self.state.withLock({ $0.closed }) else { return }
            self.integrator.submit { [weak self] in _ = self?.integrateNewSegments() }
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
        struct Look: Sendable {
            var cursor: LiveReplay.Cursor
            var reload: Bool
            var ownSealed: Set<String>
            var sealInFlight: Bool
        }
        let look = state.withLock { state -> Look? in
            guard !state.closed else { return nil }
            return Look(cursor: state.live.readCursor, reload: state.reloadRequested || state.live.needsReload,
                        ownSealed: state.ownSealed, sealInFlight: state.sealInFlight)
        }
        guard let look else { return 0 }
        if !look.reload {
            let increment = LiveReplay.readNew(directory, after: look.cursor, own: replica, ownSealed: look.ownSealed,
                                               ownSealInFlight: look.sealInFlight)
            if increment.isEmpty { return 0 }
            let integrated = state.withLock { state -> [Event]? in
                guard !state.closed else { return [] }
                var changes: [DrawingChange] = []
                // What observers hear of: the events the board did not hold (own events an
                // append applied meanwhile are in the increment too).
                var fresh: [Event] = []
                guard state.live.integrate(increment, changes: &changes, applied: &fresh) else { return nil }
                // Causality (invariant 4): what this board records next follows what it saw.
                if let newest = increment.events.map(\.lamport).max() { state.writer?.observe(lamport: newest) }
                // A board without a drawing has no changes to name, and its subscribers (a
                // relay's forwarding) still need to know that events arrived.
                if !changes.isEmpty || (!options.keepsDrawing && !increment.events.isEmpty) {
                    Self.deliver(BoardUpdate(origin: .remote, changes: changes.coalesced()), to: &state)
                }
                return fresh
            }
            if let integrated {
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
        var tail: [Event] = []
        while true {
            let (ready, sealEnded) = state.withLock { state -> ([Event]?, DispatchSemaphore?) in
                guard !state.sealInFlight else {
                    // Woken by the committer when the seal is done.
                    let waiter = DispatchSemaphore(value: 0)
                    state.sealEnded.append(waiter)
                    return (nil, waiter)
                }
                state.reloading = true
                return (state.ownTail, nil)
            }
            if let ready {
                tail = ready
                break
            }
            sealEnded?.wait()
        }
        defer {
            let sealNow = state.withLock { state -> Bool in
                state.reloading = false
                defer { state.sealDeferred = false }
                return state.sealDeferred && !state.closed
            }
            if sealNow { committer.submit { [weak self] in self?.commit(seal: true) } }
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
                // Causality (invariant 4): what this board records next follows what it now shows.
                state.writer?.observe(lamport: loaded.maxLamport)
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
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, JournalError>, Never>) in
            // Behind every commit already queued on the committer thread.
            committer.submit { [weak self] in
                guard let self else { return continuation.resume(returning: .success(())) }
                // Hosted replicas first, while the board's writer lock still covers their files:
                // what was staged is stored, and every open hosted segment sealed.
                let last = FaultInjection.withThreadHook(self.faultHook) { self.hosted.closeStaging() }
                if !last.round.isEmpty { self.finishHosted(last.round, sealed: last.sealed) }
                self.afterHostedSeals(FaultInjection.withThreadHook(self.faultHook) { self.hosted.closeAll() })
                var due = DueWaiters(), failed = DueWaiters()
                var sealedAtClose: [SegmentName] = []
                let (outcome, streams) = self.state.withLock { state -> (Result<Void, JournalError>, [AsyncStream<BoardUpdate>.Continuation]) in
                    guard let writer = state.writer else { return (.success(()), []) }
                    state.closed = true
                    var outcome: Result<Void, JournalError> = .success(())
                    do throws(JournalError) { try writer.close() } catch { outcome = .failure(error) }
                    sealedAtClose = writer.takeSealedNames()
                    // A seal that could not be written (a full disk) leaves every event durable
                    // in the open segment: the waiters' events are safe; close still says why.
                    var durable = true
                    if case .failure(let error) = outcome, case .sealFailed = error {} else if case .failure = outcome { durable = false }
                    if durable { state.durableSeq = writer.nextSeq - 1 }
                    state.writer = nil
                    due = Self.dueWaiters(&state)
                    if case .failure(let error) = outcome {
                        if state.failure == nil { state.failure = error }
                        failed = Self.dueWaiters(&state)
                    }
                    let streams = state.subscribers.values.map(\.continuation)
                    state.subscribers.removeAll()
                    return (outcome, streams)
                }
                due.notifyAll()
                failed.notifyAll()
                if !sealedAtClose.isEmpty {
                    self.publish(.sealed(sealedAtClose.map { SealedSegment(replica: self.replica, name: $0) }))
                    self.requestCompaction(of: self.replica)
                }
                // A journal closed is left compacted, not half way (`journal record` then exits).
                if self.state.withLock({ $0.compactionRequested }) { BackgroundCompaction.waitUntilIdle(self.directory) }
                // Outside the lock: finishing a stream runs its termination handler, which locks.
                for stream in streams { stream.finish() }
                continuation.resume(returning: outcome)
            }
        }
        committer.stop()
        integrator.stop()
        watcherThread.stop()
        try result.get()
    }
}
