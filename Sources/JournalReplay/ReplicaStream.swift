import JournalFormat
import JournalStorage

/// One replica's distinct events in seq order, as decoded blocks.
///
/// Blocks whose seq ranges overlap (the same events in two segments: a conflict copy, a
/// re-cut segment, a fork) form a group that is merged event by event: identical copies are
/// counted as duplicates, different ones as forks (the canonical lesser kept). Memory follows
/// one block, or the distinct events of one group, never the journal.
struct ReplicaStream {
    struct BlockRef {
        var member: Int
        var block: ScannedBlock
    }

    let set: SegmentSet
    let replica: ReplicaID
    private let blocks: [BlockRef]
    private var position = 0
    private(set) var summary: ReplayReport.ReplicaSummary
    private var held = SeqRanges()
    /// Events up to this seq are already folded (a snapshot covers them): skip them.
    var skipThrough: UInt64 = 0
    /// Groups of blocks wholly inside these seqs are passed over undecoded (the reader of
    /// `MissingEvents` holds them already); their ranges go to `skipped`.
    var skip = SeqRanges()
    private(set) var skipped: [ClosedRange<UInt64>] = []
    /// Events whose seq or clock exceeds this are quarantined (`ClockBound`). It is the limit
    /// of the whole set being replayed, which may be larger than `set` (a snapshot's rest).
    let plausibilityLimit: UInt64
    /// The seqs that count under the board's membership (invariant 16); nil: all of them.
    let admitted: SeqRanges?

    init(set: SegmentSet, replica: ReplicaID, plausibilityLimit: UInt64) {
        self.set = set
        self.replica = replica
        self.plausibilityLimit = plausibilityLimit
        self.admitted = set.membership?.admitted(replica)
        var refs: [BlockRef] = []
        var summary = ReplayReport.ReplicaSummary(replica: replica)
        for (index, member) in set.members.enumerated() where member.replica == replica {
            summary.segments += 1
            for block in member.scan.blocks { refs.append(BlockRef(member: index, block: block)) }
        }
        blocks = refs.sorted {
            ($0.block.frame.firstSeq, $0.block.frame.lastSeq) < ($1.block.frame.firstSeq, $1.block.frame.lastSeq)
        }
        self.summary = summary
    }

    /// The stored block the batch `next` returned last is, byte for byte, when it is one
    /// whole block as stored (not merged, trimmed or screened): a reader that forwards it may
    /// send those bytes instead of encoding the events again. Nil otherwise.
    private(set) var lastVerbatim: BlockRef?

    mutating func next(report: inout ReplayReport) -> BlockColumns? {
        lastVerbatim = nil
        if !queued.isEmpty { return queued.removeFirst() }
        while position < blocks.count {
            var end = position + 1
            var reach = blocks[position].block.frame.lastSeq
            while end < blocks.count && blocks[end].block.frame.firstSeq <= reach {
                reach = max(reach, blocks[end].block.frame.lastSeq)
                end += 1
            }
            let group = blocks[position..<end]
            position = end
            if reach <= skipThrough { continue }
            // Blocks of one group overlap or follow each other: together they hold first...reach.
            let first = group.first!.block.frame.firstSeq
            if !skip.isEmpty, skip.containsAll(first...reach) {
                skipped.append(first...reach)
                continue
            }
            if group.count == 1 {
                if var columns = decode(group.first!, report: &report) {
                    addRange(group.first!.block.seqRange)
                    var trimmed = false
                    if columns.firstSeq <= skipThrough {
                        let events = columns.events(replica: replica)
                        columns = BlockColumns(events: events[Int(skipThrough - columns.firstSeq + 1)...])
                        trimmed = true
                    }
                    let ref = group.first!
                    if let admitted, !admitted.containsAll(ref.block.seqRange) {
                        let counted = admit(columns.events(replica: replica), file: set.members[ref.member].scan.path,
                                            offset: Int64(ref.block.offset), report: &report)
                        let kept = screened(counted, file: set.members[ref.member].scan.path, offset: Int64(ref.block.offset), report: &report)
                        summary.events += kept.count
                        if let first = batches(of: kept) { return first }
                        continue
                    }
                    if isPlausible(columns) {
                        summary.events += columns.count
                        if !trimmed { lastVerbatim = group.first! }
                        return columns
                    }
                    let kept = screened(columns.events(replica: replica), file: set.members[ref.member].scan.path,
                                        offset: Int64(ref.block.offset), report: &report)
                    summary.events += kept.count
                    if let first = batches(of: kept) { return first }
                }
                continue
            }
            if let merged = mergeGroup(group, report: &report) { return merged }
        }
        return nil
    }

