import JournalFormat
import JournalStorage

/// A journal's drawing kept up to date as events arrive: the replay a live board runs.
///
/// It is opened with a full (or snapshot-continued) replay, then takes this process's own
/// events one at a time (`applyOwn`) and the sealed segments other machines' events arrive
/// in (`readNew`, then `integrate`), at a cost that follows the new events, not the board.
/// When a new file could change what a full replay decides about events already applied
/// (an overlap: duplicates or a fork; a file that vanished; a quarantined clock), it says
/// so and the caller loads afresh: the drawing is always exactly `Replay`'s.
public struct LiveReplay: Sendable {
    public private(set) var drawing: LiveDrawing
    /// Seq ranges applied, per replica.
    public private(set) var covered: [ReplicaID: SeqRanges]
    /// What the last load or integration reported (damaged blocks left out, ignored files).
    public private(set) var problems: [Problem]
    var cursor: Cursor

    /// What `readNew` needs to know of the state: small, so that it can be copied out of a
    /// lock while the drawing goes on changing.
    public struct Cursor: Sendable {
        /// Sealed files whose events were applied ("replica/name"): they must stay.
        var applied: Set<String> = []
        /// Every sealed file already looked at (applied, or refused as damaged).
        var seen: Set<String> = []
        var covered: [ReplicaID: SeqRanges] = [:]
        /// A fork or a quarantined event was seen: only a full replay decides what changes.
        var exactOnlyByFullReplay = false
    }

    /// What appeared since the cursor: decoded, not yet applied.
    public struct Increment: Sendable {
        public var events: [Event] = []
        public var problems: [Problem] = []
        var applied: [String] = []
        var seen: [String] = []
        /// Applying these on top would not give exactly the full replay: load afresh.
        public var needsReload = false
        public var isEmpty: Bool { events.isEmpty && applied.isEmpty && seen.isEmpty && !needsReload }
    }

    /// The drawing of `directory` by a full replay, or continued from its newest snapshot.
    public static func load(_ directory: JournalDirectory, useSnapshots: Bool = true) -> (LiveReplay, ReplayReport) {
        let set = SegmentSet.load(directory)
        var drawing: LiveDrawing
        var report: ReplayReport
        if useSnapshots, let snapshot = SnapshotStore.newest(directory, for: set),
           let (_, continued, next) = Replay.continueFrom(snapshot, set: set) {
            // Strokes the snapshot held have no last key: everything in it precedes its last.
            drawing = LiveDrawing(loading: next.state, replicas: next.replicas, floor: next.lastKey)
            report = continued
        } else {
            report = ReplayReport()
            report.problems = set.problems
            var merge = OrderedMerge(set: set)
            if merge.run(report: &report) != nil {
                drawing = LiveDrawing(loading: merge.state, replicas: set.replicas, floor: merge.lastKey)
            } else {
                // Clocks out of order: fold one event at a time; every point keeps its key.
                report = ReplayReport()
                report.problems = set.problems
                drawing = LiveDrawing()
                var ignored: [DrawingChange] = []
                Replay.forEachUniqueEvent(set, report: &report) { event in
                    drawing.apply(event, changes: &ignored)
                    ignored.removeAll(keepingCapacity: true)
                }
            }
        }
        var cursor = Cursor()
        for summary in report.replicas { cursor.covered[summary.replica] = SeqRanges(summary.ranges) }
        for member in set.members {
            if let name = member.name { cursor.applied.insert(name.relativePath(in: member.replica)) }
        }
        cursor.seen = cursor.applied
        cursor.exactOnlyByFullReplay = !report.forks.isEmpty || report.quarantinedEvents > 0
        let live = LiveReplay(drawing: drawing, covered: cursor.covered, problems: report.problems, cursor: cursor)
        return (live, report)
    }

    public var readCursor: Cursor { cursor }

