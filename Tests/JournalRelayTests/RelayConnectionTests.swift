#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalFormat
import JournalIngest
import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalReplay
import JournalStorage
import JournalTestSupport
import JournalWire
import Testing

/// The relay core without sockets: a flooding client waits for acks instead of growing memory,
/// native clocks are bounded by what the board holds, and boards open only where they should.
@Suite struct RelayConnectionTests {
    /// A native client's clock is bounded by the events the board will hold, each counted
    /// once, sealed hosted events too (folded by the board and accepted by the host: counted
    /// twice, a clock past the bound would be acknowledged and broadcast after a seal, then
    /// quarantined by every reader, and a live viewer and a late joiner would hold different
    /// boards).
    @Test func aNativeClockPastTheBoundIsRefusedAfterItsReplicaWasSealed() async throws {
        let temp = TemporaryDirectory("relay-native-clock")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(sealAfterIdleMilliseconds: 100))
        let board = try relay.board(BoardName("clock"))
        let replica = TestReplicaKeys.newReplica()
        let hello = TestReplicaKeys.hello(replica)
        let first = board.connect()
        await first.receive(text: hello)
        first.goLive(caughtUp: 0)
        await first.receive(binary: TestReplicaKeys.frame(TestReplicaKeys.events(replica, 1...1000), on: "clock"))
        // The host seals the idle segment on the relay's 1 s timer, and the board folds it.
        #expect(await eventually(within: 120) { board.board.covered[replica]?.count == 1000 },
                "the hosted segment was never sealed and folded")

        let limit = ClockBound.limit(distinctEvents: 1001)
        var next = TestReplicaKeys.events(replica, 1001...1001)
        next[0].lamport = limit + 1
        await first.receive(binary: TestReplicaKeys.frame(next, on: "clock"))
        #expect(first.closeReason?.contains("Lamport clock \(limit + 1)") == true, "\(first.closeReason ?? "not refused")")

        // At the bound it is stored, and every reader applies it.
        let second = board.connect()
        await second.receive(text: hello)
        second.goLive(caughtUp: 0)
        next[0].lamport = limit
        await second.receive(binary: TestReplicaKeys.frame(next, on: "clock"))
        #expect(second.closeReason == nil)
        await relay.close()
        let (_, report) = Replay.load(JournalDirectory(root: temp.path + "/clock"))
        #expect(report.quarantinedEvents == 0)
        #expect(report.eventCount == 1001)
    }

    /// A relay killed while it creates a board's journal leaves `replicas/` and `local/`
    /// without the identity: the next connection to that board creates the journal again
    /// (it does not find "not a journal" for ever).
    @Test func aCutBoardIsCreatedAgainAndForeignOrSymlinkedFoldersAreRefused() async throws {
        let temp = TemporaryDirectory("relay-unfinished")
        defer { temp.remove() }
        try FileSystem.createDirectory(temp.path + "/cut/replicas")
        try FileSystem.createDirectory(temp.path + "/cut/local")
        try FileSystem.createDirectory(temp.path + "/other")
        try FileSystem.writeAtomically(Array("mine".utf8), to: temp.path + "/other/notes.txt")
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false))
        let board = try relay.board(BoardName("cut"))
        _ = try board.board.append(.clear)
        try await board.board.flush()
        #expect(board.board.durableSeq == 1)
        // A folder that holds somebody's files is no board: refused, and left as it was.
        #expect(throws: RelayError.self) { try relay.board(BoardName("other")) }
        #expect(try FileSystem.list(temp.path + "/other").map(\.name) == ["notes.txt"])
        // A board folder that is a symlink (to another journal, here) is never followed.
        let other = TemporaryDirectory("relay-elsewhere")
        defer { other.remove() }
        let elsewhere = try JournalDirectory.create(at: other.path + "/j")
        #expect(symlink(elsewhere.root, temp.path + "/linked") == 0)
        #expect {
            try relay.board(BoardName("linked"))
        } throws: { error in
            guard case RelayError.journal(_, .io(let cause)) = error else { return false }
            return cause.isSymbolicLink
        }
        // So is a real folder whose `local/` and `replicas/` are symlinks into that journal.
        try FileSystem.createDirectory(temp.path + "/inner")
        #expect(symlink(elsewhere.localPath, temp.path + "/inner/local") == 0)
        #expect(symlink(elsewhere.replicasPath, temp.path + "/inner/replicas") == 0)
        #expect {
            try relay.board(BoardName("inner"))
        } throws: { error in
            guard case RelayError.journal(_, .io(let cause)) = error else { return false }
            return cause.isSymbolicLink
        }
        #expect(!FileSystem.exists(elsewhere.openSegmentPath), "a board was opened in the journal the symlink points to")
        await relay.close()
        #expect(JournalDirectory(root: temp.path + "/cut").isJournal)
    }

    @Test func aClientAtTheUnacknowledgedLimitWaitsForTheNextAck() async throws {
        let temp = TemporaryDirectory("relay-throttle")
        defer { temp.remove() }
        // A slow group commit (20 s after the first frame) keeps every frame unacknowledged while
        // the flood arrives: what is checked is whether a commit happened, not how long anything took.
        let relay = try Relay(
            dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(commitDelayMilliseconds: 20_000, watchForSegments: false))
        let board = try relay.board(BoardName("flood"))
        let connection = board.connect()
        connection.goLive(caughtUp: 0)
        let line = CanonicalJSON.line(for: .clear)
        let limit = WireLimits.maxUnacknowledgedFrames
        for _ in 0..<(limit - 1) { await connection.receive(text: line) }
        #expect(board.board.durableSeq == 0, "frames below the limit waited for a commit")
        // This frame reaches the limit: `receive` returns only after an ack, so the server
        // stops reading the socket meanwhile.
        await connection.receive(text: line)
        #expect(board.board.durableSeq > 0, "the frame at the limit returned before the commit")
        var iterator = connection.outbound.makeAsyncIterator()
        #expect(await iterator.next() == ServerMessage.caughtUp(events: 0).text)
        // Acks only grow and end at the last frame (a round may cover fewer frames than the
        // commit did: the next ack follows at once).
        var acked: UInt64 = 0
        while acked < UInt64(limit), let text = await iterator.next() {
            guard case .ack(let upTo) = try ServerMessage(parsing: text), upTo > acked else {
                Issue.record("after ack \(acked): \(text)")
                break
            }
            acked = upTo
        }
        #expect(acked == UInt64(limit))
        await relay.close()
    }

    /// Frames alone did not bound what a client queues ahead of the others: 4096 CollabSketch
    /// frames hold 14 million points, and every client of the board waited behind them. A
    /// client stops being read once its unacknowledged events reach the limit, however few
    /// its frames.
    @Test func aClientAtTheUnacknowledgedEventLimitWaitsWhateverItsFrames() async throws {
        let temp = TemporaryDirectory("relay-throttle-events")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(commitDelayMilliseconds: 3000, watchForSegments: false))
        let connection = try relay.board(BoardName("heavy")).connect()
        connection.goLive(caughtUp: 0)
        let points = (0..<3000).map { #"{"x":\#($0),"y":1}"# }.joined(separator: ",")
        let frame = #"{"id":"A0000000-0000-4000-8000-00000000000B","points":["# + points + #"],"red":0,"green":0,"blue":1,"alpha":1,"lineWidth":2}"#
        // Twice the limit in 12 frames: whenever `receive` returns (the server reads the next
        // frame), what is in flight is under the limit, however the commits fall.
        let frames = 2 * WireLimits.maxUnacknowledgedEvents / 3000 + 1
        #expect(frames < WireLimits.maxUnacknowledgedFrames)
        for _ in 0..<frames {
            await connection.receive(text: frame)
            let inFlight = connection.unacknowledgedEvents
            #expect(inFlight < WireLimits.maxUnacknowledgedEvents, "\(inFlight) events unacknowledged and the client still read")
        }
        #expect(connection.closeReason == nil)
        var iterator = connection.outbound.makeAsyncIterator()
        #expect(await iterator.next() == ServerMessage.caughtUp(events: 0).text)
        var acked: UInt64 = 0
        while acked < UInt64(frames), let text = await iterator.next() {
            guard case .ack(let upTo) = try ServerMessage(parsing: text) else { break }
            acked = upTo
        }
        #expect(acked == UInt64(frames))
        await relay.close()
    }

    /// An honest client's ack is not queued behind the board's traffic: another client's flood
    /// broadcast to it before its frame was acknowledged does not delay the ack (it waited
    /// 16.8 s behind 140,000 events), and acks never come before `caughtUp` nor go backwards.
    @Test func anAckGoesAheadOfTheTrafficQueuedBeforeItButNeverBeforeCaughtUp() async throws {
        let temp = TemporaryDirectory("relay-answers-first")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false))
        let board = try relay.board(BoardName("busy"))
        let honest = board.connect()
        honest.goLive(caughtUp: 0)
        let flooder = board.connect()
        flooder.goLive(caughtUp: 0)
        let stroke = StrokeID(UUIDBits(high: 0xF100D, low: 1))
        let flood = 2000
        for index in 0..<flood {
            await flooder.receive(text: CanonicalJSON.line(for: .point(PointSample(
                stroke: stroke, x: Double(index), y: 1, pressure: 0.5, t: Double(index) / 240,
                style: Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2)))))
        }
        // Everything the flooder sent is queued for the honest client, which has read nothing.
        #expect(await eventually(within: 120) { honest.outbound.count == flood + 1 }, "\(honest.outbound.count) queued")
        await honest.receive(text: CanonicalJSON.line(for: .clear))
        #expect(await eventually(within: 120) { honest.outbound.count == flood + 2 })

        var messages = honest.outbound.makeAsyncIterator()
        #expect(await messages.next() == ServerMessage.caughtUp(events: 0).text)
        #expect(await messages.next() == ServerMessage.ack(upTo: 1).text, "the ack waited behind the flood")
        var events = 0
        while events < flood, let text = await messages.next() {
            let message = try ServerMessage(parsing: text)
            guard case .event = message, try message.payloads().first?.stroke == stroke else {
                Issue.record("expected the flood's events, got \(text)")
                break
            }
            events += 1
        }
        #expect(events == flood)
        #expect(honest.outbound.count == 0)
        await relay.close()
    }

    @Test func refusedFramesAreAnsweredAtOnceAndNeverThrottle() async throws {
        let temp = TemporaryDirectory("relay-refused")
        defer { temp.remove() }
        // The first commit is ten minutes away: a frame that waited for one would wait that long.
        let relay = try Relay(
            dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(commitDelayMilliseconds: 600_000, watchForSegments: false))
        let connection = try relay.board(BoardName("noise")).connect()
        connection.goLive(caughtUp: 0)
        let count = WireLimits.maxUnacknowledgedFrames + 10
        let received = Locked(0)
        let sender = Task {
            for _ in 0..<count {
                await connection.receive(text: #"{"type":"paint"}"#)
                received.withLock { $0 += 1 }
            }
        }
        defer { sender.cancel() }
        // More refused frames than a connection may have unacknowledged, all read with no ack.
        let allRead = await eventually(within: 60) { received.withLock { $0 } == count }
        #expect(allRead, "refused frames were held like unacknowledged ones: \(received.withLock { $0 }) of \(count) read")
        #expect(connection.unacknowledgedEvents == 0 && !connection.isThrottled)
        guard allRead else {
            await relay.close()
            return
        }
        var iterator = connection.outbound.makeAsyncIterator()
        #expect(await iterator.next() == ServerMessage.caughtUp(events: 0).text)
        for frame in 1...UInt64(count) {
            let text = try #require(await iterator.next())
            guard case .error(frame, .badRequest, let message) = try ServerMessage(parsing: text) else {
                Issue.record("frame \(frame): got \(text)")
                return
            }
            if frame == 1 { #expect(message.contains("paint"), "message: \(message)") }
        }
        #expect(relay.openBoards.count == 1)
        await relay.close()
    }

    /// A round's events are durable, so a catch-up reads them, before their broadcast reaches
    /// the connections. A joiner whose catch-up sent them and went live in between is not sent
    /// them again, nor an event its hello said it held; an event neither side held still comes.
    @Test func aLateBroadcastOfWhatTheCatchUpSentIsNotSentAgain() async throws {
        let temp = TemporaryDirectory("relay-late-broadcast")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false))
        let board = try relay.board(BoardName("late"))
        let clientHeld = try board.board.record(.clear)
        let readByCatchUp = try board.board.record(.clear)
        try await board.board.flush()

        let joiner = board.connect()
        var clientHad = Have()
        clientHad.insert(clientHeld.id)
        #expect(try await Self.idsSent(catchingUp: joiner, lacking: clientHad) == [readByCatchUp.id])

        // The broadcast of the two arrives only now, with an event nobody held.
        let fresh = try board.board.record(.clear)
        try await board.board.flush()
        board.broadcast([clientHeld, readByCatchUp, fresh], from: nil)
        joiner.close()
        var live: [EventID] = []
        for await text in joiner.outbound {
            if let id = try ServerMessage(parsing: text).eventID { live.append(id) }
        }
        #expect(live == [fresh.id], "sent live after the catch-up: \(live)")
        await relay.close()
    }

    /// A text client without echo that draws while its catch-up runs is not sent its own
    /// events, though the catch-up reads them from the journal; `caughtUp` counts what was
    /// sent and its `have` still names them (the board holds them). Another joiner gets them.
    @Test func aClientWithoutEchoIsNotCaughtUpWithItsOwnFrames() async throws {
        let temp = TemporaryDirectory("relay-own-frames")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false))
        let board = try relay.board(BoardName("own"))
        let earlier = try board.board.record(.clear)
        let drawer = board.connect()
        await drawer.receive(text: ClientFrame.helloText(Hello()))
        await drawer.receive(text: CanonicalJSON.line(for: .clear))
        try await board.board.flush()
        let own = EventID(replica: board.board.replica, seq: earlier.id.seq + 1)
        #expect(board.board.durableSeq == own.seq)

        #expect(try await Self.idsSent(catchingUp: drawer) == [earlier.id])
        var messages = drawer.outbound.makeAsyncIterator()
        let first = try #require(await messages.next())
        guard case .caughtUp(let count, let have, _) = try ServerMessage(parsing: first) else {
            Issue.record("expected caughtUp first, got \(first)")
            return
        }
        #expect(count == 1 && have.contains(own), "\(first)")

        #expect(try await Self.idsSent(catchingUp: board.connect()) == [earlier.id, own])
        await relay.close()
    }

    /// The ids of the events `connection`'s catch-up sends.
    static func idsSent(catchingUp connection: RelayConnection, lacking have: Have = Have()) async throws -> [EventID] {
        var ids: [EventID] = []
        try await connection.catchUp(lacking: have, write: { message in
            if let id = message.eventID { ids.append(id) }
        })
        return ids
    }
}