    private func decode(_ ref: BlockRef, report: inout ReplayReport) -> BlockColumns? {
        let member = set.members[ref.member]
        let frame = ref.block.frame
        let result: Result<BlockColumns, SegmentFormatError> = member.scan.bytes.withUnsafeBytes { buffer in
            let frameBytes = UnsafeRawBufferPointer(rebasing: buffer[ref.block.offset..<ref.block.offset + frame.totalLength])
            do throws(SegmentFormatError) {
                return .success(try BlockDecoder.columns(frame: frame, frameBytes: frameBytes))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let columns): return columns
        case .failure(let error):
            report.problems.append(Problem(
                .corrupt, file: member.scan.path, offset: Int64(ref.block.offset), replica: replica,
                seqRange: ref.block.seqRange, reason: error.description))
            return nil
        }
    }

    /// Distinct events of overlapping blocks, re-packed as one dense run per contiguous range.
    private mutating func mergeGroup(_ group: ArraySlice<BlockRef>, report: inout ReplayReport) -> BlockColumns? {
        var variants: [UInt64: Event] = [:]
        for ref in group {
            // Overlapping copies are merged in memory; a crafted set of small files can claim
            // millions of overlapping events, so the merge is bounded (invariant 8).
            guard variants.count + ref.block.frame.eventCount <= Self.maxOverlapEvents else {
                report.problems.append(Problem(
                    .ignored, file: set.members[ref.member].scan.path, offset: Int64(ref.block.offset), replica: replica,
                    seqRange: ref.block.seqRange,
                    reason: "more than \(Self.maxOverlapEvents) overlapping events in one group of copies; block not merged"))
                continue
            }
            guard let columns = decode(ref, report: &report) else { continue }
            addRange(ref.block.seqRange)
            for event in columns.events(replica: replica) {
                guard let existing = variants[event.id.seq] else {
                    variants[event.id.seq] = event
                    continue
                }
                if existing == event {
                    report.duplicateEvents += 1
                } else {
                    if report.forkSet.insert(event.id).inserted {
                        report.forks.append(event.id)
                        report.problems.append(Problem(
                            .fork, file: set.members[ref.member].scan.path, offset: Int64(ref.block.offset),
                            replica: replica, seqRange: event.id.seq...event.id.seq,
                            reason: Self.forkReason(event.id, in: set, member: ref.member)))
                    }
                    if EventOrdering.canonicalLess(event, existing) { variants[event.id.seq] = event }
                }
            }
        }
        guard !variants.isEmpty else { return nil }
        let first = group.first!
        let counted = admit(variants.keys.sorted().map { variants[$0]! }, file: set.members[first.member].scan.path,
                            offset: Int64(first.block.offset), report: &report)
        let events = screened(counted, file: set.members[first.member].scan.path,
                              offset: Int64(first.block.offset), report: &report)
        summary.events += events.count
        return batches(of: events)
    }

    /// Hands distinct events out as batches like any block's. Their seqs may have holes (a
    /// damaged block, a quarantined event) and a batch needs dense seqs, so it splits at holes:
    /// returns the first batch and queues the rest.
    private mutating func batches(of events: [Event]) -> BlockColumns? {
        var runs: [[Event]] = []
        for event in events {
            if let last = runs.last?.last, last.id.seq + 1 == event.id.seq { runs[runs.count - 1].append(event) } else { runs.append([event]) }
        }
        guard let first = runs.first else { return nil }
        queued += runs.dropFirst().map { BlockColumns(events: $0[...]) }
        return BlockColumns(events: first[...])
    }

