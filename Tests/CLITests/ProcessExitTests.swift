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

    /// A child that closes the descriptor Foundation watches for its exit (as
    /// `Tools/ci/s3/ceph-rgw.sh start` once did) holds Foundation's one watching thread until it
    /// ends: another child's exit goes unnoticed meanwhile, and the wait says so by name.
    @Test func anExitFoundationDoesNotNoticeIsNamed() throws {
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/bash")
        holder.arguments = ["-c", #"for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ] && eval "exec $fd>&-"; done; exec sleep 600"#]
        try holder.run()
        defer { kill(holder.processIdentifier, SIGKILL) }
        // Foundation takes the closed descriptor for the holder's exit and waits in waitpid.
        try #require(eventuallyBlocking(within: 60, every: 10) {
            (try? String(contentsOfFile: "/proc/\(holder.processIdentifier)/cmdline", encoding: .utf8))?.hasPrefix("sleep") == true
        }, "the holder never closed its descriptors")
        // Until the watching thread has taken the holder's closed descriptor, a child's exit is
        // still noticed: start children until one's is not (the first, nearly always; on a
        // loaded machine, a few seconds' worth).
        var named: String?
        let giveUp = ContinuousClock.now + .seconds(60)
        while named == nil, ContinuousClock.now < giveUp {
            let quick = Process()
            quick.executableURL = URL(fileURLWithPath: "/bin/true")
            try quick.run()
            do { try quick.waitForExit(within: 2) } catch { named = "\(error)" }
        }
        #expect(named == "`/bin/true` ended, but Foundation had not noticed it after 2 s")
    }
}
