#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One thread of our own that runs submitted jobs in order, and timed jobs when they are due.
///
/// Work that blocks (write, fsync) or that a blocked caller waits for must not go to
/// Dispatch's global queues or the Swift concurrency pool: on Linux, a caller blocked on a
/// pool thread (a sync command run from an async `main`, an app appending from a Task) left
/// a job queued there for a whole second, until Dispatch's monitor added a thread. A thread
/// of our own starts the job at once, whoever waits for it.
///
/// Timed jobs (`submit(at:)`) make the thread a deadline loop: it waits on its condition
/// variable until the earliest deadline or a new job, never in sleeping slices, so a group
/// commit, a seal after a pause and a rescan share one thread and wake exactly when due.
///
/// Thread safety: `jobs`, `timed` and the flags are read and written only while `mutex` is
/// held; the thread and the submitters meet only there. The mutex and the condition live in
/// memory of their own (pthread needs a stable address, which a class's stored property is
/// not promised to have). That is what makes the unchecked Sendable sound.
public final class WorkerThread: @unchecked Sendable {
    private struct TimedJob {
        var due: Double
        /// Submission order: jobs due at the same moment run in the order they were submitted.
        var order: UInt64
        var job: @Sendable () -> Void
    }

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let wakeUp: UnsafeMutablePointer<pthread_cond_t>
    private var jobs: [@Sendable () -> Void] = []
    /// Sorted by (due, order).
    private var timed: [TimedJob] = []
    private var nextOrder: UInt64 = 0
    private var stopping = false
    private var closed = false
    /// The thread saw `stopping` with no job left and is ending: a job queued now would never run.
    private var exited = false
    private var thread: pthread_t?

    /// The fault hook in force where this worker was made (tests only: `FaultInjection`).
    private let creationHook: FaultInjection.Hook?

    /// `inheritingFaultHook`: jobs submitted without a test's fault hook run with the one in
    /// force here, so that an object a test opened under a hook (a board, a writer) keeps it on
    /// its own thread whoever submits to it. A worker shared by the whole process must not.
    public init(inheritingFaultHook: Bool = true) {
        creationHook = inheritingFaultHook ? FaultInjection.current : nil
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        wakeUp = .allocate(capacity: 1)
        wakeUp.initialize(to: pthread_cond_t())
        #if canImport(Glibc)
        // Deadlines are monotonic seconds (`ProcessInfoLite.monotonicSeconds`): a clock set
        // back must not hold a commit for an hour.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(wakeUp, &attributes)
        pthread_condattr_destroy(&attributes)
        #else
        pthread_cond_init(wakeUp, nil)
        #endif
    }

    /// For short compute jobs that never wait on other jobs (so they cannot deadlock on it).
    public static let shared = WorkerThread(inheritingFaultHook: false)

    /// `job` with the test's fault hook bound (`FaultInjection`): the submitter's, else the one
    /// where this worker was made. Bound here, once, so that no hop to a thread of the library
    /// loses a test's coverage (a hook is task-local, and these threads run no task).
    private func bound(_ job: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        guard let hook = FaultInjection.current ?? creationHook else { return job }
        return { FaultInjection.withThreadHook(hook, job) }
    }

    /// Queues `job`; it runs after every job submitted before it that is due.
    public func submit(_ job: @escaping @Sendable () -> Void) {
        let job = bound(job)
        pthread_mutex_lock(mutex)
        if thread == nil && !closed { start() }
        let queued = thread != nil && !exited
        if queued {
            jobs.append(job)
            pthread_cond_signal(wakeUp)
        }
        pthread_mutex_unlock(mutex)
        // Without a thread (the process is out of them, or the worker is closed) the job
        // runs on the caller.
        if !queued { job() }
    }

    /// Runs `job` on the thread once `deadline` (`ProcessInfoLite.monotonicSeconds()`) has
    /// passed, after the jobs queued before it then. A timed job not yet due when the thread
    /// stops is dropped: timers belong to an owner that is closing. Returns false (and drops
    /// the job) when the worker has no thread and may start none.
    @discardableResult
    public func submit(at deadline: Double, _ job: @escaping @Sendable () -> Void) -> Bool {
        let job = bound(job)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if thread == nil && !closed { start() }
        guard thread != nil && !exited && !stopping else { return false }
        let entry = TimedJob(due: deadline, order: nextOrder, job: job)
        nextOrder += 1
        let index = timed.firstIndex { ($0.due, $0.order) > (entry.due, entry.order) } ?? timed.count
        timed.insert(entry, at: index)
        // Only a new earliest deadline changes how long the thread waits.
        if index == 0 { pthread_cond_signal(wakeUp) }
        return true
    }

