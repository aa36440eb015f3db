import JournalFormat
import JournalStorage

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
                next.summarize(drawing)
                report.digest = next.digest
                do { report.snapshotWritten = try SnapshotStore.write(next, to: directory, atMost: SnapshotStore.automaticSizeLimit(set)) } catch {
                    report.snapshotNotWritten = error
                }
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
                snapshot.summarize(drawing)
                report.digest = snapshot.digest
                do { report.snapshotWritten = try SnapshotStore.write(snapshot, to: directory, atMost: SnapshotStore.automaticSizeLimit(set)) } catch {
                    report.snapshotNotWritten = error
                }
            }
            return (drawing, report)
        }
        return replay(set)
    }

    /// A full ordered replay kept as a snapshot; nil if clocks are out of order.
    /// Keyframes are noted on the way (`Keyframes`), every `keyframeInterval` events if given.
    static func fullSnapshot(_ set: SegmentSet, report: inout ReplayReport, keyframeInterval: Int? = nil) -> Snapshot? {
        var merge = OrderedMerge(set: set)
        merge.keyframeInterval = keyframeInterval ?? Keyframes.interval(forEvents: set.blockEventCount)
        guard merge.run(report: &report) != nil else { return nil }
        var snapshot = makeSnapshot(of: merge, set: set, replicas: set.replicas, report: report)
        snapshot.keyframes = Keyframes(frames: merge.keyframes.map { $0.frame(against: merge.state) }, tailWalls: merge.tailWalls)
        return snapshot
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
        var snapshot = Snapshot(replicas: replicas, covered: covered, lastLamports: lastLamports, sealedNames: names,
                                lastKey: merge.lastKey, eventCount: report.eventCount, pointCount: report.pointCount,
                                maxLamport: report.maxLamport, duplicateEvents: report.duplicateEvents, forks: report.forks,
                                state: merge.state)
        snapshot.membershipFingerprint = set.membership?.fingerprint
        return snapshot
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
    public static func cachedDigest(_ directory: JournalDirectory) -> CachedDigest? {
        let set = SegmentSet.load(directory)
        guard let snapshot = SnapshotStore.newest(directory, for: set, headerOnly: true), let summary = snapshot.summary,
              let (fresh, skipThrough) = rest(of: set, after: snapshot)
        else { return nil }
        // Exactly the blocks `continueFrom` would skip unread (ReplicaStream: a block whose
        // last seq is within `skipThrough`); any other block may hold an event to apply.
        for member in fresh.members {
            for block in member.scan.blocks where block.frame.lastSeq > skipThrough[member.replica] ?? 0 { return nil }
        }
        return CachedDigest(summary: summary, events: snapshot.eventCount, points: snapshot.pointCount, problems: set.problems)
    }

    /// What `cachedDigest` found in the snapshot's header.
    public struct CachedDigest: Sendable {
        public var summary: DrawingSummary
        public var events: Int
        public var points: Int
        public var problems: [Problem]
        public var digest: String { summary.digest }
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
        // The events on top are admitted as the whole set's are (the snapshot's fingerprint
        // matched this membership: `SnapshotStore.newest`).
        fresh.membership = set.membership
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
