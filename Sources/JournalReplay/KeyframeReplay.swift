import JournalFormat
import JournalStorage

extension Replay {
    /// Journals smaller than this draw a moment by merging from the start: a snapshot and its
    /// keyframes would save less than they cost to write.
    static let keyframeThreshold = SnapshotStore.automaticThreshold

    /// The drawing of the first `count` events from the snapshot and its keyframes
    /// (docs/HISTORY.md, "Keyframes"); nil when they do not apply to `set`, and then the caller
    /// merges from the start. A journal of at least `keyframeThreshold` events that lacks them
    /// gets them now, from one full merge, so the next moment is fast.
    ///
    /// A snapshot applies only when every event it lacks sorts after every event it holds
    /// (`rest`, then a merge of the rest that stops at once and checks the clocks of the rest):
    /// then the first *m* events of the total order are exactly the snapshot's *m*, every
    /// replica's clocks rise (the merge that made it checked them), and a merge may start
    /// from a keyframe, or stop early, without reading further.
    /// `buildAbove`: the journal size from which missing keyframes are built; nil builds none.
    static func drawingFromSnapshot(ofFirst count: Int, _ set: SegmentSet, directory: JournalDirectory,
                                    buildAbove: Int? = keyframeThreshold,
                                    snapshot preloaded: SnapshotStore.OpenedSnapshot? = nil) -> AtMoment? {
        momentFromSnapshot(ofFirst: count, set, directory: directory, buildAbove: buildAbove, snapshot: preloaded,
                           points: .drawing)?.drawing
    }

    /// What the snapshot path folds: a drawing merged already (from the start, or from
    /// keyframes it had to build), or the fold state at the moment.
    enum SnapshotMoment {
        case merged(AtMoment)
        /// `strokeHashes`: the snapshot's, which `state.baseline` refers to.
        case folded(state: OrderedFoldState, report: ReplayReport, events: Int, strokeHashes: StrokeHashes?)

        /// The drawing; nil when some stroke's points were left undecoded.
        var drawing: AtMoment? {
            switch self {
            case .merged(let moment): return moment
            case .folded(let state, let report, let events, _):
                guard !(state.baseline?.withholdsPoints(of: state) ?? false) else { return nil }
                return AtMoment(drawing: state.finish(), report: report, events: events)
            }
        }
    }

    /// Which strokes' points a moment decodes from the snapshot.
    enum PointsNeeded {
        /// Every stroke the moment holds.
        case drawing
        /// Only strokes that may differ from the snapshot's, and `also`: the moment's summary
        /// takes the others' hashes from the snapshot (`OrderedFoldState.summary`).
        case summary(also: Set<Int>)
    }

    static func momentFromSnapshot(ofFirst count: Int, _ set: SegmentSet, directory: JournalDirectory,
                                   buildAbove: Int? = keyframeThreshold,
                                   snapshot preloaded: SnapshotStore.OpenedSnapshot? = nil,
                                   points: PointsNeeded) -> SnapshotMoment? {
        func build() -> SnapshotMoment? {
            guard let buildAbove, set.blockEventCount >= buildAbove else { return nil }
            return buildKeyframes(ofFirst: count, set, directory: directory).map(SnapshotMoment.merged)
        }
        guard let file = preloaded ?? SnapshotStore.newestFile(directory, for: set), let header = file.decode(headerOnly: true),
              let (fresh, skipThrough) = rest(of: set, after: header)
        else { return build() }
        // A snapshot written without stroke hashes (`SnapshotStore.write`) gives a summary
        // nothing to take: it needs the drawing.
        let points = header.strokeHashes == nil ? .drawing : points
        var report = ReplayReport()
        report.problems = set.problems

        let replicas = Array(Set(header.replicas + fresh.replicas)).sorted()
        let map = header.replicas.map { UInt32(replicas.firstIndex(of: $0)!) }
        var floor = header.lastKey
        if let last = header.lastKey { floor?.replica = map[Int(last.replica)] }
        func mergeOfTheRest(from state: OrderedFoldState) -> OrderedMerge {
            var state = state
            state.remap(map)
            return OrderedMerge(set: fresh, replicas: replicas, state: state, floor: floor, lastLamports: header.lastLamports,
                                skipThrough: skipThrough, plausibilityLimit: set.plausibilityLimit)
        }

        if count >= header.eventCount {
            var columns: SnapshotChunks.Wanted?
            if case .summary(let also) = points {
                columns = { first, records in (first..<(first + records.ids.count)).contains { also.contains($0) } }
            }
            guard let snapshot = file.decode(columns: columns) else { return nil }
            var merge = mergeOfTheRest(from: snapshot.state)
            guard merge.fold(report: &report, limit: count - header.eventCount),
                  report.quarantinedEvents == 0 else { return nil }
            return .folded(state: merge.state, report: report, events: header.eventCount + merge.applied,
                           strokeHashes: snapshot.strokeHashes)
        }

        // Is every event the snapshot lacks after all it holds, and plausible?
        var check = mergeOfTheRest(from: OrderedFoldState())
        var checkReport = ReplayReport()
        guard check.run(report: &checkReport, limit: 0) != nil, checkReport.quarantinedEvents == 0 else { return nil }

        // Early moments: the blocks up to the moment cost less than reading the snapshot and
        // decoding its points (on the 2 M-event session both took 0.18 s at 200,000 events:
        // docs/PERFORMANCE.md).
        if count < header.eventCount / 10 { return mergeFromStart(ofFirst: count, set, report: report).map(SnapshotMoment.merged) }
        guard let keyframes = SnapshotStore.keyframes(directory, for: header) else { return build() }
        guard let frame = keyframes.frame(atOrBefore: count) else {
            return mergeFromStart(ofFirst: count, set, report: report).map(SnapshotMoment.merged)
        }
        // Only the strokes the keyframe holds need their points: the chunks of strokes created
        // after it are read for their records. A summary needs fewer still: a stroke the
        // keyframe holds with as many points and the same `ended` as the snapshot is the
        // snapshot's stroke, hash and all.
        var needed = [Bool](repeating: false, count: header.strokeCount)
        var cutBack: [Int: Keyframes.Change] = [:]
        switch points {
        case .drawing:
            for slot in header.state.creationOrder.prefix(frame.created) where Int(slot) < needed.count { needed[Int(slot)] = true }
            // A change to no points names a stroke not created yet, which starts empty.
            for change in frame.changes where change.points > 0 && Int(change.slot) < needed.count { needed[Int(change.slot)] = true }
        case .summary(let also):
            for slot in also where slot < needed.count { needed[slot] = true }
            for change in frame.changes { cutBack[Int(change.slot)] = change }
        }
        let (wanted, changes) = (needed, cutBack)
        let columns: SnapshotChunks.Wanted = { first, records in
            records.ids.indices.contains { position in
                let slot = first + position
                if slot < wanted.count && wanted[slot] { return true }
                // A stroke with no points then was not created yet: it starts empty either way.
                guard let change = changes[slot], change.points > 0 else { return false }
                return Int(records.counts[position]) != change.points || records.strokes[position].ended != change.ended
            }
        }
        guard let snapshot = file.decode(columns: columns),
              snapshot.headerCheck == header.headerCheck
        else { return nil }
        return fold(ofFirst: count, set, snapshot: snapshot, keyframes: keyframes, report: report)
    }

