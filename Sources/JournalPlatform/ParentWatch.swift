#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A program started with `JOURNAL_EXIT_WITH_PARENT=1` stops, as SIGTERM stops it, once the
/// process that started it is gone: a test run killed halfway (or a supervising script) leaves
/// no `journal serve` holding its port and data folder behind. (`PR_SET_PDEATHSIG` would be
/// immediate, but it follows the thread that started the child, and a test starts children
/// from threads that end.)
public enum ParentWatch {
    public static let variable = "JOURNAL_EXIT_WITH_PARENT"
    /// How often the parent is looked for.
    static let everySeconds = 0.25
    /// How long a graceful stop may take before the program ends outright.
    static let gracefulSeconds = 10.0

    /// Starts watching if the environment asks for it.
    public static func startIfAsked() {
        guard ProcessInfoLite.environment(variable) == "1" else { return }
        let parent = getppid()
        let watcher = WorkerThread(inheritingFaultHook: false)
        @Sendable func look() {
            guard getppid() == parent else {
                kill(getpid(), SIGTERM)
                _ = watcher.submit(after: gracefulSeconds) { _exit(128 + SIGTERM) }
                return
            }
            _ = watcher.submit(after: everySeconds, look)
        }
        watcher.submit(look)
    }
}
