import Foundation
import JournalFormat
import JournalIngest
import JournalTestSupport
import JournalWire
import Testing

/// What an operator reads: `GET /metrics` counts what the relay did (connections, acks,
/// refusals by code) and `GET /healthz` says whether it serves.
@Suite(.serialized) struct MetricsTests {
    typealias RunningRelay = RelayServerTests.RunningRelay

    /// The value of the first sample whose line starts with `prefix` (name and labels).
    static func sample(_ metrics: String, _ prefix: String) -> Double? {
        for line in metrics.split(separator: "\n") where line.hasPrefix(prefix + " ") {
            return Double(line.dropFirst(prefix.count + 1))
        }
        return nil
    }

    @Test func metricsCountConnectionsAcksAndRefusalsByCode() async throws {
        let temp = TemporaryDirectory("relay-metrics")
        defer { temp.remove() }
        let beforeStart = Date().timeIntervalSince1970
        let running = try await RunningRelay.start(data: temp.path + "/boards")
        let before = try await PlainHTTP.get(port: running.port, path: "/metrics")
        // The start time, to the second: how a restart shows (counters alone go back to 0).
        let started = Self.sample(before.text, "strokejournal_relay_start_time_seconds")
        #expect(started.map { $0 >= beforeStart.rounded(.down) && $0 <= Date().timeIntervalSince1970 + 1 } == true, "\(before.text)")
        #expect(before.status == 200 && before.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(Self.sample(before.text, "strokejournal_boards_open") == 0)
        #expect(before.text.contains("# TYPE strokejournal_events_acknowledged_total counter"))

        let client = RelayTestClient(port: running.port, board: "wall")
        for index in 1...3 {
            client.send(CanonicalJSON.line(for: .point(PointSample(
                stroke: StrokeID(UUIDBits(high: 5, low: 6)), x: Double(index), y: 1, pressure: nil, t: nil,
                style: Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2)))))
        }
        _ = try await client.collect(until: { if case .ack(3) = $0 { true } else { false } })
        // A name no board can have: refused with its code.
        let refused = RelayTestClient(port: running.port, board: "no.such")
        refused.send(#"{"type":"hello"}"#)
        guard case .error(nil, .invalidBoardName, _)? = try await refused.next() else {
            Issue.record("the bad name was not refused with its code")
            return
        }
        let after = try await PlainHTTP.get(port: running.port, path: "/metrics").text
        #expect(Self.sample(after, "strokejournal_boards_open") == 1, "\(after)")
        #expect(Self.sample(after, "strokejournal_connections") == 1, "\(after)")
        #expect(Self.sample(after, "strokejournal_events_acknowledged_total") == 3, "\(after)")
        #expect(Self.sample(after, #"strokejournal_refusals_total{code="invalid-board-name"}"#) == 1, "\(after)")
        #expect(Self.sample(after, "strokejournal_connections_opened_total") == 1, "\(after)")
        #expect(Self.sample(after, "strokejournal_relay_start_time_seconds") == started)
        // Every ack round of the text client is one sample of the local-ack latency histogram
        // (at least one round for three frames; each within the last bucket).
        let rounds = Self.sample(after, #"strokejournal_ack_seconds_count{mode="local"}"#) ?? 0
        #expect(rounds >= 1 && rounds <= 3, "\(after)")
        #expect(Self.sample(after, #"strokejournal_ack_seconds_bucket{mode="local",le="+Inf"}"#) == rounds)
        #expect(Self.sample(after, #"strokejournal_ack_seconds_count{mode="shared"}"#) == 0)
        #expect(after.contains("# TYPE strokejournal_ack_seconds histogram"))
        // Three point lines and a hello in; a caught-up, acks and echoes out.
        #expect((Self.sample(after, "strokejournal_bytes_received_total") ?? 0) >= 3 * 100, "\(after)")
        #expect((Self.sample(after, "strokejournal_bytes_sent_total") ?? 0) > 0, "\(after)")

        let health = try await PlainHTTP.get(port: running.port, path: "/healthz")
        #expect(health.status == 200 && health.text == "ok\n")
        client.close()
        refused.close()
        await running.stop()
    }
}