    /// The merge from the start, stopping after `count` events; the clocks are known to rise.
    private static func mergeFromStart(ofFirst count: Int, _ set: SegmentSet, report: ReplayReport) -> AtMoment? {
        var report = report
        var merge = OrderedMerge(set: set)
        guard let drawing = merge.run(report: &report, limit: count, clocksChecked: true) else { return nil }
        return AtMoment(drawing: drawing, report: report, events: merge.applied)
    }

    /// From the latest keyframe at or before `count`: the snapshot's state cut back to it, and
    /// the events after it merged up to `count` (the blocks before its cursors are not read).
    static func drawing(ofFirst count: Int, _ set: SegmentSet, snapshot: Snapshot, keyframes: Keyframes,
                        report: ReplayReport) -> AtMoment? {
        fold(ofFirst: count, set, snapshot: snapshot, keyframes: keyframes, report: report)?.drawing
    }

    private static func fold(ofFirst count: Int, _ set: SegmentSet, snapshot: Snapshot, keyframes: Keyframes,
                             report: ReplayReport) -> SnapshotMoment? {
        guard let frame = keyframes.frame(atOrBefore: count) else {
            return mergeFromStart(ofFirst: count, set, report: report).map(SnapshotMoment.merged)
        }
        guard let state = Keyframes.state(at: frame, from: snapshot.state) else { return nil }
        var report = report
        var cursors: [ReplicaID: UInt64] = [:]
        for (replica, cursor) in zip(snapshot.replicas, frame.cursors) { cursors[replica] = cursor }
        // The replicas the snapshot knew, in its order: a replica new since it has only events
        // after all of its own, so none within `count`.
        var merge = OrderedMerge(set: set, replicas: snapshot.replicas, state: state, floor: frame.lastKey,
                                 skipThrough: cursors, plausibilityLimit: set.plausibilityLimit)
        guard merge.fold(report: &report, limit: count - frame.events, clocksChecked: true) else { return nil }
        return .folded(state: merge.state, report: report, events: frame.events + merge.applied,
                       strokeHashes: snapshot.strokeHashes)
    }

    /// One full merge that writes a snapshot with keyframes, and the drawing at `count` from
    /// them; nil when a snapshot cannot be made (clocks that fall, quarantined events, forks).
    private static func buildKeyframes(ofFirst count: Int, _ set: SegmentSet, directory: JournalDirectory) -> AtMoment? {
        var report = ReplayReport()
        report.problems = set.problems
        guard let snapshot = fullSnapshot(set, report: &report), snapshot.forks.isEmpty, report.quarantinedEvents == 0,
              let keyframes = snapshot.keyframes
        else { return nil }
        // A cache: a journal on a read-only disk still gets its answer (and is told why it
        // will be built again).
        var fresh = ReplayReport()
        fresh.problems = set.problems
        do { _ = try SnapshotStore.write(snapshot, to: directory) } catch { fresh.snapshotNotWritten = error }
        return drawing(ofFirst: min(count, snapshot.eventCount), set, snapshot: snapshot, keyframes: keyframes, report: fresh)
    }
}
