import Foundation
import JournalClient
import JournalFormat
import JournalReplay
import JournalTestSupport
import JournalWire
import Testing

/// `RelayClient` against a `journal serve` killed with `kill -9` while three clients draw:
/// every point sent is in the journal exactly once (none lost, none twice), and every client
/// ends with the journal's drawing.
extension RelayProcessTests {
@Suite(.serialized) struct RelayClientCrashTests {
    // Depends on the client settling resent frames the catch-up brought back (without it,
    // points are recorded twice). A connect that reaches the relay as it is killed ends by
    // `connectTimeout`; a hang fails the test, saying where each client stood (`within`), instead
    // of stopping the suite.
    @Test
    func killedRelayLosesNothingAndRecordsNoPointTwice() async throws {
        try await killedRelayCampaign(native: false)
    }

    /// The same with native clients (each its own replica): resends are settled by id.
    @Test func killedRelayLosesNothingAndStoresNoEventTwiceForNativeClients() async throws {
        try await killedRelayCampaign(native: true)
    }

    func killedRelayCampaign(native: Bool) async throws {
        let temp = TemporaryDirectory("relay-client-crash")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let relay = try await RelayProcess(data: data)
        let port = relay.port
        var random = SeededGenerator(seed: 0xC4A5)
        let keys = (0..<3).map { _ in ReplicaKey() }
        let replicas = keys.map(\.replica)
        let clients = keys.map { key in
            var options = RelayClient.Options()
            if native { options.replicaKey = key }
            return RelayClient(port: port, board: "crash", options: options)
        }
        let runs = clients.map { client in Task { await client.run() } }

        // Each client draws 12 strokes of 30 points in bursts; the relay is killed 4 times.
        var sent: [StrokeID: Int] = [:]
        for round in 0..<12 {
            for (index, client) in clients.enumerated() {
                let stroke = StrokeID(UUIDBits(high: UInt64(index + 1), low: UInt64(round + 1)))
                for point in 0..<30 {
                    client.send(.point(PointSample(
                        stroke: stroke, x: Double(point), y: Double(round), pressure: 0.5, t: Double(point) / 240,
                        style: Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2))))
                }
                client.send(.end(stroke))
                sent[stroke] = 30
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 5...60, using: &random)))
            if round % 3 == 1 {
                await relay.kill9()
                try await Task.sleep(for: .milliseconds(Int.random(in: 50...300, using: &random)))
                try await relay.start()
            }
        }
        for (index, client) in clients.enumerated() {
            // A hang becomes a failure that says where each client stood.
            let done = await within(180) { await client.waitUntilAcknowledged() }
            #expect(done, "client \(index) still has \(client.pending.count) frames unacknowledged after 180 s; holds \(client.have.eventCount) events")
        }
        #expect(clients.allSatisfy { $0.pending.isEmpty })
        #expect(relay.starts == 5)
        // A client's own acks come before the others' last strokes reach it: wait for those
        // (progress, not a deadline), or the relay's stop below cuts one in two (a client held
        // 28 of a stroke's 30 points under CI's load).
        for client in clients {
            _ = await eventually(within: 120) {
                let drawing = client.drawing
                return drawing.strokes.count == sent.count && drawing.strokes.allSatisfy { sent[$0.id] == $0.points.count }
            }
        }

        // The clients hold the relay's board, which holds every stroke exactly once.
        let status = await relay.terminate()
        #expect(status == 0)
        let journal = data + "/crash"
        let digest = try JournalProcess.run(["digest", "-C", journal])
        #expect(digest.status == 0, "\(digest.stderr)")
        let strokes = try JournalProcess.run(["strokes", "-C", journal, "--json"])
        #expect(strokes.status == 0, "\(strokes.stderr)")
        for client in clients {
            // Their copies may miss only what was broadcast after they stopped listening.
            let drawing = client.drawing
            #expect(drawing.strokes.count <= sent.count)
            for stroke in drawing.strokes {
                #expect(stroke.points.count == sent[stroke.id], "stroke \(stroke.id): \(stroke.points.count) points, \(sent[stroke.id] ?? 0) sent")
            }
        }
        let counts = try pointCounts(strokesJSON: strokes.stdout)
        #expect(counts.count == sent.count, "\(counts.count) strokes in the journal, \(sent.count) drawn")
        let wrong = counts.filter { sent[$0.key] != $0.value }
        #expect(wrong.isEmpty, "strokes with lost or doubled points (points, of \(sent.first?.value ?? 0) sent): \(wrong.prefix(5).map { "\($0.key): \($0.value)" })")

        if native {
            // Every event is a client's own, stored once: 12 strokes of 31 events each.
            let log = try JournalProcess.run(["log", "-C", journal])
            #expect(log.status == 0, "\(log.stderr)")
            let ids = log.stdout.split(separator: "\n").compactMap { line -> String? in
                guard let replica = line.range(of: #""replica":""#, options: .backwards),
                      let seq = line.range(of: #""seq":"#, range: replica.upperBound..<line.endIndex) else { return nil }
                return String(line[replica.upperBound...].prefix(32)) + "#" + String(line[seq.upperBound...].prefix { $0.isNumber })
            }
            #expect(ids.count == 3 * 12 * 31 && Set(ids).count == ids.count)
            #expect(Set(ids.map { String($0.prefix(32)) }) == Set(replicas.map(\.hex)))
        }

        for client in clients { client.close() }
        for (index, run) in runs.enumerated() {
            let ended = await within(60) { await run.value }
            #expect(ended, "client \(index)'s run did not end within 60 s of close()")
        }
    }

    /// Points per stroke in `journal strokes --json` (`{"strokes":[{"id","points":[…]},…]}`).
    func pointCounts(strokesJSON: String) throws -> [StrokeID: Int] {
        let object = try JSONSerialization.jsonObject(with: Data(strokesJSON.utf8)) as? [String: Any]
        var counts: [StrokeID: Int] = [:]
        for stroke in object?["strokes"] as? [[String: Any]] ?? [] {
            guard let text = stroke["id"] as? String, let id = StrokeID(uuidString: text) else { continue }
            counts[id] = (stroke["points"] as? [Any])?.count ?? 0
        }
        return counts
    }
}
}