    /// Applies an event this process's writer just assigned (it follows every event seen).
    public mutating func applyOwn(_ event: Event, changes: inout [DrawingChange]) -> LiveDrawing.Outcome {
        let outcome = drawing.apply(event, changes: &changes)
        if outcome == .applied {
            covered[event.id.replica, default: SeqRanges()].insert(event.id.seq...event.id.seq)
            cursor.covered[event.id.replica] = covered[event.id.replica]
        }
        return outcome
    }

    /// Reads the sealed segments that appeared in `directory` since `cursor`: the disk work
    /// of an integration, done outside any lock. `own` is this process's replica, whose
    /// sealed segments hold events already applied by `applyOwn`.
    public static func readNew(_ directory: JournalDirectory, after cursor: Cursor, own: ReplicaID?) -> Increment {
        var increment = Increment()
        let listing = JournalDirectory.listSealed(replicasPath: directory.replicasPath)
        var present = Set<String>()
        var fresh = SegmentSet()
        for file in listing.sealed {
            let key = file.name.relativePath(in: file.replica)
            guard present.insert(key).inserted, !cursor.seen.contains(key) else { continue }
            let before = fresh.members.count
            fresh.add(sealed: file)
            increment.seen.append(key)
            if fresh.members.count > before { increment.applied.append(key) }
        }
        // A file folded earlier is gone: the event set shrank, and only a replay says what
        // the drawing of the new set is.
        guard cursor.applied.isSubset(of: present), !cursor.exactOnlyByFullReplay || increment.seen.isEmpty else {
            increment.needsReload = true
            return increment
        }
        increment.problems = fresh.problems
        var newRanges: [ReplicaID: SeqRanges] = [:]
        var members: [SegmentSet.Member] = []
        for member in fresh.members {
            let held = cursor.covered[member.replica] ?? SeqRanges()
            var overlaps = false
            var inside = true
            for block in member.scan.blocks {
                let range = block.seqRange
                if held.intersects(range) { overlaps = true }
                if !held.containsAll(range) { inside = false }
            }
            if overlaps {
                // Our own sealed segment holds what `applyOwn` already applied.
                if member.replica == own && inside { continue }
                increment.needsReload = true
                return increment
            }
            for block in member.scan.blocks { newRanges[member.replica, default: SeqRanges()].insert(block.seqRange) }
            members.append(member)
        }
        fresh.members = members
        guard !members.isEmpty else { return increment }
        // The clock bound of the whole set, old events and new (`ClockBound`).
        var all = cursor.covered
        for (replica, ranges) in newRanges { all[replica, default: SeqRanges()].formUnion(ranges) }
        let limit = ClockBound.limit(distinctEvents: ClockBound.distinctEvents(all.values.map(\.ranges)))
        var report = ReplayReport()
        for replica in fresh.replicas {
            var stream = ReplicaStream(set: fresh, replica: replica, plausibilityLimit: limit)
            while let batch = stream.next(report: &report) {
                increment.events.append(contentsOf: batch.events(replica: replica))
            }
        }
        increment.problems += report.problems
        if !report.forks.isEmpty || report.quarantinedEvents > 0 { increment.needsReload = true }
        return increment
    }

    /// Applies what `readNew` found. False when the caller must load afresh instead (the
    /// state is then partly updated and must be dropped).
    public mutating func integrate(_ increment: Increment, changes: inout [DrawingChange]) -> Bool {
        guard !increment.needsReload else { return false }
        for event in increment.events {
            // Own events a concurrent append already applied (only ours can be: others'
            // overlaps were refused by `readNew`).
            if covered[event.id.replica]?.contains(event.id.seq) == true { continue }
            guard drawing.apply(event, changes: &changes) == .applied else { return false }
            covered[event.id.replica, default: SeqRanges()].insert(event.id.seq...event.id.seq)
        }
        cursor.covered = covered
        cursor.applied.formUnion(increment.applied)
        cursor.seen.formUnion(increment.seen)
        problems += increment.problems
        return true
    }
}
