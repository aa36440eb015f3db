import Foundation
import JournalTestSupport
import Testing

/// `--json` wherever a summary is printed, stable keys; `log --stroke` by prefix; verify and
/// stats count segments alike. Through the built binary.
@Suite(.ownThreads) struct JSONOutputTests {
    let cli = CLITests()

    func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func summariesComeAsJSONWhenAsked() throws {
        let temp = TemporaryDirectory("cli-json")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        let record = try object(try cli.journal(["record", "-C", board, "--json"], stdin: CLITests.sample).stdout)
        #expect(record["events"] as? Int == 8 && record["points"] as? Int == 5 && record["strokes"] as? Int == 3)
        #expect(record["firstSeq"] as? Int == 1 && record["lastSeq"] as? Int == 8 && record["skipped"] as? Int == 0)
        let digest = try object(try cli.journal(["digest", "-C", board, "--json"]).stdout)
        #expect((digest["digest"] as? String)?.count == 64 && digest["events"] as? Int == 8)
        #expect(digest["digest"] as? String == (try cli.journal(["digest", "-C", board]).stdout).trimmingCharacters(in: .newlines))
        let snapshot = try object(try cli.journal(["snapshot", "-C", board, "--json"]).stdout)
        #expect(snapshot["events"] as? Int == 8 && (snapshot["bytes"] as? Int ?? 0) > 0)
        // Already JSON: the flag is accepted and changes nothing.
        #expect(try cli.journal(["strokes", "-C", board, "--json"]).stdout == (try cli.journal(["strokes", "-C", board]).stdout))
        #expect(try cli.journal(["log", "-C", board, "--json"]).stdout == (try cli.journal(["log", "-C", board]).stdout))
    }

    @Test func logTakesAStrokePrefixAndSegmentsAreCountedAlike() throws {
        let temp = TemporaryDirectory("cli-prefix")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        #expect(try cli.journal(["record", "-C", board, "--no-seal"], stdin: CLITests.sample).status == 0)
        let full = try cli.journal(["log", "-C", board, "--stroke", "A0000000-0000-4000-8000-00000000000B"])
        let prefix = try cli.journal(["log", "-C", board, "--stroke", "a0000000"])
        #expect(prefix.status == 0 && prefix.stdout == full.stdout && full.stdout.split(separator: "\n").count == 2)
        let none = try cli.journal(["log", "-C", board, "--stroke", "FFFF"])
        #expect(none.status == 64 && none.stderr.contains("no stroke in this journal starts with"))
        // Unsealed events: both commands say 0 sealed + 1 open.
        let verify = try object(try cli.journal(["verify", "-C", board, "--json"]).stdout)
        let stats = try object(try cli.journal(["stats", "-C", board, "--json"]).stdout)
        #expect(verify["sealedSegments"] as? Int == stats["sealedSegments"] as? Int)
        #expect(verify["openSegments"] as? Int == stats["openSegments"] as? Int)
        #expect(verify["openSegments"] as? Int == 1)
        #expect(try cli.journal(["verify", "-C", board]).stdout.contains("clean: 0 sealed + 1 open segment, 8 events"))
    }
}
