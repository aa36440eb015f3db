import Foundation
import JournalPlatform
import JournalTestSupport
import Testing

/// The tests' fault hook is task-local: it fails the operations of the task that set it, and
/// never those of another test or thread running meanwhile.
@Suite(.ownThreads) struct FaultInjectionScopeTests {
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

    final class Box: @unchecked Sendable {
        var succeeded = false
        var detachedSucceeded = false
    }
}
