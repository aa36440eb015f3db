#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Atomics
import SystemPackage

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
