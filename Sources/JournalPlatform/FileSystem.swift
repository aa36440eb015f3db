#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call, with the path and operation a person needs to act on it.
public struct IOError: Error, Equatable, Sendable, CustomStringConvertible {
    public var operation: String
    public var path: String
    public var code: Int32

    public init(_ operation: String, path: String, code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    public var message: String { String(cString: strerror(code)) }
    public var description: String { "\(operation) \(path): \(message)" }
    public var isWouldBlock: Bool { code == EWOULDBLOCK || code == EAGAIN }
    public var isNotFound: Bool { code == ENOENT }
    public var isExists: Bool { code == EEXIST }
}

/// An open POSIX file descriptor (`open(2)`), closed explicitly with `close()`.
public struct FileDescriptor: Sendable {
    public let rawValue: Int32
    public let path: String

    public enum Mode: Sendable {
        case readOnly
        /// Read-write, created if missing.
        case readWrite
        /// Write-only, fails if the file exists (`O_CREAT|O_EXCL`).
        case createNew
    }

    public static func open(_ path: String, _ mode: Mode) throws(IOError) -> FileDescriptor {
        if mode != .readOnly { try FaultInjection.check(.open, path) }
        let flags: Int32
        switch mode {
        case .readOnly: flags = O_RDONLY
        case .readWrite: flags = O_RDWR | O_CREAT
        case .createNew: flags = O_WRONLY | O_CREAT | O_EXCL
        }
        let fd = retryingInterrupts { Glibc_open(path, flags | O_CLOEXEC, 0o644) }
        guard fd >= 0 else { throw IOError("open", path: path, code: errno) }
        return FileDescriptor(rawValue: fd, path: path)
    }

    public func close() {
        _ = SystemCall.close(rawValue)
    }

    /// Writes every byte, retrying short writes.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(IOError) {
        var offset = 0
        if let code = FaultInjection.fault(.write, path) {
            // A failing write may still have written part of the buffer (ENOSPC mid-way): do
            // that, so that tests see the torn bytes a real failure can leave.
            _ = SystemCall.write(rawValue, bytes.baseAddress!, bytes.count / 2)
            throw IOError("write", path: path, code: code)
        }
        while offset < bytes.count {
            let written = retryingInterrupts {
                SystemCall.write(rawValue, bytes.baseAddress! + offset, bytes.count - offset)
            }
            guard written > 0 else { throw IOError("write", path: path, code: written < 0 ? errno : EIO) }
            offset += written
        }
    }

