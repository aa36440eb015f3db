import JournalClient
import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import JournalWire
import Testing

/// `RelayClient` against a real relay on 127.0.0.1: its drawing is the relay's journal, and it
/// survives the relay going away and coming back on the same port.
@Suite(.serialized) struct RelayClientTests {
    typealias RunningRelay = RelayServerTests.RunningRelay

    func stroke(_ seed: UInt64, points: Int) -> [Payload] {
        let id = StrokeID(UUIDBits(high: seed, low: 0xC11E))
        var payloads = (0..<points).map { index in
            Payload.point(PointSample(stroke: id, x: Double(index) / 3, y: Double(seed), pressure: 0.25, t: Double(index) / 240,
                                      style: Style(color: RGBA(rawValue: 0x43A047FF), width: 2)))
        }
        payloads.append(.end(id))
        return payloads
    }

    /// Waits until `client`'s drawing has `points` points.
    func waitFor(_ client: RelayClient, points: Int, within seconds: Double = 120) async -> Bool {
        await eventually(within: seconds, every: 20) { client.drawing.strokes.reduce(0, { $0 + $1.points.count }) == points }
    }

    func journalDigest(_ path: String) throws -> String {
        try Replay.replay(SegmentSet.load(JournalDirectory.open(at: path))).drawing.digest
    }

    @Test func clientsShareTheJournalsDrawingAcrossARelayRestart() async throws {
        let temp = TemporaryDirectory("relay-client")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        var running = try await RunningRelay.start(data: data)
        let port = running.port
        let alice = RelayClient(port: port, board: "wall")
        let bob = RelayClient(port: port, board: "wall")
        // What bob went through, for a failure to say (he once never saw her last stroke).
        let bobSaw = Locked([String]())
        let bobUpdates = bob.updates
        let bobWatch = Task {
            for await update in bobUpdates {
                switch update {
                case .changed, .acknowledged: continue
                default: bobSaw.withLock { $0.append("\(update)") }
                }
            }
        }
        let runs = [Task { await alice.run() }, Task { await bob.run() }]

        for payload in stroke(1, points: 40) + stroke(2, points: 25) { alice.send(payload) }
        // Bounded: a client that is never acknowledged fails here with what it still holds and why.
        try await alice.waitUntilAcknowledged(within: 120)
        #expect(alice.pending.isEmpty)
        // Her own events came back before their acks; his came live.
        #expect(alice.drawing.strokes.map(\.points.count) == [40, 25])
        #expect(await waitFor(bob, points: 65))

        // The relay goes away: what she draws now waits, and is sent when it is back.
        let failedAttempts = Locked(0)
        let aliceUpdates = alice.updates
        let counting = Task {
            for await update in aliceUpdates { if case .disconnected = update { failedAttempts.withLock { $0 += 1 } } }
        }
        await running.stop()
        for payload in stroke(3, points: 30) { alice.send(payload) }
        // Two more attempts to reconnect have failed since she drew (the second began after it):
        // what she drew stays pending through them.
        let failedBefore = failedAttempts.withLock { $0 }
        #expect(await eventually(within: 60) { failedAttempts.withLock { $0 } >= failedBefore + 2 },
                "the client stopped trying to reconnect")
        #expect(alice.pending.count == 31)
        running = try await RunningRelay.start(data: data, port: port)
        try await alice.waitUntilAcknowledged(within: 120)
        #expect(await waitFor(alice, points: 95))
        #expect(await waitFor(bob, points: 95), "bob: \(bob.have.eventCount) events, \(bobSaw.withLock { $0.suffix(12) })")

        // Both hold exactly the journal's drawing, each event once.
        await running.stop()
        let digest = try journalDigest(data + "/wall")
        #expect(alice.drawing.digest == digest)
        #expect(bob.drawing.digest == digest)
        #expect(alice.have == bob.have && alice.have.eventCount == 98)

