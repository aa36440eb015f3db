#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Atomics
import SystemPackage

/// A failed system call, with the path and operation a person needs to act on it.
public struct IOError: Error, Equatable, Sendable, CustomStringConvertible {
    public var operation: String
    public var path: String
    public var code: Int32
    /// Said instead of `strerror(code)` when the errno alone would mislead: `open` of a
    /// symlink fails with ELOOP ("too many levels of symbolic links") or ENOTDIR.
    public var reason: String?

    public init(_ operation: String, path: String, code: Int32, reason: String? = nil) {
        self.operation = operation
        self.path = path
        self.code = code
        self.reason = reason
    }

    /// A failure swift-system reported: its `Errno`, kept as the cause.
    public init(_ operation: String, path: String, errno: Errno) {
        self.init(operation, path: path, code: errno.rawValue)
    }

    /// Any error a swift-system call threw (they throw `Errno`, untyped).
    static func system(_ operation: String, path: String, _ error: any Error) -> IOError {
        IOError(operation, path: path, code: (error as? Errno)?.rawValue ?? Errno.ioError.rawValue)
    }

    /// The cause, as swift-system's typed errno.
    public var errno: Errno { Errno(rawValue: code) }

    public static let symbolicLinkReason = "symbolic link: never followed"
    public static let notRegularFileReason = "not a regular file"

    public var message: String { reason ?? String(cString: strerror(code)) }
    public var description: String { "\(operation) \(path): \(message)" }
    public var isWouldBlock: Bool { errno == .wouldBlock || errno == .resourceTemporarilyUnavailable }
    public var isNotFound: Bool { errno == .noSuchFileOrDirectory }
    public var isExists: Bool { errno == .fileExists }

    /// A symlink met where the journal never follows one (the operation fails with ELOOP).
    public static func symbolicLink(_ operation: String, path: String) -> IOError {
        IOError(operation, path: path, code: Errno.tooManySymbolicLinkLevels.rawValue, reason: symbolicLinkReason)
    }

    /// Bytes that read back other than they must (an I/O error, EIO, with its own reason).
    public static func damaged(_ operation: String, path: String, reason: String) -> IOError {
        IOError(operation, path: path, code: Errno.ioError.rawValue, reason: reason)
    }

    /// A symlink where a file or folder was expected: refused, never followed.
    public var isSymbolicLink: Bool { reason == Self.symbolicLinkReason }
    /// A FIFO, device or socket (or a folder) where a regular file was expected.
    public var isNotRegularFile: Bool { reason == Self.notRegularFileReason }
}

/// An open POSIX file descriptor (`open(2)`), closed explicitly with `close()`.
///
/// A class, and `close()` closes at most once: as a value, every copy could close the number
/// again, and a second close of a number the system had meanwhile given to another open file
/// (another board's segment, a relay client's socket) closed that one instead. In a test run
/// such a close took a socket from under SwiftNIO, which stopped the process on EBADF.
public final class FileDescriptor: Sendable {
    /// The descriptor, or -1 once closed: a call on a closed one fails with EBADF and can
    /// reach no other file.
    public var rawValue: Int32 { descriptor.load(ordering: .acquiring) }
    public let path: String
    private let descriptor: ManagedAtomic<Int32>

    init(rawValue: Int32, path: String) {
        descriptor = ManagedAtomic(rawValue)
        self.path = path
    }

    public enum Mode: Sendable {
        case readOnly
        /// Read-write, created if missing.
        case readWrite
        /// Write-only, fails if the file exists (`O_CREAT|O_EXCL`).
        case createNew
    }

    /// Opens a file, never through a symlink at its last component (`O_NOFOLLOW`), and only
    /// if it is a regular file: a FIFO swapped in for a listed segment would block `open(2)`
    /// for ever, so the open is non-blocking and `fstat` refuses anything but a regular file.
    public static func open(_ path: String, _ mode: Mode) throws(IOError) -> FileDescriptor {
        try openChecked(directory: AT_FDCWD, name: path, displayPath: path, mode)
    }

