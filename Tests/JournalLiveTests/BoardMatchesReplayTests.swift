import JournalFormat
import JournalLive
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// The live board's drawing is the full replay's (`Replay`) where folding in only what is new
/// could drift from it: damaged and re-copied files, forks of its own replica, quarantined
/// events, and reloads while its own events are pending.
@Suite struct BoardMatchesReplayTests {
    let style = Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2)

    func point(_ stroke: StrokeID, _ index: Int) -> Payload {
        .point(PointSample(stroke: stroke, x: Double(index), y: Double(index % 5), pressure: 0.5, t: Double(index) / 100,
                           style: style))
    }

    /// Writes `events` of `replica` as one sealed segment (blocks of `targetEvents`) under
    /// its canonical name; returns the path and the bytes.
    @discardableResult
    func plant(_ events: [Event], replica: ReplicaID, into journal: JournalDirectory,
               targetEvents: Int = FormatV1.sealedBlockTargetEvents) throws -> (path: String, bytes: [UInt8]) {
        let folder = journal.replicasPath + "/" + replica.hex
        try FileSystem.createDirectory(folder)
        let bytes = SegmentEncoder.segment(replica: replica, events: events, targetEvents: targetEvents)
        let name = SegmentName(firstSeq: events.first!.id.seq, lastSeq: events.last!.id.seq, contents: bytes)
        let path = folder + "/" + name.fileName
        try FileSystem.writeAtomically(bytes, to: path)
        return (path, bytes)
    }

    func replayed(_ board: Board) -> Drawing { Replay.load(board.directory, useSnapshots: false).drawing }

    // A damaged own sealed segment is left out of a load (invariant 6: everything else loads),
    // so a fresh load does not hold all of seqs 1...durableSeq. The board still reloads, and
    // what needs a reload (here an overlapping copy) is folded in.
    @Test func aDamagedOwnSegmentStillLetsTheBoardReload() async throws {
        let temp = TemporaryDirectory("board-own-gap")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        let own = try journal.identity()
        var mine = EventGenerator(seed: 101, replica: own)
        let first = mine.stroke(points: 9)   // seq 1...10
        let second = mine.stroke(points: 9)  // seq 11...20
        let damaged = try plant(first, replica: own, into: journal)
        try plant(second, replica: own, into: journal)
        // Bit rot in the first segment's only block.
        var bytes = damaged.bytes
        bytes[bytes.count - 20] ^= 0xFF
        try FileSystem.writeAtomically(bytes, to: damaged.path)

        let board = try Board(directory: journal, options: BoardOptions(sealAfterIdleMilliseconds: nil, watchForSegments: false))
        #expect(board.drawing == replayed(board))

        var other = EventGenerator(seed: 202)
        let remote = other.stroke(points: 29) // seq 1...30
        try plant(Array(remote[0..<20]), replica: other.replica, into: journal)
        #expect(await board.refresh() == 20)
        // A re-cut copy overlapping what was folded: only a reload is exact.
        try plant(Array(remote[9..<30]), replica: other.replica, into: journal)
        await board.refresh()
        #expect(board.drawing == replayed(board), "the board never took in seq 21...30 of the other replica")
        try await board.close()
    }

    // A sealed file is read again when its bytes change under the same name: a copy that was
    // incomplete or damaged when first seen (still arriving under its final name, bit rot), then
    // replaced by the good copy (names are content hashes: the good copy has exactly that
    // name), is folded in whole, as `Replay` reads it.
    @Test func aDamagedFileReplacedByItsGoodCopyIsReadAgain() async throws {
        let temp = TemporaryDirectory("board-same-name")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/board", create: true,
                              options: BoardOptions(sealAfterIdleMilliseconds: nil, watchForSegments: false))
        var other = EventGenerator(seed: 303)
        let events = other.stroke(points: 29) // 30 events, 3 blocks of 10
        let (path, good) = try plant(events, replica: other.replica, into: board.directory, targetEvents: 10)
        let scan = SegmentScanner.scan(bytes: good, path: path, sealed: true)
        #expect(scan.blocks.count == 3)
        // First seen as a partial copy (its first block only): its blocks contradict the name,
        // so none is used, but the file is now "seen" (and "applied").
        try FileSystem.writeAtomically(Array(good[..<scan.blocks[1].offset]), to: path)
        #expect(await board.refresh() == 0)
        #expect(board.pointCount == 0)
        // The complete copy arrives under the same (content-hash) name.
        try FileSystem.writeAtomically(good, to: path)
        await board.refresh()
        #expect(replayed(board).pointCount == 29)
        #expect(board.pointCount == 29, "the board kept the first 9 points of the stroke only")
        #expect(board.drawing == replayed(board))
        try await board.close()
    }

    // A reload applies the board's own events that are not yet durable on top of the fresh
    // load; an own point that sorts inside a loaded stroke's points is kept (it needs one more
    // reload, it is not dropped), and once durable the board shows what `Replay` shows.
    // Scenario: two replicas continue one stroke; a reload happens within the commit delay.
    @Test func aReloadKeepsOwnPendingPointsInsideALoadedStroke() async throws {
        let temp = TemporaryDirectory("board-pending-own")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/board", create: true,
                              options: BoardOptions(commitDelayMilliseconds: 1500, sealAfterIdleMilliseconds: nil,
                                                    watchForSegments: false))
        var other = EventGenerator(seed: 404)
        let remote = other.stroke(points: 19) // seq 1...20, lamport 1...20
        guard case .point(let sample) = remote[0].payload else { Issue.record("no point"); return }
        try plant(Array(remote[0..<10]), replica: other.replica, into: board.directory)
        #expect(await board.refresh() == 10)
        // This board continues the other's stroke (lamport 11: it has seen 10).
        try board.append(point(sample.stroke, 1000))
        #expect(board.stroke(sample.stroke)?.points.count == 11)
        // The other replica's continuation, re-cut overlapping: a reload, while ours is pending.
        try plant(Array(remote[4..<20]), replica: other.replica, into: board.directory)
        await board.refresh()
        try await board.flush()
        let onDisk = replayed(board)
        #expect(onDisk.strokes.first { $0.id == sample.stroke }?.points.count == 20)
        #expect(board.stroke(sample.stroke)?.points.count == 20, "the board dropped its own durable point")
        #expect(board.drawing == onDisk)
        try await board.close()
    }

    // A sealed file under the board's own replica id whose events have the same seqs but other
    // contents (a planted or forged file, a fork) is read, not taken for the board's own seal:
    // the board keeps the canonical lesser variant, as `Replay` does.
    @Test func aForkUnderTheBoardsOwnReplicaIsResolvedAsReplayResolvesIt() async throws {
        let temp = TemporaryDirectory("board-own-fork")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/board", create: true,
                              options: BoardOptions(sealAfterIdleMilliseconds: nil, watchForSegments: false))
        let mine = StrokeID(UUIDBits(high: 1, low: 1))
        for index in 0..<5 { try board.append(point(mine, index)) }
        try await board.flush()
        // Seq 1...5 of our replica, other contents, canonically lesser (same clocks, earlier wall time).
        var forger = EventGenerator(seed: 505, replica: board.replica)
        forger.wallTime = 1
        let forged = forger.stroke(points: 4)
        try plant(forged, replica: board.replica, into: board.directory)
        await board.refresh()
        let onDisk = replayed(board)
        #expect(Replay.load(board.directory, useSnapshots: false).report.forks.count == 5)
        #expect(board.drawing == onDisk, "the board shows the variant the full replay discarded")
        try await board.close()
    }

    // A quarantined event (clock above `ClockBound`) becomes plausible as the set grows, also
    // when only own appends grow it (through the open segment: no new sealed file, with
    // `sealAfterIdleMilliseconds: nil`, a documented setting): the board then applies it, as
    // `Replay` does.
    @Test func aQuarantinedEventMadePlausibleByOwnAppendsIsApplied() async throws {
        let temp = TemporaryDirectory("board-quarantine")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        var other = EventGenerator(seed: 606)
        let a = other.event(.point(PointSample(stroke: StrokeID(UUIDBits(high: 7, low: 7)), x: 1, y: 1, style: style)))
        let b = other.event(.point(PointSample(stroke: StrokeID(UUIDBits(high: 7, low: 7)), x: 2, y: 2, style: style)))
        // Limit with 3 events: 2^32 + 6. This one is 2^32 + 8: plausible once 4 events exist.
        let late = StrokeID(UUIDBits(high: 8, low: 8))
        let c = other.event(.point(PointSample(stroke: late, x: 3, y: 3, style: style)),
                            lamportJump: ClockBound.slack + 8 - 2)
        #expect(c.lamport == ClockBound.limit(distinctEvents: 4))
        try plant([a, b, c], replica: other.replica, into: journal)
        let board = try Board(directory: journal, options: BoardOptions(sealAfterIdleMilliseconds: nil, watchForSegments: false))
        #expect(board.stroke(late) == nil)
        try board.append(point(StrokeID(UUIDBits(high: 9, low: 9)), 0))
        try await board.flush()
        await board.refresh()
        let onDisk = replayed(board)
        #expect(onDisk.strokes.contains { $0.id == late }, "the full replay now applies the event")
        #expect(board.drawing == onDisk, "the board still leaves it out")
        try await board.close()
    }

    // Own events are held in memory only until they are durable, also when nothing integrates
    // (`watchForSegments: false`: only `refresh()` would).
    @Test func durableOwnEventsAreNotHeldInMemoryWithoutAWatcher() async throws {
        let temp = TemporaryDirectory("board-own-tail")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/board", create: true, options: BoardOptions(watchForSegments: false))
        let stroke = StrokeID(UUIDBits(high: 2, low: 2))
        for index in 0..<5000 { try board.append(point(stroke, index)) }
        try await board.flush()
        #expect(board.durableSeq == 5000)
        let tail = Mirror(reflecting: board).descendant("state", "value", "ownTail") as? [Event]
        #expect(tail != nil, "reflection could not find State.ownTail")
        #expect((tail?.count ?? 0) == 0, "\(tail?.count ?? -1) durable own events still held in memory")
        try await board.close()
    }

    // A reload raises the writer's clock past what it brought in (invariant 4), as an
    // integration does: the stroke drawn next lands above the strokes already on screen in
    // z-order, not under them.
    @Test func aReloadRaisesTheClockPastWhatItBroughtIn() async throws {
        let temp = TemporaryDirectory("board-reload-clock")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/board", create: true,
                              options: BoardOptions(sealAfterIdleMilliseconds: nil, watchForSegments: false))
        var other = EventGenerator(seed: 707)
        let remote = other.stroke(points: 9) + other.stroke(points: 9).map { event in
            var event = event
            event.lamport += 1000
            return event
        }
        try plant(Array(remote[0..<10]), replica: other.replica, into: board.directory)
        #expect(await board.refresh() == 10)
        try plant(Array(remote[5..<20]), replica: other.replica, into: board.directory) // overlap: reload
        await board.refresh()
        #expect(board.strokeCount == 2)
        let mine = StrokeID(UUIDBits(high: 3, low: 3))
        try board.append(point(mine, 0))
        #expect(board.zIndex(of: mine) == 2, "the stroke drawn now went under one already shown")
        try await board.close()
    }
}
