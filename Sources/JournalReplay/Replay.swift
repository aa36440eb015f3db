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
        public var gaps: [ClosedRange<UInt64>] {
            var result: [ClosedRange<UInt64>] = []
            var next: UInt64 = 1
            for range in ranges {
                if range.lowerBound > next { result.append(next...(range.lowerBound - 1)) }
                next = max(next, range.upperBound + 1)
            }
            return result
        }
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

    public init() {}
}

/// Rebuilds the drawing from segments: verify, dedup by event id, fold.
public enum Replay {
    public static func load(_ directory: JournalDirectory) -> (drawing: Drawing, report: ReplayReport) {
        replay(SegmentSet.load(directory))
    }

    /// Decodes every block of every segment without folding: what `verify` and `status` need
    /// (checksums alone do not prove that a body decodes).
    public static func check(_ set: SegmentSet) -> ReplayReport {
        var report = ReplayReport()
        report.problems = set.problems
        forEachUniqueEvent(set, report: &report) { _ in }
        return report
    }

    public static func replay(_ set: SegmentSet) -> (drawing: Drawing, report: ReplayReport) {
        var report = ReplayReport()
        report.problems = set.problems
        report.duplicateEvents = 0
        var fold = Fold(replicas: set.replicas)
        forEachUniqueEvent(set, report: &report) { event in
            fold.apply(event)
        }
        return (fold.finish(), report)
    }

    /// Calls `body` once per distinct event id, in (replica, seq) order, after dedup and fork
    /// resolution. Blocks are decoded one overlap group at a time, so memory follows the
    /// largest group, not the journal.
    public static func forEachUniqueEvent(
        _ set: SegmentSet, report: inout ReplayReport, _ body: (Event) -> Void
    ) {
        struct BlockRef {
            var member: Int
            var block: ScannedBlock
        }
        var byReplica: [ReplicaID: [BlockRef]] = [:]
        var summaries: [ReplicaID: ReplayReport.ReplicaSummary] = [:]
        for (index, member) in set.members.enumerated() {
            summaries[member.replica, default: .init(replica: member.replica)].segments += 1
            for block in member.scan.blocks {
                byReplica[member.replica, default: []].append(BlockRef(member: index, block: block))
            }
        }
        for replica in summaries.keys.sorted() {
            var summary = summaries[replica]!
            let blocks = (byReplica[replica] ?? []).sorted {
                ($0.block.frame.firstSeq, $0.block.frame.lastSeq) < ($1.block.frame.firstSeq, $1.block.frame.lastSeq)
            }
            // Group blocks whose seq ranges overlap; most groups hold exactly one block.
            var groupStart = 0
            while groupStart < blocks.count {
                var groupEnd = groupStart + 1
                var reach = blocks[groupStart].block.frame.lastSeq
                while groupEnd < blocks.count && blocks[groupEnd].block.frame.firstSeq <= reach {
                    reach = max(reach, blocks[groupEnd].block.frame.lastSeq)
                    groupEnd += 1
                }
                let group = blocks[groupStart..<groupEnd]
                groupStart = groupEnd

                // Blocks are decoded one at a time and merged into the group's distinct events, so
                // memory follows distinct seqs (bounded by the group's range), not copies of them.
                var variants: [UInt64: Event] = [:]
                var single: [Event]? = nil
                var forked = Set(report.forks)
                for ref in group {
                    let member = set.members[ref.member]
                    let frame = ref.block.frame
                    let result: Result<[Event], SegmentFormatError> = member.scan.bytes.withUnsafeBytes { buffer in
                        let frameBytes = UnsafeRawBufferPointer(rebasing: buffer[ref.block.offset..<ref.block.offset + frame.totalLength])
                        do throws(SegmentFormatError) {
                            return .success(try BlockDecoder.events(frame: frame, frameBytes: frameBytes, replica: replica))
                        } catch {
                            return .failure(error)
                        }
                    }
                    guard case .success(let events) = result else {
                        if case .failure(let error) = result {
                            report.problems.append(Problem(
                                .corrupt, file: member.scan.path, offset: Int64(ref.block.offset), replica: replica,
                                seqRange: ref.block.seqRange, reason: error.description))
                        }
                        continue
                    }
                    addRange(ref.block.seqRange, to: &summary.ranges)
                    if group.count == 1 { single = events; break }
                    for event in events {
                        guard let existing = variants[event.id.seq] else {
                            variants[event.id.seq] = event
                            continue
                        }
                        if existing == event {
                            report.duplicateEvents += 1
                        } else {
                            if forked.insert(event.id).inserted {
                                report.forks.append(event.id)
                                report.problems.append(Problem(
                                    .fork, file: member.scan.path, offset: Int64(ref.block.offset),
                                    replica: replica, seqRange: event.id.seq...event.id.seq,
                                    reason: "event \(event.id) exists with different contents; the canonical lesser one is kept"))
                            }
                            if EventOrdering.canonicalLess(event, existing) { variants[event.id.seq] = event }
                        }
                    }
                }
                if let single {
                    for event in single { emit(event, &report, body) }
                    continue
                }
                for seq in variants.keys.sorted() { emit(variants[seq]!, &report, body) }
            }
            summary.events = summary.ranges.reduce(0) { $0 + Int($1.upperBound - $1.lowerBound + 1) }
            report.replicas.append(summary)
        }
    }

    private static func emit(_ event: Event, _ report: inout ReplayReport, _ body: (Event) -> Void) {
        report.eventCount += 1
        if case .point = event.payload { report.pointCount += 1 }
        report.maxLamport = max(report.maxLamport, event.lamport)
        body(event)
    }

    private static func addRange(_ range: ClosedRange<UInt64>, to ranges: inout [ClosedRange<UInt64>]) {
        // Blocks arrive sorted by first seq, so only the last range can absorb this one.
        if let last = ranges.last, range.lowerBound <= last.upperBound + 1 {
            ranges[ranges.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
        } else {
            ranges.append(range)
        }
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
