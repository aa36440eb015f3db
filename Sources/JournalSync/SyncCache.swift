import JournalPlatform
import JournalStorage

/// Remembers, per target, what became of files whose name alone does not say whether they
/// are held: conflict copies (held as which canonical name) and refused files (why). Keyed by
/// path, size and modification time, so a changed file (a half copy completed) is read again.
/// A local cache under `local/`: deleting it costs one re-read of those files, nothing else.
struct SyncCache {
    enum Outcome: Equatable {
        case held(String)                 // canonical `<replica>/<name>`
        case rejected(Problem.Kind, String)
    }

    private(set) var entries: [String: Outcome] = [:]
    private var dirty = false
    let path: String

    init(directory: JournalDirectory) {
        path = directory.localPath + "/sync-cache"
        guard let bytes = try? FileSystem.readFile(path) else { return }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        guard lines.first == "strokejournal-sync-cache v1" else { return }
        for line in lines.dropFirst() {
            let fields = line.split(separator: "\t", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count == 4 else { continue }
            let key = String(fields[0]) + "\t" + String(fields[1])
            switch fields[2] {
            case "held": entries[key] = .held(String(fields[3]))
            default:
                if let kind = Problem.Kind(rawValue: String(fields[2])) { entries[key] = .rejected(kind, String(fields[3])) }
            }
        }
    }

    static func key(target: String, file: TreeListing.File) -> String {
        "\(target)|\(file.relativePath)|\(file.size)|\(file.modified)" + "\t" + file.relativePath
    }

    func lookup(target: String, file: TreeListing.File) -> Outcome? {
        entries[Self.key(target: target, file: file)]
    }

    mutating func store(_ outcome: Outcome, target: String, file: TreeListing.File) {
        let key = Self.key(target: target, file: file)
        if entries[key] != outcome {
            entries[key] = outcome
            dirty = true
        }
    }

    func save() {
        guard dirty else { return }
        var text = "strokejournal-sync-cache v1\n"
        for key in entries.keys.sorted() {
            let clean = key.replacingOccurrences(of: "\n", with: " ")
            switch entries[key]! {
            case .held(let name): text += clean + "\theld\t" + name + "\n"
            case .rejected(let kind, let reason):
                text += clean + "\t" + kind.rawValue + "\t" + reason.replacingOccurrences(of: "\n", with: " ") + "\n"
            }
        }
        try? FileSystem.writeAtomically(Array(text.utf8), to: path)
    }
}
