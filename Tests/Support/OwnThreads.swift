import Dispatch
import Testing

/// A suite whose tests block their thread (they wait for child processes: `journal`, rsync,
/// ssh) or compute for seconds without a suspension point runs them on threads of their own.
///
/// Swift's task pool has one thread per core: two here. Synchronous tests waiting on children
/// held both for over 150 s in a fresh-clone CI run, and a relay served in this process (its
/// connections are tasks on that pool) answered nobody meanwhile: a relay test's client waited
/// 60 s for a catch-up that was never late, only never scheduled. On threads of their own, such
/// tests share the cores through the kernel's scheduler, and the pool stays free for the tests
/// (and relays) that only await.
public struct OwnThreads: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> OwnThreads? {
        // Once per test case: the body is what blocks.
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(OwnThreadsExecutor.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreads {
    /// Runs each test of the suite (or the test) on threads outside Swift's task pool.
    public static var ownThreads: OwnThreads { OwnThreads() }
}

/// Runs every job on a serial dispatch queue of its own. Serial queues overcommit: a job gets a
/// thread even while every core is busy, where a concurrent queue (like the task pool) makes it
/// wait until fewer threads run than there are cores, so two tests computing for a minute held
/// every other test back for that minute.
final class OwnThreadsExecutor: TaskExecutor {
    static let shared = OwnThreadsExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        DispatchQueue(label: "journal-tests.own-thread").async { job.runSynchronously(on: executor) }
    }
}
