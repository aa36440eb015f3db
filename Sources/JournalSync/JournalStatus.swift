import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage

/// What a journal holds and whether anything is wrong with it: per replica (this journal's
/// own marked) the seq ranges held, the seqs known to be missing, forks; damaged or
/// quarantined data; unsealed events; the last sync that moved segments. Decodes every block.
public struct JournalStatus: Sendable {
    public struct Replica: Sendable, Equatable {
        public var replica: ReplicaID
        public var isThisJournal: Bool
        public var segments: Int
        public var events: Int
        public var ranges: [ClosedRange<UInt64>]
        /// Seqs below the highest one held that no file holds: known to exist, not here.
        public var gaps: [ClosedRange<UInt64>]
        public var forks: [UInt64]
    }

    /// The last sync or merge that imported, published or sealed something (`local/last-sync`).
    public struct LastSync: Sendable, Equatable {
        public var target: String
        public var millisecondsSince1970: Int64
        public var imported: Int
        public var published: Int
    }

    public var journal: String
    public var replica: ReplicaID
    /// Events in the open segment, not yet sealed (not yet shareable).
    public var unsealedEvents: Int
    public var replicas: [Replica]
    /// Damage, quarantined events, forks: everything `verify` would report.
    public var problems: [Problem]
    /// Entries under `replicas/` that are not segments (reported, never read).
    public var ignored: [Problem]
    public var lastSync: LastSync?
    /// Who decides what counts (invariants 12 and 16).
    public var access: Access

    public enum Access: Sendable, Equatable {
        /// No membership, no trust list: every valid segment counts.
        case open
        /// This machine's `local/trust`: other machines with other lists may draw differently.
        case localTrustList
        /// The board's membership, the same on every machine; `trustListIgnored`: this machine
        /// has a `local/trust` that it no longer applies.
        case membership(board: String, activeMembers: Int, trustListIgnored: Bool)

        public var text: String {
            switch self {
            case .open: return "open: every valid segment counts (no membership, no trust list)"
            case .localTrustList: return "this machine's local/trust (not synced: machines with other lists may show other drawings; `journal members import` moves it into the board)"
            case .membership(let board, let members, let ignored):
                return "the membership of board \(board), \(members) active member(s), the same on every machine"
                    + (ignored ? "; local/trust is ignored" : "")
            }
        }
    }

    /// Something needs a person's attention: damage, forks, quarantined events, missing seqs.
    public var isHealthy: Bool { problems.isEmpty && replicas.allSatisfy { $0.gaps.isEmpty } }

    public static func of(_ journal: JournalDirectory) throws(JournalError) -> JournalStatus {
        let own = try journal.identity()
        let set = SegmentSet.load(journal)
        let replay = Replay.check(set)
        let forks = Dictionary(grouping: replay.forks, by: \.replica)
        let replicas = replay.replicas.map { summary in
            Replica(replica: summary.replica, isThisJournal: summary.replica == own,
                    segments: set.members.filter { $0.replica == summary.replica && $0.scan.eventCount > 0 }.count,
                    events: summary.ranges.reduce(0) { $0 + Int($1.upperBound - $1.lowerBound + 1) },
                    ranges: summary.ranges, gaps: summary.gaps,
                    forks: (forks[summary.replica] ?? []).map(\.seq).sorted())
        }.sorted { ($0.isThisJournal ? 0 : 1, $0.replica) < ($1.isThisJournal ? 0 : 1, $1.replica) }
        let open = set.members.first { !$0.isSealed && $0.replica == own }
        return JournalStatus(
            journal: journal.root, replica: own, unsealedEvents: open?.scan.eventCount ?? 0, replicas: replicas,
            problems: replay.problems.filter { $0.kind != .ignored && $0.kind != .tornTail },
            ignored: replay.problems.filter { $0.kind == .ignored },
            lastSync: LastSyncRecord.read(journal), access: access(of: set))
    }
}

extension JournalStatus {
    static func access(of set: SegmentSet) -> Access {
        if let membership = set.membership, let board = membership.board {
            return .membership(board: board.compactHex, activeMembers: membership.members.values.count(where: \.isActive),
                               trustListIgnored: set.trustListOverridden)
        }
        return set.trust == nil ? .open : .localTrustList
    }
}

/// `local/last-sync`: one line about the last sync or merge that changed something. A sync
/// that changes nothing does not rewrite it (a no-op sync writes no file).
enum LastSyncRecord {
    static let header = "strokejournal-last-sync v1"

    static func path(_ journal: JournalDirectory) -> String { journal.localPath + "/last-sync" }

    static func write(_ report: ReconcileReport, to journal: JournalDirectory) {
        guard !report.nothingNew else { return }
        let target = String(report.target.map { $0 == "\t" || $0 == "\n" ? " " : $0 })
        let line = "\(ProcessInfoLite.wallClockMilliseconds())\t\(report.imported.count)\t\(report.published.count)\t\(target)"
        try? FileSystem.writeAtomically(Array("\(header)\n\(line)\n".utf8), to: path(journal))
    }

    static func read(_ journal: JournalDirectory) -> JournalStatus.LastSync? {
        guard let bytes = try? FileSystem.readFile(path(journal)) else { return nil }
        let lines = String(decoding: bytes.prefix(4096), as: UTF8.self).split(separator: "\n")
        guard lines.count == 2, lines[0] == header else { return nil }
        let fields = lines[1].split(separator: "\t", maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count == 4, let time = Int64(fields[0]), let imported = Int(fields[1]), let published = Int(fields[2]) else { return nil }
        return JournalStatus.LastSync(target: String(fields[3]), millisecondsSince1970: time, imported: imported, published: published)
    }
}
