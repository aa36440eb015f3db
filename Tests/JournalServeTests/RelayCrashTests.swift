import Foundation
import JournalFormat
import JournalIngest
import JournalTestSupport
import JournalWire
import Testing

/// `kill -9` of a real `journal serve` while clients draw (RelayCrashCampaign), then the board's
/// folder read with the real CLI: every acknowledged event is there, the journal verifies
/// clean, every client holds exactly the journal's events, and every duplicate point is one
/// that a lost connection left unacknowledged.
extension RelayProcessTests {
@Suite(.serialized) struct RelayCrashTests {
    @Test(.timeLimit(.minutes(5)))
    func killedRelayLosesNoAcknowledgedEventAndDuplicatesOnlyWhatWasUnacknowledged() async throws {
        let settings = RelayCrashCampaign.Settings.fromEnvironment(default: 0x13_C4A5)
        let campaign = RelayCrashCampaign(settings: settings)
        let temp = TemporaryDirectory("relay-crash")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let outcome = try await campaign.run(data: data)
        let journal = data + "/" + campaign.board

        for client in outcome.clients {
            let state = client.snapshot
            #expect(state.problems.isEmpty, "\(state.problems.prefix(5))")
            // Exact catch-up: no event twice. The clients' addresses promise their hellos (a
            // hello the relay reads late, its tasks starved, still counts), and they ask for
            // their own events back, so what they hold stays in few enough pieces for a hello.
            // Under load a client was once in a while sent a dozen events twice: a catch-up had
            // read them from the journal and ended before their broadcast, which follows their
            // fsync, reached the connection (RelayConnectionTests.aLateBroadcastOfWhatTheCatchUpSentIsNotSentAgain).
            #expect(state.receivedTwice.isEmpty, "\(client.name) got \(state.receivedTwice) twice")
            #expect(state.acknowledged == client.frames.count)
            // A connection is lost only when the relay is killed.
            #expect(state.lost <= outcome.kills, "\(client.name) lost \(state.lost) connections in \(outcome.kills) kills")
        }

        // The journal verifies clean after the last kill.
        let verify = try JournalProcess.run(["verify", "-C", journal, "--json"])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        #expect(verify.stdout.contains(#""clean":true"#), "\(verify.stdout)")

        // Every event the journal holds, as `journal log` prints it.
        let log = try JournalProcess.run(["log", "-C", journal])
        #expect(log.status == 0, "\(log.stderr)")
        let lines = log.stdout.split(separator: "\n").map(String.init)
        #expect(Set(lines).count == lines.count, "journal log printed a line twice")

        // Every client holds exactly those events after its last catch-up, and was told so.
        for (client, relayHave) in zip(outcome.clients, outcome.relayHave) {
            let state = client.snapshot
            #expect(relayHave != nil, "\(client.name) was not caught up")
            let holdsAll = relayHave.map { state.have.containsAll($0) } ?? false
            #expect(holdsAll, "\(client.name) lacks part of what caughtUp named")
            let held = Set(state.events.values)
            let (extra, missing) = (held.subtracting(lines).count, Set(lines).subtracting(held).count)
            #expect(extra == 0 && missing == 0, "\(client.name): \(extra) events not in the journal, \(missing) of the journal's missing")
        }

        // Point by point: how often the journal holds each point the clients drew.
        var held: [RelayCrashCampaign.PointKey: Int] = [:]
        var ends: [StrokeID: Int] = [:]
        for line in lines {
            for payload in try LineParser.parse(line) {
                switch payload {
                case .point(let sample): held[.init(stroke: sample.stroke, index: Int(sample.x)), default: 0] += 1
                case .end(let stroke): ends[stroke, default: 0] += 1
                default: Issue.record("an event no client drew: \(line)")
                }
            }
        }
        var drawn = 0, missing = 0, duplicates = 0, unexplained = 0, unacknowledgedAtLoss = 0
        var duplicatesPerStroke: [StrokeID: Int] = [:]
        for (number, client) in outcome.clients.enumerated() {
            let state = client.snapshot
            unacknowledgedAtLoss += state.unacknowledgedAtLoss.values.reduce(0, +)
            for (frame, point) in campaign.frames(client: number).points.enumerated() {
                guard let point else { continue }
                drawn += 1
                let copies = held[point] ?? 0
                if copies == 0 { missing += 1 }
                let extra = max(0, copies - 1)
                duplicates += extra
                duplicatesPerStroke[point.stroke, default: 0] += extra
                // Each extra copy needs a loss that left this frame unacknowledged (recorded,
                // its ack lost, then resent).
                if extra > state.unacknowledgedAtLoss[frame, default: 0] { unexplained += 1 }
            }
        }
        #expect(missing == 0, "\(missing) acknowledged points are not in the journal")
        #expect(unexplained == 0, "\(unexplained) points are duplicated more often than they were unacknowledged at a lost connection")
        #expect(held.values.reduce(0, +) == drawn + duplicates, "the journal holds points no client drew")
        #expect(ends.count == settings.clients * settings.strokesPerClient)

        // The drawing: each stroke ended, with its points plus exactly its duplicates.
        let strokes = try JournalProcess.run(["strokes", "-C", journal])
        #expect(strokes.status == 0, "\(strokes.stderr)")
        let drawing = try JSONSerialization.jsonObject(with: Data(strokes.stdout.utf8)) as? [String: Any]
        let reconstructed = drawing?["strokes"] as? [[String: Any]] ?? []
        #expect(reconstructed.count == settings.clients * settings.strokesPerClient)
        for stroke in reconstructed {
            let id = (stroke["id"] as? String).flatMap { StrokeID(uuidString: $0) }
            let points = (stroke["points"] as? [Any])?.count ?? -1
            let expected = settings.pointsPerStroke + (id.flatMap { duplicatesPerStroke[$0] } ?? 0)
            #expect(points == expected && stroke["ended"] as? Bool == true, "stroke \(id?.uuidString ?? "?"): \(points) points, expected \(expected)")
        }

        let lost = outcome.clients.map { $0.snapshot.lost }
        print("""
            relay crash (seed \(settings.seed)): \(outcome.kills) kills (\(outcome.killsWithFramesInFlight) with frames in flight), \
            \(settings.clients) clients lost \(lost) connections; \(drawn) points drawn, \(lines.count) events in the journal; \
            \(unacknowledgedAtLoss) frames unacknowledged at a lost connection, \(duplicates) duplicate points \
            (\(duplicatesPerStroke.values.filter { $0 > 0 }.count) strokes), \(unexplained) unexplained; \(String(format: "%.1f", outcome.seconds)) s
            """)
    }
}
}