    public func writeAll(_ bytes: [UInt8]) throws(IOError) {
        var failure: IOError?
        bytes.withUnsafeBytes { buffer in
            do throws(IOError) { try writeAll(buffer) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Reads up to `count` bytes at `offset` (`pread(2)`); fewer only at end of file.
    public func read(count: Int, at offset: Int64) throws(IOError) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        var filled = 0
        var failure: IOError?
        result.withUnsafeMutableBytes { buffer in
            while filled < count {
                let got = retryingInterrupts {
                    SystemCall.pread(rawValue, buffer.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
                }
                if got < 0 { failure = IOError("read", path: path, code: errno); return }
                if got == 0 { break }
                filled += got
            }
        }
        if let failure { throw failure }
        result.removeSubrange(filled...)
        return result
    }

    public func size() throws(IOError) -> Int64 {
        var info = stat()
        guard fstat(rawValue, &info) == 0 else { throw IOError("stat", path: path, code: errno) }
        return Int64(info.st_size)
    }

    /// `fsync(2)`: the data written so far survives power loss once this returns.
    public func sync() throws(IOError) {
        try FaultInjection.check(.fsync, path)
        guard retryingInterrupts({ fsync(rawValue) }) == 0 else {
            throw IOError("fsync", path: path, code: errno)
        }
    }

    public func truncate(to length: Int64) throws(IOError) {
        try FaultInjection.check(.truncate, path)
        guard retryingInterrupts({ ftruncate(rawValue, off_t(length)) }) == 0 else {
            throw IOError("truncate", path: path, code: errno)
        }
    }

    public func seekToEnd() throws(IOError) {
        guard lseek(rawValue, 0, SEEK_END) >= 0 else { throw IOError("seek", path: path, code: errno) }
    }

    /// Takes an exclusive advisory lock (`flock(LOCK_EX|LOCK_NB)`), released when the
    /// descriptor closes or the process dies, so a crashed writer never leaves a stale lock.
    public func tryLockExclusive() throws(IOError) {
        guard flock(rawValue, LOCK_EX | LOCK_NB) == 0 else { throw IOError("lock", path: path, code: errno) }
    }
}

/// Whole-file and directory operations.
public enum FileSystem {
    public static func readFile(_ path: String) throws(IOError) -> [UInt8] {
        let fd = try FileDescriptor.open(path, .readOnly)
        defer { fd.close() }
        let size = try fd.size()
        return try fd.read(count: Int(size), at: 0)
    }

    /// Writes a complete file under a temporary name, fsyncs it, renames it into place and
    /// fsyncs the directory: readers see either nothing or the whole file.
    public static func writeAtomically(_ bytes: [UInt8], to path: String, temporaryPath: String) throws(IOError) {
        let fd = try FileDescriptor.open(temporaryPath, .createNew)
        do {
            try fd.writeAll(bytes)
            try fd.sync()
            fd.close()
        } catch {
            fd.close()
            try? remove(temporaryPath)
            throw error
        }
        try rename(temporaryPath, to: path)
        try syncDirectory(parent(of: path))
    }

    public static func rename(_ from: String, to: String) throws(IOError) {
        try FaultInjection.check(.rename, to)
        guard SystemCall.rename(from, to) == 0 else { throw IOError("rename", path: from, code: errno) }
    }

    /// Links `from` at `to`, failing if `to` exists: an atomic "rename without overwrite".
    public static func link(_ from: String, to: String) throws(IOError) {
        try FaultInjection.check(.link, to)
        guard SystemCall.link(from, to) == 0 else { throw IOError("link", path: to, code: errno) }
    }

    public static func remove(_ path: String) throws(IOError) {
        try FaultInjection.check(.remove, path)
        guard unlink(path) == 0 else { throw IOError("remove", path: path, code: errno) }
    }

    /// Fsyncs a directory so that the names created or renamed in it are durable.
    public static func syncDirectory(_ path: String) throws(IOError) {
        try FaultInjection.check(.syncDirectory, path)
        let fd = retryingInterrupts { Glibc_open(path, O_RDONLY | O_CLOEXEC, 0) }
        guard fd >= 0 else { throw IOError("open", path: path, code: errno) }
        defer { _ = SystemCall.close(fd) }
        guard fsync(fd) == 0 else { throw IOError("fsync", path: path, code: errno) }
    }

    /// `mkdir -p`.
    public static func createDirectory(_ path: String) throws(IOError) {
        if isDirectory(path) { return }
        let parentPath = parent(of: path)
        if parentPath != path && !parentPath.isEmpty && !exists(parentPath) {
            try createDirectory(parentPath)
        }
        try FaultInjection.check(.mkdir, path)
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            throw IOError("mkdir", path: path, code: errno)
        }
    }

    public enum EntryKind: Sendable, Equatable { case file, directory, symlink, other }

    public struct Entry: Sendable, Equatable {
        public var name: String
        public var kind: EntryKind
        public var size: Int64
        /// Nanoseconds since 1970 of the last modification.
        public var modified: Int64 = 0
        /// The inode, so callers can tell a replaced file from an untouched one.
        public var inode: UInt64 = 0
    }

    /// Lists a directory without following symlinks (`lstat`), sorted by name.
    public static func list(_ path: String) throws(IOError) -> [Entry] {
        guard let dir = opendir(path) else { throw IOError("list", path: path, code: errno) }
        defer { closedir(dir) }
        var entries: [Entry] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            if let info = linkStatus(path + "/" + name) {
                entries.append(Entry(name: name, kind: info.kind, size: info.size, modified: info.modified, inode: info.inode))
            }
        }
        return entries.sorted { $0.name < $1.name }
    }

    public static func linkStatus(_ path: String) -> (kind: EntryKind, size: Int64, modified: Int64, inode: UInt64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        let kind: EntryKind
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .file
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symlink
        default: kind = .other
        }
        #if canImport(Darwin)
        let modified = Int64(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(info.st_mtimespec.tv_nsec)
        #else
        let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        #endif
        return (kind, Int64(info.st_size), modified, UInt64(info.st_ino))
    }

    public static func exists(_ path: String) -> Bool { linkStatus(path) != nil }
    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    public static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    public static var currentDirectory: String {
        guard let pointer = getcwd(nil, 0) else { return "." }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}

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

    public static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Fills `count` bytes from the system's CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) != 0 }
}

private func retryingInterrupts<T: BinaryInteger>(_ call: () -> T) -> T {
    while true {
        let result = call()
        if result < 0 && errno == EINTR { continue }
        return result
    }
}

// Names that would otherwise collide with members of FileDescriptor.
private func Glibc_open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    open(path, flags, mode)
}