    private func isPlausible(_ columns: BlockColumns) -> Bool {
        columns.count == 0 || (columns.firstSeq + UInt64(columns.count - 1) <= plausibilityLimit
            && columns.lamports.allSatisfy { $0 <= plausibilityLimit })
    }

    /// The events whose seqs the board's membership admits; the others are reported, never
    /// applied.
    private func admit(_ events: [Event], file: String, offset: Int64, report: inout ReplayReport) -> [Event] {
        guard let admitted else { return events }
        let kept = events.filter { admitted.contains($0.id.seq) }
        let dropped = events.count - kept.count
        if dropped > 0 {
            let seqs = events.lazy.map(\.id.seq).filter { !admitted.contains($0) }
            let member = set.membership?.member(drawingAs: replica)
            let why: String
            if let member {
                why = member.revoked ? "its key was revoked" : member.rotatedTo != nil ? "its key was rotated to a new one"
                    : member.role < .draw ? "its key may only \(member.role) now" : "they lie outside the seqs its grants admit"
            } else {
                why = "no member's key draws as this replica"
            }
            report.notMemberEvents += dropped
            report.problems.append(Problem(
                .quarantined, file: file, offset: offset, replica: replica, seqRange: seqs.min()!...seqs.max()!,
                reason: "\(dropped) event(s) the board's membership does not count (\(why)); not applied"))
        }
        return kept
    }

    /// The events within the plausibility bound; the others are reported, never applied.
    private func screened(_ events: [Event], file: String, offset: Int64, report: inout ReplayReport) -> [Event] {
        let kept = events.filter { $0.id.seq <= plausibilityLimit && $0.lamport <= plausibilityLimit }
        let dropped = events.count - kept.count
        if dropped > 0 {
            let seqs = events.filter { $0.id.seq > plausibilityLimit || $0.lamport > plausibilityLimit }.map(\.id.seq)
            report.quarantinedEvents += dropped
            let needed = events.map { max($0.id.seq, $0.lamport) }.filter { $0 > plausibilityLimit }.min()
            if let needed { report.lowestQuarantinedClock = min(report.lowestQuarantinedClock ?? needed, needed) }
            report.problems.append(Problem(
                .quarantined, file: file, offset: offset, replica: replica, seqRange: seqs.min()!...seqs.max()!,
                reason: "\(dropped) event(s) whose seq or Lamport clock exceeds the plausibility bound \(plausibilityLimit) (docs/FORMAT.md §8.9); not applied"))
        }
        return kept
    }

    /// The most distinct events one group of overlapping blocks may hold in memory.
    static let maxOverlapEvents = 4_000_000

    /// Under a trust list every sealed file applied is signed by a trusted key, so two variants
    /// of one event there are that key holder's equivocation: said so, with the key, and both
    /// files stay where they are as its evidence (invariant 12).
    static func forkReason(_ id: EventID, in set: SegmentSet, member: Int) -> String {
        let plain = "event \(id) exists with different contents; the canonical lesser one is kept"
        guard set.trust != nil, let seal = set.members[member].scan.seal else { return plain }
        return "equivocation: " + plain + "; this variant is sealed by trusted key \(Hex.bytes(seal.publicKey))"
            + " (as \(seal.role == .host ? "host" : "the replica")), and every file holding a variant is kept as evidence"
    }

    /// Batches of a merged group not yet handed out (a group with holes gives several).
    private var queued: [BlockColumns] = []

    private mutating func addRange(_ range: ClosedRange<UInt64>) {
        // Blocks arrive sorted by first seq, so only the last range can absorb this one.
        held.insert(range)
        summary.ranges = held.ranges
    }
}
