#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Atomics
import SystemPackage

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
    /// Whether this process may run the file at `path` (following links, as running it would).
    public static func isExecutable(_ path: String) -> Bool { access(path, X_OK) == 0 && !isDirectory(path) }
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


extension FileSystem {
    public static func removeDirectory(_ path: String) throws(IOError) {
        guard rmdir(path) == 0 else { throw IOError("rmdir", path: path, code: errno) }
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
