import JournalFormat
import JournalLive
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport
import Testing

/// A live board: appends fold at once and become durable in the background, segments that
/// sync brings are folded in as they appear, and the drawing is always the full replay's.
@Suite struct BoardTests {
    func point(_ stroke: StrokeID, _ index: Int, color: UInt32 = 0x1E88E5FF) -> Payload {
        .point(PointSample(stroke: stroke, x: Double(index) * 1.5, y: Double(index % 7) / 3, pressure: 0.5,
                           t: Double(index) / 120, style: Style(color: RGBA(rawValue: color), width: 2)))
    }

    /// Waits (`eventually`, up to `seconds`) for an update that satisfies `matches`, read by a
    /// task of its own.
    func firstUpdate(_ stream: AsyncStream<BoardUpdate>, within seconds: Double,
                     where matches: @escaping @Sendable (BoardUpdate) -> Bool) async -> BoardUpdate? {
        let found = Locked<BoardUpdate?>(nil)
        let reader = Task {
            for await update in stream where matches(update) {
                found.withLock { $0 = update }
                return
            }
        }
        defer { reader.cancel() }
        _ = await eventually(within: seconds, every: 20) { found.withLock { $0 } != nil }
        return found.withLock { $0 }
    }

    @Test func appendsFoldAtOnceAndFlushMakesThemDurable() async throws {
        let temp = TemporaryDirectory("board-append")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/board", create: true, options: BoardOptions(watchForSegments: false))
        let updates = board.updates()
        let stroke = StrokeID(UUIDBits(high: 1, low: 2))
        for index in 0..<200 { try board.append(point(stroke, index)) }
        try board.append(.end(stroke))
        // Folded before anything reached the disk.
        #expect(board.stroke(stroke)?.points.count == 200)
        #expect(board.stroke(stroke)?.ended == true)
        try await board.flush()
        #expect(board.durableSeq == 201)
        // The stream starts with the drawing as it was when it was asked for, then the appends.
        var iterator = updates.makeAsyncIterator()
        #expect(await iterator.next() == BoardUpdate(origin: .current, changes: [.reset]))
        #expect(await iterator.next() == BoardUpdate(origin: .local, changes: [.added(stroke)]))
        // What is durable is what a replay of the files gives.
        let onDisk = Replay.load(board.directory, useSnapshots: false).drawing
        #expect(onDisk == board.drawing)
        let drawing = board.drawing
        try await board.close()
        #expect(throws: JournalError.self) { try board.append(point(stroke, 1)) }
        let reopened = try Board(path: temp.path + "/board", options: BoardOptions(watchForSegments: false))
        #expect(reopened.drawing == drawing)
        try await reopened.close()
    }

