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
    case rsyncMissing
    case rsyncFailed(command: String, status: Int32, output: String)
    case sameJournal(String)
    /// Another sync or merge holds this journal's `local/sync.lock` (its pid, if it said).
    case busy(pid: Int32?)
    case io(String)

    public var description: String {
        switch self {
        case .targetMissing(let path):
            return "\(path) does not exist; create the folder first if it is a new shared board (mkdir -p \(path))"
        case .targetNotADirectory(let path): return "\(path) is not a directory"
        case .rsyncMissing: return "rsync is not installed (apt-get install rsync)"
        case .rsyncFailed(let command, let status, let output):
            return "rsync failed with exit status \(status): \(output.split(separator: "\n").prefix(3).joined(separator: " / ")) [\(command)]"
        case .sameJournal(let path): return "\(path) is this journal itself"
        case .busy(let pid): return "another sync is running on this journal (pid \(pid.map(String.init) ?? "unknown"))"
        case .io(let message): return message
        }
    }
}