        alice.close()
        bob.close()
        for run in runs { await run.value }
        await counting.value
        await bobWatch.value
    }

    @Test func aLateClientCatchesUpInBlocksAndRefusedLinesAreReported() async throws {
        let temp = TemporaryDirectory("relay-client-late")
        defer { temp.remove() }
        let running = try await RunningRelay.start(data: temp.path + "/boards")
        let writer = RelayClient(port: running.port, board: "late")
        let writerRun = Task { await writer.run() }
        for seed in 1...20 { for payload in stroke(UInt64(seed), points: 50) { writer.send(payload) } }
        try await writer.waitUntilAcknowledged(within: 120)

        let late = RelayClient(port: running.port, board: "late")
        let updates = late.updates
        let lateRun = Task { await late.run() }
        let bound = late.closing(after: 120)
        defer { bound.cancel() }
        var caughtUp: UInt64?
        for await update in updates {
            if case .caughtUp(let events) = update {
                caughtUp = events
                break
            }
        }
        #expect(caughtUp == 20 * 51)
        #expect(late.drawing.digest == writer.drawing.digest)

        // A point with a negative width never reaches a journal: the relay refuses it by line.
        let stroke = StrokeID(UUIDBits(high: 9, low: 9))
        writer.send(.point(PointSample(stroke: stroke, x: 1, y: 1, style: Style(color: RGBA(rawValue: 0xFF), width: -1))))
        try await writer.waitUntilAcknowledged(within: 120)
        #expect(writer.pending.isEmpty)
        writer.close()
        late.close()
        await writerRun.value
        await lateRun.value
        await running.stop()
    }

    /// What a client's updates said before they ended: the reason it stopped, if it did.
    func stopReason(_ client: RelayClient) async -> String? {
        let updates = client.updates
        let run = Task { await client.run() }
        let bound = client.closing(after: 120)
        defer { bound.cancel() }
        var reason: String?
        for await update in updates { if case .stopped(let why) = update { reason = why } }
        await run.value
        return reason
    }

    /// A refusal's code, not its words, decides: a board named `token` whose journal cannot be
    /// opened for now ("board token could not be read or written …", code `unavailable`) is
    /// tried again until it can, where a client matching the word "token" stopped for good.
    @Test func aBoardNamedTokenThatFailsForNowIsTriedAgainUntilItOpens() async throws {
        let temp = TemporaryDirectory("relay-client-token-board")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        try FileSystem.createDirectory(data)
        // A file where the board's folder belongs: the board cannot be opened while it is there.
        let blocker = data + "/token"
        try FileSystem.writeAtomically(Array("not a journal".utf8), to: blocker)
        let running = try await RunningRelay.start(data: data)
        var options = RelayClient.Options()
        options.minBackoff = 0.05
        options.maxBackoff = 0.2
        let client = RelayClient(port: running.port, board: "token", options: options)
        let updates = client.updates
        let run = Task { await client.run() }
        let bound = client.closing(after: 120)
        defer { bound.cancel() }
        var refusedBeforeCaughtUp = 0
        var stopped: String?
        var caughtUp = false
        for await update in updates {
            switch update {
            case .disconnected(let reason, _):
                if reason.contains("board token") {
                    refusedBeforeCaughtUp += 1
                    // Refused twice with the word "token" and still trying: the way out is cleared.
                    if refusedBeforeCaughtUp == 2 { try FileSystem.remove(blocker) }
                }
            case .stopped(let reason): stopped = reason
            case .caughtUp: caughtUp = true
            default: break
            }
            if caughtUp || stopped != nil { break }
        }
        client.close()
        await run.value
        #expect(stopped == nil, "the client gave up: \(stopped ?? "")")
        #expect(refusedBeforeCaughtUp >= 2 && caughtUp)
        await running.stop()
    }

    @Test func aClientRefusedForGoodStopsAtOnceAndSaysWhy() async throws {
        let temp = TemporaryDirectory("relay-client-refused")
        defer { temp.remove() }
        let running = try await RunningRelay.start(data: temp.path + "/boards")
        // A name no board can have: the relay's own reason.
        let badName = await stopReason(RelayClient(port: running.port, board: "a.b"))
        #expect(badName?.hasPrefix("invalid board name \"a.b\"") == true, "\(String(describing: badName))")
        // The page's address, not its socket's.
        let page = await stopReason(RelayClient(url: "ws://127.0.0.1:\(running.port)/boards/poster"))
        #expect(page?.contains("no board's socket") == true, "\(String(describing: page))")
        // A good address is not stopped (the positive control): it catches up.
        let good = RelayClient(port: running.port, board: "poster")
        let updates = good.updates
        let run = Task { await good.run() }
        let bound = good.closing(after: 120)
        defer { bound.cancel() }
        var caughtUp = false
        for await update in updates {
            if case .caughtUp = update { caughtUp = true }
            if case .stopped = update { break }
            if caughtUp { break }
        }
        good.close()
        await run.value
        #expect(caughtUp)
        await running.stop()
    }
}

extension RelayClient {
    /// Closes the client after `seconds` unless the task it returns is cancelled first. A test
    /// that reads a client's updates until something happens then sees them end and fails its
    /// expectation, where it would otherwise wait for ever (a whole run held by one await).
    func closing(after seconds: Double) -> Task<Void, Never> {
        Task { [self] in
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            if !Task.isCancelled { close() }
        }
    }
}
