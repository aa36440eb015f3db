import Foundation
import JournalTestSupport
import Testing

/// `journal status` is a status: this machine's replica marked, ranges and
/// gaps, the last sync, and exit 1 when something is wrong.
@Suite(.ownThreads) struct StatusTests {
    let cli = CLITests()

    @Test func statusMarksThisJournalAndFailsOnDamage() throws {
        let temp = TemporaryDirectory("status")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        #expect(try cli.journal(["record", "-C", board], stdin: CLITests.sample).status == 0)
        let replica = try String(contentsOfFile: board + "/local/replica", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)

        let healthy = try cli.journal(["status", "-C", board])
        #expect(healthy.status == 0, "\(healthy.stdout)\(healthy.stderr)")
        #expect(healthy.stdout.contains("\(replica.prefix(12))… (this journal)  1 segment, 8 events, seq 1...8"), "\(healthy.stdout)")
        #expect(healthy.stdout.contains("last sync that moved segments: never"))
        #expect(!healthy.stdout.contains("imported"))

        let shared = temp.path + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        #expect(try cli.journal(["sync", "-C", board, shared]).status == 0)
        let json = try cli.journal(["status", "-C", board, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["ok"] as? Bool == true && object["replica"] as? String == replica)
        let replicas = try #require(object["replicas"] as? [[String: Any]])
        #expect(replicas.count == 1 && replicas[0]["thisJournal"] as? Bool == true)
        let last = try #require(object["lastSync"] as? [String: Any])
        #expect(last["target"] as? String == shared && last["published"] as? Int == 1)

        // One flipped byte in the middle of the sealed segment.
        let folder = board + "/replicas/" + replica
        let file = folder + "/" + (try FileManager.default.contentsOfDirectory(atPath: folder).first { $0.hasSuffix(".sjs") }!)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        bytes[bytes.count / 2] ^= 0x20
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let damaged = try cli.journal(["status", "-C", board])
        #expect(damaged.status == 1, "\(damaged.stdout)")
        #expect(damaged.stdout.contains("problem: ") && damaged.stdout.contains("needs attention"))
    }
}