    static func openChecked(directory: Int32, name: String, displayPath: String, _ mode: Mode) throws(IOError) -> FileDescriptor {
        if mode != .readOnly { try FaultInjection.check(.open, displayPath) }
        let flags: Int32
        switch mode {
        case .readOnly: flags = O_RDONLY | O_NONBLOCK
        case .readWrite: flags = O_RDWR | O_CREAT | O_NONBLOCK
        case .createNew: flags = O_WRONLY | O_CREAT | O_EXCL
        }
        let fd = retryingInterrupts { Glibc_openat(directory, name, flags | O_NOFOLLOW | O_CLOEXEC, 0o644) }
        guard fd >= 0 else {
            let code = errno
            throw symlinkAware(IOError("open", path: displayPath, code: code), directory: directory, name: name)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            SystemCall.close(fd)
            throw IOError("stat", path: displayPath, code: code)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            SystemCall.close(fd)
            throw IOError("open", path: displayPath, code: EINVAL, reason: IOError.notRegularFileReason)
        }
        // Back to blocking I/O: O_NONBLOCK was only there so that the open itself cannot hang.
        if flags & O_NONBLOCK != 0 {
            let current = fcntl(fd, F_GETFL)
            if current >= 0 { _ = fcntl(fd, F_SETFL, current & ~O_NONBLOCK) }
        }
        return FileDescriptor(rawValue: fd, path: displayPath)
    }

    /// The same descriptor as swift-system sees it: reads, writes and closes go through it,
    /// which retries interrupted calls and reports a typed `Errno`.
    var system: SystemPackage.FileDescriptor { SystemPackage.FileDescriptor(rawValue: rawValue) }

    public func close() {
        let number = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        guard number >= 0 else { return }
        try? SystemPackage.FileDescriptor(rawValue: number).close()
    }

