import JournalFormat
import JournalStorage

/// The wall times of a set of events, sorted: how many events a wall-clock moment stands for
/// (docs/HISTORY.md, "A moment").
struct WallTimes {
    private let sorted: [Int64]

    init(_ times: [Int64]) { sorted = times.sorted() }

    var last: Int64? { sorted.last }

    /// How many events the moment holds; `.events(n)` is the caller's to clamp.
    func count(at moment: Moment) -> Int {
        Self.count(at: moment, total: sorted.count, last: last, madeBy: made(by:))
    }

    /// The same from a journal's `total` events, its `last` wall time and how many events were
    /// made by a time (`WallCensus` counts them without holding every wall time).
    static func count(at moment: Moment, total: Int, last: Int64?, madeBy made: (Int64) -> Int) -> Int {
        switch moment {
        case .events(let count):
            return min(max(count, 0), total)
        case .end:
            return total
        case .wallTime(let time):
            return made(time)
        case .beforeEnd(let milliseconds):
            guard let last else { return 0 }
            let (cut, overflow) = last.subtractingReportingOverflow(milliseconds)
            return made(overflow ? Int64.min : cut)
        }
    }

    /// Events whose wall time is at or before `time` (binary search).
    private func made(by time: Int64) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] <= time { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

extension Replay {
    /// The drawing at a moment, and how many events of the total order it holds.
    public struct AtMoment {
        public var drawing: Drawing
        /// What replay reported: problems of the whole set; counts of the events folded.
        public var report: ReplayReport
        public var events: Int
    }

    /// The drawing at `moment` without holding every event in memory (`History` does): the
    /// ordered merge stops after the moment's events. `.end` is `load`'s drawing (snapshots
    /// and all); a wall-clock moment is counted from the keyframes' wall census, or else from
    /// every event's wall time.
    public static func drawing(at moment: Moment, in directory: JournalDirectory) -> AtMoment {
        if moment == .end {
            let (drawing, report) = load(directory)
            return AtMoment(drawing: drawing, report: report, events: report.eventCount)
        }
        let target = Target(moment, in: directory)
        return drawing(ofFirst: target.count, target.set, directory: directory, clocksChecked: target.clocksChecked,
                       snapshot: target.snapshot)
    }

    /// The drawing at a moment in brief, and how many events and points it holds.
    public struct SummaryAtMoment {
        public var summary: DrawingSummary
        public var report: ReplayReport
        public var events: Int
        public var points: Int

        init(_ moment: AtMoment) {
            summary = DrawingSummary(moment.drawing)
            report = moment.report
            events = moment.events
            points = moment.drawing.pointCount
        }

        init(summary: DrawingSummary, report: ReplayReport, events: Int, points: Int) {
            self.summary = summary
            self.report = report
            self.events = events
            self.points = points
        }
    }

    /// What `drawing(at:in:)` draws, in brief (`journal digest --at`): the same digest and
    /// counts, but a stroke still as the snapshot holds it is neither decoded nor hashed again,
    /// its hash read from the snapshot (docs/HISTORY.md, "A moment's digest without the drawing").
    public static func summary(at moment: Moment, in directory: JournalDirectory) -> SummaryAtMoment {
        if moment == .end {
            if let cached = cachedDigest(directory) {
                var report = ReplayReport()
                report.problems = cached.problems
                return SummaryAtMoment(summary: cached.summary, report: report, events: cached.events, points: cached.points)
            }
            let (drawing, report) = load(directory)
            return SummaryAtMoment(summary: DrawingSummary(drawing, digest: report.digest), report: report,
                                   events: report.eventCount, points: report.pointCount)
        }
        let target = Target(moment, in: directory)
        return summaryFromSnapshot(ofFirst: target.count, target.set, directory: directory, snapshot: target.snapshot)
            ?? SummaryAtMoment(drawing(ofFirst: target.count, target.set, directory: directory,
                                       clocksChecked: target.clocksChecked, snapshot: target.snapshot))
    }

    /// The summary from the snapshot: strokes the moment may hold otherwise than the snapshot
    /// are decoded; if events since changed a stroke that was not, it is decoded and the
    /// moment folded again (once); a snapshot without stroke hashes gives the drawing's
    /// summary. Nil when the snapshot does not apply.
    static func summaryFromSnapshot(ofFirst count: Int, _ set: SegmentSet, directory: JournalDirectory,
                                    snapshot: SnapshotStore.OpenedSnapshot?) -> SummaryAtMoment? {
        var also = Set<Int>()
        for _ in 0..<2 {
            // Missing keyframes are built by the caller's fallback (`drawing(ofFirst:)`): built
            // here too, a journal that cannot have them would be merged whole twice.
            guard let found = momentFromSnapshot(ofFirst: count, set, directory: directory, buildAbove: nil, snapshot: snapshot,
                                                 points: .summary(also: also))
            else { return nil }
            // Merged from the start, or from a snapshot without stroke hashes: the drawing whole.
            guard case .folded(let state, let report, let events, let hashes?) = found else {
                return found.drawing.map(SummaryAtMoment.init)
            }
            switch state.summary(stored: hashes) {
            case .summary(let summary, let points):
                return SummaryAtMoment(summary: summary, report: report, events: events, points: points)
            case .touched(let slots):
                guard !slots.isEmpty else { return nil }
                also.formUnion(slots)
            }
        }
        return nil
    }

    /// How many events of which set a moment holds, and what was read to count them.
    private struct Target {
        var set: SegmentSet
        var count: Int
        var clocksChecked = false
        var snapshot: SnapshotStore.OpenedSnapshot?

        init(_ moment: Moment, in directory: JournalDirectory) {
            set = SegmentSet.load(directory)
            guard case .events(let asked) = moment else {
                // The keyframes' wall census reads only the events whose times straddle the
                // moment; the snapshot it read serves the drawing too.
                let file = SnapshotStore.newestFile(directory, for: set)
                if let census = WallCensus(directory, set, snapshot: file) {
                    count = census.count(at: moment)
                    clocksChecked = !census.hasFreshEvents
                    snapshot = file
                    return
                }
                var report = ReplayReport()
                let (times, clocksRise) = uniqueWallTimes(set, report: &report)
                count = WallTimes(times).count(at: moment)
                clocksChecked = clocksRise
                return
            }
            count = max(asked, 0)
        }
    }

    /// The drawing of the first `count` events: from the journal's snapshot and keyframes
    /// when they apply (building them for a large journal that lacks them), else by merging
    /// from the start. Either way the same drawing (`KeyframeTests`). `snapshot`: the
    /// journal's snapshot file when the caller read it already.
    static func drawing(ofFirst count: Int, _ set: SegmentSet, directory: JournalDirectory,
                        clocksChecked: Bool = false, snapshot: SnapshotStore.OpenedSnapshot? = nil) -> AtMoment {
        drawingFromSnapshot(ofFirst: count, set, directory: directory, snapshot: snapshot)
            ?? drawing(ofFirst: count, set, clocksChecked: clocksChecked)
    }

    /// The drawing of the first `count` events of the total order (all of them if fewer).
    /// `clocksChecked`: every replica's clocks are known to rise with its seqs.
    public static func drawing(ofFirst count: Int, _ set: SegmentSet, clocksChecked: Bool = false) -> AtMoment {
        var report = ReplayReport()
        report.problems = set.problems
        var merge = OrderedMerge(set: set)
        if let drawing = merge.run(report: &report, limit: count, clocksChecked: clocksChecked) {
            return AtMoment(drawing: drawing, report: report, events: merge.applied)
        }
        // Some replica's clocks fall: only the sorted history knows which events come first.
        let history = History(set)
        let held = min(count, history.events.count)
        return AtMoment(drawing: history.drawing(ofFirst: held), report: history.report, events: held)
    }

    /// Every distinct event's wall time, in no particular order, and whether every replica's
    /// clocks rise with its seqs (what the ordered merge needs; read here on the way).
    static func uniqueWallTimes(_ set: SegmentSet, report: inout ReplayReport) -> (times: [Int64], clocksRise: Bool) {
        var times: [Int64] = []
        var clocksRise = true
        let limit = set.plausibilityLimit
        for replica in set.replicas {
            var stream = ReplicaStream(set: set, replica: replica, plausibilityLimit: limit)
            var previous: UInt64? = 0
            while let batch = stream.next(report: &report) {
                times += batch.walls
                previous = previous.flatMap { OrderedMerge.lastOfRising(batch.lamports, after: $0) }
            }
            if previous == nil { clocksRise = false }
        }
        return (times, clocksRise)
    }
}
