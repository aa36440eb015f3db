import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// The live drawing is the replay, one event at a time: for any order of arrival the result
/// equals the order-free `Fold`, and the changes it reports name every stroke that changed.
@Suite(.ownThreads) struct LiveDrawingTests {
    /// Three replicas drawing at once: strokes with undo/redo/erase/clear, some strokes
    /// continued by another replica (points that land inside a stroke), clocks that jump.
    func session(seed: UInt64) -> [ReplicaID: [Event]] {
        var generators = (0..<3).map { EventGenerator(seed: seed * 31 + UInt64($0)) }
        var random = SeededGenerator(seed: seed)
        var events: [ReplicaID: [Event]] = [:]
        var strokes: [(StrokeID, Style)] = []
        for _ in 0..<40 {
            let who = Int.random(in: 0..<3, using: &random)
            var batch: [Event] = []
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                batch = generators[who].stroke(points: Int.random(in: 1...30, using: &random))
                if case .point(let sample) = batch[0].payload { strokes.append((sample.stroke, sample.style)) }
            case 5 where !strokes.isEmpty:
                // Another replica adds points to an existing stroke, some in another style.
                let (stroke, style) = strokes.randomElement(using: &random)!
                for _ in 0..<Int.random(in: 1...5, using: &random) {
                    let other = Bool.random(using: &random) ? style : Style(color: RGBA(rawValue: 0xFF0000FF), width: 3)
                    batch.append(generators[who].event(.point(PointSample(
                        stroke: stroke, x: Double(Int.random(in: 0...1000, using: &random)), y: 1, style: other)),
                        lamportJump: UInt64.random(in: 1...40, using: &random)))
                }
            case 6 where !strokes.isEmpty: batch = [generators[who].event(.undo(strokes.randomElement(using: &random)!.0))]
            case 7 where !strokes.isEmpty: batch = [generators[who].event(.redo(strokes.randomElement(using: &random)!.0))]
            case 8 where !strokes.isEmpty: batch = [generators[who].event(.erase(strokes.randomElement(using: &random)!.0))]
            case 9: batch = [generators[who].event(.clear, lamportJump: UInt64.random(in: 1...60, using: &random))]
            default: batch = [generators[who].arbitraryEvent()]
            }
            events[generators[who].replica, default: []] += batch
        }
        return events
    }

    func fold(_ events: [Event]) -> Drawing {
        var fold = Fold(replicas: events.map(\.id.replica))
        events.forEach { fold.apply($0) }
        return fold.finish()
    }

    /// Every stroke whose state differs between two drawings.
    func changedStrokes(_ before: Drawing, _ after: Drawing) -> Set<StrokeID> {
        let old = Dictionary(before.strokes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var changed = Set<StrokeID>()
        for stroke in after.strokes where old[stroke.id] != stroke { changed.insert(stroke.id) }
        return changed
    }

    func mentioned(_ changes: [DrawingChange]) -> Set<StrokeID> {
        var ids = Set<StrokeID>()
        for change in changes {
            switch change {
            case .added(let id), .extended(let id, _), .reshaped(let id), .moved(let id), .visibility(let id, _), .ended(let id):
                ids.insert(id)
            case .reset: break
            }
        }
        return ids
    }

    @Test(arguments: 1...12 as ClosedRange<UInt64>)
    func anyOrderOfArrivalGivesTheFullReplay(seed: UInt64) {
        let all = session(seed: seed).values.flatMap { $0 }
        let reference = fold(all)
        #expect(reference.strokes.count > 3)
        for shuffle in 0..<8 as Range<UInt64> {
            var random = SeededGenerator(seed: seed << 8 | shuffle)
            let order = shuffle == 0 ? all : all.shuffled(using: &random)
            var live = LiveDrawing()
            var previous = Drawing()
            var changes: [DrawingChange] = []
            for (index, event) in order.enumerated() {
                #expect(live.apply(event, changes: &changes) == .applied)
                // Every few events, check that the changes reported name every stroke that
                // changed (an app redrawing only those would show the right picture).
                if index % 7 == 0 || index == order.count - 1 {
                    let now = live.drawing
                    let changed = changedStrokes(previous, now)
                    #expect(changed.isSubset(of: mentioned(changes)), "seed \(seed) shuffle \(shuffle) at \(index)")
                    let zOrderChanged = previous.strokes.map(\.id) != now.strokes.map(\.id).filter { id in previous.strokes.contains { $0.id == id } }
                    if zOrderChanged {
                        #expect(changes.contains { if case .moved = $0 { true } else { false } })
                    }
                    previous = now
                    changes.removeAll()
                }
            }
            #expect(live.drawing == reference, "seed \(seed) shuffle \(shuffle)")
            #expect(live.drawing.digest == reference.digest)
            #expect(live.pointCount == reference.pointCount)
            for stroke in reference.strokes { #expect(live.stroke(stroke.id) == stroke) }
        }
    }

    /// How sync delivers them: each replica's events in seq order, replicas interleaved.
    @Test(arguments: 1...8 as ClosedRange<UInt64>)
    func interleavedReplicaStreamsGiveTheFullReplay(seed: UInt64) {
        let byReplica = session(seed: seed)
        let reference = fold(byReplica.values.flatMap { $0 })
        var random = SeededGenerator(seed: seed ^ 0x5EED)
        var cursors = byReplica.mapValues { $0[...] }
        var live = LiveDrawing()
        var changes: [DrawingChange] = []
        while let replica = cursors.filter({ !$0.value.isEmpty }).keys.sorted().randomElement(using: &random) {
            let take = Int.random(in: 1...12, using: &random)
            for event in cursors[replica]!.prefix(take) { live.apply(event, changes: &changes) }
            cursors[replica] = cursors[replica]!.dropFirst(take)
        }
        #expect(live.drawing == reference)
    }

    @Test func changesCoalesceAppendsPerStroke() {
        let a = StrokeID(UUIDBits(high: 1, low: 1))
        let b = StrokeID(UUIDBits(high: 2, low: 2))
        let changes: [DrawingChange] = [.added(a), .extended(a, from: 1), .extended(b, from: 4), .extended(a, from: 2), .ended(a)]
        #expect(changes.coalesced() == [.added(a), .extended(a, from: 1), .extended(b, from: 4), .ended(a)])
    }
}

/// `LiveReplay` continues a loaded journal with the segments sync brings, and its drawing is
/// the full replay of the grown journal, or it asks for a reload when only that is exact.
@Suite(.ownThreads) struct LiveReplayTests {
    func writeSealed(_ events: [Event], replica: ReplicaID, into journal: JournalDirectory) throws {
        let folder = journal.replicasPath + "/" + replica.hex
        try FileSystem.createDirectory(folder)
        let bytes = SegmentEncoder.segment(replica: replica, events: events)
        let name = SegmentName(firstSeq: events.first!.id.seq, lastSeq: events.last!.id.seq, contents: bytes)
        try FileSystem.writeAtomically(bytes, to: folder + "/" + name.fileName)
    }

    @Test(arguments: 1...6 as ClosedRange<UInt64>)
    func segmentsArrivingInPiecesGiveTheFullReplay(seed: UInt64) throws {
        let temp = TemporaryDirectory("live-replay")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        let byReplica = LiveDrawingTests().session(seed: seed)
        var random = SeededGenerator(seed: seed)
        // Each replica's events cut into 1–4 segments that arrive in a random order (per
        // replica in seq order, as sync publishes them).
        var pieces: [(ReplicaID, [Event])] = []
        for (replica, events) in byReplica.sorted(by: { $0.key < $1.key }) {
            var rest = events[...]
            while !rest.isEmpty {
                let take = Int.random(in: 1...max(1, rest.count), using: &random)
                pieces.append((replica, Array(rest.prefix(take))))
                rest = rest.dropFirst(take)
            }
        }
        var arrival: [(ReplicaID, [Event])] = []
        var queues = Dictionary(grouping: pieces, by: { $0.0 }).mapValues { $0[...] }
        while let replica = queues.filter({ !$0.value.isEmpty }).keys.sorted().randomElement(using: &random) {
            arrival.append(queues[replica]!.first!)
            queues[replica] = queues[replica]!.dropFirst()
        }
        let opening = arrival.count / 3
        for (replica, events) in arrival[..<opening] { try writeSealed(events, replica: replica, into: journal) }
        var (live, _) = LiveReplay.load(journal)
        var reloads = 0
        for (replica, events) in arrival[opening...] {
            try writeSealed(events, replica: replica, into: journal)
            let increment = LiveReplay.readNew(journal, after: live.readCursor, own: nil)
            #expect(increment.events.count == events.count || increment.needsReload)
            var changes: [DrawingChange] = []
            if !live.integrate(increment, changes: &changes) {
                // Only a point that lands inside a stroke's loaded points may ask for this.
                reloads += 1
                live = LiveReplay.load(journal, useSnapshots: false).0
            }
            #expect(live.drawing.drawing.digest == Replay.load(journal, useSnapshots: false).drawing.digest)
        }
        #expect(reloads <= arrival.count / 2)
        // Nothing new: nothing read, nothing changed.
        let idle = LiveReplay.readNew(journal, after: live.readCursor, own: nil)
        #expect(idle.isEmpty)
    }

    @Test func aSegmentThatOverlapsAppliedEventsAsksForAReload() throws {
        let temp = TemporaryDirectory("live-replay-overlap")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        var generator = EventGenerator(seed: 9)
        let events = generator.stroke(points: 20)
        try writeSealed(Array(events[0..<10]), replica: generator.replica, into: journal)
        let (live, _) = LiveReplay.load(journal)
        // A re-cut copy of events 5...15: what a full replay dedups (or resolves as a fork).
        try writeSealed(Array(events[4..<15]), replica: generator.replica, into: journal)
        #expect(LiveReplay.readNew(journal, after: live.readCursor, own: nil).needsReload)
    }

    @Test func aVanishedSegmentAsksForAReload() throws {
        let temp = TemporaryDirectory("live-replay-vanished")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        var generator = EventGenerator(seed: 10)
        try writeSealed(generator.stroke(points: 5), replica: generator.replica, into: journal)
        let (live, _) = LiveReplay.load(journal)
        let folder = journal.replicasPath + "/" + generator.replica.hex
        for entry in try FileSystem.list(folder) { try FileSystem.remove(folder + "/" + entry.name) }
        #expect(LiveReplay.readNew(journal, after: live.readCursor, own: nil).needsReload)
    }
}