    /// Writes every byte, retrying short writes.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(IOError) {
        if let code = FaultInjection.fault(.write, path) {
            // A failing write may still have written part of the buffer (ENOSPC mid-way): do
            // that, so that tests see the torn bytes a real failure can leave.
            _ = try? system.writeAll(UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count / 2)]))
            throw IOError("write", path: path, code: code)
        }
        do { try system.writeAll(bytes) } catch { throw .system("write", path: path, error) }
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
                let got: Int
                do {
                    got = try system.read(fromAbsoluteOffset: offset + Int64(filled), into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
                } catch {
                    failure = .system("read", path: path, error)
                    return
                }
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

    /// `fchmod(2)` to 0600: only the owner may read or write it (a secret key, before any byte
    /// of it is written).
    public func restrictToOwner() throws(IOError) {
        guard fchmod(rawValue, 0o600) == 0 else { throw IOError("chmod", path: path, code: errno) }
    }

    public func truncate(to length: Int64) throws(IOError) {
        try FaultInjection.check(.truncate, path)
        do { try system.resize(to: length) } catch { throw .system("truncate", path: path, error) }
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

    /// Writes a complete file under a unique temporary name in the same folder, fsyncs it,
    /// renames it over `path` and fsyncs the folder: readers see either the old or the whole
    /// new file. The temporary's name is unique per call (`.tmp-<base>.<host>.<pid>.<random>`),
    /// so a temporary that a crash left behind never blocks a later write; such leftovers are
    /// removed by `removeStaleTemporaries(in:)`.
    public static func writeAtomically(_ bytes: [UInt8], to path: String) throws(IOError) {
        let folder = try DirectoryHandle.open(parent(of: path))
        try folder.replaceFileAtomically(name: lastComponent(of: path), bytes: bytes)
    }

    /// The name of a new temporary for a file named `base`: hidden, unique, and telling which
    /// host and process made it so that `isStaleTemporary` can tell a crash leftover.
    public static func temporaryName(for base: String) -> String {
        let random = ProcessInfoLite.randomBytes(8).map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
        return ".tmp-" + base + "." + ProcessInfoLite.hostName + "." + String(ProcessInfoLite.processID) + "." + random
    }

    /// A temporary made by `temporaryName(for:)` (or the older `.tmp-<base>.<host>.<pid>`) on
    /// this host by a process that is gone: nobody will ever finish it, so it may be deleted.
    public static func isStaleTemporary(_ name: String) -> Bool {
        guard name.hasPrefix(".tmp-") else { return false }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        let count = parts.count
        let host = ProcessInfoLite.hostName
        if count >= 4, parts[count - 1].count == 16, parts[count - 1].allSatisfy(\.isHexDigit),
           let pid = Int32(parts[count - 2]), parts[count - 3] == host {
            return !ProcessInfoLite.isAlive(pid)
        }
        if count >= 3, let pid = Int32(parts[count - 1]), parts[count - 2] == host {
            return !ProcessInfoLite.isAlive(pid)
        }
        return false
    }

    /// Deletes the regular files in `folder` that `isStaleTemporary` calls stale. Errors are
    /// ignored: a leftover costs only disk space. Returns how many were removed.
    @discardableResult
    public static func removeStaleTemporaries(in folder: String) -> Int {
        guard let directory = try? DirectoryHandle.open(folder), let entries = try? directory.list() else { return 0 }
        var removed = 0
        for entry in entries where entry.kind == .file && isStaleTemporary(entry.name) {
            if (try? directory.removeFile(entry.name)) != nil { removed += 1 }
        }
        return removed
    }

    /// `base` with `components` appended, as swift-system's `FilePath` appends: one separator
    /// between parts, and a leading "/" in a component never escapes `base`. Plain parts (a
    /// listing's names under a clean folder: nearly every call) are joined as text, since
    /// `FilePath` normalises each part anew, which was most of a relay's time spent listing a
    /// board's files.
    public static func join(_ base: String, _ components: String...) -> String {
        if isPlain(base, asBase: true), components.allSatisfy({ isPlain($0, asBase: false) }) {
            var path = base
            for component in components {
                if path != "/" { path += "/" }
                path += component
            }
            return path
        }
        var path = FilePath(base)
        for component in components { path.append(component) }
        return path.string
    }

    /// Non-empty, no empty part ("//"), no trailing "/" (but "/" itself as a base), and as a
    /// component no leading "/": what `FilePath` would leave as it is.
    private static func isPlain(_ part: String, asBase: Bool) -> Bool {
        let bytes = part.utf8
        guard let first = bytes.first, let last = bytes.last else { return false }
        if asBase && bytes.count == 1 && first == UInt8(ascii: "/") { return true }
        guard last != UInt8(ascii: "/"), asBase || first != UInt8(ascii: "/") else { return false }
        var previousWasSlash = false
        for byte in bytes {
            let slash = byte == UInt8(ascii: "/")
            if slash && previousWasSlash { return false }
            previousWasSlash = slash
        }
        return true
    }

    /// The last component of a path (`parent(of:)`'s complement).
    public static func lastComponent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
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

    /// Removes `path` and, if it is a folder, everything in it, best effort; a symlink is
    /// removed, never followed. For folders this process made (staging, a journal it just
    /// created), never for what a user holds.
    public static func removeTree(_ path: String) {
        guard let kind = linkStatus(path)?.kind else { return }
        if kind == .directory, let entries = try? list(path) {
            for entry in entries { removeTree(join(path, entry.name)) }
            try? removeDirectory(path)
        } else {
            try? remove(path)
        }
    }

    /// Fsyncs a directory so that the names created or renamed in it are durable.
    public static func syncDirectory(_ path: String) throws(IOError) {
        try FaultInjection.check(.syncDirectory, path)
        let fd = retryingInterrupts { Glibc_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) }
        guard fd >= 0 else { throw IOError("open", path: path, code: errno) }
        defer { SystemCall.close(fd) }
        guard fsync(fd) == 0 else { throw IOError("fsync", path: path, code: errno) }
    }

    /// Only the owner may read or write `path` (0700 for a folder, 0600 for a file): where a
    /// secret key is kept.
    public static func restrictToOwner(_ path: String) throws(IOError) {
        let mode: mode_t = isDirectory(path) ? 0o700 : 0o600
        guard chmod(path, mode) == 0 else { throw IOError("chmod", path: path, code: errno) }
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

    /// Lists a directory, sorted by name. Neither the folder itself (its last component) nor
    /// its entries are followed if they are symlinks: entries are examined with `lstat`.
    public static func list(_ path: String) throws(IOError) -> [Entry] {
        try DirectoryHandle.open(path, followingSymlink: false).list()
    }

    public static func linkStatus(_ path: String) -> (kind: EntryKind, size: Int64, modified: Int64, inode: UInt64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return describe(info)
    }

    static func describe(_ info: stat) -> (kind: EntryKind, size: Int64, modified: Int64, inode: UInt64) {
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

/// The calls swift-system does not wrap, named apart from `FileDescriptor`'s members.
enum SystemCall {
    static func close(_ fd: Int32) {
        try? SystemPackage.FileDescriptor(rawValue: fd).close()
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
/// `ioerr` loop and LevelDB's fault-injection env).
///
/// The hook exists only in debug builds (`JOURNAL_FAULT_INJECTION`, Package.swift), where the
/// tests run: a release build carries no hook, no thread-specific slot and no check. It is
/// task-local and package-only: a test sets it with `FaultInjection.$hook.withValue(hook) { ... }`,
/// so it fails operations of that test's task only (tests run in parallel), and no application
/// linking the library can set it at all.
package enum FaultInjection {
    package enum Operation: String, Sendable, CaseIterable {
        case open, write, fsync, truncate, rename, link, remove, mkdir, syncDirectory
    }

    /// Returns an errno (e.g. `EIO`, `ENOSPC`) to fail the operation, nil to let it run.
    package typealias Hook = @Sendable (Operation, String) -> Int32?

    #if JOURNAL_FAULT_INJECTION
    @TaskLocal package static var hook: Hook? = nil

    /// Runs `body` with `hook` in force on this thread: how work a test's task hands to a
    /// thread of the library (the writer's flush, a board's committer) keeps the test's hook.
    /// A task-local cannot be bound there (the runtime has no task to bind it to), and running
    /// the work as a task instead could starve the cooperative pool the test itself blocks.
    package static func withThreadHook<T>(_ hook: Hook?, _ body: () throws -> T) rethrows -> T {
        guard let hook else { return try body() }
        let box = Unmanaged.passRetained(HookBox(hook))
        let previous = pthread_getspecific(threadHookKey)
        pthread_setspecific(threadHookKey, box.toOpaque())
        defer {
            pthread_setspecific(threadHookKey, previous)
            box.release()
        }
        return try body()
    }

    /// The hook in force: the task's, else the one `withThreadHook` set on this thread.
    package static var current: Hook? {
        if let hook { return hook }
        guard let raw = pthread_getspecific(threadHookKey) else { return nil }
        return Unmanaged<HookBox>.fromOpaque(raw).takeUnretainedValue().hook
    }

    private final class HookBox {
        let hook: Hook
        init(_ hook: @escaping Hook) { self.hook = hook }
    }

    private static let threadHookKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    @inline(__always)
    static func fault(_ operation: Operation, _ path: String) -> Int32? {
        guard let hook = current else { return nil }
        return hook(operation, path)
    }
    #else
    package static func withThreadHook<T>(_ hook: Hook?, _ body: () throws -> T) rethrows -> T { try body() }
    package static var current: Hook? { nil }
    @inline(__always) static func fault(_ operation: Operation, _ path: String) -> Int32? { nil }
    #endif

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
