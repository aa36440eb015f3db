import Dispatch
import JournalFormat
import JournalPlatform

/// Compaction after seals, off every appending thread (docs/FORMAT.md §16.4).
///
/// One thread for the whole process runs every journal's compactions one at a time, so their
/// cost is bounded by one core and an append or an ack never waits for one. Requests for the
/// same replica coalesce while one is queued. A compaction that finds another process (or a
/// sync of this one) holding `SealedFilesLock` is skipped: the next seal asks again.
public enum BackgroundCompaction {
    private static let worker = WorkerThread()
    /// Keys ("root\nreplica") of passes queued, and of the one running.
    private static let queued = Locked<Set<String>>([])
    private static let running = Locked<String?>(nil)

    /// Compacts `replica` of `directory` soon, with the standard policy.
    public static func request(_ directory: JournalDirectory, replica: ReplicaID) {
        let key = directory.root + "\n" + replica.hex
        guard queued.withLock({ $0.insert(key).inserted }) else { return }
        worker.submit {
            // Dequeued before running: a seal made meanwhile asks for another pass.
            running.withLock { $0 = key }
            queued.withLock { _ = $0.remove(key) }
            defer { running.withLock { $0 = nil } }
            guard let lock = (try? SealedFilesLock.tryAcquire(directory)) ?? nil else { return }
            defer { lock.release() }
            _ = Compactor(directory: directory).run(only: [replica])
        }
    }

    /// Returns once every compaction of `directory` requested before the call has ended (a
    /// writer closing: `journal record` should leave its journal compacted, not half way); at
    /// once if none is queued or running.
    public static func waitUntilIdle(_ directory: JournalDirectory) {
        let prefix = directory.root + "\n"
        let pending = queued.withLock { keys in keys.contains { $0.hasPrefix(prefix) } }
            || running.withLock { $0?.hasPrefix(prefix) ?? false }
        guard pending else { return }
        let done = DispatchSemaphore(value: 0)
        worker.submit { done.signal() }
        done.wait()
    }
}
