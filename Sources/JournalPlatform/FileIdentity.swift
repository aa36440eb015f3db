#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What tells one file from a copy of it: its inode and its status-change time (`lstat(2)`).
/// A copy (`cp -a`, `rsync -a`, a restore from backup) gets a new inode and a new ctime,
/// which no copying tool can preserve; renaming the folder that holds it changes neither.
public struct FileIdentity: Equatable, Sendable, CustomStringConvertible {
    public var inode: UInt64
    public var changeTime: Int64

    public init(inode: UInt64, changeTime: Int64) {
        self.inode = inode
        self.changeTime = changeTime
    }

    public static func of(_ path: String) -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let changed = Int64(info.st_ctimespec.tv_sec) * 1_000_000_000 + Int64(info.st_ctimespec.tv_nsec)
        #else
        let changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        #endif
        return FileIdentity(inode: UInt64(info.st_ino), changeTime: changed)
    }

    public var description: String { "\(inode) \(changeTime)" }

    public init?(_ text: Substring) {
        let fields = text.split(separator: " ")
        guard fields.count == 2, let inode = UInt64(fields[0]), let changed = Int64(fields[1]) else { return nil }
        self.init(inode: inode, changeTime: changed)
    }
}

extension FileSystem {
    /// Bytes available to this user on the file system holding `path` (`statvfs(3)`).
    public static func availableBytes(_ path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}
