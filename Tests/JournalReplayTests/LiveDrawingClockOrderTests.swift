import JournalFormat
import JournalPlatform
@testable import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// `LiveDrawing` fed strokes whose clocks rise, fall or jump about as seq rises (a
/// client whose clocks fall sends every point to the front of its stroke). Whatever the order,
/// the drawing is the order-free `Fold` of the events applied so far, and each point reports
/// the change its place among the stroke's points calls for.
@Suite(.ownThreads) struct LiveDrawingClockOrderTests {
    static let replica = ReplicaID(UUIDBits(high: 0xA, low: 1))
    static let other = ReplicaID(UUIDBits(high: 0xB, low: 2))
    static let styles = [Style(color: RGBA(rawValue: 0x112233FF), width: 2), Style(color: RGBA(rawValue: 0xFF0000FF), width: 5)]

    static func point(_ seq: UInt64, lamport: UInt64, stroke: StrokeID, replica: ReplicaID = replica, style: Style = styles[0]) -> Event {
        Event(id: EventID(replica: replica, seq: seq), lamport: lamport, wallTime: 1_790_000_000_000,
              payload: .point(PointSample(stroke: stroke, x: Double(seq), y: Double(lamport % 97), pressure: 0.5, style: style)))
    }

    static func fold(_ events: some Collection<Event>) -> Drawing {
        var fold = Fold(replicas: events.map(\.id.replica))
        events.forEach { fold.apply($0) }
        return fold.finish()
    }

    /// The order key `LiveDrawing` sorts by, for the reference below.
    static func key(_ event: Event) -> (UInt64, Int64, ReplicaID, UInt64) {
        (event.lamport, event.wallTime, event.id.replica, event.id.seq)
    }

    /// The changes one point should report, from a plain sorted list of each stroke's keys:
    /// its place decides.
    struct Reference {
        var keys: [StrokeID: [(UInt64, Int64, ReplicaID, UInt64)]] = [:]

        mutating func changes(for event: Event) -> [DrawingChange] {
            if case .end(let stroke) = event.payload { return keys[stroke] == nil ? [] : [.ended(stroke)] }
            guard case .point(let sample) = event.payload else { return [] }
            let key = LiveDrawingClockOrderTests.key(event)
            var held = keys[sample.stroke, default: []]
            let position = held.firstIndex { !($0 < key) } ?? held.count
            held.insert(key, at: position)
            keys[sample.stroke] = held
            if held.count == 1 { return [.added(sample.stroke)] }
            if position == held.count - 1 { return [.extended(sample.stroke, from: position)] }
            return position == 0 ? [.moved(sample.stroke), .reshaped(sample.stroke)] : [.reshaped(sample.stroke)]
        }
    }

    /// Applies `events` one at a time, checking every change against the reference and, every
    /// `every` events, the drawing, each stroke and each z-index against the fold.
    static func check(_ events: [Event], every: Int, note: String) {
        var live = LiveDrawing()
        var reference = Reference()
        for (index, event) in events.enumerated() {
            var changes: [DrawingChange] = []
            #expect(live.apply(event, changes: &changes) == .applied)
            #expect(changes == reference.changes(for: event), "\(note): event \(index)")
            guard index % every == every - 1 || index == events.count - 1 else { continue }
            live.checkInvariants()
            let expected = fold(events[...index])
            #expect(live.drawing == expected, "\(note): after \(index + 1) events")
            #expect(live.drawing.digest == expected.digest)
            #expect(live.pointCount == expected.pointCount)
            #expect(live.strokeCount == expected.strokes.count)
            for (z, stroke) in expected.strokes.enumerated() {
                #expect(live.stroke(stroke.id) == stroke, "\(note): stroke \(z) after \(index + 1) events")
                #expect(live.zIndex(of: stroke.id) == z, "\(note): z-index after \(index + 1) events")
            }
        }
    }

    /// One stroke of 1,200 points (several chunks), seq rising, clocks in each order (kept
    /// small: the checks are quadratic, and debug builds share two cores with the relay
    /// tests); styles change every 100
    /// points in the last case, so that late points carry styles of their own.
    @Test(arguments: ["rising", "falling", "shuffled", "falling runs", "rising runs falling", "two styles"])
    func oneStrokeInAnyClockOrderIsTheFold(order: String) {
        let count: UInt64 = 1_200
        var random = SeededGenerator(seed: 23)
        var clocks = Array(1...count)
        switch order {
        case "falling", "two styles": clocks.reverse()
        case "shuffled": clocks.shuffle(using: &random)
        case "falling runs":
            // Runs of 50 falling clocks, each run above the one before.
            clocks = (0..<count).map { ($0 / 50) * 50 + (50 - $0 % 50) }
        case "rising runs falling":
            // Runs of 50 rising clocks, each run below the one before.
            clocks = (0..<count).map { (count - ($0 / 50 + 1) * 50) + $0 % 50 + 1 }
        default: break
        }
        let stroke = StrokeID(UUIDBits(high: 0x57, low: 1))
        var events = (1...count).map { seq in
            Self.point(seq, lamport: clocks[Int(seq) - 1] * 3, stroke: stroke,
                       style: order == "two styles" ? Self.styles[Int(seq / 100) % 2] : Self.styles[0])
        }
        events.append(Event(id: EventID(replica: Self.replica, seq: count + 1), lamport: count * 3 + 1, wallTime: 0, payload: .end(stroke)))
        Self.check(events, every: 300, note: order)
    }

