#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Atomics
import SystemPackage

/// Process-level facts.
public enum ProcessInfoLite {
    public static var processID: Int32 { getpid() }

    /// Wall-clock time in milliseconds since 1970 (`clock_gettime(CLOCK_REALTIME)`).
    public static func wallClockMilliseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    /// Monotonic seconds, for measuring durations.
    public static func monotonicSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Processors this process may run on now (at least 1): how many lanes parallel work
    /// should take.
    public static var activeProcessorCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    public static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Where `program` is on `PATH` (the system's usual folders when `PATH` is unset), if it is.
    public static func onPath(_ program: String) -> String? {
        let path = environment("PATH") ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = FileSystem.join(String(folder), program)
            if FileSystem.isExecutable(candidate) { return candidate }
        }
        return nil
    }

    /// Fills `count` bytes from the system's CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) != 0 }
}

func retryingInterrupts<T: BinaryInteger>(_ call: () -> T) -> T {
    while true {
        let result = call()
        if result < 0 && errno == EINTR { continue }
        return result
    }
}

// Names that would otherwise collide with members of FileDescriptor.
func Glibc_open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    open(path, flags, mode)
}

func Glibc_openat(_ directory: Int32, _ name: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    openat(directory, name, flags, mode)
}

/// An `open` that failed on a symlink says ELOOP (or ENOTDIR with O_DIRECTORY, on Linux):
/// look at the entry itself (`fstatat` without following) to say what it really was.
func symlinkAware(_ error: IOError, directory: Int32, name: String) -> IOError {
    guard error.code == ELOOP || error.code == ENOTDIR || error.code == EMLINK else { return error }
    var info = stat()
    guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFLNK else { return error }
    return IOError(error.operation, path: error.path, code: ELOOP, reason: IOError.symbolicLinkReason)
}


extension ProcessInfoLite {
    /// Whether a process with this pid exists (`kill(pid, 0)`); used to tell a running
    /// copier's temporary file from one a crash left behind.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }
}

extension ProcessInfoLite {
    /// This machine's host name (`gethostname(2)`), reduced to characters safe in a file name.
    public static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "host" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let safe = name.filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
        return safe.isEmpty ? "host" : safe
    }
}


extension ProcessInfoLite {
    public static func sleep(milliseconds: Int) {
        usleep(useconds_t(milliseconds * 1000))
    }

    /// Ends the process as signal `number`'s default action would (after a handler cleaned
    /// up), so that a shell sees "killed by SIGTERM"; where every thread blocks the signal
    /// (Dispatch's may), with the status a shell gives that: 128 + the signal's number.
    public static func exitAsKilled(by number: Int32) -> Never {
        _ = signal(number, SIG_DFL)
        kill(getpid(), number)
        usleep(100_000)
        _exit(128 + number)
    }
}

extension ProcessInfoLite {
    /// The local time of day, "HH:MM:SS", for lines of a long-running command.
    public static func localTimeOfDay() -> String {
        var now = time(nil)
        var parts = tm()
        // localtime_r, unlike localtime, need not read TZ: do it once.
        _ = timeZoneLoaded
        guard localtime_r(&now, &parts) != nil else { return "--:--:--" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return two(parts.tm_hour) + ":" + two(parts.tm_min) + ":" + two(parts.tm_sec)
    }

    private static let timeZoneLoaded: Void = tzset()
}

extension ProcessInfoLite {
    /// Hands memory the allocator keeps free back to the system. A relay calls it after a
    /// board closes: glibc keeps freed arenas, and a closed board's drawing otherwise stays
    /// resident (845 MB of a relay's 1.7 GB, measured) long after nothing uses it.
    #if canImport(Glibc)
    private nonisolated(unsafe) static let mallocTrim: UnsafeMutableRawPointer? = dlsym(nil, "malloc_trim")
    #endif

    public static func returnFreeMemory() {
        #if canImport(Glibc)
        // `malloc_trim` is glibc's (malloc.h, which the Glibc module leaves out): looked up
        // once, and called with the C convention.
        typealias Trim = @convention(c) (Int) -> Int32
        if let symbol = mallocTrim { _ = unsafeBitCast(symbol, to: Trim.self)(0) }
        #endif
    }

    /// Raises this process's soft limit on open descriptors to its hard limit (a relay's
    /// sockets and journals need more than the usual soft 1024) and returns the limit in force.
    public static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        #if os(Linux)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }
}
