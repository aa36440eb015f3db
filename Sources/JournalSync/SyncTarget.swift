import JournalPlatform

/// Where `journal sync` sends and fetches segments.
public enum SyncTarget: Equatable, Sendable, CustomStringConvertible {
    /// A mounted folder: NFS, Syncthing/Dropbox folder, USB stick. Holds `replicas/`.
    case directory(String)
    /// Anything rsync reaches: `host:path`, `user@host:path`, `rsync://host/module/path`.
    case rsync(String)

    /// `rsync://…` and scp-style `[user@]host:path` are remote; everything else is a folder
    /// (use `./name:with:colons` for a local folder whose name has a colon before any slash).
    public init(parsing text: String) {
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
        case .sameJournal(let path): return "\(path) is this journal itself"
        case .busy(let pid): return "another sync or compaction is running on this journal (pid \(pid.map(String.init) ?? "unknown"))"
        case .io(let error, let doing): return doing.map { "\($0): \(error)" } ?? error.description
        }
    }
}
