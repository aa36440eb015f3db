import JournalFormat
import JournalPlatform

/// Tells a journal folder from a copy of it (invariant 9): `local/anchor` records the
/// `FileIdentity` of `local/replica` as the writer last saw it. A copied folder carries the
/// anchor along but not the identity file's inode and ctime, so the writer of the copy sees
/// the mismatch and takes a new replica id before it writes anything: two folders never
/// write as one replica, which would let a copy's seals overwrite the original's
/// acknowledged events.
enum IdentityAnchor {
    static let header = "strokejournal-anchor v1"

    enum Verdict: Equatable {
        /// The identity file is the one the anchor recorded.
        case same
        /// No anchor yet (a journal from before anchors, or never opened by a writer).
        case unanchored
        /// The identity file is not the one the anchor recorded: this folder is a copy.
        case copied(recorded: FileIdentity, found: FileIdentity)
    }

    static func path(_ directory: JournalDirectory) -> String { directory.localPath + "/anchor" }

    static func check(_ directory: JournalDirectory) -> Verdict {
        guard let found = FileIdentity.of(directory.identityPath) else { return .unanchored }
        guard let bytes = try? FileSystem.readFile(path(directory)) else { return .unanchored }
        let lines = String(decoding: bytes.prefix(256), as: UTF8.self).split(separator: "\n")
        guard lines.count == 2, lines[0] == header, let recorded = FileIdentity(lines[1]) else { return .unanchored }
        return recorded == found ? .same : .copied(recorded: recorded, found: found)
    }

    static func record(_ directory: JournalDirectory) throws(IOError) {
        guard let found = FileIdentity.of(directory.identityPath) else {
            throw IOError("stat", path: directory.identityPath, code: 2)
        }
        try FileSystem.writeAtomically(Array("\(header)\n\(found)\n".utf8), to: path(directory))
    }
}
