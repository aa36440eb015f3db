import JournalFormat
import JournalStorage

/// How many events a wall-clock moment holds (docs/HISTORY.md, "A moment"), counted from a
/// snapshot's keyframes instead of every event's wall time.
///
/// Each keyframe notes the lowest and highest wall time of the events since the keyframe
/// before, and the keyframes note the same of the snapshot's last events (`Keyframes`). For a
/// time *T*, an interval whose highest time is at most *T* counts whole, one whose lowest is
/// after *T* not at all, and only the events of an interval that straddles *T* are read:
/// per replica, the seqs between the two keyframes' cursors. Clocks that follow the wall
/// make that one or two intervals of the 128; the events the snapshot lacks are read whole,
/// as before. Either way the count is the one `WallTimes` gives from every event.
struct WallCensus {
    private struct Interval {
        var events: Int
        var walls: ClosedRange<Int64>?
        /// Per replica of the snapshot: seqs after `from` and through `through` (`UInt64.max`
        /// stands for every seq the snapshot holds).
        var from: [UInt64]
        var through: [UInt64]
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
        for frame in keyframes.frames {
            guard frame.cursors.count == previous.count else { return nil }
            intervals.append(Interval(events: frame.events - previousEvents, walls: frame.walls, from: previous, through: frame.cursors))
            previous = frame.cursors
            previousEvents = frame.events
        }
        intervals.append(Interval(events: header.eventCount - previousEvents, walls: keyframes.tailWalls, from: previous,
                                  through: Array(repeating: .max, count: previous.count)))
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
        last = (intervals.compactMap { $0.walls?.upperBound } + times).max()
    }

    /// How many events the moment holds; `.events(n)` is the caller's to clamp.
    func count(at moment: Moment) -> Int {
        WallTimes.count(at: moment, total: total, last: last, madeBy: made(by:))
    }

    /// Events whose wall time is at or before `time`.
    private func made(by time: Int64) -> Int {
        var count = fresh.count(at: .wallTime(time))
        var straddling: [Interval] = []
        for interval in intervals {
            guard let walls = interval.walls else { continue }
            if walls.upperBound <= time {
                count += interval.events
            } else if walls.lowerBound <= time {
                straddling.append(interval)
            }
        }
        return count + counted(straddling, madeBy: time)
    }

    /// Reads the events of the straddling intervals, one pass per replica over just their
    /// seqs (blocks wholly outside them are not decoded), and counts those made by `time`.
    private func counted(_ straddling: [Interval], madeBy time: Int64) -> Int {
        guard !straddling.isEmpty else { return 0 }
        var count = 0
        var report = ReplayReport()
        for (index, replica) in replicas.enumerated() {
            var needed = SeqRanges()
            for interval in straddling {
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
