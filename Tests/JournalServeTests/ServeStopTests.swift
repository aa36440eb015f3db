#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import JournalTestSupport
import Testing

/// `journal serve` stops on SIGTERM whatever its clients do: it closes every connection itself
/// (telling each client `unavailable`), so the server's graceful shutdown, which waits for its
/// connections, does not wait for a client that never answers the close frame (it did, for
/// good: the relay campaign's relays were killed after 60 s).
@Suite struct ServeStopTests {
    @Test func sigtermStopsARelayWhoseClientNeverAnswers() async throws {
        let temp = TemporaryDirectory("serve-stop")
        defer { temp.remove() }
        let relay = try JournalProcess.Child(["serve", "--port", "0", "--data", temp.path + "/boards", "--open", "--log-level", "info"], label: "serve-stop")
        var port: Int?
        _ = await eventually(within: 120) {
            port = relay.stdout.firstRange(of: "ws://127.0.0.1:").flatMap { Int(relay.stdout[$0.upperBound...].prefix { $0.isNumber }) }
            return port != nil || !relay.process.isRunning
        }
        let listening = try #require(port, "journal serve did not start: \(relay.stderr)")
        // A client that joins (a hello), then never reads again nor closes.
        let socket = try PlainHTTP.openNonReadingWebSocket(port: listening, path: "/boards/wall/ws", text: #"{"type":"hello"}"#)
        defer { close(socket) }
        #expect(await eventually(within: 120) { relay.stderr.contains("connection opened") }, "\(relay.stderr)")
        #expect(await relay.stop(with: SIGTERM, seconds: 120) == 0, "still running after SIGTERM: \(relay.stderr)")
        #expect(relay.stderr.contains("stopping: sealing and closing every open board") && relay.stderr.contains("stopped"))
    }
}
