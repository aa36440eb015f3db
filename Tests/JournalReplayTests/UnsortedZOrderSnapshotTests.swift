import JournalFormat
import JournalPlatform
@testable import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// `LiveReplay` loading a snapshot whose z-order is not sorted by creation key (its CRC valid and
/// sealed with the journal's key: `Snapshot.decode` checks indexes, not that order): the live drawing is still the fold of the
/// same events, z-indexes included, and stays so as late points move strokes in z-order.
@Suite(.ownThreads) struct UnsortedZOrderSnapshotTests {
    static func journalWithReversedSnapshot(_ root: String) throws -> JournalDirectory {
        let journal = try JournalDirectory.create(at: root + "/j")
        var generator = EventGenerator(seed: 21)
        let writer = try JournalWriter(directory: journal)
        for _ in 0..<20 { for event in generator.stroke(points: 12) { try writer.append(event.payload, flushingEvery: 64) } }
        try writer.close()
        try SnapshotStore.create(journal)
        let path = journal.localPath + "/snapshots/latest.sjsnap"
        let seal = try #require(CacheSeal.load(journal))
        let opened = try #require(seal.opened(try FileSystem.readFile(path)))
        var snapshot = try #require(Snapshot.decode(opened))
        // A valid CRC over a z-order that is not sorted by creation key: `Snapshot.decode`
        // checks indexes, never that order.
        snapshot.state.creationOrder.reverse()
        try FileSystem.remove(path)
        let descriptor = try FileDescriptor.open(path, .createNew)
        try descriptor.writeAll(seal.sealed(snapshot.encoded()))
        descriptor.close()
        return journal
    }

    // The live drawing's z-indexes (binary searches over its creation order) are the fold's,
    // whatever order the snapshot listed.
    @Test func aSnapshotWithUnsortedZOrderGivesTheFoldsZIndexes() throws {
        let temp = TemporaryDirectory("unsorted-z-order")
        defer { temp.remove() }
        let journal = try Self.journalWithReversedSnapshot(temp.path)
        let (live, report) = LiveReplay.load(journal)
        #expect(report.eventsFromSnapshot > 0, "the crafted snapshot was not used")
        let drawing = live.drawing.drawing
        for (index, stroke) in drawing.strokes.enumerated() {
            #expect(live.drawing.zIndex(of: stroke.id) == index)
        }
        #expect(drawing == Replay.load(journal, useSnapshots: false).drawing)
    }

    // The same snapshot, then points arriving as a board gets them, each stroke getting a point
    // that sorts before its first one (it moves in z-order): the drawing is the fold of the
    // same events (and no precondition in `removeFromOrder` stops the process).
    @Test func aSnapshotWithUnsortedZOrderThenLatePointsGivesTheFold() throws {
        let temp = TemporaryDirectory("unsorted-z-order-late")
        defer { temp.remove() }
        let journal = try Self.journalWithReversedSnapshot(temp.path)
        var (live, report) = LiveReplay.load(journal)
        #expect(report.eventsFromSnapshot > 0, "the crafted snapshot was not used")
        var all: [Event] = []
        Replay.forEachUniqueEvent(SegmentSet.load(journal), report: &report) { all.append($0) }
        let other = ReplicaID(UUIDBits(high: 1, low: 1))
        var seq: UInt64 = 1
        var changes: [DrawingChange] = []
        let style = Style(color: RGBA(rawValue: 0xFF0000FF), width: 1)
        for lamport in stride(from: UInt64(3), through: 300, by: 7) {
            let stroke = StrokeID(UUIDBits(high: 99, low: lamport))
            let first = Event(id: EventID(replica: other, seq: seq), lamport: lamport, wallTime: 0,
                              payload: .point(PointSample(stroke: stroke, x: 1, y: 1, style: style)))
            let earlier = Event(id: EventID(replica: other, seq: seq + 1), lamport: lamport - 1, wallTime: 0,
                                payload: .point(PointSample(stroke: stroke, x: 0, y: 0, style: style)))
            seq += 2
            for event in [first, earlier] {
                #expect(live.applyOwn(event, changes: &changes) == .applied)
                all.append(event)
            }
        }
        var fold = Fold(replicas: all.map(\.id.replica))
        all.forEach { fold.apply($0) }
        #expect(live.drawing.drawing == fold.finish())
    }
}
