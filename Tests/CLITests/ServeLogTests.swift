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

    /// Serves `data` at `level`, joins board "poster" once with a token and once without, stops
    /// the relay with SIGTERM, and returns what it printed: its address on stdout, its log on
    /// stderr.
    func serveAndJoin(data: String, level: String) async throws -> (stdout: String, stderr: String) {
        let relay = try JournalProcess.Child(["serve", "--port", "0", "--data", data, "--log-level", level], label: "serve-log")
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
        let token = try cli.journal(["token", "--data", data, "--board", "poster", "--scope", "admin", "--ttl", "1h"])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let joined = try cli.journal(["join", "ws://127.0.0.1:\(port)/boards/poster/ws", "--timeout", "60"], environment: ["JOURNAL_TOKEN": token])
        #expect(joined.status == 0, "\(joined.stderr)")
        // The drawing page's address, as copied from a browser, joins the same board (its
        // fragment, a token in it, is left out: the token comes from the environment).
        let page = try cli.journal(["join", "http://127.0.0.1:\(port)/boards/poster#token=\(token)", "--timeout", "60"],
                                   environment: ["JOURNAL_TOKEN": token])
        #expect(page.status == 0 && page.stdout.split(separator: "\n").first == joined.stdout.split(separator: "\n").first, "\(page.stderr)")
        // A name no board can have is refused before anything connects.
        for bad in ["bad!name", "a%20b", "a.b"] {
            let refusedName = try cli.journal(["join", "http://127.0.0.1:\(port)/boards/\(bad)", "--timeout", "60"])
            #expect(refusedName.status == 64 && refusedName.stderr.contains("invalid board name"), "\(bad): \(refusedName.stderr)")
        }
        // Refused by the relay (no token): the connection it refused is logged.
        let refused = try cli.journal(["join", "ws://127.0.0.1:\(port)/boards/poster/ws", "--timeout", "60"], environment: ["JOURNAL_TOKEN": ""])
        #expect(refused.status == 74 && refused.stderr.contains("needs a token"), "\(refused.stderr)")
        let stopped = await relay.stop(with: SIGTERM)
        // What it was doing, should it not have stopped: its log's end.
        #expect(stopped == 0, "journal serve did not stop within 30 s of SIGTERM; its log ends: \(relay.stderr.suffix(3000))")
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

    /// A port another program holds is named, with what to do (it printed the socket
    /// library's `bind(descriptor:ptr:bytes:) … (errno: 98)`).
    @Test func aPortInUseIsSaidSo() throws {
        let listener = SilentListener()
        #expect(listener.port != 0)
        let temp = TemporaryDirectory("serve-port-in-use")
        defer { temp.remove() }
        let run = try cli.journal(["serve", "--port", "\(listener.port)", "--data", temp.path + "/boards", "--open"])
        #expect(run.status == 74 && run.stderr.contains("port \(listener.port) on 127.0.0.1 is in use"), "\(run.stderr)")
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
