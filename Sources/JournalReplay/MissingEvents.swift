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
        let limit = max(1, maxEvents)
        while true {
            if pendingStart < pending.count {
                let end = min(pending.count, pendingStart + limit)
                let batch = Array(pending[pendingStart..<end])
                pendingStart = end
                count += UInt64(batch.count)
                return batch
            }
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
            guard fill() else { return nil }
        }
    }

    /// Decodes the next block (or group) that holds an event not held into `pending`; false
    /// when every replica is done.
    private mutating func fill() -> Bool {
        while true {
            if stream == nil {
                guard let replica = replicas.popLast() else { return false }
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
            covered[replica, default: SeqRanges()].insert(batch.firstSeq...batch.firstSeq + UInt64(batch.count - 1))
            let held = have[replica]
            for event in batch.events(replica: replica) where held?.contains(event.id.seq) != true {
                pending.append(event)
            }
            if !pending.isEmpty { return true }
        }
    }
}
