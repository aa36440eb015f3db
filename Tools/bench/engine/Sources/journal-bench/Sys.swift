import StrokeJournal
import Dispatch
// The few POSIX calls the harness needs: clocks, peak RSS, child processes, files.
// No Foundation: it would add to the peak RSS every row reports.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum Clock {
    /// Monotonic seconds (`clock_gettime(CLOCK_MONOTONIC)`).
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Runs `body` and returns its result with the seconds it took.
    static func time<T>(_ body: () throws -> T) rethrows -> (T, Double) {
        let start = now()
        let result = try body()
        return (result, now() - start)
    }

    /// CPU seconds (user + system) used so far by this process, or by its waited-for children.
    static func cpu(children: Bool = false) -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(children ? RUSAGE_CHILDREN.rawValue : RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &usage)
        #endif
        func seconds(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`.
    static func utcTimestamp() -> String { journal_bench.utcTimestamp(Int(Glibc.time(nil))) }
}

/// `YYYY-MM-DDTHH:MM:SSZ` of seconds since 1970.
func utcTimestamp(_ since1970: Int) -> String {
    var seconds = time_t(since1970)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    var buffer = [CChar](repeating: 0, count: 64)
    let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
    return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

enum Resources {
    /// Peak resident set size of this process so far, in bytes (`ru_maxrss` is KiB on Linux).
    static func peakRSSBytes() -> Int { maxRSS(children: false) }
    /// The largest peak RSS of any child this process has waited for.
    static func childrenPeakRSSBytes() -> Int { maxRSS(children: true) }

    private static func maxRSS(children: Bool) -> Int {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(children ? RUSAGE_CHILDREN.rawValue : RUSAGE_SELF.rawValue, &usage)
        return Int(usage.ru_maxrss) * 1024
        #else
        getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &usage)
        return Int(usage.ru_maxrss)  // bytes on macOS
        #endif
    }
}

/// Child processes through `posix_spawnp`.
enum Spawn {
    enum Output: Equatable { case inherit, capture, discard, file(String) }

    struct Result {
        var status: Int32
        var output: [UInt8]
        var text: String { String(decoding: output, as: UTF8.self) }
    }

    /// Runs `arguments[0]` (looked up in PATH) and waits for it. Standard error is inherited.
    @discardableResult
    static func run(_ arguments: [String], stdout: Output = .inherit, stdin devNull: Bool = true) throws -> Result {
        precondition(!arguments.isEmpty)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeEnds: [Int32] = [-1, -1]
        if stdout == .capture {
            guard pipe(&pipeEnds) == 0 else { throw BenchError("pipe: \(String(cString: strerror(errno)))") }
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
            posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
            posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        } else if stdout == .discard {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        } else if case .file(let path) = stdout {
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        }
        if devNull { posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) }

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let code = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        if stdout == .capture { close(pipeEnds[1]) }
        guard code == 0 else {
            if stdout == .capture { close(pipeEnds[0]) }
            throw BenchError("cannot run \(arguments[0]): \(String(cString: strerror(code)))")
        }
        var output: [UInt8] = []
        if stdout == .capture {
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
                if count > 0 { output += chunk[0..<count]; continue }
                if count < 0 && errno == EINTR { continue }
                break
            }
            close(pipeEnds[0])
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS are macros Swift cannot see.
        let exited = status & 0x7f == 0
        return Result(status: exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output: output)
    }

    /// Runs and throws unless the exit status is 0.
    @discardableResult
    static func check(_ arguments: [String], stdout: Output = .inherit) throws -> Result {
        let result = try run(arguments, stdout: stdout)
        guard result.status == 0 else {
            throw BenchError("`\(arguments.joined(separator: " "))` exited with status \(result.status)")
        }
        return result
    }
}

enum Files {
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    static func size(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// Modification time, seconds since 1970.
    static func modified(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_mtim.tv_sec) : 0
    }

    /// Names in a directory (without `.` and `..`), sorted; [] if it cannot be read.
    static func list(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Every regular file below `path`, as full paths.
    static func walk(_ path: String) -> [String] {
        var result: [String] = []
        for name in list(path) {
            let full = path + "/" + name
            if isDirectory(full) { result += walk(full) } else { result.append(full) }
        }
        return result
    }

    static func read(_ path: String) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BenchError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let count = size(path)
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        try bytes.withUnsafeMutableBytes { buffer in
            while done < count {
                let got = Glibc.read(descriptor, buffer.baseAddress! + done, count - done)
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else { throw BenchError("read \(path): short read") }
                done += got
            }
        }
        return bytes
    }

    /// Reads the whole file into `buffer` (grown as needed) and returns the byte count.
    static func read(_ path: String, into buffer: inout [UInt8]) throws -> Int {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BenchError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var done = 0
        while true {
            if done == buffer.count { buffer += [UInt8](repeating: 0, count: max(1 << 20, buffer.count)) }
            let got = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + done, $0.count - done) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw BenchError("read \(path): \(String(cString: strerror(errno)))") }
            if got == 0 { return done }
            done += got
        }
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw BenchError("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var done = 0
        try bytes.withUnsafeBytes { buffer in
            while done < buffer.count {
                let put = Glibc.write(descriptor, buffer.baseAddress! + done, buffer.count - done)
                if put < 0 && errno == EINTR { continue }
                guard put > 0 else { throw BenchError("write \(path): \(String(cString: strerror(errno)))") }
                done += put
            }
        }
    }

    static func writeText(_ text: String, to path: String) throws { try write(Array(text.utf8), to: path) }

    /// Reads to the end of file (works for /proc files, whose size reads as 0).
    static func readText(_ path: String) -> String? {
        var buffer: [UInt8] = []
        guard let count = try? read(path, into: &buffer) else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    static func makeDirectories(_ path: String) throws {
        if isDirectory(path) { return }
        let parent = Paths.parent(path)
        if parent != path && !parent.isEmpty { try makeDirectories(parent) }
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            throw BenchError("mkdir \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func removeTree(_ path: String) throws {
        guard exists(path) else { return }
        try Spawn.check(["rm", "-rf", "--", path])
    }

    /// `cp -a source target`.
    static func copyTree(_ source: String, to target: String) throws {
        try Spawn.check(["cp", "-a", "--", source, target])
    }

    static func rename(_ source: String, to target: String) throws {
        guard Glibc.rename(source, target) == 0 else {
            throw BenchError("rename \(source) -> \(target): \(String(cString: strerror(errno)))")
        }
    }
}

enum Paths {
    static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    static func base(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// The absolute, symlink-free form of an existing path, or `path` made absolute.
    static func absolute(_ path: String) -> String {
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        if path.hasPrefix("/") { return path }
        return currentDirectory + "/" + path
    }

    /// `path` made absolute and tidied (`.`, `..`, `//`) without resolving symbolic links, so
    /// that folders derived from its name land beside it, not beside a link's target.
    static func lexicallyAbsolute(_ path: String) -> String {
        let full = path.hasPrefix("/") ? path : currentDirectory + "/" + path
        var parts: [Substring] = []
        for part in full.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    static var currentDirectory: String {
        guard let pointer = getcwd(nil, 0) else { return "." }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    /// This executable (`/proc/self/exe`), so that rows can re-run it.
    static var executable: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return CommandLine.arguments[0] }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

enum Machine {
    static var cores: Int { Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

    static var cpuModel: String {
        guard let text = Files.readText("/proc/cpuinfo") else { return "unknown" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingSpaces
            }
        }
        return "unknown"
    }

    /// The 1-minute load average and the number of runnable threads (`/proc/loadavg`):
    /// other work on the machine shows up here.
    static var load: (oneMinute: Double, runnable: Int) {
        let fields = (Files.readText("/proc/loadavg") ?? "").split(separator: " ")
        guard fields.count >= 4 else { return (.nan, 0) }
        return (Double(fields[0]) ?? .nan, Int(fields[3].split(separator: "/").first ?? "") ?? 0)
    }

    static var memoryBytes: Int {
        guard let text = Files.readText("/proc/meminfo") else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("MemTotal:") {
            let digits = line.filter(\.isNumber)
            return (Int(digits) ?? 0) * 1024
        }
        return 0
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\n" { text.removeLast() }
        return String(text)
    }
}

/// Syncs `journal` with `target` from the harness's synchronous rows. The library's sync is
/// `async` (it waits on rsync); the rows run on the main thread, which is not one of the
/// concurrency pool's, so blocking it here cannot starve the task it waits for.
func syncBlocking(_ journal: JournalDirectory, _ target: SyncTarget) throws -> ReconcileReport {
    let done = DispatchSemaphore(value: 0)
    let outcome = Outcome()
    Task.detached {
        do { outcome.result = .success(try await SyncEngine(journal: journal).sync(target)) } catch {
            outcome.result = .failure(error)
        }
        done.signal()
    }
    done.wait()
    return try outcome.result!.get()
}

/// Written by the task before it signals, read after the wait: the semaphore orders them.
private final class Outcome: @unchecked Sendable {
    var result: Result<ReconcileReport, any Error>?
}
