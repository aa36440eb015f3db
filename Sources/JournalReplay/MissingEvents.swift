import JournalFormat
import JournalStorage

/// The distinct events of a set that someone lacks, given what they hold (per replica, seq
/// ranges): replica by replica, each in seq order, a batch at a time. What a relay sends a
/// joining client, and what it forwards when sync brings segments in.
///
/// Memory follows one batch (one decoded block, or one group of overlapping copies), never
/// the journal: groups of blocks the holder has wholly are not even decoded. Dedup and fork
/// resolution are replay's (`ReplicaStream`), so the events are exactly those a replay of
/// `set` folds, less those held.
public struct MissingEvents: Sendable {
    public let set: SegmentSet
    public let have: [ReplicaID: SeqRanges]
    /// The seqs of every event of the set read so far, held or not: once `next` returned nil,
    /// what the holder has of this set after receiving the batches (besides what it had).
    public private(set) var covered: [ReplicaID: SeqRanges] = [:]
    /// Damaged blocks, forks, quarantined events met on the way (as replay reports them).
    public private(set) var report = ReplayReport()
    /// Events handed out so far.
    public private(set) var count: UInt64 = 0
    private var replicas: [ReplicaID]
    private var stream: ReplicaStream?
    private let plausibilityLimit: UInt64
    private var pending: [Event] = []
    private var pendingStart = 0

    public init(set: SegmentSet, have: [ReplicaID: SeqRanges]) {
        self.set = set
        self.have = have
        report.problems = set.problems
        plausibilityLimit = set.plausibilityLimit
        replicas = set.replicas.reversed()
    }

    /// The next batch, at most `maxEvents` long and never empty; nil when none is left.
    public mutating func next(maxEvents: Int = 1024) -> [Event]? {
        guard let piece = nextPiece(maxEvents: maxEvents, verbatim: false) else { return nil }
        guard case .events(_, let events) = piece else { preconditionFailure("a stored block without asking for one") }
        return events
    }

    /// One piece of what the holder lacks, for a reader that forwards blocks as they are
    /// stored (the relay's catch-up): a block is handed out whole, undecoded by the receiver
    /// of this value, when every event in it is lacked and replay would fold it unchanged
    /// (one copy, plausible, decoded cleanly here); anything else comes as events.
    public enum Piece: Sendable, Equatable {
        /// The block's frame exactly as stored (docs/FORMAT.md §5: header and compressed
        /// body), from a segment of format `version`.
        case block(replica: ReplicaID, version: UInt16, frame: ArraySlice<UInt8>, seqs: ClosedRange<UInt64>)
        /// At most `maxEvents` events of one replica, in seq order (not necessarily dense).
        case events(replica: ReplicaID, [Event])

        public var eventCount: Int {
            switch self {
            case .block(_, _, _, let seqs): return Int(seqs.upperBound - seqs.lowerBound + 1)
            case .events(_, let events): return events.count
            }
        }
    }

    /// The next piece (never empty), or nil when none is left. With `verbatim` false, only
    /// `.events`; stored blocks longer than `maxBlockBytes` come as events too.
    public mutating func nextPiece(maxEvents: Int = 1024, verbatim: Bool = true, maxBlockBytes: Int = .max) -> Piece? {
        let limit = max(1, maxEvents)
        while true {
            if pendingStart < pending.count {
                let end = min(pending.count, pendingStart + limit)
                let batch = Array(pending[pendingStart..<end])
                pendingStart = end
                count += UInt64(batch.count)
                return .events(replica: pendingReplica, batch)
            }
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
            guard let block = fill(verbatim: verbatim ? maxBlockBytes : 0) else { return nil }
            if let block {
                count += UInt64(block.eventCount)
                return block
            }
        }
    }

    /// Decodes the next block (or group) that holds an event not held: into `pending`, or,
    /// when it may go as stored and is at most `maxBlockBytes` long, returned as `.block`. Nil
    /// when every replica is done.
    private mutating func fill(verbatim maxBlockBytes: Int) -> Piece?? {
        while true {
            if stream == nil {
                guard let replica = replicas.popLast() else { return nil }
                var fresh = ReplicaStream(set: set, replica: replica, plausibilityLimit: plausibilityLimit)
                fresh.skip = have[replica] ?? SeqRanges()
                stream = fresh
            }
            let replica = stream!.replica
            guard let batch = stream!.next(report: &report) else {
                for range in stream!.skipped { covered[replica, default: SeqRanges()].insert(range) }
                report.replicas.append(stream!.summary)
                stream = nil
                continue
            }
            guard batch.count > 0 else { continue }
            // A batch's seqs are dense.
            let seqs = batch.firstSeq...batch.firstSeq + UInt64(batch.count - 1)
            covered[replica, default: SeqRanges()].insert(seqs)
            let held = have[replica]
            if let source = stream!.lastVerbatim, source.block.frame.totalLength <= maxBlockBytes, held?.intersects(seqs) != true {
                let scan = set.members[source.member].scan
                let frame = scan.bytes[source.block.offset..<source.block.offset + source.block.frame.totalLength]
                return .some(.block(replica: replica, version: source.block.frame.version, frame: frame, seqs: seqs))
            }
            pendingReplica = replica
            for event in batch.events(replica: replica) where held?.contains(event.id.seq) != true {
                pending.append(event)
            }
            if !pending.isEmpty { return .some(nil) }
        }
    }

    private var pendingReplica = ReplicaID(UUIDBits(high: 0, low: 0))
}
