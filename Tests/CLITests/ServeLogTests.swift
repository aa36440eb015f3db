#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import JournalTestSupport
import Testing

/// `journal serve` says what it does through swift-log, at the level `--log-level` asks for:
/// connections and boards opened and closed (info), its stop (notice).
@Suite(.ownThreads) struct ServeLogTests {
    let cli = CLITests()

    /// Serves `data` at `level`, joins board "poster" once and a name no board can have, stops
    /// the relay with SIGTERM, and returns what it printed: its address on stdout, its log on
    /// stderr.
    func serveAndJoin(data: String, level: String) async throws -> (stdout: String, stderr: String) {
        let relay = try JournalProcess.Child(["serve", "--port", "0", "--open", "--data", data, "--log-level", level], label: "serve-log")
        var port: String?
        _ = await eventually(within: 120) {
            // "journal: serving DIR on ws://127.0.0.1:PORT/boards/<board>/ws, …"
            port = relay.stdout.firstRange(of: "ws://127.0.0.1:").map { String(relay.stdout[$0.upperBound...].prefix { $0.isNumber }) }
            return port != nil || !relay.process.isRunning
        }
        guard let port else {
            Issue.record("journal serve did not start: \(relay.stderr)")
            return ("", "")
        }
        let joined = try cli.journal(["join", "ws://127.0.0.1:\(port)/boards/poster/ws", "--timeout", "60"])
        #expect(joined.status == 0, "\(joined.stderr)")
        let refused = try cli.journal(["join", "ws://127.0.0.1:\(port)/boards/a.b/ws", "--timeout", "60"])
        #expect(refused.status == 74 && refused.stderr.contains("invalid board name"), "\(refused.stderr)")
        #expect(await relay.stop(with: SIGTERM) == 0)
        return (relay.stdout, relay.stderr)
    }

    @Test func atInfoConnectionsBoardsAndTheStopAreLogged() async throws {
        let temp = TemporaryDirectory("serve-log-info")
        defer { temp.remove() }
        let said = try await serveAndJoin(data: temp.path + "/boards", level: "info").stderr
        for expected in ["board=poster [JournalServe] board opened", "[JournalServe] connection opened",
                         "why=the client closed it [JournalServe] connection closed", "[JournalServe] connection refused",
                         "why=the relay stops [JournalServe] board closed", "[JournalServe] stopped"] {
            #expect(said.contains(expected), "\(expected) not in: \(said)")
        }
    }

    @Test func atWarningNothingOfTheKindIsLogged() async throws {
        let temp = TemporaryDirectory("serve-log-warning")
        defer { temp.remove() }
        let said = try await serveAndJoin(data: temp.path + "/boards", level: "warning")
        #expect(!said.stderr.contains("[JournalServe]"), "\(said.stderr)")
        // What is not the log still is there: the relay's address, for whoever started it.
        #expect(said.stdout.contains("journal: serving "))
    }
}
