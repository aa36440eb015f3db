import JournalFormat
import JournalStorage

/// How many events a wall-clock moment holds (docs/HISTORY.md, "A moment"), counted from a
/// snapshot's keyframes instead of every event's wall time.
///
/// Each keyframe notes, per replica, the lowest and highest wall time of its events since the
/// keyframe before, and the keyframes note the same of the snapshot's last events
/// (`Keyframes`). For a time *T*, an interval whose highest time is at most *T* counts whole,
/// one whose lowest is after *T* not at all; in one that straddles *T*, each replica's events
/// count the same way (how many there are comes from the seqs the snapshot covers), and only
/// those of a replica whose own times straddle *T* are read: its seqs between the two
/// keyframes' cursors. A writer's clock follows its seqs, so that is one interval of one
/// replica or a few, even where the replicas' events interleave in the total order in ways
/// their wall times do not (journals recorded one after another, then merged); the events
/// the snapshot lacks are read whole, as before. Either way the count is the one `WallTimes`
/// gives from every event.
struct WallCensus {
    struct Interval {
        var events: Int
        /// Per replica of the snapshot: its events' wall times in the interval.
        var walls: [ClosedRange<Int64>?]
        /// Per replica: how many of the interval's events are its own; nil when those do not
        /// add up to `events` (then a straddling interval is read for every replica).
        var counts: [Int]?
        /// Per replica of the snapshot: seqs after `from` and through `through` (`UInt64.max`
        /// stands for every seq the snapshot holds).
        var from: [UInt64]
        var through: [UInt64]

        var union: ClosedRange<Int64>? { Keyframes.union(walls) }
    }

    private let set: SegmentSet
    private let replicas: [ReplicaID]
    /// Per replica of the snapshot: the highest seq it holds.
    private let held: [UInt64]
    private let intervals: [Interval]
    /// The wall times of the events the snapshot lacks.
    private let fresh: WallTimes
    /// Whether there are such events (then their clocks are unchecked).
    let hasFreshEvents: Bool
    /// Every event's count, and the latest wall time of all.
    private let total: Int
    private let last: Int64?

    /// Nil when the journal has no snapshot with keyframes that fit its files (then every
    /// event's wall time is read, `Replay.uniqueWallTimes`).
    /// `snapshot`: the journal's snapshot file, read by the caller (nil: none was found).
    init?(_ directory: JournalDirectory, _ set: SegmentSet, snapshot file: SnapshotStore.OpenedSnapshot?) {
        guard let header = file?.decode(headerOnly: true),
              let (freshSet, skipThrough) = Replay.rest(of: set, after: header),
              let keyframes = SnapshotStore.keyframes(directory, for: header)
        else { return nil }
        self.set = set
        replicas = header.replicas
        held = header.replicas.map { header.covered[$0]?.last?.upperBound ?? 0 }
        var intervals: [Interval] = []
        var previous = Array(repeating: UInt64(0), count: header.replicas.count)
        var previousEvents = 0
        let (replicas, held) = (self.replicas, self.held)
        func interval(events: Int, walls: [ClosedRange<Int64>?], through: [UInt64]) -> Interval? {
            guard walls.count == previous.count, through.count == previous.count else { return nil }
            var counts: [Int]? = replicas.indices.map { index in
                Self.seqs(in: header.covered[replicas[index]] ?? [], after: previous[index], through: min(through[index], held[index]))
            }
            if let found = counts, found.reduce(0, +) != events || zip(found, walls).contains(where: { ($0 == 0) != ($1 == nil) }) {
                counts = nil
            }
            return Interval(events: events, walls: walls, counts: counts, from: previous, through: through)
        }
        for frame in keyframes.frames {
            guard let next = interval(events: frame.events - previousEvents, walls: frame.replicaWalls, through: frame.cursors)
            else { return nil }
            intervals.append(next)
            previous = frame.cursors
            previousEvents = frame.events
        }
        guard let tail = interval(events: header.eventCount - previousEvents, walls: keyframes.tailWalls,
                                  through: Array(repeating: .max, count: previous.count))
        else { return nil }
        intervals.append(tail)
        self.intervals = intervals
        var report = ReplayReport()
        var times: [Int64] = []
        for replica in freshSet.replicas {
            var stream = ReplicaStream(set: freshSet, replica: replica, plausibilityLimit: set.plausibilityLimit)
            stream.skipThrough = skipThrough[replica] ?? 0
            while let batch = stream.next(report: &report) { times += batch.walls }
        }
        fresh = WallTimes(times)
        hasFreshEvents = !times.isEmpty
        total = header.eventCount + times.count
        last = (intervals.compactMap { $0.union?.upperBound } + times).max()
    }

    /// How many events the moment holds; `.events(n)` is the caller's to clamp.
    func count(at moment: Moment) -> Int {
        WallTimes.count(at: moment, total: total, last: last, madeBy: made(by:))
    }

    /// How many seqs of `ranges` lie after `from` and through `through`.
    static func seqs(in ranges: [ClosedRange<UInt64>], after from: UInt64, through: UInt64) -> Int {
        guard from < through else { return 0 }
        var count: UInt64 = 0
        for range in ranges {
            let low = max(range.lowerBound, from + 1), high = min(range.upperBound, through)
            if low <= high { count &+= high - low + 1 }
        }
        return Int(clamping: count)
    }

    /// Events whose wall time is at or before `time`.
    private func made(by time: Int64) -> Int {
        let (count, straddling) = plan(time)
        return count + counted(straddling, madeBy: time)
    }

    /// The events known to be made by `time` without reading any, and per replica the
    /// intervals whose events of that replica must be read.
    func plan(_ time: Int64) -> (count: Int, straddling: [[Interval]]) {
        var count = fresh.count(at: .wallTime(time))
        var straddling = Array(repeating: [Interval](), count: replicas.count)
        for interval in intervals {
            guard let union = interval.union else { continue }
            if union.upperBound <= time {
                count += interval.events
            } else if union.lowerBound <= time {
                for index in replicas.indices {
                    guard let walls = interval.walls[index] else { continue }
                    if let counts = interval.counts, walls.upperBound <= time {
                        count += counts[index]
                    } else if interval.counts == nil || walls.lowerBound <= time {
                        straddling[index].append(interval)
                    }
                }
            }
        }
        return (count, straddling)
    }

    /// Reads the events of the straddling intervals, one pass per replica over just their
    /// seqs (blocks wholly outside them are not decoded), and counts those made by `time`.
    private func counted(_ straddling: [[Interval]], madeBy time: Int64) -> Int {
        guard straddling.contains(where: { !$0.isEmpty }) else { return 0 }
        var count = 0
        var report = ReplayReport()
        for (index, replica) in replicas.enumerated() {
            var needed = SeqRanges()
            for interval in straddling[index] {
                let through = min(interval.through[index], held[index])
                if through > interval.from[index] { needed.insert((interval.from[index] + 1)...through) }
            }
            guard let highest = needed.highest else { continue }
            var stream = ReplicaStream(set: set, replica: replica, plausibilityLimit: set.plausibilityLimit)
            stream.skip = SeqRanges(needed.gaps(through: highest))
            while let batch = stream.next(report: &report) {
                guard batch.firstSeq <= highest else { break }
                for (offset, wall) in batch.walls.enumerated() where wall <= time && needed.contains(batch.firstSeq + UInt64(offset)) {
                    count += 1
                }
            }
        }
        return count
    }
}
