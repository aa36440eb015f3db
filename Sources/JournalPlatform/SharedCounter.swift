import Atomics
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A monotonically rising 64-bit counter in a small file mapped into every process that
/// opens it (`mmap(MAP_SHARED)`): one process raises it, another reads it with one atomic
/// load, no system call. The journal uses it so that a running writer sees, before it
/// assigns its next Lamport clock, the clocks of segments a concurrent sync has just
/// imported (invariant 4). The file's content is only a cache of what the segments say: a
/// missing or zeroed file loses nothing, it is rebuilt from the local index.
public final class SharedCounter: @unchecked Sendable {
    // The mapping is never remapped or unmapped before deinit, and every access goes through
    // the atomic, so sharing the instance between threads is safe.
    private let mapping: UnsafeMutableRawPointer
    private let atomic: UnsafeAtomic<UInt64>
    private let descriptor: Int32

    /// Opens (creating if needed) the counter file at `path`.
    public init(path: String) throws(IOError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw IOError("open", path: path, code: errno) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            _ = close(fd)
            throw IOError("stat", path: path, code: code)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            _ = close(fd)
            throw IOError("open", path: path, code: EINVAL)
        }
        // Extending with zeros is what every opener does, so racing openers agree.
        if info.st_size < 8 && ftruncate(fd, 8) != 0 {
            let code = errno
            _ = close(fd)
            throw IOError("truncate", path: path, code: code)
        }
        guard let pointer = mmap(nil, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), pointer != MAP_FAILED else {
            let code = errno
            _ = close(fd)
            throw IOError("mmap", path: path, code: code)
        }
        mapping = pointer
        descriptor = fd
        atomic = UnsafeAtomic(at: pointer.assumingMemoryBound(to: UInt64.AtomicRepresentation.self))
    }

    deinit {
        munmap(mapping, 8)
        _ = close(descriptor)
    }

    public var value: UInt64 { atomic.load(ordering: .acquiring) }

    /// Raises the counter to at least `newValue` (never lowers it).
    public func raise(to newValue: UInt64) {
        var current = atomic.load(ordering: .relaxed)
        while current < newValue {
            let (exchanged, original) = atomic.compareExchange(
                expected: current, desired: newValue, ordering: .acquiringAndReleasing)
            if exchanged { return }
            current = original
        }
    }
}
