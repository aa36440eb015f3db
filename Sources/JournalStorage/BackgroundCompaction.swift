import Dispatch
import JournalFormat
import JournalPlatform

/// Compaction after seals, off every appending thread (docs/FORMAT.md §16.5).
///
/// One thread for the whole process runs every journal's compactions one at a time, so their
/// cost is bounded by one core and an append or an ack never waits for one. Requests for the
/// same replica coalesce while one is queued. A compaction that finds another process (or a
/// sync of this one) holding `SealedFilesLock` is skipped: the next seal asks again.
public enum BackgroundCompaction {
    private static let worker = WorkerThread(inheritingFaultHook: false)
    /// Keys ("root\nreplica") of passes queued, and of the one running.
    private static let queued = Locked<Set<String>>([])
    private static let running = Locked<String?>(nil)

    /// Who hears of the pass queued under each key (requests that coalesced into it).
    private static let listeners = Locked<[String: [@Sendable (CompactionReport) -> Void]]>([:])

    /// Compacts `replica` of `directory` soon, with the standard policy. `then` hears what the
    /// pass did, on the compaction thread (keep it short); a pass skipped because the journal
    /// was locked is not reported.
    public static func request(_ directory: JournalDirectory, replica: ReplicaID,
                               then listener: (@Sendable (CompactionReport) -> Void)? = nil) {
        let key = directory.root + "\n" + replica.hex
        let fresh = queued.withLock { keys in
            // Under the queue's lock: a pass dequeued meanwhile has taken its listeners already.
            if let listener { listeners.withLock { $0[key, default: []].append(listener) } }
            return keys.insert(key).inserted
        }
        guard fresh else { return }
        worker.submit {
            // Dequeued before running: a seal made meanwhile asks for another pass.
            running.withLock { $0 = key }
            let hearing = queued.withLock { keys in
                _ = keys.remove(key)
                return listeners.withLock { $0.removeValue(forKey: key) } ?? []
            }
            defer { running.withLock { $0 = nil } }
            guard let lock = (try? SealedFilesLock.tryAcquire(directory)) ?? nil else { return }
            let report = Compactor(directory: directory).run(only: [replica])
            lock.release()
            for listener in hearing { listener(report) }
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