    @Test func aPauseSealsTheOpenSegmentSoSyncCanPublishIt() async throws {
        let temp = TemporaryDirectory("board-idle-seal")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/board", create: true,
                              options: BoardOptions(sealAfterIdleMilliseconds: 200, watchForSegments: false))
        let stroke = StrokeID(UUIDBits(high: 3, low: 4))
        for index in 0..<50 { try board.append(point(stroke, index)) }
        try await board.flush()
        let folder = board.directory.replicasPath + "/" + board.replica.hex
        func sealed() -> [String] { ((try? FileSystem.list(folder)) ?? []).map(\.name).filter { $0.hasSuffix(".sjs") } }
        #expect(await eventually(within: 4, every: 100) { !sealed().isEmpty }, "no sealed segment 4 s after the last append")
        #expect(sealed().count == 1)
        // Recording goes on into a new open segment; the drawing is unchanged by the seal.
        try board.append(.end(stroke))
        try await board.flush()
        #expect(Replay.load(board.directory, useSnapshots: false).drawing == board.drawing)
        try await board.close()
    }

    @Test func segmentsThatSyncBringsAreFoldedInWhileDrawing() async throws {
        let temp = TemporaryDirectory("board-remote")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/a", create: true, options: BoardOptions(rescanIntervalSeconds: 30))
        let other = try JournalDirectory.create(at: temp.path + "/b")
        let updates = board.updates()
        // The other machine draws first (low clocks); this board draws more (higher clocks),
        // so the other's events arrive late and sort before some of ours.
        var generator = EventGenerator(seed: 77)
        let remoteStrokes = (0..<5).map { _ in generator.newStroke() }
        let writer = try JournalWriter(directory: other)
        for (n, stroke) in remoteStrokes.enumerated() {
            for index in 0..<30 { try writer.append(point(stroke, index + n, color: 0xFF0000FF)) }
            try writer.append(.end(stroke))
        }
        try writer.close()
        let local = StrokeID(UUIDBits(high: 9, low: 9))
        for index in 0..<400 { try board.append(point(local, index)) }
        try await board.flush()

        let report = try await SyncEngine(journal: board.directory).merge(from: [other.root])
        #expect(report.imported.count == 1)
        let remote = await firstUpdate(updates, within: 10) { $0.origin == .remote }
        #expect(remote != nil, "the board did not notice the imported segment")
        #expect(remote?.changes.contains(.added(remoteStrokes[0])) == true)
        #expect(board.strokeCount == 6)
        // Exactly the full replay of the journal, z-order included.
        try await board.flush()
        let replayed = Replay.load(board.directory, useSnapshots: false).drawing
        #expect(replayed == board.drawing)
        #expect(replayed.digest == board.drawing.digest)
        // What the board records next follows what it saw (invariant 4).
        try board.append(.end(local))
        try await board.close()
    }

    /// A board that keeps no drawing (a relay's) holds exactly the events a drawing board
    /// would, says when sync brought some, and keeps no point in memory.
    @Test func aBoardWithoutADrawingCoversWhatADrawingBoardCovers() async throws {
        let temp = TemporaryDirectory("board-no-drawing")
        defer { temp.remove() }
        let options = BoardOptions(rescanIntervalSeconds: 30, keepsDrawing: false)
        let board = try Board(path: temp.path + "/a", create: true, options: options)
        let other = try JournalDirectory.create(at: temp.path + "/b")
        let updates = board.updates()
        var generator = EventGenerator(seed: 78)
        let remote = generator.newStroke()
        let writer = try JournalWriter(directory: other)
        let otherReplica = writer.replica
        for index in 0..<40 { try writer.append(point(remote, index, color: 0xFF0000FF)) }
        try writer.close()
        let local = StrokeID(UUIDBits(high: 9, low: 8))
        for index in 0..<120 { try board.append(point(local, index)) }
        try await board.flush()
        #expect(board.covered[board.replica] == SeqRanges([1...120]))
        #expect(board.pointCount == 0 && board.strokeCount == 0)

        _ = try await SyncEngine(journal: board.directory).merge(from: [other.root])
        let update = await firstUpdate(updates, within: 10) { $0.origin == .remote }
        #expect(update != nil, "a board without a drawing did not say that sync brought events")
        #expect(board.covered[otherReplica] == SeqRanges([1...40]))
        #expect(board.pointCount == 0)
        try await board.close()

        // Opened again, with and without a drawing: the same events held.
        let drawing = try Board(path: temp.path + "/a", options: BoardOptions(watchForSegments: false))
        #expect(drawing.pointCount == 160)
        let coveredWithDrawing = drawing.covered
        try await drawing.close()
        let counting = try Board(path: temp.path + "/a", options: BoardOptions(watchForSegments: false, keepsDrawing: false))
        #expect(counting.covered == coveredWithDrawing)
        #expect(counting.pointCount == 0)
        try await counting.close()
    }

    @Test func aSegmentOverlappingFoldedEventsReloadsExactly() async throws {
        let temp = TemporaryDirectory("board-reload")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/a", create: true, options: BoardOptions(watchForSegments: false))
        var generator = EventGenerator(seed: 5)
        let events = generator.stroke(points: 30)
        let planter = BoardMatchesReplayTests()
        func plant(_ slice: ArraySlice<Event>) throws {
            try planter.plant(Array(slice), replica: generator.replica, into: board.directory)
        }
        try plant(events[0..<20])
        #expect(await board.refresh() == 20)
        let updates = board.updates()
        try board.append(point(StrokeID(UUIDBits(high: 4, low: 4)), 1))
        // A second cut of the same replica's events, overlapping the first.
        try plant(events[10..<31])
        await board.refresh()
        let reset = await firstUpdate(updates, within: 2) { $0.origin == .reload }
        #expect(reset?.changes == [.reset])
        try await board.flush()
        #expect(board.drawing == Replay.load(board.directory, useSnapshots: false).drawing)
        #expect(board.pointCount == 31)
        try await board.close()
    }

    @Test func anAppThatStopsReadingGetsAResetNotASilentGap() async throws {
        let temp = TemporaryDirectory("board-slow-reader")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/a", create: true, options: BoardOptions(watchForSegments: false))
        let updates = board.updates(bufferingLimit: 4)
        let stroke = StrokeID(UUIDBits(high: 6, low: 6))
        for index in 0..<20 { try board.append(point(stroke, index)) }
        var received: [BoardUpdate] = []
        for await update in updates {
            received.append(update)
            // The buffer is drained: the next change is announced as a reset.
            if received.count == 4 { try board.append(.end(stroke)) }
            if received.count == 5 { break }
        }
        #expect(received[0] == BoardUpdate(origin: .current, changes: [.reset]))
        #expect(received[1..<4].allSatisfy { $0.origin == .local })
        #expect(received[4] == BoardUpdate(origin: .reload, changes: [.reset]))
        try await board.close()
    }
}

