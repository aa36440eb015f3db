import JournalFormat
import JournalKeys
import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalReplay
import JournalStorage
import JournalTestSupport
import JournalWire
import Testing

/// A relay board with membership (invariant 16): the board's own files say who may draw, so a
/// node that adopted the board applies them with nothing node-local; a revocation that arrives
/// closes the revoked key's connections.
@Suite struct RelayMembershipTests {
    /// A board journal whose membership an admin key kept outside it created, granting `members`.
    static func board(at path: String, admin: ReplicaKey, members: [ReplicaID]) throws {
        let journal = try JournalDirectory.create(at: path)
        let editor = MembershipEditor(journal: journal, key: admin)
        try editor.create(label: "owner")
        for member in members {
            try editor.grant(TestReplicaKeys.key(for: member).publicKey, role: .draw, label: "member")
        }
    }

    @Test func onlyMembersDrawAndARevocationClosesTheirConnections() async throws {
        let temp = TemporaryDirectory("relay-membership")
        defer { temp.remove() }
        let admin = ReplicaKey()
        let alice = TestReplicaKeys.newReplica(), mallory = TestReplicaKeys.newReplica()
        try Self.board(at: temp.path + "/team", admin: admin, members: [alice])
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(sealAfterIdleMilliseconds: 100))
        let board = try relay.board(BoardName("team"))
        #expect(board.board.membership?.isOpen == false)

        // The board's own key is no member: text-mode events (its replica's) would never count.
        let text = board.connect()
        text.goLive(caughtUp: 0)
        await text.receive(text: #"{"type":"clear"}"#)
        #expect(board.board.durableSeq == 0)

        // Nor may it host: a member's native events it stored would count nowhere.
        let early = board.connect()
        await early.receive(text: TestReplicaKeys.hello(alice))
        #expect(early.closeReason?.contains("no relay member") == true, "\(early.closeReason ?? "not refused")")

        // The admin makes the board's key a relay member; the board folds the statement.
        let boardKey = try #require(board.board.directory.replicaKey())
        try MembershipEditor(journal: JournalDirectory(root: temp.path + "/team"), key: admin)
            .grant(boardKey.publicKey, role: .relay, label: "relay")
        #expect(await eventually(within: 120) { board.board.membership?.mayHost(boardKey.publicKey) == true },
                "the grant never reached the open board")

        let outsider = board.connect()
        await outsider.receive(text: TestReplicaKeys.hello(mallory))
        #expect(outsider.closeReason?.contains("not a member") == true, "\(outsider.closeReason ?? "not refused")")

        let member = board.connect()
        await member.receive(text: TestReplicaKeys.hello(alice))
        member.goLive(caughtUp: 0)
        await member.receive(binary: TestReplicaKeys.frame(TestReplicaKeys.events(alice, 1...20), on: "team"))
        #expect(member.closeReason == nil)
        #expect(await eventually(within: 120) { board.board.covered[alice]?.count == 20 }, "alice's events were never stored")

        // Revoked in the board's files (by the admin, from anywhere): her connection goes.
        try MembershipEditor(journal: JournalDirectory(root: temp.path + "/team"), key: admin)
            .revoke(TestReplicaKeys.key(for: alice).publicKey)
        #expect(await eventually(within: 120) { member.closeReason != nil }, "the revoked key's connection stayed open")
        #expect(member.closeReason?.contains("not a member") == true, "\(member.closeReason ?? "")")
        let again = board.connect()
        await again.receive(text: TestReplicaKeys.hello(alice))
        #expect(again.closeReason != nil)
        await relay.close()

        let (_, report) = Replay.load(JournalDirectory(root: temp.path + "/team"), useSnapshots: false)
        #expect(report.eventCount == 20)
    }
}
