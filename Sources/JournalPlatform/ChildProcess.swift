#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a program found on `PATH` (`posix_spawnp(3)`) with standard input on `/dev/null` and
/// standard output and error merged into one pipe, and waits for it. No shell in between,
/// so arguments are never re-parsed. What sync needs to drive `rsync`, without Foundation.
public enum ChildProcess {
    public struct Result: Sendable {
        /// The exit status, or 128 + the signal that ended it; 127 when the program was not found.
        public var status: Int32
        public var output: [UInt8]
        public var outputText: String { String(decoding: output, as: UTF8.self) }
    }

    public static func run(_ program: String, _ arguments: [String]) throws(IOError) -> Result {
        var ends: [Int32] = [0, 0]
        // pipe2 is not visible from Swift on Glibc: pipe, then close-on-exec on both ends, so
        // a child spawned by another thread meanwhile does not keep our pipe open.
        guard pipe(&ends) == 0 else { throw IOError("pipe", path: program, code: errno) }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // dup2 clears close-on-exec on the copies: the child keeps fds 1 and 2, nothing else.
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)

        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawnp(&pid, program, &actions, nil, argv, environ)
        close(writeEnd)
        guard spawned == 0 else {
            close(readEnd)
            if spawned == ENOENT { return Result(status: 127, output: []) }
            throw IOError("spawn", path: program, code: spawned)
        }

        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var readFailure: Int32?
        while true {
            let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress!, $0.count) }
            if count > 0 { output += chunk[0..<count]; continue }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { readFailure = errno }
            break
        }
        close(readEnd)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw IOError("wait", path: program, code: errno) }
        }
        if let readFailure { throw IOError("read", path: program, code: readFailure) }
        // WIFEXITED / WEXITSTATUS / WTERMSIG are C macros Swift cannot see.
        let signal = status & 0x7F
        return Result(status: signal == 0 ? (status >> 8) & 0xFF : 128 + signal, output: output)
    }
}
