#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SystemPackage

extension FileDescriptor {
    /// A descriptor someone else opened (standard input, a pipe they hand over), named for
    /// messages. Whoever opened it closes it.
    public static func borrowed(_ rawValue: Int32, name: String) -> FileDescriptor {
        FileDescriptor(rawValue: rawValue, path: name)
    }

    /// Opens input a person named (a file, a FIFO, `/dev/stdin`) for streaming reads,
    /// following symlinks: unlike a journal's own files, such input is theirs to point anywhere.
    public static func openForStreamingInput(_ path: String) throws(IOError) -> FileDescriptor {
        let fd = retryingInterrupts { Glibc_open(path, O_RDONLY | O_CLOEXEC, 0) }
        guard fd >= 0 else { throw IOError("open", path: path, code: errno) }
        return FileDescriptor(rawValue: fd, path: path)
    }

    /// Reads what is available, up to `count` bytes (`read(2)`, interrupted calls retried);
    /// 0 only at the end of the input.
    public func readSome(into buffer: UnsafeMutableRawPointer, count: Int) throws(IOError) -> Int {
        do { return try system.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: count)) } catch {
            throw .system("read", path: path, error)
        }
    }

    /// Whether a read now would wait (a pipe its writer has not filled yet).
    public var wouldWaitToRead: Bool {
        var probe = pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&probe, 1, 0) == 0
    }
}

/// Byte search over raw memory with the C library's vectorised `memchr`, which is several
/// times faster than a Swift loop on the megabyte buffers input is read in.
public enum ByteSearch {
    public static func firstIndex(of byte: UInt8, in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress, bytes.count > 0,
            let found = memchr(base, Int32(byte), bytes.count)
        else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }
}
