import Foundation
import JournalTestSupport
import Testing

/// `journal token` as an operator uses it: mint (text and --json), inspect, revoke, rotate, and
/// clear errors for what it cannot do.
@Suite(.ownThreads) struct TokenCLITests {
    let cli = CLITests()

    @Test func mintInspectRevokeAndRotate() throws {
        let temp = TemporaryDirectory("cli-token")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let minted = try cli.journal(["token", "--data", data, "--board", "team-*", "--scope", "view", "--ttl", "2h", "--json"])
        #expect(minted.status == 0, "\(minted.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(minted.stdout.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["token", "id", "scope", "boards", "expires"])
        let token = try #require(object["token"] as? String)
        let id = try #require(object["id"] as? String)
        #expect(object["scope"] as? String == "view" && object["boards"] as? String == "team-*")
        let expires = try #require(object["expires"] as? Int)
        let now = Int(Date().timeIntervalSince1970)
        #expect(abs(expires - (now + 7200)) < 120)
        #expect(token.hasPrefix("sjt1.\(id).view.team-*.\(expires)."))
        // The key is the owner's only, and never printed.
        let attributes = try FileManager.default.attributesOfItem(atPath: data + "/.relay/token-key")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)

        let inspected = try cli.journal(["token", "--inspect", token])
        #expect(inspected.status == 0 && inspected.stdout.contains("scope view") && inspected.stdout.contains(id))

        #expect(try cli.journal(["token", "--data", data, "--revoke", id]).status == 0)
        let revoked = try String(contentsOfFile: data + "/.relay/revoked-tokens", encoding: .utf8)
        #expect(revoked.contains(id + "\n"))
        let keyBefore = try Data(contentsOf: URL(fileURLWithPath: data + "/.relay/token-key"))
        #expect(try cli.journal(["token", "--data", data, "--rotate-key"]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: data + "/.relay/token-key")) != keyBefore)
    }

    @Test func badRequestsAreRefusedWithTheReason() throws {
        let temp = TemporaryDirectory("cli-token-bad")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let cases: [([String], String)] = [
            (["token", "--data", data, "--board", "b", "--scope", "owner"], "view, draw or admin"),
            (["token", "--data", data, "--board", "b", "--ttl", "forever"], "--ttl"),
            (["token", "--data", data, "--board", "a/b"], "board pattern"),
            (["token", "--data", data, "--revoke", "xyz"], "16 lowercase hex"),
            (["token", "--inspect", "eyJhbGciOi.x.y"], "not a StrokeJournal token"),
            (["token", "--board", "b"], "--data"),
            (["token", "--data", data], "say one of"),
        ]
        for (arguments, reason) in cases {
            let run = try cli.journal(arguments)
            #expect(run.status != 0 && run.stderr.contains(reason), "\(arguments): \(run.status) \(run.stderr)")
        }
    }
}
