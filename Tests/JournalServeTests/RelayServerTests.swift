#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import JournalFormat
import JournalIngest
import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalReplay
import JournalServe
import JournalStorage
import JournalTestSupport
import JournalWire
import Testing

/// `journal serve` over real sockets on 127.0.0.1: acks after fsync, broadcast, refused frames,
/// catch-up, and the board's journal afterwards.
@Suite(.serialized) struct RelayServerTests {
    /// A relay serving `data` on a free port, until `stop()`.
    struct RunningRelay {
        let relay: Relay
        let port: Int
        let task: Task<Void, any Error>

        static func start(
            data: String, port: Int = 0, access: RelayAccess = .open, options: BoardOptions = BoardOptions(watchForSegments: false),
            idleBoardSeconds: Double? = nil, writeStallSeconds: Double = 30, limits: RelayLimits = RelayLimits()
        ) async throws -> RunningRelay {
            // A relay restarted on the port it had can find it taken: the kernel hands a freed
            // port to the next outgoing connection that needs one (any test's client, rclone),
            // and while that connection lasts, and for the 60 s of TIME_WAIT after it closed
            // its end, nothing can listen there (EADDRINUSE, even with SO_REUSEADDR). Such a
            // start is tried again until the port is free, for 90 s.
            let deadline = ProcessInfoLite.monotonicSeconds() + (port == 0 ? 0 : 90)
            while true {
                do {
                    return try await listen(data: data, port: port, access: access, options: options, idleBoardSeconds: idleBoardSeconds,
                                            writeStallSeconds: writeStallSeconds, limits: limits)
                } catch where ProcessInfoLite.monotonicSeconds() < deadline {
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
        }

        private static func listen(
            data: String, port: Int, access: RelayAccess, options: BoardOptions, idleBoardSeconds: Double?,
            writeStallSeconds: Double, limits: RelayLimits
        ) async throws -> RunningRelay {
            let relay = try Relay(dataDirectory: data, access: access, boardOptions: options, idleBoardSeconds: idleBoardSeconds, limits: limits)
            let (ports, portContinuation) = AsyncStream<Int>.makeStream()
            let server = RelayServer(relay: relay, port: port, writeStallSeconds: writeStallSeconds)
            // The stream ends with the server, so that one that never listened ends the wait
            // with its error: waiting for a port that never came held a whole run.
            let task = Task {
                defer { portContinuation.finish() }
                try await server.run { port in portContinuation.yield(port) }
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else {
                await relay.close()
                try await task.value
                throw RelayDidNotListen(port: port)
            }
            return RunningRelay(relay: relay, port: port, task: task)
        }

        struct RelayDidNotListen: Error, CustomStringConvertible {
            let port: Int
            var description: String { "the relay ended without listening on port \(port)" }
        }

        func stop() async {
            task.cancel()
            let (relay, task) = (self.relay, self.task)
            // Bounded: a relay that does not stop fails the test that stops it, by name, where
            // it held whole runs (CI's 90 minutes, twice) with nothing to say which test it was.
            let stopped = await within(90) {
                _ = try? await task.value
                // `run` closes the relay when it ends; closing again is harmless.
                await relay.close()
            }
            if !stopped {
                Issue.record("the relay did not stop within 90 s of its server's cancellation; boards still open: \(relay.openBoards.map(\.text))")
            }
        }
    }

    func pointLine(_ stroke: StrokeID, _ index: Int) -> String {
        CanonicalJSON.line(for: .point(PointSample(
            stroke: stroke, x: Double(index) * 1.25, y: Double(index % 9) / 7, pressure: 0.5, t: Double(index) / 240,
            style: Style(color: RGBA(rawValue: 0xE53935FF), width: 3))))
    }

    @Test func twoClientsAcksAfterFsyncBroadcastErrorsCatchUpAndRestart() async throws {
        let temp = TemporaryDirectory("relay-two-clients")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        var running = try await RunningRelay.start(data: data)

        let alice = RelayTestClient(port: running.port, board: "poster")
        let bob = RelayTestClient(port: running.port, board: "poster")
        // An empty board: both are caught up at once.
        #expect(try await alice.next() == .caughtUp(events: 0))
        #expect(try await bob.next() == .caughtUp(events: 0))

        let stroke = StrokeID(UUIDBits(high: 0xA11CE, low: 1))
        let lines = (0..<100).map { pointLine(stroke, $0) } + [CanonicalJSON.line(for: .end(stroke))]
        for line in lines { alice.send(line) }

        // Alice: acks only, growing, up to her last frame; each one durable when it came.
        let board = try running.relay.board(BoardName("poster"))
        var acked: UInt64 = 0
        while acked < UInt64(lines.count) {
            let message = try #require(try await alice.next())
            guard case .ack(let upTo) = message else {
                Issue.record("alice got \(message), expected an ack")
                return
            }
            #expect(upTo > acked)
            // One event per frame here: frame N is seq N of the board's replica.
            #expect(board.board.durableSeq >= upTo, "ack \(upTo) before fsync (durable \(board.board.durableSeq))")
            acked = upTo
        }

        // The relay holds which events it has, not a drawing of them (invariant 13), whatever
        // options it was given.
        #expect(!board.board.options.keepsDrawing && board.board.pointCount == 0)
        #expect(board.board.covered[board.board.replica] == SeqRanges([1...UInt64(lines.count)]))

        // Bob: every event alice sent, as canonical lines with their envelope.
        var bobs: [Payload] = []
        while bobs.count < lines.count {
            let message = try #require(try await bob.next())
            bobs.append(contentsOf: try message.payloads())
        }
        #expect(bobs == lines.flatMap { try! LineParser.parse($0) })

        // A bad frame: an error naming it, and the connection goes on.
        bob.send(#"{"type":"point","stroke":"nope","x":1,"y":2}"#)
        let error = try #require(try await bob.next())
        guard case .error(let frame, _, let message) = error else {
            Issue.record("bob got \(error), expected an error")
            return
        }
        #expect(frame == 1)
        #expect(message.contains("stroke"), "message: \(message)")
        // DrawTogether's form, on the same connection: recorded and acked as frame 2.
        let other = StrokeID(UUIDBits(high: 0xB0B, low: 2))
        bob.send(#"{"id":"\#(other.uuidString)","color":"blue","point":[3.5,4.25]}"#)
        #expect(try await bob.next() == .ack(upTo: 2))
        let relayed = try #require(try await alice.next())
        guard case .point(let sample) = try relayed.payloads().first else {
            Issue.record("alice got \(relayed), expected bob's point")
            return
        }
        #expect(sample.stroke == other && sample.x == 3.5 && sample.y == 4.25)

        alice.close()
        bob.close()
        await running.stop()

        // The board's journal replays to the same strokes.
        let (drawing, report) = Replay.load(try JournalDirectory.open(at: data + "/poster"))
        #expect(report.problems.isEmpty)
        let replayed = try #require(drawing.visibleStrokes.first { $0.id == stroke })
        #expect(replayed.points.count == 100 && replayed.ended)
        #expect(drawing.visibleStrokes.count == 2)

        // A new relay on the same folder: a new client gets everything, then live.
        running = try await RunningRelay.start(data: data)
        let carol = RelayTestClient(port: running.port, board: "poster")
        let (caughtUp, last) = try await carol.collect { if case .caughtUp = $0 { true } else { false } }
        guard case .caughtUp(let count, let have, _) = last else {
            Issue.record("carol got \(String(describing: last)), expected caughtUp")
            return
        }
        #expect(count == UInt64(lines.count + 1))
        // Every event so far is the board's replica's, seqs 1…N.
        #expect(have == Have([board.board.replica: SeqRanges([1...UInt64(lines.count + 1)])]))
        #expect(caughtUp.count == lines.count + 1)
        let strokesSeen = Set(try caughtUp.flatMap { try $0.payloads() }.compactMap(\.stroke))
        #expect(strokesSeen == [stroke, other])
        carol.close()
        await running.stop()
    }

    @Test func aBoardNameThatIsAPathIsRefused() async throws {
        #expect(throws: RelayError.self) { try BoardName("..") }
        #expect(throws: RelayError.self) { try BoardName("a/b") }
        #expect(throws: RelayError.self) { try BoardName(String(repeating: "x", count: 65)) }
        #expect(throws: RelayError.self) { try BoardName("") }
        #expect(try BoardName("team-7_Poster").text == "team-7_Poster")
    }

    // The relay writes a refusal after the client's first frame (or 500 ms), then closes with a
    // handshake (RelayServer.close(withError:)): written at once on the upgrade, a refusal could
    // reach the client as neither a message nor an end within 10 s.
    /// The client's first message is an error about the connection, naming `reason`, and then
    /// the relay closes the connection.
    func expectRefused(
        _ client: RelayTestClient, saying reason: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let refusal = try await client.next()
        guard case .error(nil, _, let message) = refusal else {
            Issue.record("got \(String(describing: refusal)), expected an error about the connection", sourceLocation: sourceLocation)
            return
        }
        #expect(message.contains(reason), "message: \(message)", sourceLocation: sourceLocation)
        #expect(try await client.nextOrEnd() == .ended, "the relay did not close the connection", sourceLocation: sourceLocation)
    }

    @Test func aBoardNameThatIsAPathIsRefusedOnTheSocket() async throws {
        let temp = TemporaryDirectory("relay-bad-name")
        defer { temp.remove() }
        let running = try await RunningRelay.start(data: temp.path + "/boards")
        let client = RelayTestClient(port: running.port, board: "..%2F..%2Fetc")
        try await expectRefused(client, saying: "invalid board name")
        #expect(running.relay.openBoards.isEmpty)
        await running.stop()
    }

    /// Past `--max-connections`, a new socket is told why, in an error message, and closed; the
    /// connections already served go on.
    @Test func aConnectionPastTheLimitIsToldWhyOnTheSocket() async throws {
        let temp = TemporaryDirectory("relay-full")
        defer { temp.remove() }
        let running = try await RunningRelay.start(data: temp.path + "/boards", limits: RelayLimits(maxConnections: 1))
        let first = RelayTestClient(port: running.port, board: "one")
        #expect(try await first.next() == .caughtUp(events: 0))
        let second = RelayTestClient(port: running.port, board: "two")
        try await expectRefused(second, saying: "--max-connections")
        #expect(running.relay.openBoards.map(\.text) == ["one"])
        first.send(CanonicalJSON.line(for: .clear))
        #expect(try await first.next() == .ack(upTo: 1))
        first.close()
        await running.stop()
    }

    /// A client on a slow link that keeps reading is never taken for one that stopped: the
    /// stall is time without progress, not the time one write takes (a 1 MiB catch-up message
    /// to a 28 KB/s client takes longer than the write timeout).
    @Test func aSlowClientThatKeepsReadingIsNotDisconnected() async throws {
        let temp = TemporaryDirectory("relay-slow")
        defer { temp.remove() }
        let (running, socket) = try await bigBoardAndASocketThatDoesNotRead(in: temp, writeStallSeconds: 4)
        defer { close(socket) }
        // 20 KB/s for 12 s: each 256 KiB the relay writes waits about 13 s for the socket, far
        // past the 4 s stall, while the client's TCP acknowledges a few KB every 0.1 s or so.
        // The stall is 4 s: on a loaded machine the reading thread's scheduling gaps alone
        // reach half a second, and a relay that closes slow readers still fails here, since
        // the first write alone outlasts it three times. (Once, in a fresh-clone CI run at a 2 s
        // stall and 40 KB/s, the catch-up stopped arriving under the suite's own load.)
        let caughtUp = await PlainHTTP.readSlowly(socket, bytesPerSecond: 20_000, slowSeconds: 12, until: "caughtUp")
        await running.stop()
        #expect(caughtUp, "the relay closed a client that was reading")
    }

    /// A client that reads its catch-up slowly while others wait for a place among the relay's
    /// catch-ups is ended (it would reconnect and get the rest); the one waiting then joins.
    /// Eight such clients would otherwise keep everyone from joining any board for hours.
    @Test func aSlowCatchUpOthersWaitForIsEndedAndTheyJoin() async throws {
        let temp = TemporaryDirectory("relay-slow-catch-up")
        defer { temp.remove() }
        let (running, socket) = try await bigBoardAndASocketThatDoesNotRead(
            in: temp, writeStallSeconds: 120, limits: RelayLimits(maxConcurrentCatchUps: 1))
        defer { close(socket) }
        // 8 KB/s: its 10 MB would take 20 minutes. Read on a thread of its own meanwhile.
        async let slowCaughtUp = PlainHTTP.readSlowly(socket, bytesPerSecond: 8_000, slowSeconds: 600, until: "caughtUp", timeoutSeconds: 120)
        // The slow client's hello opens the board; it may still be opening.
        #expect(await eventually(within: 60) { (try? running.relay.board(BoardName("big"))) != nil }, "the board never opened")
        let board = try running.relay.board(BoardName("big"))
        #expect(await eventually(within: 60) { board.catchUps.counts.running == 1 }, "the slow client never started its catch-up")
        let started = ProcessInfoLite.monotonicSeconds()
        let waiting = RelayTestClient(port: running.port, board: "other")
        #expect(try await waiting.next(within: 90) == .caughtUp(events: 0), "the joiner of another board never got a place")
        let waited = ProcessInfoLite.monotonicSeconds() - started
        #expect(waited >= 5, "it joined after \(waited) s: the slow client was never holding the place")
        #expect(await slowCaughtUp == false, "the slow client was not ended")
        waiting.close()
        await running.stop()
    }

    /// A relay whose board "big" has a text catch-up of some 10 MB (far more than the socket
    /// buffers hold), and a client socket that opened it, sent its hello and reads nothing yet.
    func bigBoardAndASocketThatDoesNotRead(
        in temp: TemporaryDirectory, writeStallSeconds: Double, limits: RelayLimits = RelayLimits()
    ) async throws -> (RunningRelay, Int32) {
        let data = temp.path + "/boards"
        let board = try Board(path: data + "/big", create: true, options: BoardOptions(watchForSegments: false))
        let stroke = StrokeID(UUIDBits(high: 5, low: 5))
        for index in 0..<40_000 {
            try board.append(.point(PointSample(stroke: stroke, x: Double(index), y: 1, pressure: 0.5,
                                                style: Style(color: RGBA(rawValue: 0x336699FF), width: 2))))
        }
        try await board.close()
        let running = try await RunningRelay.start(data: data, writeStallSeconds: writeStallSeconds, limits: limits)
        let socket = try PlainHTTP.openNonReadingWebSocket(port: running.port, path: "/boards/big/ws",
                                                           text: ClientFrame.helloText(have: Have()))
        return (running, socket)
    }

    /// A relay restarted on a port that an outgoing connection holds as its own end (the kernel
    /// hands freed ports to outgoing connections) listens once that connection ends: the start
    /// waits for the port, where it once waited for ever for a port that never came.
    @Test func aRelayStartedOnATakenPortListensOnceTheConnectionHoldingItEnds() async throws {
        let temp = TemporaryDirectory("relay-taken-port")
        defer { temp.remove() }
        let first = try await RunningRelay.start(data: temp.path + "/first")
        let holder = try LoopbackSocket.open(port: first.port)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(holder, $0, &length) }
        }
        try #require(named == 0)
        let taken = Int(UInt16(bigEndian: address.sin_port))
        let releasing = Task {
            try? await Task.sleep(for: .milliseconds(800))
            // Reset, not closed: a closed end would hold the port for TIME_WAIT's 60 s.
            var reset = linger(l_onoff: 1, l_linger: 0)
            setsockopt(holder, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
            close(holder)
        }
        let second = try await RunningRelay.start(data: temp.path + "/second", port: taken)
        #expect(second.port == taken)
        await releasing.value
        await second.stop()
        await first.stop()
    }

    /// A client that stops reading during its catch-up is disconnected once its TCP has
    /// acknowledged nothing for `writeStallSeconds`, and the relay still stops at once: a
    /// stalled write holds neither the catch-up's memory (150 such sockets could take 1.2 GB)
    /// nor a graceful stop (SIGTERM) for ever.
    @Test func aClientThatStopsReadingIsDisconnectedAndTheRelayStillStops() async throws {
        let temp = TemporaryDirectory("relay-stall")
        defer { temp.remove() }
        let (running, socket) = try await bigBoardAndASocketThatDoesNotRead(in: temp, writeStallSeconds: 1)
        defer { close(socket) }
        func connections() -> Int {
            running.relay.openBoards.isEmpty ? 0 : ((try? running.relay.board(BoardName("big")).connectionCount) ?? 0)
        }
        // It connects, stalls, and is dropped (the deadlines only bound a starved run).
        #expect(await eventually(within: 60, every: 20) { connections() == 1 }, "the client never connected")
        #expect(await eventually(within: 60) { connections() == 0 }, "a client that stopped reading stayed connected")
        let stopping = ProcessInfoLite.monotonicSeconds()
        await running.stop()
        #expect(ProcessInfoLite.monotonicSeconds() - stopping < 30)
    }
}