    /// `submit(at:)`, `seconds` from now.
    @discardableResult
    public func submit(after seconds: Double, _ job: @escaping @Sendable () -> Void) -> Bool {
        submit(at: ProcessInfoLite.monotonicSeconds() + max(0, seconds), job)
    }

    /// `stop()` for good: the jobs queued still run on the thread, in order; jobs submitted
    /// once it has ended run on their caller, and no thread is started again. For an owner
    /// that closes while others may still submit (a relay board closed under a catch-up that
    /// reads on: each late job started a thread nobody stopped).
    public func close() {
        pthread_mutex_lock(mutex)
        closed = true
        pthread_mutex_unlock(mutex)
        stop()
    }

    /// Lets the thread finish the jobs queued so far (timed jobs not yet due are dropped),
    /// then end (its owner calls this when it closes: the running thread keeps the worker
    /// alive). Jobs submitted later start a new thread.
    public func stop() {
        pthread_mutex_lock(mutex)
        guard let running = thread else {
            pthread_mutex_unlock(mutex)
            return
        }
        stopping = true
        pthread_cond_signal(wakeUp)
        pthread_mutex_unlock(mutex)
        pthread_join(running, nil)
        pthread_mutex_lock(mutex)
        thread = nil
        stopping = false
        pthread_mutex_unlock(mutex)
    }

    deinit {
        pthread_cond_destroy(wakeUp)
        pthread_mutex_destroy(mutex)
        wakeUp.deallocate()
        mutex.deallocate()
    }

    /// Called with `mutex` held.
    private func start() {
        // The thread holds the worker until it ends, so `stop()` (not deinit) ends it.
        let context = Unmanaged.passRetained(self).toOpaque()
        #if canImport(Darwin)
        var created: pthread_t?
        #else
        var created = pthread_t()
        #endif
        let status = pthread_create(&created, nil, { raw in
            let worker = Unmanaged<WorkerThread>.fromOpaque(raw!).takeRetainedValue()
            worker.loop()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<WorkerThread>.fromOpaque(context).release()
            return
        }
        thread = created
        exited = false
    }

    private func loop() {
        while true {
            pthread_mutex_lock(mutex)
            var job: (@Sendable () -> Void)?
            while job == nil {
                let now = ProcessInfoLite.monotonicSeconds()
                if let first = timed.first, first.due <= now {
                    // A due timer joins the queue behind what was submitted before it fell due.
                    jobs.append(timed.removeFirst().job)
                    continue
                }
                if !jobs.isEmpty {
                    job = jobs.removeFirst()
                } else if stopping {
                    timed.removeAll()
                    exited = true
                    pthread_mutex_unlock(mutex)
                    return
                } else if let first = timed.first {
                    wait(until: first.due, now: now)
                } else {
                    pthread_cond_wait(wakeUp, mutex)
                }
            }
            pthread_mutex_unlock(mutex)
            job?()
        }
    }

    /// Waits on the condition (with `mutex` held) until `deadline` at the latest.
    private func wait(until deadline: Double, now: Double) {
        // Further than a year (or not a number): no timespec needed, a new job wakes the wait.
        guard deadline.isFinite, deadline - now < 365 * 86_400 else {
            pthread_cond_wait(wakeUp, mutex)
            return
        }
        #if canImport(Glibc)
        let whole = deadline.rounded(.down)
        var until = timespec(tv_sec: Int(whole), tv_nsec: Int(min(999_999_999, (deadline - whole) * 1e9)))
        _ = pthread_cond_timedwait(wakeUp, mutex, &until)
        #else
        let remaining = max(0, deadline - now)
        let whole = remaining.rounded(.down)
        var interval = timespec(tv_sec: Int(whole), tv_nsec: Int(min(999_999_999, (remaining - whole) * 1e9)))
        _ = pthread_cond_timedwait_relative_np(wakeUp, mutex, &interval)
        #endif
    }
}
