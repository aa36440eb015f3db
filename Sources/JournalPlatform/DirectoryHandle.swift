#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A folder held open by descriptor: every name is resolved relative to it (`openat`,
/// `mkdirat`, `linkat`, `renameat`, `unlinkat`, `fstatat`), one component at a time.
///
/// A shared folder is hostile (invariant 8): anyone who can write there can replace
/// `replicas/` or `replicas/<id>/` by a symlink to any folder, between our check and our
/// write. Paths are therefore never re-resolved: a walk opens each component below the root
/// the user named with `O_NOFOLLOW | O_DIRECTORY`, so a symlink at any component is refused
/// (`IOError.isSymbolicLink`) and nothing is written through it. The root itself may be a
/// symlink: the user chose it.
///
/// The descriptor is closed when the handle goes away.
public final class DirectoryHandle: Sendable {
    /// The path this handle was reached by, for messages and fault injection.
    public let path: String
    private let descriptor: Int32

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { SystemCall.close(descriptor) }

    /// Opens a folder by path. `followingSymlink: false` refuses a symlink at the last
    /// component (earlier components, chosen by whoever gave the path, are followed).
    public static func open(_ path: String, followingSymlink: Bool = true) throws(IOError) -> DirectoryHandle {
        try open(in: AT_FDCWD, name: path, displayPath: path, follow: followingSymlink)
    }

    /// Opens `relative` ("a/b/c") below the folder `root`, never following a symlink at any
    /// component of `relative`. With `create`, missing components are made (`mkdirat`), and
    /// the folder holding each new one is fsynced so that the new name is durable.
    public static func open(_ relative: String, beneath root: String, create: Bool = false) throws(IOError) -> DirectoryHandle {
        var handle = try open(root)
        for component in relative.split(separator: "/") where component != "." {
            let name = String(component)
            handle = create ? try handle.openOrCreateSubdirectory(name) : try handle.openSubdirectory(name)
        }
        return handle
    }

    /// Opens the sub-folder `name`, refusing a symlink.
    public func openSubdirectory(_ name: String) throws(IOError) -> DirectoryHandle {
        try checkName(name)
        return try Self.open(in: descriptor, name: name, displayPath: child(name), follow: false)
    }

    /// Opens the sub-folder `name`, creating it (and fsyncing this folder) if it is missing.
    /// A symlink of that name is refused, never followed, and nothing is created.
    public func openOrCreateSubdirectory(_ name: String) throws(IOError) -> DirectoryHandle {
        try checkName(name)
        if kind(of: name) == nil {
            try FaultInjection.check(.mkdir, child(name))
            if mkdirat(descriptor, name, 0o755) == 0 {
                try sync()
            } else if errno != EEXIST {
                throw IOError("mkdir", path: child(name), code: errno)
            }
        }
        return try openSubdirectory(name)
    }

    /// What `name` is, without following a symlink (`fstatat(AT_SYMLINK_NOFOLLOW)`); nil if
    /// there is no such entry.
    public func kind(of name: String) -> FileSystem.EntryKind? {
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return FileSystem.describe(info).kind
    }

    /// The folder's entries, sorted by name, each examined without following symlinks.
    public func list() throws(IOError) -> [FileSystem.Entry] {
        // fdopendir owns the descriptor it is given: hand it a duplicate. The duplicate shares
        // the read position, hence the rewind.
        let copy = dup(descriptor)
        guard copy >= 0 else { throw IOError("list", path: path, code: errno) }
        guard let stream = fdopendir(copy) else {
            let code = errno
            SystemCall.close(copy)
            throw IOError("list", path: path, code: code)
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var entries: [FileSystem.Entry] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            var info = stat()
            guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            let described = FileSystem.describe(info)
            entries.append(FileSystem.Entry(name: name, kind: described.kind, size: described.size,
                                            modified: described.modified, inode: described.inode))
        }
        return entries.sorted { $0.name < $1.name }
    }

    /// Opens the regular file `name` in this folder (see `FileDescriptor.open`: never through a
    /// symlink, never a FIFO or device).
    public func openFile(_ name: String, _ mode: FileDescriptor.Mode) throws(IOError) -> FileDescriptor {
        try checkName(name)
        return try FileDescriptor.openChecked(directory: descriptor, name: name, displayPath: child(name), mode)
    }

    /// The whole regular file `name`.
    public func readFile(_ name: String) throws(IOError) -> [UInt8] {
        let file = try openFile(name, .readOnly)
        defer { file.close() }
        return try file.read(count: Int(try file.size()), at: 0)
    }

