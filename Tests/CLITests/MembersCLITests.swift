import Foundation
import JournalTestSupport
import Testing

/// `journal members` as a team uses it: Alice gives the board membership and grants Bob; the
/// statements travel with `journal sync`, so Bob's machine, with no local list, applies exactly
/// what Alice's does; Carol, never granted, is quarantined everywhere.
@Suite(.ownThreads) struct MembersCLITests {
    let cli = CLITests()

    func lines(_ text: String) -> Int { text.split(separator: "\n").count }
    func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func membershipTravelsWithTheBoardAndDecidesWhatCountsEverywhere() throws {
        let temp = TemporaryDirectory("cli-members")
        defer { temp.remove() }
        let (alice, bob, carol, shared) = (temp.path + "/alice", temp.path + "/bob", temp.path + "/carol", temp.path + "/shared")
        for journal in [alice, bob, carol] {
            #expect(try cli.journal(["init", journal]).status == 0)
            #expect(try cli.journal(["record", "-C", journal], stdin: CLITests.sample).status == 0)
        }
        let perJournal = lines(try cli.journal(["log", "-C", alice]).stdout)
        let bobKey = try cli.journal(["trust", "key", "-C", bob]).stdout.trimmingCharacters(in: .newlines)
        let carolKey = try cli.journal(["trust", "key", "-C", carol]).stdout.trimmingCharacters(in: .newlines)

        let open = try object(try cli.journal(["members", "list", "-C", alice, "--json"]).stdout)
        #expect(open["open"] as? Bool == true)

        let created = try cli.journal(["members", "init", "-C", alice, "--label", "Alice"])
        #expect(created.status == 0, "\(created.stderr)")
        let granted = try cli.journal(["members", "grant", "-C", alice, bobKey, "--role", "draw", "--label", "Bob"])
        #expect(granted.status == 0, "\(granted.stderr)")
        #expect(try cli.journal(["sync", "-C", alice, shared, "--create"]).status == 0)
        for journal in [bob, carol] { #expect(try cli.journal(["sync", "-C", journal, shared]).status == 0) }
        for journal in [alice, bob] { #expect(try cli.journal(["sync", "-C", journal, shared]).status == 0) }

        // Bob's machine has no list and no pin: the synced statements alone decide.
        for journal in [alice, bob] {
            #expect(lines(try cli.journal(["log", "-C", journal]).stdout) == 2 * perJournal)
            let verify = try cli.journal(["verify", "-C", journal])
            #expect(verify.status == 1 && verify.stdout.contains("membership does not count"))
        }
        let digests = try [alice, bob, carol].map { try cli.journal(["digest", "-C", $0]).stdout }
        #expect(digests[0] == digests[1] && digests[1] == digests[2])

        let listed = try object(try cli.journal(["members", "list", "-C", bob, "--json"]).stdout)
        let members = try #require(listed["members"] as? [[String: Any]])
        #expect(listed["open"] as? Bool == false && members.count == 2)
        #expect(members.contains { $0["key"] as? String == bobKey && $0["role"] as? String == "draw" && $0["label"] as? String == "Bob" })
        #expect(!members.contains { $0["key"] as? String == carolKey })

        // History names the people; status says who decides, the same way on both machines.
        let history = try cli.journal(["history", "-C", bob, "--json"]).stdout
        #expect(history.contains("\"label\":\"Bob\"") && history.contains("\"label\":\"Alice\""))
        for journal in [alice, bob] {
            let status = try object(try cli.journal(["status", "-C", journal, "--json"]).stdout)
            let access = try #require(status["access"] as? [String: Any])
            #expect(access["mode"] as? String == "membership" && access["activeMembers"] as? Int == 2)
        }

        // Bob is no admin: his grant is refused before anything is written.
        let refused = try cli.journal(["members", "grant", "-C", bob, carolKey, "--role", "draw"])
        #expect(refused.status == 1 && refused.stderr.contains("not an active admin"))

        // Revoked, Bob's later strokes count nowhere.
        #expect(try cli.journal(["members", "revoke", "-C", alice, bobKey]).status == 0)
        #expect(try cli.journal(["record", "-C", bob], stdin: CLITests.sample).status == 0)
        for journal in [bob, alice, bob] { #expect(try cli.journal(["sync", "-C", journal, shared]).status == 0) }
        #expect(lines(try cli.journal(["log", "-C", alice]).stdout) == 2 * perJournal)
        #expect(try cli.journal(["digest", "-C", alice]).stdout == (try cli.journal(["digest", "-C", bob]).stdout))
        let again = try cli.journal(["members", "grant", "-C", alice, bobKey, "--role", "draw"])
        #expect(again.status == 1 && again.stderr.contains("never be a member again"))

        // Bob's machine pinned the board it adopted: Mallory's rival genesis, planted in the shared
        // folder, takes over neither machine, and both say so.
        #expect(FileManager.default.fileExists(atPath: bob + "/local/board"))
        let mallory = temp.path + "/mallory"
        #expect(try cli.journal(["init", mallory]).status == 0)
        #expect(try cli.journal(["members", "init", "-C", mallory, "--label", "Mallory"]).status == 0)
        for journal in [mallory, alice, bob] { #expect(try cli.journal(["sync", "-C", journal, shared]).status == 0) }
        for journal in [alice, bob] {
            let members = try object(try cli.journal(["members", "list", "-C", journal, "--json"]).stdout)
            #expect(members["founder"] as? String == listed["founder"] as? String && members["founder"] != nil)
            #expect(try cli.journal(["verify", "-C", journal]).stdout.contains("another board"))
        }
        #expect(try cli.journal(["digest", "-C", alice]).stdout == (try cli.journal(["digest", "-C", bob]).stdout))

        // Dave meets the board only now, with two geneses in the folder: nothing tells him the
        // real one, so he pins none and every read says so, until he pins the one Alice names.
        let dave = temp.path + "/dave"
        #expect(try cli.journal(["init", dave]).status == 0)
        #expect(try cli.journal(["sync", "-C", dave, shared]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: dave + "/local/board"))
        #expect(try cli.journal(["verify", "-C", dave]).stdout.contains("rival geneses"))
        let board = try #require(listed["board"] as? String)
        let pinned = try cli.journal(["members", "pin", "-C", dave, board])
        #expect(pinned.status == 0, "\(pinned.stderr)")
        #expect(try cli.journal(["digest", "-C", dave]).stdout == (try cli.journal(["digest", "-C", alice]).stdout))
        let wrong = try cli.journal(["members", "pin", "-C", dave, String(repeating: "0", count: 32)])
        #expect(wrong.status == 1 && wrong.stderr.contains("holds no genesis"))
    }

    @Test func badArgumentsAreRefusedWithWhatIsWrong() throws {
        let temp = TemporaryDirectory("cli-members-bad")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        let role = try cli.journal(["members", "grant", "-C", board, String(repeating: "a", count: 64), "--role", "owner"])
        #expect(role.status == 64 && role.stderr.contains("view, draw, relay or admin"))
        let early = try cli.journal(["members", "grant", "-C", board, String(repeating: "a", count: 64), "--role", "draw"])
        #expect(early.status == 1 && early.stderr.contains("members init"))
        let keyFile = temp.path + "/admin.key"
        let made = try cli.journal(["members", "keygen", keyFile])
        #expect(made.status == 0 && made.stdout.trimmingCharacters(in: .newlines).count == 64)
        #expect(try cli.journal(["members", "keygen", keyFile]).status != 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let created = try cli.journal(["members", "init", "-C", board, "--key", keyFile])
        #expect(created.status == 0, "\(created.stderr)")
        try "not a key\n".write(toFile: temp.path + "/bad.key", atomically: false, encoding: .utf8)
        let bad = try cli.journal(["members", "grant", "-C", board, String(repeating: "b", count: 64), "--role", "view", "--key", temp.path + "/bad.key"])
        #expect(bad.status == 65 && bad.stderr.contains("bad.key"))
        #expect(try cli.journal(["members", "--help"]).stdout.contains("Examples:"))
    }
}
