import JournalPlatform
import Synchronization
import Testing

/// The threads that run work a caller waits on (the writer's durability, deflate halves).
@Suite struct WorkerThreadTests {
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
}
