import JournalFormat
import JournalPlatform

/// Everything the storage layer can refuse, each with what a person should do about it.
public enum JournalError: Error, Equatable, Sendable, CustomStringConvertible {
    case notAJournal(path: String)
    case alreadyAJournal(path: String)
    /// Creating a journal inside another journal's folder.
    case insideAJournal(path: String, journal: String)
    case badIdentity(path: String, reason: String)
    /// `local/trust` does not parse (docs/FORMAT.md §15).
    case badTrustList(path: String, line: Int, reason: String)
    /// Another process writes this replica (invariant 2).
    case locked(path: String, holder: String)
    case io(IOError)
    case invalidEvent(EventValidationError)
    /// Bytes in the middle of the open segment are damaged while later blocks are intact:
    /// not a crash tail, so the writer refuses to cut acknowledged data.
    case openSegmentCorrupt(Problem)
    /// The replica's seq or Lamport clock reached the format's bound (2^62): no event can follow.
    case clockExhausted(seq: UInt64, lamport: UInt64)
    case closed
    /// An earlier write or fsync failed; what it covered was never acknowledged.
    case writerFailed(IOError)
    /// The sealed copy of the open segment could not be written (e.g. the disk is full).
    /// Every event is still durable in the open segment, and recording can go on.
    case sealFailed(IOError, neededBytes: Int64, available: Int64?)
    /// Events of another replica that this journal cannot host as given (`HostedReplicaWriter`).
    case notHostable(String)

    public var description: String {
        switch self {
        case .notAJournal(let path):
            // The current folder is rarely where a new journal belongs: name a new one instead.
            let create = path == "." ? "`journal init <name>` (a new folder), or name an existing journal with -C DIR"
                : "`journal init \(path)`"
            return "\(path) is not a journal (no local/replica file here or in any folder above); create one with \(create)"
        case .alreadyAJournal(let path): return "\(path) is already a journal"
        case .insideAJournal(let path, let journal):
            return "\(path) is inside the journal \(journal); a journal cannot hold another (use -C \(journal), or pick a folder outside it)"
        case .badIdentity(let path, let reason): return "\(path): replica identity is unreadable: \(reason)"
        case .badTrustList(let path, let line, let reason): return "\(path):\(line): the trust list is unreadable: \(reason)"
        case .locked(let path, let holder):
            return "\(path) is locked by another writer (\(holder)); only one process may write a replica at a time"
        case .io(let error): return error.description
        case .invalidEvent(let error): return "event refused: \(error)"
        case .openSegmentCorrupt(let problem):
            return "the open segment is damaged before its last block: \(problem); run `journal verify` and keep a copy before repairing"
        case .clockExhausted(let seq, let lamport):
            return "seq (\(seq)) or Lamport clock (\(lamport)) reached the format's bound 2^62; this replica can record no more events (start a new journal)"
        case .closed: return "the writer is closed"
        case .sealFailed(let error, let needed, let available):
            let free = available.map { ", \(megabytes($0)) free" } ?? ""
            return "could not seal the open segment (\(error)): sealing needs about \(megabytes(needed)) free\(free); "
                + "every event is still recorded in the open segment, and sealing is tried again by the next record or sync"
        case .notHostable(let reason): return "not stored: \(reason)"
        case .writerFailed(let error):
            return "an earlier write failed (\(error)); events after the last successful flush were not recorded: reopen the journal to recover"
        }
    }
}

private func megabytes(_ bytes: Int64) -> String {
    let tenths = (bytes * 10 + 524_288) / 1_048_576
    return "\(tenths / 10).\(tenths % 10) MB"
}
