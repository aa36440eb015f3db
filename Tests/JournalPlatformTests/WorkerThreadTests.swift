#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import JournalPlatform
import JournalTestSupport
import Synchronization
import Testing

/// The threads that run work a caller waits on (the writer's durability, deflate halves, a
/// board's committer), and the deadline loop a committer is: jobs in order, timed jobs when due
/// and in deadline order, and timers dropped when the owner stops it.
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

    /// Runs on the worker and returns once `body` ran there (so the test waits on progress).
    private func drain(_ worker: WorkerThread) {
        let done = DispatchSemaphore(value: 0)
        worker.submit { done.signal() }
        done.wait()
    }

    @Test func timedJobsRunInDeadlineOrderNotSubmissionOrder() {
        let worker = WorkerThread()
        defer { worker.stop() }
        let order = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let now = ProcessInfoLite.monotonicSeconds()
        worker.submit(at: now + 0.20) {
            order.withLock { $0.append("late") }
            done.signal()
        }
        worker.submit(at: now + 0.05) { order.withLock { $0.append("early") } }
        worker.submit { order.withLock { $0.append("now") } }
        done.wait()
        #expect(order.withLock { $0 } == ["now", "early", "late"])
    }

    @Test func aTimedJobNeverRunsBeforeItsDeadline() {
        let worker = WorkerThread()
        defer { worker.stop() }
        let ranAt = Locked<Double?>(nil)
        let done = DispatchSemaphore(value: 0)
        let due = ProcessInfoLite.monotonicSeconds() + 0.15
        worker.submit(at: due) {
            ranAt.withLock { $0 = ProcessInfoLite.monotonicSeconds() }
            done.signal()
        }
        // Untimed work meanwhile wakes the loop; it must wait again, not run the timer early.
        for _ in 0..<20 { worker.submit {} }
        done.wait()
        #expect((ranAt.withLock { $0 } ?? 0) >= due)
    }

    @Test func aDeadlineInThePastRunsBehindTheJobsAlreadyQueued() {
        let worker = WorkerThread()
        defer { worker.stop() }
        let order = Locked<[Int]>([])
        let gate = DispatchSemaphore(value: 0)
        // Holds the thread so that both of the next jobs are queued while it is busy.
        worker.submit { gate.wait() }
        worker.submit { order.withLock { $0.append(1) } }
        let done = DispatchSemaphore(value: 0)
        worker.submit(at: ProcessInfoLite.monotonicSeconds() - 1) {
            order.withLock { $0.append(2) }
            done.signal()
        }
        gate.signal()
        // Waits for the timer itself: a job submitted now may run before it (a timer joins the
        // queue when the loop finds it due, behind what is queued then).
        done.wait()
        #expect(order.withLock { $0 } == [1, 2])
    }

    @Test func stoppingDropsTimersNotYetDueAndRunsQueuedJobs() {
        let worker = WorkerThread()
        let ran = Locked<[String]>([])
        worker.submit(after: 3600) { ran.withLock { $0.append("timer") } }
        worker.submit { ran.withLock { $0.append("job") } }
        worker.stop()
        #expect(ran.withLock { $0 } == ["job"])
        // A new job after stop starts a new thread; the dropped timer stays dropped.
        drain(worker)
        worker.stop()
        #expect(ran.withLock { $0 } == ["job"])
    }

    @Test func aClosedWorkerRefusesTimersAndRunsJobsOnTheCaller() {
        let worker = WorkerThread()
        worker.close()
        let ran = Locked(false)
        #expect(worker.submit(after: 0) { ran.withLock { $0 = true } } == false)
        #expect(ran.withLock { $0 } == false)
        worker.submit { ran.withLock { $0 = true } }
        #expect(ran.withLock { $0 })
    }
}
