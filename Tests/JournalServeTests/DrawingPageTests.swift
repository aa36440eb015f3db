import JournalRelay
import JournalServe
import JournalTestSupport
import Testing

/// The drawing page over real HTTP on 127.0.0.1 (what it does in a browser:
/// Tools/page-test/page_test.py, run by CI).
@Suite(.serialized) struct DrawingPageTests {
    @Test func aBoardsPageIsServedAsHTMLWithNothingFromElsewhere() async throws {
        let temp = TemporaryDirectory("relay-page")
        defer { temp.remove() }
        let running = try await RelayServerTests.RunningRelay.start(data: temp.path + "/boards")

        let reply = try await PlainHTTP.get(port: running.port, path: "/boards/team-7_Poster")
        #expect(reply.status == 200)
        #expect(reply.headers["content-type"] == "text/html; charset=utf-8")
        #expect(reply.text == DrawingPage.html)
        #expect(reply.text.hasPrefix("<!doctype html>"))
        #expect(reply.text.contains("window.strokeJournalState"))
        // Offline machines and no build step: no script, style or image is fetched from
        // anywhere; the only addresses are the board's own socket.
        #expect(!reply.text.contains("src="))
        #expect(!reply.text.contains("href="))
        #expect(!reply.text.contains("@import"))
        let schemes = reply.text.split(separator: "://", omittingEmptySubsequences: false).dropLast().map { String($0.suffix(4)) }
        #expect(schemes.allSatisfy { $0.hasSuffix("'ws") || $0.hasSuffix("wss") }, "addresses: \(schemes)")
        // Serving the page does not create the board: its socket does.
        #expect(running.relay.openBoards.isEmpty)
        await running.stop()
    }

    @Test(arguments: ["a.b", "%2E%2E", "..", String(repeating: "x", count: 65), "caf%C3%A9"])
    func aNameThatIsNoBoardIsRefusedWithItsReason(name: String) async throws {
        let temp = TemporaryDirectory("relay-page-bad-name")
        defer { temp.remove() }
        let running = try await RelayServerTests.RunningRelay.start(data: temp.path + "/boards")

        let reply = try await PlainHTTP.get(port: running.port, path: "/boards/" + name)
        #expect(reply.status == 400, "GET /boards/\(name): \(reply.status)")
        #expect(reply.headers["content-type"]?.hasPrefix("text/plain") == true)
        #expect(reply.text.hasPrefix("invalid board name"), "body: \(reply.text)")
        #expect(reply.text.filter { $0 == "\n" }.count == 1, "one line: \(reply.text)")
        #expect(running.relay.openBoards.isEmpty)
        await running.stop()
    }

    @Test func aPathBelowABoardIsNotFound() async throws {
        let temp = TemporaryDirectory("relay-page-deep")
        defer { temp.remove() }
        let running = try await RelayServerTests.RunningRelay.start(data: temp.path + "/boards")
        let reply = try await PlainHTTP.get(port: running.port, path: "/boards/a/b")
        #expect(reply.status == 404)
        #expect(!reply.text.contains("<html"))
        await running.stop()
    }
}
