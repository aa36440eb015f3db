import JournalRelay
import JournalServe
import JournalTestSupport
import Testing

/// The drawing page over real HTTP on 127.0.0.1 (what it does in a browser:
/// Tools/ci/page-test/page_test.py, run by CI).
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
        // Offline machines and no build step: what the page loads comes from the relay itself,
        // by paths of its own origin; the only other addresses are the board's own socket.
        // Besides its files, the page links to the relay's front page (the board list).
        var loaded = Self.references(in: reply.text).filter { $0 != "/" }
        #expect(Self.references(in: reply.text).contains("/"))
        #expect(Set(loaded) == ["/assets/board.css", "/assets/segment-reader.js", "/assets/board.mjs"])
        var served = ""
        var fetched: Set<String> = []
        while let path = loaded.popLast() {
            guard fetched.insert(path).inserted else { continue }
            let asset = try await PlainHTTP.get(port: running.port, path: path)
            #expect(asset.status == 200, "GET \(path): \(asset.status)")
            // A module is refused by a browser unless it is served as JavaScript.
            #expect(asset.headers["content-type"]?.hasPrefix(path.hasSuffix(".css") ? "text/css" : "text/javascript") == true)
            #expect(asset.text == DrawingPage.assets[String(path.dropFirst("/assets/".count))]?.text)
            served += asset.text
            loaded += Self.moduleImports(in: asset.text)
        }
        // Every module the relay serves is one the page loads, and the other way round.
        let modules = Set(DrawingPage.assets.keys.filter { $0.hasSuffix(".mjs") }.map { "/assets/" + $0 })
        #expect(modules.count == 10)
        #expect(modules.isSubset(of: fetched))
        #expect(served.contains("window.strokeJournalState"))
        #expect(served.contains("new Worker('/assets/segment-worker.js')"))
        #expect(!served.contains("@import"))
        // The SVG namespace names a vocabulary, nothing fetched.
        let text = (reply.text + served).replacing("xmlns=\"http://www.w3.org/2000/svg\"", with: "")
        let schemes = text.split(separator: "://", omittingEmptySubsequences: false).dropLast().map { String($0.suffix(4)) }
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

    /// The modules a module imports (`from './x.mjs'`), as paths under /assets/.
    static func moduleImports(in script: String) -> [String] {
        script.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("import "), line.hasSuffix("';"), let from = line.firstRange(of: "from './") else { return nil }
            return "/assets/" + line[from.upperBound...].dropLast(2)
        }
    }

    /// The `src` and `href` values of an HTML text.
    static func references(in html: String) -> [String] {
        let parts = html.split(separator: "\"", omittingEmptySubsequences: false)
        return parts.indices.dropFirst().compactMap { index in
            parts[index - 1].hasSuffix("src=") || parts[index - 1].hasSuffix("href=") ? String(parts[index]) : nil
        }
    }

    @Test func everyAssetThePageNamesIsServedAndNoOtherName() async throws {
        let temp = TemporaryDirectory("relay-page-assets")
        defer { temp.remove() }
        let running = try await RelayServerTests.RunningRelay.start(data: temp.path + "/boards")
        let worker = try #require(DrawingPage.assets["segment-worker.js"])
        #expect(worker.text.contains("importScripts('/assets/segment-reader.js')"))
        for name in ["nothing.js", "..%2FPackage.swift", "board.html"] {
            let reply = try await PlainHTTP.get(port: running.port, path: "/assets/" + name)
            #expect(reply.status == 404, "GET /assets/\(name): \(reply.status)")
        }
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
