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

    /// Puts `bytes` under `replica`'s canonical name in `directory`: what a sync brings.
    static func place(_ bytes: [UInt8], replica: ReplicaID, seqs: ClosedRange<UInt64>, in directory: JournalDirectory) throws {
        let path = directory.segmentPath(replica, SegmentName(firstSeq: seqs.lowerBound, lastSeq: seqs.upperBound, contents: bytes))
        try FileSystem.createDirectory(FileSystem.parent(of: path))
        try FileSystem.writeAtomically(bytes, to: path)
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

    /// An invitation (`journal members invite`): a native client's hello redeems it with its
    /// own key, which becomes a member with the invitation's label and draws; the same
    /// invitation for another key, a redemption for a key other than the hello's, an expired
    /// invitation and a forged one are refused, naming why. Any relay holding the board's
    /// files does this: a second relay on a copy of them refuses the used invitation too.
    @Test func anInvitationIsRedeemedOnceByTheHelloOfTheKeyItAdmits() async throws {
        let temp = TemporaryDirectory("relay-invitation")
        defer { temp.remove() }
        let admin = ReplicaKey()
        try Self.board(at: temp.path + "/team", admin: admin, members: [])
        let journal = try JournalDirectory.open(at: temp.path + "/team")
        let editor = MembershipEditor(journal: journal, key: admin)
        try editor.grant(try #require(journal.replicaKey()).publicKey, role: .relay, label: "relay")
        let now = ProcessInfoLite.wallClockMilliseconds()
        func invitation(expires: Int64) throws -> Invitation {
            let (found, key) = try editor.invite(role: .draw, label: "Dora", expires: expires)
            return Invitation(key: key, board: found.statement.board, lamport: found.statement.lamport, role: .draw)
        }
        let open = try invitation(expires: now + 3_600_000)
        let expired = try invitation(expires: now - 1)
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(sealAfterIdleMilliseconds: 100))
        let board = try relay.board(BoardName("team"))

        func hello(_ replica: ReplicaID, redeeming redemption: MembershipStatement?) -> String {
            var hello = Hello(native: TestReplicaKeys.key(for: replica))
            hello.redeem = redemption
            return ClientFrame.helloText(hello)
        }
        let dora = TestReplicaKeys.newReplica(), eve = TestReplicaKeys.newReplica()
        let doraKey = TestReplicaKeys.key(for: dora).publicKey
        // A redemption for another key than the hello's.
        let misdirected = board.connect()
        await misdirected.receive(text: hello(eve, redeeming: open.redemption(for: doraKey, wallTime: now)))
        #expect(misdirected.closeReason?.contains("grant to the hello's key") == true, "\(misdirected.closeReason ?? "not refused")")
        // Forged: signed by another key than the invitation's.
        let forger = Invitation(key: ReplicaKey(), board: open.board, lamport: open.lamport, role: .draw)
        let forged = board.connect()
        await forged.receive(text: hello(dora, redeeming: forger.redemption(for: doraKey, wallTime: now)))
        #expect(forged.closeReason?.contains("no invitation") == true, "\(forged.closeReason ?? "not refused")")
        let late = board.connect()
        await late.receive(text: hello(dora, redeeming: expired.redemption(for: doraKey, wallTime: now)))
        #expect(late.closeReason?.contains("expired") == true, "\(late.closeReason ?? "not refused")")
        // A wall time at either end of Int64 is refused, never an arithmetic trap.
        for wall in [Int64.min, Int64.max] {
            let skewed = board.connect()
            await skewed.receive(text: hello(dora, redeeming: open.redemption(for: doraKey, wallTime: wall)))
            #expect(skewed.closeReason?.contains("10 minutes") == true, "\(skewed.closeReason ?? "not refused")")
        }

        let redeemer = board.connect()
        await redeemer.receive(text: hello(dora, redeeming: open.redemption(for: doraKey, wallTime: ProcessInfoLite.wallClockMilliseconds())))
        #expect(redeemer.closeReason == nil, "\(redeemer.closeReason ?? "")")
        #expect(board.board.membership?.member(doraKey)?.label == "Dora")
        redeemer.goLive(caughtUp: 0)
        await redeemer.receive(binary: TestReplicaKeys.frame(TestReplicaKeys.events(dora, 1...5), on: "team"))
        #expect(await eventually(within: 120) { board.board.covered[dora]?.count == 5 }, "the invited key's events were never stored")
        // Sent again (a page that lost its connection before its catch-up): still fine.
        let again = board.connect()
        await again.receive(text: hello(dora, redeeming: open.redemption(for: doraKey, wallTime: ProcessInfoLite.wallClockMilliseconds())))
        #expect(again.closeReason == nil || again.closeReason?.contains("newer connection") == true, "\(again.closeReason ?? "")")
        // The same invitation for another key: used.
        let eveKey = TestReplicaKeys.key(for: eve).publicKey
        let second = board.connect()
        await second.receive(text: hello(eve, redeeming: open.redemption(for: eveKey, wallTime: ProcessInfoLite.wallClockMilliseconds())))
        #expect(second.closeReason?.contains("redeemed already") == true, "\(second.closeReason ?? "not refused")")
        await relay.close()

        // Every reader of the files: Dora draws, 5 events, named.
        let (_, report) = Replay.load(JournalDirectory(root: temp.path + "/team"), useSnapshots: false)
        #expect(report.eventCount == 5)
        #expect(SegmentSet.load(journal).membership?.member(doraKey)?.role == .draw)
    }

    /// A cluster seals what its nodes host with one host key kept outside their data folders
    /// (`journal serve --host-key`): the board's membership names it once, and a node that lost
    /// its disk, adopting the board from the store again, goes on hosting its members' events
    /// where they count.
    @Test func aNodeThatLostItsDiskHostsTheSameMembersWithTheClustersHostKey() async throws {
        let temp = TemporaryDirectory("relay-host-key")
        defer { temp.remove() }
        let admin = ReplicaKey(), hostKey = ReplicaKey()
        let alice = TestReplicaKeys.newReplica()
        try FileSystem.createDirectory(temp.path + "/node")
        try Self.board(at: temp.path + "/node/team", admin: admin, members: [alice])
        try MembershipEditor(journal: JournalDirectory(root: temp.path + "/node/team"), key: admin)
            .grant(hostKey.publicKey, role: .relay, label: "cluster")

        var relay = try Relay(dataDirectory: temp.path + "/node", access: .open,
                              boardOptions: BoardOptions(sealAfterIdleMilliseconds: 100), hostKey: hostKey)
        var board = try relay.board(BoardName("team"))
        var client = board.connect()
        await client.receive(text: TestReplicaKeys.hello(alice))
        client.goLive(caughtUp: 0)
        await client.receive(binary: TestReplicaKeys.frame(TestReplicaKeys.events(alice, 1...20), on: "team"))
        #expect(client.closeReason == nil, "\(client.closeReason ?? "")")
        #expect(await eventually(within: 120) { board.board.covered[alice]?.count == 20 })
        await relay.close()

        // The disk is lost: a new data folder, the board's sealed files brought back from the
        // store into a journal with a new key of its own.
        let store = temp.path + "/store"
        try FileSystem.createDirectory(store)
        for file in JournalDirectory(root: temp.path + "/node/team").listSealed().sealed {
            try Self.place(try FileSystem.readFile(file.path), replica: file.replica,
                                         seqs: file.name.firstSeq...file.name.lastSeq, in: JournalDirectory(root: store))
        }
        FileSystem.removeTree(temp.path + "/node")
        try FileSystem.createDirectory(temp.path + "/node")
        let fresh = try JournalDirectory.create(at: temp.path + "/node/team")
        for file in JournalDirectory(root: store).listSealed().sealed {
            try Self.place(try FileSystem.readFile(file.path), replica: file.replica,
                                         seqs: file.name.firstSeq...file.name.lastSeq, in: fresh)
        }
        relay = try Relay(dataDirectory: temp.path + "/node", access: .open,
                          boardOptions: BoardOptions(sealAfterIdleMilliseconds: 100), hostKey: hostKey)
        board = try relay.board(BoardName("team"))
        #expect(board.board.covered[alice]?.count == 20)
        client = board.connect()
        await client.receive(text: TestReplicaKeys.hello(alice, have: Have(board.board.covered)))
        client.goLive(caughtUp: 20)
        await client.receive(binary: TestReplicaKeys.frame(TestReplicaKeys.events(alice, 21...30), on: "team"))
        #expect(client.closeReason == nil, "\(client.closeReason ?? "")")
        #expect(await eventually(within: 120) { board.board.covered[alice]?.count == 30 })
        await relay.close()
        let (_, report) = Replay.load(fresh, useSnapshots: false)
        #expect(report.eventCount == 30)
        #expect(report.notMemberEvents == 0)
    }

    /// A native client of `replica` with `grant` that sends events `seqs` in one frame, not refused.
    static func draw(_ replica: ReplicaID, _ seqs: ClosedRange<UInt64>, on board: RelayBoard, grant: Grant) async -> RelayConnection {
        let client = board.connect(grant: grant)
        await client.receive(text: TestReplicaKeys.hello(replica))
        client.goLive(caughtUp: 0)
        await client.receive(binary: TestReplicaKeys.frame(TestReplicaKeys.events(replica, seqs), on: board.name.text))
        #expect(client.closeReason == nil, "\(client.closeReason ?? "")")
        return client
    }

    /// A relay that needs tokens founds the boards it creates (`journal serve` without
    /// `--open`): its host key is their first admin and grants its text-mode writer and each
    /// native key that came with a draw token, so a planted stranger's segment counts nowhere.
    /// Two nodes with one host key write one genesis; a node that lost its disk grants its new
    /// key; a board created open before stays open.
    @Test func aBoardTheRelayCreatesGetsMembershipFoundedByItsHostKey() async throws {
        let temp = TemporaryDirectory("relay-founding")
        defer { temp.remove() }
        let hostKey = ReplicaKey()
        let token = Grant(tokenID: "0123456789abcdef", scope: .draw, expiresAtMilliseconds: nil)
        func relay(_ data: String) throws -> Relay {
            try Relay(dataDirectory: temp.path + "/" + data, access: .open, boardOptions: BoardOptions(sealAfterIdleMilliseconds: 100),
                      hostKey: hostKey, foundsBoards: true)
        }
        let node = try relay("node")
        let board = try node.board(BoardName("team"))
        let membership = try #require(board.board.membership)
        let ownKey = try #require(board.board.directory.replicaKey()).publicKey
        #expect(membership.board == MembershipSigning.relayBoardID(founder: hostKey.publicKey, name: "team"))
        #expect(membership.member(hostKey.publicKey)?.role == .admin)
        #expect(membership.member(ownKey)?.role == .admin)

        // Text mode draws as the node's key, a member.
        let text = board.connect(grant: token)
        text.goLive(caughtUp: 0)
        await text.receive(text: #"{"type":"point","stroke":"6f1c2a3e-1111-4222-8333-444455556666","x":1,"y":2}"#)
        #expect(text.closeReason == nil, "\(text.closeReason ?? "")")
        // A native key that came with a draw token is admitted, named after the token.
        let alice = TestReplicaKeys.newReplica()
        let native = await Self.draw(alice, 1...5, on: board, grant: token)
        let aliceKey = TestReplicaKeys.key(for: alice).publicKey
        #expect(board.board.membership?.member(aliceKey)?.label == "token 0123456789abcdef")
        // Without a token (an open grant) nothing admits a stranger's key.
        let stranger = board.connect()
        await stranger.receive(text: TestReplicaKeys.hello(TestReplicaKeys.newReplica()))
        #expect(stranger.closeReason?.contains("is not a member") == true, "\(stranger.closeReason ?? "not refused")")
        #expect(await eventually(within: 120) { board.board.covered[alice]?.count == 5 && board.board.durableSeq == 1 })
        // The token is revoked (on this node's list): the keys it admitted are revoked in the
        // board's files, which closes their connections here and travels to every node.
        board.revokeKeys(ofRevokedTokens: ["0123456789abcdef"])
        #expect(await eventually(within: 120) { board.board.membership?.member(aliceKey)?.revoked == true },
                "the token's key was not revoked")
        #expect(await eventually(within: 120) { native.closeReason != nil })
        #expect(board.board.membership?.member(ownKey)?.isActive == true)
        await node.close()

        // A planted segment of a key no member holds counts nowhere.
        let planted = TestReplicaKeys.newReplica()
        let journal = JournalDirectory(root: temp.path + "/node/team")
        let plantedBytes = SegmentEncoder.segment(replica: planted, events: TestReplicaKeys.events(planted, 1...3))
        try Self.place(plantedBytes, replica: planted, seqs: 1...3, in: journal)
        var (_, report) = Replay.load(journal, useSnapshots: false)
        #expect(report.eventCount == 6)

        // Another node with the same host key creating the same board writes the same genesis.
        let other = try relay("other")
        let otherBoard = try other.board(BoardName("team"))
        #expect(otherBoard.board.membership?.board == membership.board)
        let genesisFolder = MembershipSigning.membershipReplica(forPublicKey: hostKey.publicKey, board: try #require(membership.board)).hex
        let firstStatement = { (root: String) in
            JournalDirectory(root: root).listSealed().sealed.filter { $0.replica.hex == genesisFolder && $0.name.firstSeq == 1 }.map(\.name.fileName)
        }
        #expect(firstStatement(temp.path + "/node/team") == firstStatement(temp.path + "/other/team"))
        #expect(firstStatement(temp.path + "/node/team").count == 1)
        // It admits a key of its own by token, before either node has seen the other's files.
        let bob = TestReplicaKeys.newReplica()
        _ = await Self.draw(bob, 1...4, on: otherBoard, grant: token)
        #expect(await eventually(within: 120) { otherBoard.board.covered[bob]?.count == 4 })
        await other.close()

        // Both nodes granted their own keys as seq 2 of the host key's statements: brought
        // together, one grant loses its equivocation. Each node, opening the board again,
        // grants what lost again, and every event counts on both.
        let journals = [journal, JournalDirectory(root: temp.path + "/other/team")]
        let files = journals.map { $0.listSealed().sealed.filter { $0.replica != planted } }
        for (index, target) in journals.enumerated() {
            for file in files[1 - index] {
                try? Self.place(try FileSystem.readFile(file.path), replica: file.replica, seqs: file.name.firstSeq...file.name.lastSeq, in: target)
            }
        }
        let merged = BoardFounding.membership(journal)
        #expect([ownKey, try #require(journals[1].replicaKey()).publicKey].filter { merged.member($0) == nil }.count == 1,
                "one node's grant loses")
        for data in ["node", "other"] {
            let healed = try relay(data)
            _ = try healed.board(BoardName("team"))
            await healed.close()
        }
        for target in journals {
            for file in journals.flatMap({ $0.listSealed().sealed }) where file.replica != planted {
                try? Self.place(try FileSystem.readFile(file.path), replica: file.replica, seqs: file.name.firstSeq...file.name.lastSeq, in: target)
            }
            let (_, both) = Replay.load(target, useSnapshots: false)
            #expect(both.eventCount == 10, "\(target.root)")
            #expect(both.notMemberEvents == 0, "\(target.root)")
        }

        // The disk is lost: the board's files come back from the store into a journal with a
        // new key, which the node grants as it opens the board.
        let fresh = try JournalDirectory.create(at: temp.path + "/lost/team")
        for file in journal.listSealed().sealed where file.replica != planted {
            try? Self.place(try FileSystem.readFile(file.path), replica: file.replica, seqs: file.name.firstSeq...file.name.lastSeq, in: fresh)
        }
        let lost = try relay("lost")
        let reopened = try lost.board(BoardName("team"))
        let newKey = try #require(fresh.replicaKey()).publicKey
        #expect(newKey != ownKey)
        #expect(reopened.board.membership?.member(newKey)?.role == .admin)
        #expect(reopened.board.membership?.member(ownKey)?.isActive == true)
        await lost.close()
        (_, report) = Replay.load(fresh, useSnapshots: false)
        #expect(report.eventCount == 10)
        #expect(report.notMemberEvents == 0)

        // A board made open before (it holds an event) stays open.
        let old = try JournalWriter(directory: JournalDirectory.create(at: temp.path + "/old/team"))
        try old.append(TestReplicaKeys.events(old.replica, 1...1)[0].payload)
        try old.close()
        let oldRelay = try relay("old")
        #expect(try oldRelay.board(BoardName("team")).board.membership?.isOpen != false)
        await oldRelay.close()
    }
}
