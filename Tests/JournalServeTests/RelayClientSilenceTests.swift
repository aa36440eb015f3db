import Foundation
import JournalClient
import JournalFormat
import JournalPlatform
import JournalTestSupport
import JournalWire
import Testing

/// `RelayClient` against a `journal serve` frozen (SIGSTOP) while a frame waits for its ack: the
/// socket stays open and the relay says nothing, so the client takes it for stopped after
/// `WireLimits.silentRelaySeconds` (a live relay gives signs of life) and tries again; once
/// the relay answers (SIGCONT) the frame is acknowledged, and the journal holds it once.
extension RelayProcessTests {
@Suite(.serialized) struct RelayClientSilenceTests {
    @Test func aFrozenRelayIsLeftAndTheWaitingFrameIsRecordedOnceItAnswers() async throws {
        let temp = TemporaryDirectory("relay-client-silence")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let relay = try await RelayProcess(data: data)
        var options = RelayClient.Options()
        options.replicaKey = ReplicaKey()
        let client = RelayClient(port: relay.port, board: "frozen", options: options)
        let updates = Locked<[RelayClientUpdate]>([])
        let stream = client.updates
        let reader = Task { for await update in stream { updates.withLock { $0.append(update) } } }
        let run = Task { await client.run() }
        let stroke = StrokeID(UUIDBits(high: 7, low: 7))
        func point(_ x: Double) -> Payload {
            .point(PointSample(stroke: stroke, x: x, y: 1, pressure: 0.5, t: x, style: Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2)))
        }
        client.send(point(1))
        try await client.waitUntilAcknowledged(within: 120)

        let pid = try #require(relay.child?.process.processIdentifier)
        kill(pid, SIGSTOP)
        client.send(point(2))
        let leftIt = await eventually(within: 120) {
            updates.withLock { $0 }.contains { update in
                if case .disconnected(let reason, _) = update { return reason.contains("said nothing") }
                return false
            }
        }
        kill(pid, SIGCONT)
        #expect(leftIt, "the client never took the frozen relay for stopped: \(updates.withLock { $0 })")
        try await client.waitUntilAcknowledged(within: 120)

        client.close()
        await run.value
        reader.cancel()
        #expect(await relay.terminate() == 0)
        let log = try JournalProcess.run(["log", "-C", data + "/frozen"])
        #expect(log.status == 0, "\(log.stderr)")
        let points = log.stdout.split(separator: "\n").filter { $0.contains(#""type":"point""#) }
        #expect(points.count == 2, "the journal holds \(points.count) points, 2 were drawn: \(log.stdout)")
    }
}
}
