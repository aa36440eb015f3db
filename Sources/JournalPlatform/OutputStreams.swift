#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension FileDescriptor {
    /// The process's standard output and error, as descriptors (never closed by us).
    public static let standardOutput = FileDescriptor(rawValue: 1, path: "standard output")
    public static let standardError = FileDescriptor(rawValue: 2, path: "standard error")

    /// Opens an existing path that is not a regular file (a device, a FIFO, `/dev/stdout`) for
    /// writing, following symlinks as the person who named it expects: such a target must be
    /// streamed into, never replaced by a renamed temporary.
    public static func openForStreaming(_ path: String) throws(IOError) -> FileDescriptor {
        let fd = Glibc_openStreaming(path)
        guard fd >= 0 else { throw IOError("open", path: path, code: errno) }
        return FileDescriptor(rawValue: fd, path: path)
    }

    /// Whether a write failed because the reader went away (`EPIPE`), e.g. `journal log | head`.
    public static func isBrokenPipe(_ error: IOError) -> Bool { error.code == EPIPE }
}

extension FileSystem {
    /// Whether `path` names something other than a regular file or nothing at all (following
    /// symlinks): a device, a FIFO, a socket.
    public static func isSpecialFile(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return (info.st_mode & S_IFMT) != S_IFREG && (info.st_mode & S_IFMT) != S_IFDIR
    }
}

extension ProcessInfoLite {
    /// Ends the process now with `status`, without running further Swift code.
    public static func terminate(status: Int32) -> Never {
        exit(status)
    }
}

private func Glibc_openStreaming(_ path: String) -> Int32 {
    open(path, O_WRONLY | O_CLOEXEC | O_TRUNC)
}

extension ProcessInfoLite {
    /// Sets an environment variable of this process (`setenv(3)`), for what it hands on.
    public static func setEnvironment(_ name: String, _ value: String) {
        setenv(name, value, 1)
    }
}
