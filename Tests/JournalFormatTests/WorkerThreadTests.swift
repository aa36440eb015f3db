#if canImport(Glibc)
import Glibc
#endif
import JournalPlatform
import Synchronization
import JournalTestSupport
import Testing

/// The threads that run work a caller waits on (the writer's durability, deflate halves).
@Suite(.ownThreads) struct WorkerThreadTests {
    @Test func jobsRunInOrderAndStopWaitsForThem() {
        let worker = WorkerThread()
        let seen = Mutex<[Int]>([])
        for index in 0..<1_000 { worker.submit { seen.withLock { $0.append(index) } } }
        worker.stop()
        #expect(seen.withLock { $0 } == Array(0..<1_000))
        // A job after `stop` starts a new thread.
        worker.submit { seen.withLock { $0.append(-1) } }
        worker.stop()
        #expect(seen.withLock { $0.last } == -1)
    }

    /// A closed worker starts no thread again: a late job runs on its caller, at once (a relay
    /// board's reader, closed under a catch-up that read on, started a thread per late job
    /// that nobody stopped).
    @Test func aClosedWorkerRunsLateJobsOnTheCaller() {
        let worker = WorkerThread()
        let seen = Mutex<[Int]>([])
        for index in 0..<100 { worker.submit { seen.withLock { $0.append(index) } } }
        worker.close()
        #expect(seen.withLock { $0 } == Array(0..<100))
        let caller = pthread_self()
        let ranOn = Mutex<pthread_t?>(nil)
        worker.submit { ranOn.withLock { $0 = pthread_self() } }
        // Run before `submit` returned, and on this thread.
        #expect(ranOn.withLock { $0 }.map { pthread_equal($0, caller) != 0 } == true)
    }
}
