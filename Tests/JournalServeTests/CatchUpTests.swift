import JournalFormat
import JournalIngest
import JournalLive
import JournalPlatform
import JournalRelay
import JournalStorage
import JournalSync
import JournalTestSupport
import JournalWire
import Testing

/// Exact catch-up and federation over real sockets on 127.0.0.1: a client says what it has
/// (`hello`) and gets exactly the rest; events that sync brings into the relay's folder reach
/// connected clients.
@Suite(.serialized) struct CatchUpTests {
    typealias RunningRelay = RelayServerTests.RunningRelay

    /// Writes `count` point events (strokes of 25 points, each ended) as a new replica's
    /// sealed segment in a journal of its own at `path`, or as more of the same replica when
    /// the journal exists.
    func draw(_ count: Int, at path: String, seed: UInt64) throws -> ReplicaID {
        let directory = FileSystem.exists(path) ? try JournalDirectory.open(at: path) : try JournalDirectory.create(at: path)
        let writer = try JournalWriter(directory: directory)
        var stroke = StrokeID(UUIDBits(high: seed, low: 0))
        for index in 0..<count {
            if index % 25 == 0 { stroke = StrokeID(UUIDBits(high: seed, low: UInt64(index + 1))) }
            if index % 25 == 24 {
                try writer.append(.end(stroke))
            } else {
                try writer.append(.point(PointSample(stroke: stroke, x: Double(index), y: 2, pressure: 0.5, t: nil,
                                                     style: Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2))))
            }
        }
        let replica = writer.replica
        try writer.close()
        return replica
    }

    /// The ids of the event messages before `caughtUp`, and `caughtUp` itself.
    func catchUp(_ client: RelayTestClient) async throws -> (ids: [EventID], count: UInt64, have: Have)? {
        let (before, last) = try await client.collect { if case .caughtUp = $0 { true } else { false } }
        guard case .caughtUp(let count, let have, _) = last else { return nil }
        let ids = try before.map { message in try #require(message.eventID, "not an event with an envelope: \(message)") }
        return (ids, count, have)
    }

    func ids(_ replica: ReplicaID, _ seqs: ClosedRange<UInt64>) -> [EventID] { seqs.map { EventID(replica: replica, seq: $0) } }

    @Test func aHelloGetsExactlyWhatItLacks() async throws {
        let temp = TemporaryDirectory("relay-hello")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        try FileSystem.createDirectory(data)
        // A board of two replicas: its own (300 events) and a laptop's merged in (100).
        let own = try draw(300, at: data + "/half", seed: 1)
        let laptop = try draw(100, at: temp.path + "/laptop", seed: 2)
        _ = try await SyncEngine(journal: JournalDirectory.open(at: data + "/half")).merge(from: [temp.path + "/laptop"])
        let running = try await RunningRelay.start(data: data)
        let everything = Have([own: SeqRanges([1...300]), laptop: SeqRanges([1...100])])

        // No hello: the whole board, each event once, and caughtUp says what the board holds.
        let viewer = RelayTestClient(port: running.port, board: "half")
        let all = try #require(try await catchUp(viewer))
        #expect(all.ids.count == 400 && Set(all.ids).count == 400)
        #expect(all.count == 400)
        #expect(all.have == everything)

        // The first half of each replica: exactly the second half, in seq order per replica.
        let half = RelayTestClient(port: running.port, board: "half")
        half.send(ClientFrame.helloText(have: Have([own: SeqRanges([1...150]), laptop: SeqRanges([1...50])])))
        let rest = try #require(try await catchUp(half))
        #expect(Set(rest.ids).count == rest.ids.count, "duplicates in the catch-up")
        #expect(Set(rest.ids) == Set(ids(own, 151...300) + ids(laptop, 51...100)))
        #expect(rest.ids.filter { $0.replica == own } == ids(own, 151...300))
        #expect(rest.count == 200 && rest.have == everything)

        // Holes: exactly the holes.
        let holes = RelayTestClient(port: running.port, board: "half")
        holes.send(ClientFrame.helloText(have: Have([own: SeqRanges([1...10, 20...300]), laptop: SeqRanges([1...99])])))
        let filled = try #require(try await catchUp(holes))
        #expect(filled.ids == ids(own, 11...19) + ids(laptop, 100...100) || filled.ids == ids(laptop, 100...100) + ids(own, 11...19))

        // Everything: no event at all, then caughtUp; then live events as anyone's.
        let full = RelayTestClient(port: running.port, board: "half")
        full.send(ClientFrame.helloText(have: everything))
        let none = try #require(try await catchUp(full))
        #expect(none.ids.isEmpty && none.count == 0 && none.have == everything)
        let stroke = StrokeID(UUIDBits(high: 0xF00D, low: 1))
        viewer.send(CanonicalJSON.line(for: .end(stroke)))
        #expect(try await viewer.next() == .ack(upTo: 1))
        let live = try #require(try await full.next())
        #expect(live.eventID == EventID(replica: own, seq: 301))
        #expect(try live.payloads() == [.end(stroke)])

        for client in [viewer, half, holes, full] { client.close() }
        await running.stop()
    }

    @Test func aCatchUpInBlocksHoldsExactlyWhatTheTextOneHolds() async throws {
        let temp = TemporaryDirectory("relay-blocks")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        try FileSystem.createDirectory(data)
        let own = try draw(300, at: data + "/b", seed: 1)
        let laptop = try draw(100, at: temp.path + "/laptop", seed: 2)
        _ = try await SyncEngine(journal: JournalDirectory.open(at: data + "/b")).merge(from: [temp.path + "/laptop"])
        var stored: Int64 = 0
        for replica in [own, laptop] {
            let folder = data + "/b/replicas/" + replica.hex
            for entry in try FileSystem.list(folder) { stored += entry.size }
        }
        let running = try await RunningRelay.start(data: data)
        let everything = Have([own: SeqRanges([1...300]), laptop: SeqRanges([1...100])])

        // A live event of the board's own, in its open segment: read like the sealed ones.
        let writer = RelayTestClient(port: running.port, board: "b")
        writer.send(CanonicalJSON.line(for: .clear))
        _ = try await writer.collect { $0 == .ack(upTo: 1) }
        var withLive = everything
        withLive.insert(EventID(replica: own, seq: 301))

        for held in [Have(), Have([own: SeqRanges([1...150]), laptop: SeqRanges([1...50])]),
                     Have([own: SeqRanges([1...10, 20...300]), laptop: SeqRanges([1...99])])] {
            let text = RelayTestClient(port: running.port, board: "b")
            text.send(ClientFrame.helloText(have: held))
            let inText = try #require(try await catchUp(text))
            let blocks = RelayTestClient(port: running.port, board: "b")
            blocks.send(ClientFrame.helloText(have: held, blocks: true))
            let inBlocks = try #require(try await catchUp(blocks))
            #expect(Set(inBlocks.ids).count == inBlocks.ids.count, "duplicates in the catch-up")
            #expect(Set(inBlocks.ids) == Set(inText.ids))
            #expect(inBlocks.ids.allSatisfy { !held.contains($0) })
            #expect(inBlocks.count == inText.count && inBlocks.have == withLive && inText.have == withLive)
            #expect(text.counts.withLock { $0.binaryFrames } == 0)
            #expect(blocks.counts.withLock { $0.binaryFrames } >= 1)
            if held.isEmpty {
                // The stored blocks went as they are: about the journal's own size.
                let bytes = blocks.counts.withLock { $0.binaryBytes }
                #expect(bytes <= Int(stored) + 200, "\(bytes) bytes sent for \(stored) stored")
            }
            text.close()
            blocks.close()
        }
        writer.close()
        await running.stop()
    }

    @Test func badAndLateHellosAreNamed() async throws {
        let temp = TemporaryDirectory("relay-bad-hello")
        defer { temp.remove() }
        let running = try await RunningRelay.start(data: temp.path + "/boards")

        let bad = RelayTestClient(port: running.port, board: "b")
        bad.send(#"{"type":"hello","have":{"0123":[[1,2]]}}"#)
        let refusal = try #require(try await bad.next())
        guard case .error(nil, .badRequest, let message) = refusal else {
            Issue.record("got \(refusal), expected an error about the connection")
            return
        }
        #expect(message.contains("hello") && message.contains("0123"), "message: \(message)")
        #expect(try await bad.nextOrEnd() == .ended, "the relay did not close the connection")

        // A hello after an event line: refused as a frame; the connection goes on.
        let late = RelayTestClient(port: running.port, board: "b")
        late.send(CanonicalJSON.line(for: .clear))
        late.send(ClientFrame.helloText(have: Have()))
        // The clear may be in the catch-up (durable before it was read) or not, and the
        // refusal may come before `caughtUp` or after it (the clear, not being a hello, starts
        // the catch-up at once): what counts is that frame 2 is refused and the connection
        // goes on to `caughtUp`.
        var messages: [ServerMessage] = []
        while !(messages.contains { if case .error(2, _, _) = $0 { true } else { false } }
                && messages.contains { if case .caughtUp = $0 { true } else { false } }),
              let message = try await late.next(within: 10) {
            messages.append(message)
        }
        let lateError = messages.first { if case .error(2, _, _) = $0 { true } else { false } }
        guard case .error(_, _, let lateMessage)? = lateError else {
            Issue.record("no error for the late hello: \(messages)")
            return
        }
        #expect(lateMessage.contains("first frame"), "message: \(lateMessage)")
        #expect(messages.contains { if case .caughtUp = $0 { true } else { false } })
        late.close()
        await running.stop()
    }

    @Test func segmentsSyncBringsAreForwardedToConnectedClients() async throws {
        let temp = TemporaryDirectory("relay-federation")
        defer { temp.remove() }
        let running = try await RunningRelay.start(
            data: temp.path + "/boards", options: BoardOptions(rescanIntervalSeconds: 0.2, watchForSegments: true))
        let client = RelayTestClient(port: running.port, board: "shared")
        client.send(ClientFrame.helloText(have: Have()))
        let start = try #require(try await catchUp(client))
        #expect(start.ids.isEmpty)
        let board = try running.relay.board(BoardName("shared"))

        // Another machine's journal, merged into the relay's board folder as sync does.
        let laptopPath = temp.path + "/laptop"
        let laptop = try draw(50, at: laptopPath, seed: 3)
        _ = try await SyncEngine(journal: board.board.directory).merge(from: [laptopPath])
        var received: [EventID] = []
        while received.count < 50, let message = try await client.next(within: 15) {
            if let id = message.eventID { received.append(id) }
        }
        #expect(received == ids(laptop, 1...50))

        // More of the same replica: only the new events, none twice.
        _ = try draw(30, at: laptopPath, seed: 4)
        _ = try await SyncEngine(journal: board.board.directory).merge(from: [laptopPath])
        var more: [EventID] = []
        while more.count < 30, let message = try await client.next(within: 15) {
            if let id = message.eventID { more.append(id) }
        }
        #expect(more == ids(laptop, 51...80))
        // Nothing of those a second time: a third merge is forwarded the same way, after them,
        // and its events are the next (and only) ones the client gets.
        _ = try draw(5, at: laptopPath, seed: 5)
        _ = try await SyncEngine(journal: board.board.directory).merge(from: [laptopPath])
        var last: [EventID] = []
        while last.count < 5, let message = try await client.next(within: 15) {
            if let id = message.eventID { last.append(id) }
        }
        #expect(last == ids(laptop, 81...85), "something more was sent")

        // A client joining now gets them all from the journal.
        let late = RelayTestClient(port: running.port, board: "shared")
        let joined = try #require(try await catchUp(late))
        #expect(Set(joined.ids) == Set(ids(laptop, 1...85)))
        client.close()
        late.close()
        await running.stop()
    }
}
