import JournalFormat
import JournalStorage

/// What replay saw besides the drawing: per-replica coverage, duplicates, forks, problems.
public struct ReplayReport: Sendable {
    public struct ReplicaSummary: Sendable, Equatable {
        public var replica: ReplicaID
        public var segments = 0
        public var events = 0
        /// Seq ranges held, merged and sorted.
        public var ranges: [ClosedRange<UInt64>] = []
        /// Holes between 1 and the highest seq held: known to be missing.
        public var gaps: [ClosedRange<UInt64>] { SeqRanges(ranges).gaps() }
    }

    public var replicas: [ReplicaSummary] = []
    public var problems: [Problem] = []
    /// Events that arrived more than once with identical content, counted once.
    public var duplicateEvents = 0
    /// Event ids seen with different contents; the lesser content (docs/FORMAT.md) was kept.
    public var forks: [EventID] = []
    public var eventCount = 0
    public var pointCount = 0
    public var maxLamport: UInt64 = 0
    /// Events taken from a snapshot instead of being replayed (0: a full replay).
    public var eventsFromSnapshot = 0
    /// The drawing's digest (`Drawing.digest`) when it is already known: the snapshot this
    /// load started from held it and nothing was applied on top, or this load computed it to
    /// write a snapshot. Nil means "compute it if you need it".
    public var digest: String?
    /// The snapshot this load wrote automatically, if it wrote one (callers say so).
    public var snapshotWritten: SnapshotStore.Info?
    /// Events left out because their seq or clock exceeds the plausibility bound
    /// (`ClockBound`, docs/FORMAT.md §8.9): reported as problems, never applied.
    public var quarantinedEvents = 0
    /// `forks` as a set, for constant-time checks while merging overlap groups.
    var forkSet = Set<EventID>()

    public init() {}
}

/// Rebuilds the drawing from segments: verify, dedup by event id, fold.
public enum Replay {
    public static func load(_ directory: JournalDirectory) -> (drawing: Drawing, report: ReplayReport) {
        load(directory, useSnapshots: true)
    }

    /// The journal's drawing, starting from its newest valid snapshot when one applies (the
    /// result is the same either way), and taking a new snapshot when the automatic policy
    /// says so (`SnapshotStore.automaticThreshold`).
    public static func load(
        _ directory: JournalDirectory, set preloaded: SegmentSet? = nil, useSnapshots: Bool
    ) -> (drawing: Drawing, report: ReplayReport) {
        let set = preloaded ?? SegmentSet.load(directory)
        guard useSnapshots else { return replay(set) }
        if let snapshot = SnapshotStore.newest(directory, for: set),
           let (drawing, report, next) = continueFrom(snapshot, set: set) {
            let fresh = next.eventCount - snapshot.eventCount
            var report = report
            if fresh == 0 {
                // Nothing applied: the drawing is the snapshot's state, whose digest it holds.
                report.digest = snapshot.digest
            } else if fresh >= SnapshotStore.automaticThreshold && fresh * 4 >= next.eventCount {
                var next = next
                next.digest = drawing.digest
                report.digest = next.digest
                report.snapshotWritten = try? SnapshotStore.write(next, to: directory, atMost: SnapshotStore.automaticSizeLimit(set))
            }
            return (drawing, report)
        }
        var report = ReplayReport()
        report.problems = set.problems
        if var snapshot = fullSnapshot(set, report: &report) {
            let drawing = snapshot.state.finish()
            // A quarantined event may become plausible as the set grows: a snapshot would hide it.
            if snapshot.eventCount >= SnapshotStore.automaticThreshold && snapshot.forks.isEmpty && report.quarantinedEvents == 0 {
                // The snapshot stores the digest; the caller most likely prints it too.
                snapshot.digest = drawing.digest
                report.digest = snapshot.digest
                report.snapshotWritten = try? SnapshotStore.write(snapshot, to: directory, atMost: SnapshotStore.automaticSizeLimit(set))
            }
            return (drawing, report)
        }
        return replay(set)
    }

    /// A full ordered replay kept as a snapshot; nil if clocks are out of order.
    static func fullSnapshot(_ set: SegmentSet, report: inout ReplayReport) -> Snapshot? {
        var merge = OrderedMerge(set: set)
        guard merge.run(report: &report) != nil else { return nil }
        return makeSnapshot(of: merge, set: set, replicas: set.replicas, report: report)
    }