    /// Two writers on one stroke: the second's points land among the first's, a few at a time.
    @Test(arguments: 1...4 as ClosedRange<UInt64>)
    func interleavedWritersOnOneStrokeAreTheFold(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let stroke = StrokeID(UUIDBits(high: 0x57, low: seed))
        var events: [Event] = []
        var seqs: [ReplicaID: UInt64] = [Self.replica: 0, Self.other: 0]
        var clock: UInt64 = 100
        for _ in 0..<2_000 {
            let writer = Bool.random(using: &random) ? Self.replica : Self.other
            seqs[writer]! += 1
            // Mostly rising; now and then a point from well behind (a delayed batch).
            clock += UInt64.random(in: 1...3, using: &random)
            let lamport = Int.random(in: 0..<8, using: &random) == 0 ? clock - UInt64.random(in: 1...min(clock - 1, 400), using: &random) : clock
            events.append(Self.point(seqs[writer]!, lamport: lamport, stroke: stroke, replica: writer,
                                     style: Self.styles[Int.random(in: 0..<6, using: &random) == 0 ? 1 : 0]))
        }
        Self.check(events, every: 200, note: "seed \(seed)")
    }

    /// 1,500 strokes created with falling clocks, then second points that move some of them
    /// further down in z-order; then the same events shuffled.
    @Test func strokesCreatedWithFallingClocksAreTheFold() {
        let count: UInt64 = 1_500
        var random = SeededGenerator(seed: 5)
        var events = (1...count).map { seq in
            Self.point(seq, lamport: (count + 1 - seq) * 10, stroke: StrokeID(UUIDBits(high: 0x5, low: seq)))
        }
        for seq in count + 1...count + 300 {
            let stroke = UInt64.random(in: 1...count, using: &random)
            events.append(Self.point(seq, lamport: (count + 1 - stroke) * 10 - UInt64.random(in: 1...25, using: &random),
                                     stroke: StrokeID(UUIDBits(high: 0x5, low: stroke))))
        }
        Self.check(events, every: 300, note: "falling strokes")
        // The reference above follows arrival order; a shuffle only needs the final drawing.
        var live = LiveDrawing()
        var changes: [DrawingChange] = []
        for event in events.shuffled(using: &random) { live.apply(event, changes: &changes) }
        live.checkInvariants()
        #expect(live.drawing == Self.fold(events))
    }

    /// A journal's stroke loaded by a replay (points without keys), continued by another
    /// replica whose clocks, all above the journal's, fall: the late points merge behind the
    /// loaded ones. A point below the loaded points' last key still asks for a reload.
    @Test func lateClocksAfterLoadedPointsAreTheFold() throws {
        let temp = TemporaryDirectory("live-clock-order")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        var generator = EventGenerator(seed: 41, replica: Self.replica)
        var written: [Event] = []
        for _ in 0..<3 { written += generator.stroke(points: 40) }
        try LiveReplayTests().writeSealed(written, replica: Self.replica, into: journal)
        var (live, report) = LiveReplay.load(journal, useSnapshots: false)
        #expect(report.eventsFromSnapshot == 0)
        guard case .point(let sample) = written[1].payload else { Issue.record("no point"); return }
        let loaded = sample.stroke
        let top = generator.lamport
        var added: [Event] = []
        var seq: UInt64 = 0
        for step in 0..<900 as Range<UInt64> {
            seq += 1
            // Falling, with a rise every 7th point and a style change every 50.
            let lamport = top + 2_000 - step * 2 + (step % 7 == 0 ? 1 : 0)
            added.append(Self.point(seq, lamport: lamport, stroke: loaded, replica: Self.other, style: Self.styles[Int(step / 50) % 2]))
        }
        var changes: [DrawingChange] = []
        for (index, event) in added.enumerated() {
            #expect(live.applyOwn(event, changes: &changes) == .applied)
            if index % 150 == 149 {
                live.drawing.checkInvariants()
                #expect(live.drawing.drawing == Self.fold(written + added[...index]), "after \(index + 1) points")
            }
        }
        #expect(live.drawing.stroke(loaded)?.points.count == 40 + added.count)
        // Below the loaded points' last key: only a replay can place it.
        seq += 1
        let early = Self.point(seq, lamport: 2, stroke: loaded, replica: Self.other)
        #expect(live.applyOwn(early, changes: &changes) == .needsReload)
    }
}
