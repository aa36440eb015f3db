import Foundation
import JournalPlatform
import JournalTestSupport
import Testing

/// The tests' fault hook is task-local: it fails the operations of the task that set it, and
/// never those of another test or thread running meanwhile.
@Suite(.ownThreads, .enabled(if: FaultInjection.isCompiled, "the fault hook is built only by `swift test --traits FaultInjection`")) struct FaultInjectionScopeTests {
    @Test func aHookFailsOnlyTheOperationsOfItsOwnTask() throws {
        let temp = TemporaryDirectory("hook-scope")
        defer { temp.remove() }
        let prefix = temp.path
        let otherThread = Box()
        FaultInjection.$hook.withValue({ _, path in path.hasPrefix(prefix) ? EIO : nil }) {
            #expect(throws: IOError.self) { try FileSystem.writeAtomically([1], to: prefix + "/inside") }
            // Work of anything else running meanwhile (another test, another thread) is untouched.
            let done = DispatchSemaphore(value: 0)
            Thread {
                otherThread.succeeded = (try? FileSystem.writeAtomically([2], to: prefix + "/other")) != nil
                done.signal()
            }.start()
            done.wait()
            let detached = DispatchSemaphore(value: 0)
            Task.detached {
                otherThread.detachedSucceeded = (try? FileSystem.writeAtomically([3], to: prefix + "/detached")) != nil
                detached.signal()
            }
            detached.wait()
        }
        #expect(otherThread.succeeded)
        #expect(otherThread.detachedSucceeded)
        #expect(FaultInjection.hook == nil)
        try FileSystem.writeAtomically([4], to: prefix + "/after")
        #expect(try FileSystem.list(prefix).map(\.name) == ["after", "detached", "other"])
    }

    /// The hook is bound where work changes threads (`WorkerThread.submit`), once: a job runs
    /// with its submitter's hook, else with the one in force where its worker was made (an
    /// object opened under a hook keeps it on its own threads, whoever submits); a worker the
    /// whole process shares takes none of its own, so one test's hook never leaks to another's jobs.
    @Test func workerThreadsCarryTheHookOfTheirSubmitterOrTheirMaker() throws {
        let temp = TemporaryDirectory("hook-worker")
        defer { temp.remove() }
        let prefix = temp.path
        let hook: FaultInjection.Hook = { _, path in path.hasPrefix(prefix) ? EIO : nil }
        func writes(on worker: WorkerThread, _ name: String) -> Bool {
            let done = DispatchSemaphore(value: 0)
            let outcome = Locked(false)
            worker.submit {
                outcome.withLock { $0 = (try? FileSystem.writeAtomically([1], to: prefix + "/" + name)) != nil }
                done.signal()
            }
            done.wait()
            return outcome.withLock { $0 }
        }
        let madeUnderHook = FaultInjection.$hook.withValue(hook) { WorkerThread() }
        let madeWithoutHook = WorkerThread()
        let shared = FaultInjection.$hook.withValue(hook) { WorkerThread(inheritingFaultHook: false) }
        defer { for worker in [madeUnderHook, madeWithoutHook, shared] { worker.close() } }
        #expect(!writes(on: madeUnderHook, "maker"), "a worker made under a hook ran a job without it")
        #expect(writes(on: madeWithoutHook, "plain"))
        #expect(writes(on: shared, "shared"), "a shared worker kept the hook of where it was made")
        let submitted = FaultInjection.$hook.withValue(hook) { writes(on: madeWithoutHook, "submitter") }
        #expect(!submitted, "a job ran without its submitter's hook")
        // Timed jobs too.
        let done = DispatchSemaphore(value: 0)
        let timed = Locked(true)
        FaultInjection.$hook.withValue(hook) {
            _ = madeWithoutHook.submit(after: 0.01) {
                timed.withLock { $0 = (try? FileSystem.writeAtomically([1], to: prefix + "/timed")) != nil }
                done.signal()
            }
        }
        done.wait()
        #expect(!timed.withLock { $0 })
        #expect(try FileSystem.list(prefix).map(\.name).sorted() == ["plain", "shared"])
    }

    final class Box: @unchecked Sendable {
        var succeeded = false
        var detachedSucceeded = false
    }
}
