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