    private static func makeSnapshot(of merge: OrderedMerge, set: SegmentSet, replicas: [ReplicaID], report: ReplayReport,
                                 previous: Snapshot? = nil) -> Snapshot {
        var covered = previous?.covered ?? [:]
        for summary in report.replicas {
            covered[summary.replica] = SeqRanges((covered[summary.replica] ?? []) + summary.ranges).ranges
        }
        var lastLamports: [ReplicaID: UInt64] = [:]
        for (index, replica) in replicas.enumerated() { lastLamports[replica] = merge.lastLamports[index] }
        var names = previous?.sealedNames ?? []
        for member in set.members {
            if let name = member.name { names.insert(name.relativePath(in: member.replica)) }
        }
        return Snapshot(replicas: replicas, covered: covered, lastLamports: lastLamports, sealedNames: names,
                        lastKey: merge.lastKey, eventCount: report.eventCount, pointCount: report.pointCount,
                        maxLamport: report.maxLamport, duplicateEvents: report.duplicateEvents, forks: report.forks,
                        state: merge.state)
    }

    /// Applies to `snapshot` the events of `set` it does not cover; nil when that would not
    /// give exactly the full replay (a late or re-delivered event), so the caller replays all.
    static func continueFrom(_ snapshot: Snapshot, set: SegmentSet) -> (Drawing, ReplayReport, Snapshot)? {
        guard let (fresh, skipThrough) = rest(of: set, after: snapshot) else { return nil }
        return continueFrom(snapshot, set: set, fresh: fresh, skipThrough: skipThrough)
    }

    /// The digest `load(directory)` would report, when the newest snapshot holds it and covers
    /// every event of the journal: then the drawing is the snapshot's and nothing needs
    /// decoding. Nil otherwise (then load and hash). The problems are those `load` reports.
    public static func cachedDigest(_ directory: JournalDirectory) -> (digest: String, problems: [Problem])? {
        let set = SegmentSet.load(directory)
        guard let snapshot = SnapshotStore.newest(directory, for: set, headerOnly: true), let digest = snapshot.digest,
              let (fresh, skipThrough) = rest(of: set, after: snapshot)
        else { return nil }
        // Exactly the blocks `continueFrom` would skip unread (ReplicaStream: a block whose
        // last seq is within `skipThrough`); any other block may hold an event to apply.
        for member in fresh.members {
            for block in member.scan.blocks where block.frame.lastSeq > skipThrough[member.replica] ?? 0 { return nil }
        }
        return (digest, set.problems)
    }

    /// What of `set` a snapshot does not hold, or nil when continuing from it would not give
    /// exactly the full replay (the rules of docs/SYNC.md, "Snapshots").
    static func rest(of set: SegmentSet, after snapshot: Snapshot) -> (fresh: SegmentSet, skipThrough: [ReplicaID: UInt64])? {
        guard snapshot.forks.isEmpty else { return nil }
        // Every segment it folded must still be here: a removed or damaged file changes the
        // event set, and only a full replay says what the drawing of the new set is.
        let present = Set(set.members.compactMap { member in
            member.name.map { $0.relativePath(in: member.replica) }
        })
        guard snapshot.sealedNames.isSubset(of: present), set.problems.allSatisfy({ $0.kind == .tornTail || $0.kind == .ignored }) else {
            return nil
        }
        var skipThrough: [ReplicaID: UInt64] = [:]
        var fresh = SegmentSet()
        fresh.problems = set.problems
        for member in set.members {
            let key = member.replica.hex + "/" + (member.name?.fileName ?? "")
            if member.name != nil && snapshot.sealedNames.contains(key) { continue }
            let covered = snapshot.covered[member.replica] ?? []
            if let range = member.scan.seqRange, let top = covered.last?.upperBound, range.lowerBound <= top {
                // Only our own append-only open segment may overlap what the snapshot holds,
                // and only if the snapshot holds a gap-free prefix of its replica.
                guard member.name == nil, covered.count == 1, covered[0].lowerBound == 1 else { return nil }
                skipThrough[member.replica] = top
            }
            fresh.members.append(member)
        }
        return (fresh, skipThrough)
    }

