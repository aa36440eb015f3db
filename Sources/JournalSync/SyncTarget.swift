import JournalPlatform

/// Where `journal sync` sends and fetches segments.
public enum SyncTarget: Equatable, Sendable, CustomStringConvertible {
    /// A mounted folder: NFS, Syncthing/Dropbox folder, USB stick. Holds `replicas/`.
    case directory(String)
    /// Anything rsync reaches: `host:path`, `user@host:path`, `rsync://host/module/path`.
    case rsync(String)
    /// An object store through rclone: `s3://bucket/path`, or `rclone:REMOTE:path` for any
    /// remote of the user's rclone configuration (docs/SYNC.md, "Object storage").
    case objectStore(ObjectStoreAddress)

    /// `s3://…` and `rclone:…` are object stores; `rsync://…` and scp-style
    /// `[user@]host:path` are rsync remotes; everything else is a folder (use
    /// `./name:with:colons` for a local folder whose name has a colon before any slash).
    public init(parsing text: String) throws(SyncError) {
        if let store = try ObjectStoreAddress(parsing: text) { self = .objectStore(store); return }
        if text.hasPrefix("rsync://") { self = .rsync(text); return }
        if let colon = text.firstIndex(of: ":"), !text.hasPrefix("/"), !text.hasPrefix("."),
           !text[..<colon].contains("/"), colon != text.startIndex {
            self = .rsync(text)
            return
        }
        self = .directory(text)
    }

    public var description: String {
        switch self {
        case .directory(let path): return path
        case .rsync(let remote): return remote
        case .objectStore(let store): return store.text
        }
    }
}

public enum SyncError: Error, Equatable, Sendable, CustomStringConvertible {
    case targetMissing(String)
    case targetNotADirectory(String)
    /// A merge source that does not exist.
    case sourceMissing(String)
    /// A folder that is neither a journal nor a shared board (no `replicas/`), and not empty:
    /// most likely a mistyped path. `--create` makes it a board (targets only).
    case notABoard(String, isSource: Bool)
    case rsyncMissing
    case rsyncFailed(command: String, status: Int32, output: String)
    case rcloneMissing
    /// rclone ran and failed; `command` holds no secret (credentials reach rclone through its
    /// environment or its configuration file, never its arguments).
    case rcloneFailed(command: String, status: Int32, output: String)
    /// An object-store address that names no bucket or remote.
    case badObjectStoreAddress(String, reason: String)
    case sameJournal(String)
    /// Another sync, merge or compaction holds this journal's `local/sync.lock` (its pid, if it said).
    case busy(pid: Int32?)
    /// A system call failed: its error (operation, path, errno) and what sync was doing.
    case io(IOError, doing: String?)

    public var description: String {
        switch self {
        case .targetMissing(let path):
            return "\(path) does not exist; to start a new shared board there, run again with --create"
        case .sourceMissing(let path):
            return "\(path) does not exist (a merge source must be a journal or a shared board folder)"
        case .notABoard(let path, let isSource):
            return isSource
                ? "\(path) is neither a journal nor a shared board folder (no replicas/ in it): nothing to merge from"
                : "\(path) is not a shared board folder (no replicas/ in it, and it is not empty); to start a board there anyway, run again with --create"
        case .targetNotADirectory(let path): return "\(path) is not a directory"
        case .rsyncMissing: return "rsync is not installed (apt-get install rsync)"
        case .rsyncFailed(let command, let status, let output):
            return "rsync failed with exit status \(status): \(output.split(separator: "\n").prefix(3).joined(separator: " / ")) [\(command)]"
        case .rcloneMissing: return "rclone is not installed (apt-get install rclone): it is what reaches object stores"
        case .rcloneFailed(let command, let status, let output):
            return "rclone failed with exit status \(status): \(output.split(separator: "\n").prefix(3).joined(separator: " / ")) [\(command)]"
        case .badObjectStoreAddress(let text, let reason): return "\(text.debugDescription) is not an object-store address: \(reason)"
        case .sameJournal(let path): return "\(path) is this journal itself"
        case .busy(let pid): return "another sync or compaction is running on this journal (pid \(pid.map(String.init) ?? "unknown"))"
        case .io(let error, let doing): return doing.map { "\($0): \(error)" } ?? error.description
        }
    }
}
