import Dispatch
import JournalFormat
import JournalPlatform

/// One journal's compactions after seals (docs/FORMAT.md §16.5), off every appending thread.
///
/// Whoever writes a journal owns its scheduler (the committer: docs/LIVE.md) and stops it
/// when the journal closes; nothing of it outlives the journal. Its state is bounded by the
/// journal's replicas: a request for a replica already queued joins that pass. The passes of
/// every journal of the process run one at a time on one shared thread, so compaction costs
/// at most one core and an append or an ack never waits for one. A pass that finds another
/// process (or a sync of this one) holding `SealedFilesLock` for more than a second is skipped:
/// the next seal asks again.
public final class CompactionScheduler: Sendable {
    public let directory: JournalDirectory
    /// The journal's identity as its writer loaded it (the keys covers are sealed with).
    public let identity: JournalIdentity?
    /// Process-wide, so that a relay with a thousand boards still compacts on one core.
    private static let worker = WorkerThread(inheritingFaultHook: false)
    private let state = Locked(State())
    /// Pairs found not to cover, remembered between this journal's passes.
    private let notCovering = NotCoveringPairs()

    private struct State {
        var queued: Set<ReplicaID> = []
        /// Who hears of the pass queued for each replica (requests that joined it).
        var listeners: [ReplicaID: [@Sendable (CompactionReport) -> Void]] = [:]
        var running: ReplicaID?
        var stopped = false
    }

    public init(directory: JournalDirectory, identity: JournalIdentity? = nil) {
        self.directory = directory
        self.identity = identity
    }

    /// Compacts `replica` soon, with the standard policy. `then` hears what the pass did, on
    /// the compaction thread (keep it short); a pass skipped (the journal locked by another
    /// rewriter, or the scheduler stopped first) is not reported. Ignored once stopped.
    public func request(_ replica: ReplicaID, then listener: (@Sendable (CompactionReport) -> Void)? = nil) {
        let fresh = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            if let listener { state.listeners[replica, default: []].append(listener) }
            return state.queued.insert(replica).inserted
        }
        guard fresh else { return }
        Self.worker.submit { [self] in runPass(of: replica) }
    }

    private func runPass(of replica: ReplicaID) {
        // Taken off the queue before running: a seal made meanwhile asks for another pass.
        let hearing = state.withLock { state -> [@Sendable (CompactionReport) -> Void]? in
            guard !state.stopped, state.queued.remove(replica) != nil else { return nil }
            state.running = replica
            return state.listeners.removeValue(forKey: replica) ?? []
        }
        guard let hearing else { return }
        defer { state.withLock { $0.running = nil } }
        // Waited for a moment, not tried once: a child process this one forks (a sync's rsync,
        // a test's CLI) holds a copy of the previous pass's lock until it runs its program, and
        // a pass skipped then left a closing journal uncompacted (CommitterTests, under load).
        guard let lock = (try? SealedFilesLock.acquire(directory, waitingUpTo: 1)) ?? nil else { return }
        let report = Compactor(directory: directory, identity: identity, notCovering: notCovering).run(only: [replica])
        lock.release()
        for listener in hearing { listener(report) }
    }

    /// Whether a pass is queued or running.
    public var isBusy: Bool {
        state.withLock { !$0.queued.isEmpty || $0.running != nil }
    }

    /// Returns once every pass requested before the call has ended (a journal closing is left
    /// compacted, not half way); at once if none is queued or running.
    public func waitUntilIdle() {
        guard isBusy else { return }
        let done = DispatchSemaphore(value: 0)
        // Behind this journal's passes on the one thread: when it runs, they have.
        Self.worker.submit { done.signal() }
        done.wait()
    }

    /// Drops the passes not yet started, waits for the one running, and ignores every later
    /// request: the journal is closing, and another writer may open it next.
    public func stop() {
        let running = state.withLock { state -> Bool in
            state.stopped = true
            state.queued.removeAll()
            state.listeners.removeAll()
            return state.running != nil
        }
        guard running else { return }
        let done = DispatchSemaphore(value: 0)
        Self.worker.submit { done.signal() }
        done.wait()
    }
}

/// Pairs of files found not to cover one another (a fork, a forged or quarantined cover), so
/// that a journal's next pass does not check them again. Names are content hashes, so the
/// answer holds for those bytes (until the trust list changes, which only delays a retirement
/// to the next scheduler). At most `capacity` pairs, the oldest forgotten first: a relay runs
/// for days, and forgetting costs only a second check.
public final class NotCoveringPairs: Sendable {
    public let capacity: Int
    private let pairs: Locked<(set: Set<String>, order: [String], next: Int)>

    public init(capacity: Int = 4_096) {
        self.capacity = max(1, capacity)
        pairs = Locked((set: [], order: [], next: 0))
    }

    private static func key(_ cover: SegmentName, _ file: SegmentName, replica: ReplicaID) -> String {
        cover.relativePath(in: replica) + "|" + file.fileName
    }

    package func contains(_ cover: SegmentName, _ file: SegmentName, replica: ReplicaID) -> Bool {
        let key = Self.key(cover, file, replica: replica)
        return pairs.withLock { $0.set.contains(key) }
    }

    package func insert(_ cover: SegmentName, _ file: SegmentName, replica: ReplicaID) {
        let key = Self.key(cover, file, replica: replica)
        pairs.withLock { pairs in
            guard pairs.set.insert(key).inserted else { return }
            if pairs.order.count < capacity {
                pairs.order.append(key)
            } else {
                pairs.set.remove(pairs.order[pairs.next])
                pairs.order[pairs.next] = key
                pairs.next = (pairs.next + 1) % capacity
            }
        }
    }

    /// How many pairs are remembered (at most `capacity`).
    public var count: Int { pairs.withLock { $0.set.count } }
}
