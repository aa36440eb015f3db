import Foundation

/// A child a test started that it stopped waiting for: still running past its bound, or ended
/// without Foundation noticing.
public struct ChildOverran: Error, CustomStringConvertible {
    public let description: String
}

extension Process {
    /// Waits for the child's exit, at most `seconds`; one still running then is killed (SIGKILL)
    /// and the wait throws, naming the command. `waitUntilExit` waits for ever, so one child
    /// that never ends (a tool waiting on a lock, a server that never answers), or one whose end
    /// Foundation's single process-watching thread never reports, held a whole CI run until its
    /// limit ended it with no trace of which test it was. The bound is a guard against a hang,
    /// not a measurement: a child that needs it has failed anyway.
    public func waitForExit(within seconds: Double = 600) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning && Date() < deadline { usleep(10_000) }
        guard isRunning else { return }
        let bound = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
        if kernelSaysEnded() {
            // Foundation learns of every child's exit on one thread of its own, which a child
            // that closes the descriptor it watches holds in waitpid (Tools/ci/s3/ceph-rgw.sh
            // did, for a whole start).
            throw ChildOverran(description: "`\(commandLine)` ended, but Foundation had not noticed it after \(bound) s")
        }
        kill(processIdentifier, SIGKILL)
        let grace = Date().addingTimeInterval(30)
        while isRunning && Date() < grace { usleep(10_000) }
        throw ChildOverran(description: "`\(commandLine)` still ran after \(bound) s; killed")
    }

    /// Whether the child has ended, asked of the kernel without reaping it (that stays
    /// Foundation's job, which gives `terminationStatus`).
    private func kernelSaysEnded() -> Bool {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return false }
        return info._sifields._sigchld.si_pid == processIdentifier
    }

    private var commandLine: String {
        String(([executableURL?.path ?? "?"] + (arguments ?? [])).joined(separator: " ").prefix(300))
    }
}
