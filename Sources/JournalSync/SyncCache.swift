import JournalPlatform
import JournalStorage

/// Remembers, per target, what became of files whose name alone does not say what they hold
/// (conflict copies and version 1 names: held as which canonical name) and of files that
/// were refused (why), so that a sync does not read them again.
///
/// A verdict is about bytes, and bytes can change under an unchanged name, size and
/// modification time (`cp -p`, `rsync -a`): each entry is kept with the file's fingerprint
/// (size, mtime, inode, ctime) and used only while the fingerprint is the same. ctime cannot
/// be set by any copying tool, so a repaired file is always read again. Where no inode and
/// ctime are known (a file listed by rsync), refusals are not cached at all. Entries for
/// files no longer listed are dropped, and the cache is bounded. It lives in `local/` and is
/// only a cache: deleting it costs one re-read of those files, nothing else.
struct SyncCache {
    enum Outcome: Equatable {
        case held(String)                 // canonical `<replica>/<name>`
        case rejected(Problem.Kind, String)
    }

    struct Entry: Equatable {
        var fingerprint: String
        var outcome: Outcome
    }

    /// By target, then by path relative to the target's `replicas/`.
    private(set) var entries: [String: [String: Entry]] = [:]
    private var dirty = false
    let path: String

    static let header = "strokejournal-sync-cache v2"
    /// Bound on entries over all targets (each is a line of about 200 bytes).
    static let maximumEntries = 200_000

    init(directory: JournalDirectory) {
        path = directory.localPath + "/sync-cache"
        guard let bytes = try? FileSystem.readFile(path) else { return }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        // Any other header (version 1 was keyed by size and mtime only) is dropped whole.
        guard lines.first.map(String.init) == Self.header else { dirty = true; return }
        for line in lines.dropFirst().prefix(Self.maximumEntries) {
            let fields = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5 else { continue }
            let outcome: Outcome
            if fields[3] == "held" {
                outcome = .held(fields[4])
            } else if let kind = Problem.Kind(rawValue: fields[3]) {
                outcome = .rejected(kind, fields[4])
            } else {
                continue
            }
            entries[fields[0], default: [:]][fields[1]] = Entry(fingerprint: fields[2], outcome: outcome)
        }
    }

    /// What identifies a listed file's current bytes as far as a listing can tell; nil
    /// fields where the transport cannot know them.
    static func fingerprint(_ file: TreeListing.File, identity: FileIdentity?) -> String {
        "\(file.size) \(file.modified) " + (identity.map { "\($0.inode) \($0.changeTime)" } ?? "- -")
            + (file.storeMD5.map { " md5:" + $0 } ?? "")
    }

    func lookup(target: String, file: TreeListing.File, identity: FileIdentity?) -> Outcome? {
        guard let entry = entries[Self.clean(target)]?[file.relativePath],
              entry.fingerprint == Self.fingerprint(file, identity: identity) else { return nil }
        return entry.outcome
    }

    mutating func store(_ outcome: Outcome, target: String, file: TreeListing.File, identity: FileIdentity?) {
        // Without inode and ctime a repaired copy could look unchanged: never cache a refusal then.
        if case .rejected = outcome, identity == nil { return }
        let entry = Entry(fingerprint: Self.fingerprint(file, identity: identity), outcome: outcome)
        let target = Self.clean(target)
        guard entries[target]?[file.relativePath] != entry else { return }
        entries[target, default: [:]][file.relativePath] = entry
        dirty = true
    }

    /// The files of `target` a verdict is kept for: each was listed there at an earlier sync.
    func paths(of target: String) -> Set<String> {
        Set(entries[Self.clean(target)]?.keys.map { $0 } ?? [])
    }

    /// Drops the entries of `target` for files that are no longer listed there.
    mutating func prune(target: String, listed: Set<String>) {
        let target = Self.clean(target)
        guard let held = entries[target] else { return }
        let kept = held.filter { listed.contains($0.key) }
        if kept.count != held.count {
            entries[target] = kept.isEmpty ? nil : kept
            dirty = true
        }
    }

    func save() {
        guard dirty else { return }
        var text = Self.header + "\n"
        var written = 0
        outer: for target in entries.keys.sorted() {
            for (relative, entry) in entries[target]!.sorted(by: { $0.key < $1.key }) {
                guard written < Self.maximumEntries else { break outer }
                switch entry.outcome {
                case .held(let name): text += "\(target)\t\(Self.clean(relative))\t\(entry.fingerprint)\theld\t\(name)\n"
                case .rejected(let kind, let reason):
                    text += "\(target)\t\(Self.clean(relative))\t\(entry.fingerprint)\t\(kind.rawValue)\t\(Self.clean(reason))\n"
                }
                written += 1
            }
        }
        try? FileSystem.writeAtomically(Array(text.utf8), to: path)
    }

    /// Tabs and line breaks would break the line format.
    private static func clean(_ text: String) -> String {
        String(text.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}
