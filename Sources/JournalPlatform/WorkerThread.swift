#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One thread of our own that runs submitted jobs in order.
///
/// Work that blocks (write, fsync) or that a blocked caller waits for must not go to
/// Dispatch's global queues or the Swift concurrency pool: on Linux, a caller blocked on a
/// pool thread (a sync command run from an async `main`, an app appending from a Task) left
/// a job queued there for a whole second, until Dispatch's monitor added a thread. A thread
/// of our own starts the job at once, whoever waits for it.
///
/// Thread safety: `jobs` and `stopping` are read and written only while `mutex` is held;
/// the thread and the submitters meet only there. That is what makes the unchecked
/// Sendable sound.
public final class WorkerThread: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var wakeUp = pthread_cond_t()
    private var jobs: [@Sendable () -> Void] = []
    private var stopping = false
    private var closed = false
    /// The thread saw `stopping` with no job left and is ending: a job queued now would never run.
    private var exited = false
    private var thread: pthread_t?

    public init() {
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&wakeUp, nil)
    }

    /// For short compute jobs that never wait on other jobs (so they cannot deadlock on it).
    public static let shared = WorkerThread()

    /// Queues `job`; it runs after every job submitted before it.
    public func submit(_ job: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(&mutex)
        if thread == nil && !closed { start() }
        let queued = thread != nil && !exited
        if queued {
            jobs.append(job)
            pthread_cond_signal(&wakeUp)
        }
        pthread_mutex_unlock(&mutex)
        // Without a thread (the process is out of them, or the worker is closed) the job
        // runs on the caller.
        if !queued { job() }
    }

    /// `stop()` for good: the jobs queued still run on the thread, in order; jobs submitted
    /// once it has ended run on their caller, and no thread is started again. For an owner
    /// that closes while others may still submit (a relay board closed under a catch-up that
    /// reads on: each late job started a thread nobody stopped).
    public func close() {
        pthread_mutex_lock(&mutex)
        closed = true
        pthread_mutex_unlock(&mutex)
        stop()
    }

    /// Lets the thread finish the jobs queued so far, then end (its owner calls this when it
    /// closes: the running thread keeps the worker alive). Jobs submitted later start a new
    /// thread.
    public func stop() {
        pthread_mutex_lock(&mutex)
        guard let running = thread else {
            pthread_mutex_unlock(&mutex)
            return
        }
        stopping = true
        pthread_cond_signal(&wakeUp)
        pthread_mutex_unlock(&mutex)
        pthread_join(running, nil)
        pthread_mutex_lock(&mutex)
        thread = nil
        stopping = false
        pthread_mutex_unlock(&mutex)
    }

    deinit {
        pthread_cond_destroy(&wakeUp)
        pthread_mutex_destroy(&mutex)
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
            pthread_mutex_lock(&mutex)
            while jobs.isEmpty && !stopping { pthread_cond_wait(&wakeUp, &mutex) }
            if jobs.isEmpty {
                exited = true
                pthread_mutex_unlock(&mutex)
                return
            }
            let job = jobs.removeFirst()
            pthread_mutex_unlock(&mutex)
            job()
        }
    }
}
