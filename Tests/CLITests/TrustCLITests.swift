import Foundation
import JournalTestSupport
import Testing

/// `journal trust` as two people use it: Alice prints her key, Bob trusts it, a third journal's
/// segments synced into Bob's are quarantined (reported by `verify`, absent from `log`) until Bob
/// trusts that key too or deletes his list.
@Suite(.ownThreads) struct TrustCLITests {
    let cli = CLITests()

    func lines(_ text: String) -> Int { text.split(separator: "\n").count }

    @Test func aJournalWithAListAppliesOnlyTheKeysItTrusts() throws {
        let temp = TemporaryDirectory("cli-trust")
        defer { temp.remove() }
        let (alice, bob, carol, shared) = (temp.path + "/alice", temp.path + "/bob", temp.path + "/carol", temp.path + "/shared")
        for journal in [alice, bob, carol] { #expect(try cli.journal(["init", journal]).status == 0) }
        for journal in [alice, carol] {
            #expect(try cli.journal(["record", "-C", journal], stdin: CLITests.sample).status == 0)
            #expect(try cli.journal(["sync", "-C", journal, shared, "--create"]).status == 0)
        }
        let aliceKey = try cli.journal(["trust", "key", "-C", alice]).stdout.trimmingCharacters(in: .newlines)
        let carolKey = try cli.journal(["trust", "key", "-C", carol]).stdout.trimmingCharacters(in: .newlines)
        #expect(aliceKey.count == 64 && carolKey.count == 64 && aliceKey != carolKey)

        let open = try cli.journal(["trust", "list", "-C", bob, "--json"])
        let openObject = try #require(try JSONSerialization.jsonObject(with: Data(open.stdout.utf8)) as? [String: Any])
        #expect(Set(openObject.keys) == ["open", "own", "keys"] && openObject["open"] as? Bool == true)

        // Synced while open, folded into a snapshot: the list must still take carol out.
        #expect(try cli.journal(["sync", "-C", bob, shared]).status == 0)
        #expect(try cli.journal(["snapshot", "-C", bob]).status == 0)
        let added = try cli.journal(["trust", "add", "-C", bob, aliceKey, "--label", "alice"])
        #expect(added.status == 0, "\(added.stderr)")
        let events = lines(try cli.journal(["log", "-C", alice]).stdout)
        let verify = try cli.journal(["verify", "-C", bob])
        #expect(verify.status == 1 && verify.stdout.contains("quarantined") && verify.stdout.contains(carolKey))
        let log = try cli.journal(["log", "-C", bob])
        #expect(lines(log.stdout) == events)

        let listed = try cli.journal(["trust", "list", "-C", bob, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any])
        let keys = try #require(object["keys"] as? [[String: Any]])
        #expect(object["open"] as? Bool == false && keys.count == 1)
        #expect(keys.first?["key"] as? String == aliceKey && keys.first?["label"] as? String == "alice"
                && keys.first?["role"] as? String == "replica")

        #expect(try cli.journal(["trust", "add", "-C", bob, carolKey]).status == 0)
        #expect(try cli.journal(["verify", "-C", bob]).status == 0)
        #expect(lines(try cli.journal(["log", "-C", bob]).stdout) == 2 * events)

        #expect(try cli.journal(["trust", "remove", "-C", bob, carolKey]).status == 0)
        #expect(lines(try cli.journal(["log", "-C", bob]).stdout) == events)
        let missing = try cli.journal(["trust", "remove", "-C", bob, carolKey])
        #expect(missing.status == 1 && missing.stderr.contains("not in the trust list"))
        #expect(try cli.journal(["trust", "remove", "-C", bob, "--all"]).status == 0)
        #expect(lines(try cli.journal(["log", "-C", bob]).stdout) == 2 * events)

        // A read command says it once per key not trusted, however many files that key sealed.
        #expect(try cli.journal(["trust", "add", "-C", bob, aliceKey]).status == 0)
        #expect(try cli.journal(["record", "-C", carol], stdin: CLITests.sample).status == 0)
        #expect(try cli.journal(["sync", "-C", carol, shared]).status == 0)
        #expect(try cli.journal(["sync", "-C", bob, shared]).status == 0)
        let warned = try cli.journal(["log", "-C", bob]).stderr.split(separator: "\n").filter { $0.contains("quarantined") }
        #expect(warned.count == 1 && warned.first?.contains("segments quarantined (") == true && warned.first?.contains(carolKey) == true,
                "\(warned)")
    }

    @Test func badKeysAndListsAreRefusedWithWhatIsWrong() throws {
        let temp = TemporaryDirectory("cli-trust-bad")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        let short = try cli.journal(["trust", "add", "-C", board, "abc"])
        #expect(short.status != 0 && short.stderr.contains("64 hex digits"))
        let both = try cli.journal(["trust", "remove", "-C", board])
        #expect(both.status != 0 && both.stderr.contains("--all"))
        // A list damaged by hand: every reader says which line, and trusts only the journal itself.
        try "strokejournal-trust v1\nnot-a-key replica\n".write(toFile: board + "/local/trust", atomically: false, encoding: .utf8)
        let list = try cli.journal(["trust", "list", "-C", board])
        #expect(list.status != 0 && list.stderr.contains("local/trust:2"))
        #expect(try cli.journal(["trust", "add", "--help"]).stdout.contains("Example"))
        // A journal without a key could not tell its own sealed segments from forgeries.
        let keyless = temp.path + "/keyless"
        #expect(try cli.journal(["init", keyless]).status == 0)
        try FileManager.default.removeItem(atPath: keyless + "/local/replica.key")
        let refused = try cli.journal(["trust", "add", "-C", keyless, String(repeating: "ab", count: 32)])
        #expect(refused.status == 1 && refused.stderr.contains("has no key"))
        #expect(!FileManager.default.fileExists(atPath: keyless + "/local/trust"))
    }
}