    /// Creates `name` with exactly `bytes`, never replacing an existing entry: a unique
    /// temporary, fsync, `linkat` to `name` (fails with EEXIST if it exists), `unlinkat` of the
    /// temporary, fsync of this folder.
    /// `ownerOnly`: the file is 0600 from before its first byte (a secret key).
    public func writeNewFileAtomically(name: String, bytes: [UInt8], ownerOnly: Bool = false) throws(IOError) {
        try checkName(name)
        let temporary = try writeTemporary(for: name, bytes: bytes, ownerOnly: ownerOnly)
        do throws(IOError) {
            try FaultInjection.check(.link, child(name))
            guard linkat(descriptor, temporary, descriptor, name, 0) == 0 else {
                throw IOError("link", path: child(name), code: errno)
            }
        } catch {
            try? removeFile(temporary)
            throw error
        }
        try removeFile(temporary)
        try sync()
    }

    /// Replaces `name` (or creates it) with exactly `bytes`: a unique temporary, fsync,
    /// `renameat` over `name`, fsync of this folder. Readers see the old or the new file whole.
    public func replaceFileAtomically(name: String, bytes: [UInt8], ownerOnly: Bool = false) throws(IOError) {
        try checkName(name)
        let temporary = try writeTemporary(for: name, bytes: bytes, ownerOnly: ownerOnly)
        do throws(IOError) {
            try FaultInjection.check(.rename, child(name))
            guard renameat(descriptor, temporary, descriptor, name) == 0 else {
                throw IOError("rename", path: child(temporary), code: errno)
            }
        } catch {
            try? removeFile(temporary)
            throw error
        }
        try sync()
    }

    /// Unlinks the entry `name` (a file or a symlink itself, never what it points to).
    public func removeFile(_ name: String) throws(IOError) {
        try checkName(name)
        try FaultInjection.check(.remove, child(name))
        guard unlinkat(descriptor, name, 0) == 0 else { throw IOError("remove", path: child(name), code: errno) }
    }

    /// Fsyncs the folder: the names created, linked, renamed or removed in it become durable.
    public func sync() throws(IOError) {
        try FaultInjection.check(.syncDirectory, path)
        guard retryingInterrupts({ fsync(descriptor) }) == 0 else { throw IOError("fsync", path: path, code: errno) }
    }

    // MARK: Private

    private func child(_ name: String) -> String { path == "/" ? "/" + name : path + "/" + name }

    /// One path component: a name that cannot climb out of this folder.
    private func checkName(_ name: String) throws(IOError) {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else {
            throw IOError("open", path: child(name), code: EINVAL, reason: "not a plain file name")
        }
    }

    /// Writes `bytes` to a new, uniquely named temporary (`FileSystem.temporaryName`,
    /// exclusive create) and fsyncs it; returns its name. Removed again if anything fails.
    private func writeTemporary(for name: String, bytes: [UInt8], ownerOnly: Bool) throws(IOError) -> String {
        var attempt = 0
        while true {
            let temporary = FileSystem.temporaryName(for: name)
            let file: FileDescriptor
            do throws(IOError) {
                file = try openFile(temporary, .createNew)
            } catch {
                // 64 random bits make a clash all but impossible; retry rather than fail.
                attempt += 1
                if error.isExists && attempt < 4 { continue }
                throw error
            }
            do throws(IOError) {
                if ownerOnly { try file.restrictToOwner() }
                try file.writeAll(bytes)
                try file.sync()
                file.close()
            } catch {
                file.close()
                try? removeFile(temporary)
                throw error
            }
            return temporary
        }
    }

    private static func open(in directory: Int32, name: String, displayPath: String, follow: Bool) throws(IOError) -> DirectoryHandle {
        let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW)
        let fd = retryingInterrupts { Glibc_openat(directory, name, flags, 0) }
        guard fd >= 0 else {
            throw symlinkAware(IOError("open", path: displayPath, code: errno), directory: directory, name: name)
        }
        return DirectoryHandle(descriptor: fd, path: displayPath)
    }
}

extension ProcessInfoLite {
    /// Makes sure descriptors 0, 1 and 2 are open, opening `/dev/null` on any that is closed.
    ///
    /// Started as `journal record … <&- >&-`, the process would otherwise get 0 and 1 from its
    /// first `open` calls (the lock file, the open segment), and "durable N" lines meant for
    /// standard output would be written into the journal. Call it first thing in `main`,
    /// before anything opens a file. Returns false if a closed one could not be filled.
    @discardableResult
    public static func guardStandardDescriptors() -> Bool {
        for fd: Int32 in 0...2 {
            guard fcntl(fd, F_GETFD) == -1 && errno == EBADF else { continue }
            // Not close-on-exec: children inherit standard descriptors as usual.
            let opened = Glibc_open("/dev/null", O_RDWR, 0)
            guard opened >= 0 else { return false }
            if opened != fd {
                guard dup2(opened, fd) == fd else { return false }
                SystemCall.close(opened)
            }
        }
        return true
    }
}