private enum SystemCall {
    static func close(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
        return Darwin.close(fd)
        #else
        return Glibc.close(fd)
        #endif
    }
    static func write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Darwin)
        return Darwin.write(fd, buffer, count)
        #else
        return Glibc.write(fd, buffer, count)
        #endif
    }
    static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: off_t) -> Int {
        #if canImport(Darwin)
        return Darwin.pread(fd, buffer, count, offset)
        #else
        return Glibc.pread(fd, buffer, count, offset)
        #endif
    }
    static func rename(_ from: String, _ to: String) -> Int32 {
        #if canImport(Darwin)
        return Darwin.rename(from, to)
        #else
        return Glibc.rename(from, to)
        #endif
    }
    static func link(_ from: String, _ to: String) -> Int32 {
        #if canImport(Darwin)
        return Darwin.link(from, to)
        #else
        return Glibc.link(from, to)
        #endif
    }
}

extension FileSystem {
    public static func removeDirectory(_ path: String) throws(IOError) {
        guard rmdir(path) == 0 else { throw IOError("rmdir", path: path, code: errno) }
    }
}

extension ProcessInfoLite {
    /// Whether a process with this pid exists (`kill(pid, 0)`); used to tell a running
    /// copier's temporary file from one a crash left behind.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }
}

extension FileSystem {
    public static func symlink(_ target: String, at path: String) throws(IOError) {
        #if canImport(Darwin)
        let status = Darwin.symlink(target, path)
        #else
        let status = Glibc.symlink(target, path)
        #endif
        guard status == 0 else { throw IOError("symlink", path: path, code: errno) }
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

/// A seam for tests: every storage write, fsync, truncate, rename, link, remove, mkdir and
/// directory fsync asks `hook` first, which may fail it with an errno (after SQLite's
/// `ioerr` loop and LevelDB's fault-injection env). Nil in production: one load and branch.
public enum FaultInjection {
    public enum Operation: String, Sendable, CaseIterable {
        case open, write, fsync, truncate, rename, link, remove, mkdir, syncDirectory
    }

    /// Returns an errno (e.g. `EIO`, `ENOSPC`) to fail the operation, nil to let it run.
    nonisolated(unsafe) public static var hook: ((Operation, String) -> Int32?)?

    @inline(__always)
    static func fault(_ operation: Operation, _ path: String) -> Int32? {
        guard let hook else { return nil }
        return hook(operation, path)
    }

    @inline(__always)
    static func check(_ operation: Operation, _ path: String) throws(IOError) {
        if let code = fault(operation, path) { throw IOError(operation.rawValue, path: path, code: code) }
    }
}

extension ProcessInfoLite {
    public static func sleep(milliseconds: Int) {
        usleep(useconds_t(milliseconds * 1000))
    }
}
