#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalFormat
import JournalIngest
import JournalLive
import JournalPlatform
import JournalReplay
import JournalStorage
@testable import JournalRelay
import JournalTestSupport
import JournalWire
import Testing

/// What anyone who can connect could otherwise exhaust: boards open (threads, descriptors),
/// connections, and catch-ups at once (each holds its board's files until it is sent); and a
/// board whose disk filled for a while.
@Suite struct RelayLimitsTests {
    static let quiet = BoardOptions(watchForSegments: false)

    /// Connecting to `board` is refused for one of the relay's limits, the reason naming each
    /// of `words`.
    func expectAtCapacity(
        _ relay: Relay, _ board: String, naming words: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await #expect(sourceLocation: sourceLocation) {
            _ = try await relay.connect(to: BoardName(board))
        } throws: { error in
            guard case RelayError.atCapacity(let reason) = error else { return false }
            return words.allSatisfy { reason.contains($0) }
        }
    }

    @Test func atTheBoardLimitTheLongestIdleBoardMakesRoomAndBusyBoardsAreNeverClosed() async throws {
        let temp = TemporaryDirectory("relay-max-boards")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: Self.quiet, idleBoardSeconds: nil,
                              limits: RelayLimits(maxOpenBoards: 2))
        let busy = try await relay.connect(to: BoardName("busy"))
        let idle = try await relay.connect(to: BoardName("idle"))
        idle.close()
        #expect(Set(relay.openBoards.map(\.text)) == ["busy", "idle"])

        // A third board: the idle one is closed for it; the one with a connection stays.
        let third = try await relay.connect(to: BoardName("third"))
        #expect(Set(relay.openBoards.map(\.text)) == ["busy", "third"])
        // Every open board has a connection: a fourth is refused, naming the limit.
        await expectAtCapacity(relay, "fourth", naming: ["--max-boards"])
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

    /// Opening a board reads its whole journal, for seconds when it is big: it holds up the
    /// board's own connections only, never those of boards already open.
    // On threads of its own: were the opening under the relay's lock, the two connects would
    // block both threads of the task pool, and a test waiting there would hang, not fail.
    @Test(.ownThreads, .enabled(if: FaultInjection.isCompiled, "the fault hook is built only by `swift test --traits FaultInjection`"))
    func aBoardBeingOpenedHoldsUpOnlyItsOwnConnections() async throws {
        let temp = TemporaryDirectory("relay-opening")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false))
        let quick = try await relay.connect(to: BoardName("quick"))
        // The slow board's opening stops at its first write until the gate opens: what a big
        // journal's read would take, without depending on how fast this machine reads.
        let gateOpen = Locked(false)
        let stopped = Locked(0)
        let hook: @Sendable (FaultInjection.Operation, String) -> Int32? = { _, path in
            guard path.contains("/slow") else { return nil }
            stopped.withLock { $0 += 1 }
            // Held until the test opens the gate (or has long given up).
            _ = eventuallyBlocking(within: 300, every: 2) { gateOpen.withLock { $0 } }
            return nil
        }
        let slow = Task { try await FaultInjection.$hook.withValue(hook) { try await relay.connect(to: BoardName("slow")) } }
        #expect(await eventually(within: 60) { stopped.withLock { $0 } > 0 }, "the slow board's opening never began")

        // Meanwhile a new connection to the open board is made at once.
        let other = Task { try await relay.connect(to: BoardName("quick")) }
        let connected = await eventually(within: 60) { quick.relayBoard.connectionCount == 2 }
        // (Asked only if the relay's lock is free: held through the opening, it would wait for
        // the gate this test has not opened yet.)
        let openWhileOpening = connected ? relay.openBoards.map(\.text) : nil
        gateOpen.withLock { $0 = true }
        #expect(connected, "a connection to an open board waited for another board's opening")
        #expect(openWhileOpening == ["quick"], "the slow board is open before its journal was read")
        _ = try await other.value
        _ = try await slow.value
        #expect(Set(relay.openBoards.map(\.text)) == ["quick", "slow"])
        await relay.close()
    }

    @Test func connectionsPastTheLimitAreRefusedAndAClosedOneMakesRoom() async throws {
        let temp = TemporaryDirectory("relay-max-connections")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: Self.quiet, idleBoardSeconds: nil,
                              limits: RelayLimits(maxConnections: 3))
        let first = try await relay.connect(to: BoardName("a"))
        _ = try await relay.connect(to: BoardName("a"))
        _ = try await relay.connect(to: BoardName("b"))
        // Counted over all boards.
        for board in ["a", "b", "c"] {
            await expectAtCapacity(relay, board, naming: ["3 connections", "--max-connections"])
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
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: Self.quiet, idleBoardSeconds: nil,
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
        // The second has reached the gate, where it would start sending were there room: it
        // sends nothing while the first holds the place.
        #expect(await eventually(within: 60) { board.catchUps.counts.waiting == 1 }, "the second catch-up never reached the gate")
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
        guard case .caughtUp(let count, _, _) = try ServerMessage(parsing: caughtUp) else {
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
        try #require(await eventually(within: 60, every: 5) { gate.counts.waiting == 2 }, "the two joiners never waited")
        leaver.cancel()
        await #expect(throws: CancellationError.self) { try await leaver.value }
        #expect(gate.counts.waiting == 1)
        release.yield()
        try await holder.value
        #expect(try await next.value == 7)
        #expect(gate.counts.running == 0 && gate.counts.waiting == 0)
    }

    @Test func limitsThatNeedMoreDescriptorsThanTheProcessHasAreLoweredToFit() {
        let asked = RelayLimits()
        #expect(asked.fitting(descriptorLimit: 1 << 20) == asked)
        for limit in [256, 1024, 4096] {
            let fitted = asked.fitting(descriptorLimit: limit)
            #expect(fitted.maxOpenBoards >= 1 && fitted.maxConnections >= 1)
            #expect(fitted.maxOpenBoards < asked.maxOpenBoards && fitted.maxConnections < asked.maxConnections)
            if limit > 512 { #expect(fitted.descriptorsNeeded <= limit, "\(fitted) needs \(fitted.descriptorsNeeded) of \(limit)") }
        }
        #expect(ProcessInfoLite.raiseDescriptorLimit() >= 1024)
    }

    /// A disk that fills while clients draw: the frames the board could not store are never
    /// refused (a client drops a refused frame for good); their connections are closed, the
    /// board is reopened by the next connection once the disk has room, and the resent frames
    /// are recorded.
    @Test(.enabled(if: FaultInjection.isCompiled, "the fault hook is built only by `swift test --traits FaultInjection`"))
    func aBoardWhoseDiskFilledIsReopenedAndNothingIsRefused() async throws {
        let temp = TemporaryDirectory("relay-disk-full")
        defer { temp.remove() }
        let full = Locked(false)
        let diskFull: @Sendable (FaultInjection.Operation, String) -> Int32? = { operation, _ in
            full.withLock { $0 } && (operation == .write || operation == .fsync) ? ENOSPC : nil
        }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: Self.quiet, idleBoardSeconds: nil)
        let name = try BoardName("disk")
        let first = try await FaultInjection.$hook.withValue(diskFull) { try await relay.connect(to: name) }
        let failing = first.relayBoard
        first.goLive(caughtUp: 0)
        let stroke = StrokeID(UUIDBits(high: 0xD15C, low: 1))
        func line(_ index: Int) -> String {
            CanonicalJSON.line(for: .point(PointSample(stroke: stroke, x: Double(index), y: 1, pressure: 0.5,
                                                       style: Style(color: RGBA(rawValue: 0x336699FF), width: 2))))
        }
        var messages = first.outbound.makeAsyncIterator()
        #expect(await messages.next() == ServerMessage.caughtUp(events: 0).text)
        await first.receive(text: line(0))
        #expect(await messages.next() == ServerMessage.ack(upTo: 1).text)

        full.withLock { $0 = true }
        await first.receive(text: line(1))
        #expect(await messages.next() == nil, "frame 2 was answered although nothing was stored")
        #expect(first.closeReason?.contains("the journal failed") == true, "\(first.closeReason ?? "not closed")")
        // A connection still on the failed board: its frame closes it, and is not refused.
        let second = failing.connect()
        second.goLive(caughtUp: 0)
        await second.receive(text: line(1))
        var secondMessages: [String] = []
        for await text in second.outbound { secondMessages.append(text) }
        #expect(!secondMessages.contains { $0.contains("\"frame\"") }, "a frame was refused: \(secondMessages)")
        #expect(second.closeReason?.contains("frame 1 not recorded, the journal failed") == true, "\(second.closeReason ?? "not closed")")

        // The relay's periodic closer takes a failed board down, connections or not (here one
        // viewer that sends nothing), telling why; the next connection opens it anew.
        let viewer = failing.connect()
        #expect(relay.closeIdleBoards() == [name])
        #expect(await eventually(within: 30) { viewer.closeReason?.contains("it is being opened again") == true },
                "\(viewer.closeReason ?? "not closed")")

        // Room again: the next connection gets a board opened anew, and what is resent is stored.
        full.withLock { $0 = false }
        let third = try await relay.connect(to: name)
        #expect(third.relayBoard !== failing)
        third.goLive(caughtUp: 0)
        var thirdMessages = third.outbound.makeAsyncIterator()
        #expect(await thirdMessages.next() == ServerMessage.caughtUp(events: 0).text)
        await third.receive(text: line(1))
        #expect(await thirdMessages.next() == ServerMessage.ack(upTo: 1).text)
        await relay.close()
        let (drawing, report) = Replay.load(JournalDirectory(root: temp.path + "/disk"))
        #expect(report.eventCount == 2 && report.problems.isEmpty)
        #expect(drawing.strokes.first { $0.id == stroke }?.points.map(\.x) == [0, 1])
    }

    /// A hello of many small ranges would make every block a partial one, decoded and encoded
    /// again (seven times the CPU of the whole board's catch-up): only the longest
    /// `WireLimits.helloRangesPerReplica` ranges of a replica count. The client gets the
    /// events of the others again (it drops them by id) and lacks nothing.
    @Test func aHelloOfManySmallRangesCountsItsLongestAndTheClientLacksNothing() async throws {
        let temp = TemporaryDirectory("relay-fragmented-hello")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: Self.quiet, idleBoardSeconds: nil)
        let board = try relay.board(BoardName("holes"))
        for _ in 0..<3000 { _ = try board.board.append(.clear) }
        try await board.board.flush()
        let replica = board.board.replica
        // 300 ranges: seqs 10k+1 alone, and one long range 2001...2500 among them.
        var held = Have([replica: SeqRanges([2001...2500])])
        for index in 0..<300 where !(2001...2500).contains(UInt64(index * 10 + 1)) { held.insert(replica, UInt64(index * 10 + 1)...UInt64(index * 10 + 1)) }
        let kept = held.keepingLongest(WireLimits.helloRangesPerReplica)
        #expect(kept[replica].ranges.count == WireLimits.helloRangesPerReplica)
        #expect(kept[replica].containsAll(2001...2500), "the longest range was dropped")
        #expect(held.containsAll(kept))

        let connection = board.connect()
        let sent = Locked<[EventID]>([])
        try await connection.catchUp(lacking: held, write: { message in
            if case .event = message, let event = try message.event() { sent.withLock { $0.append(event.id) } }
        })
        let ids = sent.withLock { $0 }
        #expect(Set(ids).count == ids.count, "an event was sent twice")
        var after = held
        for id in ids { after.insert(id) }
        #expect(after.containsAll(Have(board.board.covered)), "the client lacks events after its catch-up")
        #expect(ids.count == 3000 - Int(kept.eventCount))
        await relay.close()
    }

    /// The budget's arithmetic, on a clock the test gives: a burst at once, then the rate.
    @Test func anEventBudgetLetsABurstThroughThenItsRate() {
        var budget = EventBudget(rate: 100, burst: 1_000, now: 0)
        #expect(budget.take(1_000, now: 0) == 0)
        #expect(budget.take(50, now: 0) == 0.5, "50 past the burst: half a second at 100 a second")
        // Half a second later the 50 are paid back; the next 100 cost a second.
        #expect(budget.take(100, now: 0.5) == 1.0)
        // A long pause fills the bucket up to its burst, never past it.
        #expect(budget.take(1_000, now: 1_000) == 0)
        #expect(budget.take(1, now: 1_000) == 0.01)
    }

    /// One drawer flooding the board is read only as fast as its budget: past its burst its
    /// frames wait (nothing refused, everything acknowledged), while another connection of the
    /// same board, within its budget, is never held back.
    @Test func aFloodingDrawerIsHeldBackAndOthersAreNot() async throws {
        let temp = TemporaryDirectory("relay-flood")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: Self.quiet,
                              limits: RelayLimits(maxEventsPerSecond: 100))
        let flooder = try await relay.connect(to: BoardName("wall"))
        let pen = try await relay.connect(to: BoardName("wall"))
        for connection in [flooder, pen] {
            await connection.receive(text: #"{"type":"hello"}"#)
            connection.goLive(caughtUp: 0)
        }
        func point(_ x: Int) -> String {
            ##"{"type":"point","stroke":"0123456789abcdef0123456789abcdef","x":"## + String(x) + ##","y":1,"color":"#1E88E5FF","width":2}"##
        }
        // The burst (ten seconds' worth) goes through at once.
        for x in 0..<1_000 { await flooder.receive(text: point(x)) }
        #expect(flooder.secondsHeldBack == 0)
        for x in 1_000..<1_150 { await flooder.receive(text: point(x)) }
        #expect(flooder.secondsHeldBack > 0, "150 events past the burst were read at once")
        for x in 0..<10 { await pen.receive(text: point(10_000 + x)) }
        #expect(pen.secondsHeldBack == 0)
        #expect(flooder.closeReason == nil && pen.closeReason == nil)
        await relay.close()
    }

    /// A token's connections share one budget (a token may open 64): two of one token, each
    /// within the burst alone, are held back together past it; another token's is not.
    @Test func aTokensConnectionsShareOneBudget() async throws {
        let temp = TemporaryDirectory("relay-flood-token")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: Self.quiet,
                              limits: RelayLimits(maxEventsPerSecond: 100))
        let mine = Grant(tokenID: "token-a", scope: .admin, expiresAtMilliseconds: nil)
        let first = try await relay.connect(to: BoardName("wall"), grant: mine)
        let second = try await relay.connect(to: BoardName("other-wall"), grant: mine)
        let theirs = try await relay.connect(to: BoardName("wall"), grant: Grant(tokenID: "token-b", scope: .admin, expiresAtMilliseconds: nil))
        for connection in [first, second, theirs] {
            await connection.receive(text: #"{"type":"hello"}"#)
            connection.goLive(caughtUp: 0)
        }
        func point(_ x: Int) -> String {
            ##"{"type":"point","stroke":"0123456789abcdef0123456789abcdef","x":"## + String(x) + ##","y":1,"color":"#1E88E5FF","width":2}"##
        }
        for x in 0..<600 { await first.receive(text: point(x)) }
        #expect(first.secondsHeldBack == 0)
        for x in 600..<1_200 { await second.receive(text: point(x)) }
        #expect(second.secondsHeldBack > 0, "a token's two connections sent 1,200 events past a burst of 1,000 unheld")
        for x in 0..<600 { await theirs.receive(text: point(x)) }
        #expect(theirs.secondsHeldBack == 0)
        await relay.close()
    }
}