    private static func continueFrom(
        _ snapshot: Snapshot, set: SegmentSet, fresh: SegmentSet, skipThrough: [ReplicaID: UInt64]
    ) -> (Drawing, ReplayReport, Snapshot)? {
        let replicas = Array(Set(snapshot.replicas + fresh.replicas)).sorted()
        let map = snapshot.replicas.map { UInt32(replicas.firstIndex(of: $0)!) }
        var state = snapshot.state
        state.remap(map)
        var floor = snapshot.lastKey
        if let last = snapshot.lastKey { floor?.replica = map[Int(last.replica)] }
        var report = ReplayReport()
        report.problems = fresh.problems
        var merge = OrderedMerge(set: fresh, replicas: replicas, state: state, floor: floor,
                                 lastLamports: snapshot.lastLamports, skipThrough: skipThrough,
                                 plausibilityLimit: set.plausibilityLimit)
        guard let drawing = merge.run(report: &report), report.quarantinedEvents == 0 else { return nil }
        let applied = report
        report.eventCount += snapshot.eventCount
        report.pointCount += snapshot.pointCount
        report.maxLamport = max(report.maxLamport, snapshot.maxLamport)
        report.duplicateEvents += snapshot.duplicateEvents
        report.eventsFromSnapshot = snapshot.eventCount
        var summaries: [ReplicaID: ReplayReport.ReplicaSummary] = [:]
        for (replica, ranges) in snapshot.covered {
            var summary = ReplayReport.ReplicaSummary(replica: replica)
            summary.ranges = ranges
            summaries[replica] = summary
        }
        for summary in applied.replicas {
            var merged = summaries[summary.replica] ?? ReplayReport.ReplicaSummary(replica: summary.replica)
            merged.ranges = SeqRanges(merged.ranges + summary.ranges).ranges
            summaries[summary.replica] = merged
        }
        for member in set.members { summaries[member.replica]?.segments += 1 }
        report.replicas = summaries.keys.sorted().map { replica in
            var summary = summaries[replica]!
            summary.events = Int(clamping: SeqRanges(summary.ranges).count)
            return summary
        }
        var next = makeSnapshot(of: merge, set: set, replicas: replicas, report: applied, previous: snapshot)
        next.eventCount = report.eventCount
        next.pointCount = report.pointCount
        next.maxLamport = report.maxLamport
        next.duplicateEvents = report.duplicateEvents
        return (drawing, report, next)
    }

    /// Decodes every block of every segment without folding: what `verify` and `status` need
    /// (checksums alone do not prove that a body decodes).
    public static func check(_ set: SegmentSet) -> ReplayReport {
        var report = ReplayReport()
        report.problems = set.problems
        forEachUniqueEvent(set, report: &report) { _ in }
        return report
    }

    /// The drawing of every distinct event in `set`.
    ///
    /// Each replica's events are streamed in seq order, one decoded block at a time, and the
    /// streams are merged by order key, so the fold sees events in total order and never
    /// sorts points or keeps a key per point. That relies on an honest writer's clocks rising
    /// with its seqs; if a replica's do not, replay falls back to the order-free `Fold`, which
    /// gives the same drawing for any input, only slower.
    public static func replay(_ set: SegmentSet) -> (drawing: Drawing, report: ReplayReport) {
        var report = ReplayReport()
        report.problems = set.problems
        var merge = OrderedMerge(set: set)
        if let drawing = merge.run(report: &report) {
            return (drawing, report)
        }
        report = ReplayReport()
        report.problems = set.problems
        var fold = Fold(replicas: set.replicas)
        forEachUniqueEvent(set, report: &report) { fold.apply($0) }
        return (fold.finish(), report)
    }

    /// Calls `body` once per distinct event id, in (replica, seq) order, after dedup and fork
    /// resolution.
    public static func forEachUniqueEvent(
        _ set: SegmentSet, report: inout ReplayReport, _ body: (Event) -> Void
    ) {
        let limit = set.plausibilityLimit
        for replica in set.replicas {
            var stream = ReplicaStream(set: set, replica: replica, plausibilityLimit: limit)
            while let batch = stream.next(report: &report) {
                for event in batch.events(replica: replica) {
                    report.count(event.lamport, isPoint: event.payload.kind == .point)
                    body(event)
                }
            }
            report.replicas.append(stream.summary)
        }
    }
}

