import Foundation
import JournalTestSupport
import Testing

/// The bounded wait every test uses for its children (`Process.waitForExit`).
@Suite(.ownThreads) struct ProcessExitTests {
    @Test func aChildThatEndsIsWaitedForWithItsStatus() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exit 3"]
        try process.run()
        try process.waitForExit(within: 60)
        #expect(process.terminationStatus == 3)
    }

    @Test func aChildPastItsBoundIsKilledAndNamed() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["600"]
        try process.run()
        #expect {
            try process.waitForExit(within: 0.5)
        } throws: { error in
            "\(error)".contains("`/bin/sleep 600` still ran after 0.5 s; killed")
        }
        #expect(!process.isRunning && process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
    }
}