/// Two machines drawing at once, each a live board with a sync loop on one shared folder:
/// each sees the other's strokes while drawing, and both end with the same drawing, which is
/// the full replay of each journal.
@Suite struct TwoBoardsTests {
    @Test func twoWatchingBoardsConvergeWhileBothRecord() async throws {
        let temp = TemporaryDirectory("two-boards")
        defer { temp.remove() }
        let shared = temp.path + "/shared"
        let options = BoardOptions(sealAfterIdleMilliseconds: 100, sealAfterMilliseconds: 200)
        let boards = try ["a", "b"].map { name throws(JournalError) in try Board(path: temp.path + "/" + name, create: true, options: options) }
        let watches = boards.map { board in
            SyncWatch(journal: board.directory, target: .directory(shared), options: SyncWatch.Options(interval: 0.5, create: true))
        }
        let loops = watches.map { watch in Task { try await watch.run { _ in } } }
        // Each side notes the first remote update it sees while the other is still drawing.
        let sawRemoteWhileDrawing = boards.map { board in
            let updates = board.updates()
            return Task { () -> Bool in
                for await update in updates where update.origin == .remote { return true }
                return false
            }
        }
        var generators = [EventGenerator(seed: 1), EventGenerator(seed: 2)]
        let strokes = (0..<2).map { side in (0..<6).map { _ in generators[side].newStroke() } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for side in 0..<2 {
                let board = boards[side]
                let ids = strokes[side]
                group.addTask {
                    for (n, stroke) in ids.enumerated() {
                        for index in 0..<40 {
                            try board.append(.point(PointSample(
                                stroke: stroke, x: Double(index + n * 50), y: Double(side * 100 + index), pressure: 0.5,
                                style: Style(color: RGBA(rawValue: side == 0 ? 0xFF0000FF : 0x0000FFFF), width: 2))))
                            try await Task.sleep(for: .milliseconds(5))
                        }
                        try board.append(.end(stroke))
                    }
                    // The other side undoes this side's first stroke: a late control event.
                    try board.append(.undo(ids[0]))
                    try await board.flush()
                }
            }
            try await group.waitForAll()
        }
        let total = 2 * (6 * 41 + 1)
        func holdsEverything(_ board: Board) -> Bool { board.covered.values.reduce(0) { $0 + Int($1.count) } == total }
        // That they converge, not how soon (interval and debounce are short): the deadline only
        // bounds a full parallel `swift test`, which can starve these loops for a minute.
        #expect(await eventually(within: 180) { boards.allSatisfy(holdsEverything) }, "the boards did not exchange every event within 180 s")
        for task in sawRemoteWhileDrawing { #expect(await task.value) }
        let drawings = boards.map(\.drawing)
        #expect(drawings[0] == drawings[1])
        #expect(drawings[0].strokes.count == 12)
        for watch in watches { watch.stop() }
        for loop in loops { try await loop.value }
        for board in boards { try await board.close() }
        // Each journal replays (from its files alone) to what its board showed.
        for (board, drawing) in zip(boards, drawings) {
            #expect(Replay.load(board.directory, useSnapshots: false).drawing == drawing)
        }
    }
}