extension ReplayReport {
    mutating func count(_ lamport: UInt64, isPoint: Bool) {
        eventCount += 1
        if isPoint { pointCount += 1 }
        if lamport > maxLamport { maxLamport = lamport }
    }
}

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
    /// Events whose seq or clock exceeds this are quarantined (`ClockBound`). It is the limit
    /// of the whole set being replayed, which may be larger than `set` (a snapshot's rest).
    let plausibilityLimit: UInt64

    init(set: SegmentSet, replica: ReplicaID, plausibilityLimit: UInt64) {
        self.set = set
        self.replica = replica
        self.plausibilityLimit = plausibilityLimit
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

    mutating func next(report: inout ReplayReport) -> BlockColumns? {
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
            if group.count == 1 {
                if var columns = decode(group.first!, report: &report) {
                    addRange(group.first!.block.seqRange)
                    if columns.firstSeq <= skipThrough {
                        let events = columns.events(replica: replica)
                        columns = BlockColumns(events: events[Int(skipThrough - columns.firstSeq + 1)...])
                    }
                    if isPlausible(columns) {
                        summary.events += columns.count
                        return columns
                    }
                    let ref = group.first!
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
                            reason: "event \(event.id) exists with different contents; the canonical lesser one is kept"))
                    }
                    if EventOrdering.canonicalLess(event, existing) { variants[event.id.seq] = event }
                }
            }
        }
        guard !variants.isEmpty else { return nil }
        let first = group.first!
        let events = screened(variants.keys.sorted().map { variants[$0]! }, file: set.members[first.member].scan.path,
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

    /// The events within the plausibility bound; the others are reported, never applied.
    private func screened(_ events: [Event], file: String, offset: Int64, report: inout ReplayReport) -> [Event] {
        let kept = events.filter { $0.id.seq <= plausibilityLimit && $0.lamport <= plausibilityLimit }
        let dropped = events.count - kept.count
        if dropped > 0 {
            let seqs = events.filter { $0.id.seq > plausibilityLimit || $0.lamport > plausibilityLimit }.map(\.id.seq)
            report.quarantinedEvents += dropped
            report.problems.append(Problem(
                .quarantined, file: file, offset: offset, replica: replica, seqRange: seqs.min()!...seqs.max()!,
                reason: "\(dropped) event(s) whose seq or Lamport clock exceeds the plausibility bound \(plausibilityLimit) (docs/FORMAT.md §8.9); not applied"))
        }
        return kept
    }

    /// The most distinct events one group of overlapping blocks may hold in memory.
    static let maxOverlapEvents = 4_000_000

    /// Batches of a merged group not yet handed out (a group with holes gives several).
    private var queued: [BlockColumns] = []

    private mutating func addRange(_ range: ClosedRange<UInt64>) {
        // Blocks arrive sorted by first seq, so only the last range can absorb this one.
        held.insert(range)
        summary.ranges = held.ranges
    }
}

/// A total order on event contents, used only to pick one variant of a forked event id the
/// same way on every machine: envelope first, then payload fields by bit pattern.
public enum EventOrdering {
    public static func canonicalLess(_ lhs: Event, _ rhs: Event) -> Bool {
        canonicalBytes(lhs).lexicographicallyPrecedes(canonicalBytes(rhs))
    }

    /// Big-endian, fixed-width fields so that byte order is numeric order.
    public static func canonicalBytes(_ event: Event) -> [UInt8] {
        var bytes: [UInt8] = []
        func put(_ value: UInt64) { for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) } }
        put(event.lamport)
        put(UInt64(bitPattern: event.wallTime) ^ (1 << 63))
        bytes.append(event.payload.kind.rawValue)
        if let stroke = event.payload.stroke { bytes.append(contentsOf: stroke.bits.bytes) }
        if case .point(let sample) = event.payload {
            put(sample.x.bitPattern)
            put(sample.y.bitPattern)
            bytes.append(sample.pressure == nil ? 0 : 1)
            put(sample.pressure?.bitPattern ?? 0)
            bytes.append(sample.t == nil ? 0 : 1)
            put(sample.t?.bitPattern ?? 0)
            put(UInt64(sample.style.color.rawValue))
            put(sample.style.width.bitPattern)
        }
        return bytes
    }
}
