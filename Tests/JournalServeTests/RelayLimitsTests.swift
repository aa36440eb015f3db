import JournalFormat
import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalTestSupport
import JournalWire
import Testing

/// What anyone who can connect could otherwise exhaust: boards open (threads, descriptors),
/// connections, and catch-ups at once (each holds its board's files until it is sent).
@Suite struct RelayLimitsTests {
    static let quiet = BoardOptions(watchForSegments: false)

    @Test func atTheBoardLimitTheLongestIdleBoardMakesRoomAndBusyBoardsAreNeverClosed() async throws {
        let temp = TemporaryDirectory("relay-max-boards")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, boardOptions: Self.quiet, idleBoardSeconds: nil,
                              limits: RelayLimits(maxOpenBoards: 2))
        let busy = try await relay.connect(to: BoardName("busy"))
        let idle = try await relay.connect(to: BoardName("idle"))
        idle.close()
        #expect(Set(relay.openBoards.map(\.text)) == ["busy", "idle"])

        // A third board: the idle one is closed for it; the one with a connection stays.
        let third = try await relay.connect(to: BoardName("third"))
        #expect(Set(relay.openBoards.map(\.text)) == ["busy", "third"])
        // Every open board has a connection: a fourth is refused, naming the limit.
        await #expect {
            _ = try await relay.connect(to: BoardName("fourth"))
        } throws: { error in
            guard case RelayError.atCapacity(let reason) = error else { return false }
            return reason.contains("--max-boards")
        }
        #expect(!FileSystem.exists(temp.path + "/fourth"), "a refused board was created on disk")
        // Boards already open still take connections.
        let again = try await relay.connect(to: BoardName("busy"))
        // The closed board opens again (after its close ends) once a board is idle.
        third.close()
        let reopened = try await relay.connect(to: BoardName("idle"))
        #expect(Set(relay.openBoards.map(\.text)) == ["busy", "idle"])
        #expect(busy.closeReason == nil && again.closeReason == nil && reopened.closeReason == nil)
        await relay.close()
    }

    @Test func connectionsPastTheLimitAreRefusedAndAClosedOneMakesRoom() async throws {
        let temp = TemporaryDirectory("relay-max-connections")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, boardOptions: Self.quiet, idleBoardSeconds: nil,
                              limits: RelayLimits(maxConnections: 3))
        let first = try await relay.connect(to: BoardName("a"))
        _ = try await relay.connect(to: BoardName("a"))
        _ = try await relay.connect(to: BoardName("b"))
        // Counted over all boards.
        for board in ["a", "b", "c"] {
            await #expect {
                _ = try await relay.connect(to: BoardName(board))
            } throws: { error in
                guard case RelayError.atCapacity(let reason) = error else { return false }
                return reason.contains("3 connections") && reason.contains("--max-connections")
            }
        }
        first.close()
        _ = try await relay.connect(to: BoardName("c"))
        await relay.close()
    }

    /// Two joiners of a board that has events, with room for one catch-up at a time: the second
    /// is sent nothing until the first is done, then all of the board, and live events that came
    /// meanwhile follow its catch-up.
    @Test func catchUpsBeyondTheLimitWaitTheirTurnThenGetTheWholeBoard() async throws {
        let temp = TemporaryDirectory("relay-max-catch-ups")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, boardOptions: Self.quiet, idleBoardSeconds: nil,
                              limits: RelayLimits(maxConcurrentCatchUps: 1))
        let board = try relay.board(BoardName("big"))
        for _ in 0..<3000 { _ = try board.board.append(.clear) }
        try await board.board.flush()

        let first = board.connect()
        let second = board.connect()
        let (firstWrites, firstWrote) = AsyncStream<Void>.makeStream()
        let (released, release) = AsyncStream<Void>.makeStream()
        let firstTask = Task {
            var blocked = false
            var sent = 0
            try await first.catchUp(lacking: Have(), write: { _ in
                sent += 1
                firstWrote.yield()
                if !blocked {
                    // The first catch-up stalls after its first event, like a client that stopped reading.
                    blocked = true
                    for await _ in released { break }
                }
            })
            return sent
        }
        var waitForFirst = firstWrites.makeAsyncIterator()
        _ = await waitForFirst.next()
        let secondSent = Locked(0)
        let secondTask = Task {
            try await second.catchUp(lacking: Have(), write: { _ in secondSent.withLock { $0 += 1 } })
        }
        // Given every chance to start, the second sends nothing while the first holds the place.
        try await Task.sleep(for: .milliseconds(500))
        #expect(secondSent.withLock { $0 } == 0)
        #expect(board.catchUps.counts.running == 1 && board.catchUps.counts.waiting == 1)
        // A live event while it waits reaches it after its catch-up, never before or twice.
        let live = try board.board.record(.clear)
        try await board.board.flush()
        board.broadcast([live], from: nil)

        release.yield()
        #expect(try await firstTask.value == 3000)
        try await secondTask.value
        #expect(secondSent.withLock { $0 } == 3001 || secondSent.withLock { $0 } == 3000)
        #expect(board.catchUps.counts.running == 0 && board.catchUps.counts.waiting == 0)
        // Whichever way the live event came (read from the journal, or queued), it came once.
        var messages = second.outbound.makeAsyncIterator()
        var liveEvents = 0
        let caughtUp = try #require(await messages.next())
        guard case .caughtUp(let count, _) = try ServerMessage(parsing: caughtUp) else {
            Issue.record("expected caughtUp first, got \(caughtUp)")
            return
        }
        #expect(UInt64(secondSent.withLock { $0 }) == count)
        second.close()
        while let text = await messages.next() {
            if case .event = try ServerMessage(parsing: text) { liveEvents += 1 }
        }
        #expect(Int(count) + liveEvents == 3001)
        await relay.close()
    }

    @Test func aJoinerThatLeavesWhileWaitingGivesItsTurnUp() async throws {
        let gate = CatchUpGate(limit: 1)
        let (released, release) = AsyncStream<Void>.makeStream()
        let (enteredStream, entered) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await gate.run {
                entered.yield()
                for await _ in released { break }
            }
        }
        var waitEntered = enteredStream.makeAsyncIterator()
        _ = await waitEntered.next()
        let leaver = Task { try await gate.run { Issue.record("a cancelled waiter ran") } }
        let next = Task { try await gate.run { 7 } }
        while gate.counts.waiting < 2 { try await Task.sleep(for: .milliseconds(5)) }
        leaver.cancel()
        await #expect(throws: CancellationError.self) { try await leaver.value }
        #expect(gate.counts.waiting == 1)
        release.yield()
        try await holder.value
        #expect(try await next.value == 7)
        #expect(gate.counts.running == 0 && gate.counts.waiting == 0)
    }
}
