import JournalFormat
import JournalKeys
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// A board's membership (invariant 16, docs/FORMAT.md §17): signed statements in the journal
/// decide whose events count, the same way on every machine whatever its local files say.
@Suite(.ownThreads) struct MembershipTests {
    static let board = UUIDBits(high: 0xB0A2D, low: 1)

    /// `key`'s statement number `seq`, signed.
    static func found(
        _ key: ReplicaKey, seq: UInt64, lamport: UInt64, _ action: MembershipStatement.Action, role: MembershipStatement.Role = .none,
        subject: ReplicaKey? = nil, drawCut: UInt64 = 0, memberCut: UInt64 = 0, label: String = "", board: UUIDBits = board
    ) -> Membership.Found {
        let statement = MembershipStatement(
            lamport: lamport, wallTime: 1_790_000_000_000, action: action, role: role, board: board,
            subject: (subject ?? key).publicKey, drawCut: drawCut, memberCut: memberCut, label: label, signer: key.publicKey)
        let replica = MembershipSigning.membershipReplica(forPublicKey: key.publicKey, board: board)
        return Membership.Found(statement: MembershipSigning.sign(statement, seq: seq, key: key),
                                id: EventID(replica: replica, seq: seq), file: "mem", offset: 32)
    }

    @Test func aBoardWithoutAGenesisIsOpenAndCountsEverything() {
        let membership = Membership.fold([])
        #expect(membership.isOpen)
        #expect(membership.admitted(ReplicaID.random()) == nil)
    }

    @Test func grantsAdmitAKeysSeqsFromItsFirstAndRevocationsCutThemBySeqNotByClock() {
        let alice = ReplicaKey(), bob = ReplicaKey(), carol = ReplicaKey()
        let log = [
            Self.found(alice, seq: 1, lamport: 5, .create, role: .admin, label: "Alice"),
            Self.found(alice, seq: 2, lamport: 6, .grant, role: .draw, subject: bob, label: "Bob"),
            Self.found(alice, seq: 3, lamport: 90, .revoke, subject: bob, drawCut: 40),
        ]
        let membership = Membership.fold(log)
        #expect(membership.board == Self.board)
        #expect(membership.admitted(alice.replica)?.contains(1_000_000) == true)
        let bobs = membership.admitted(bob.replica)
        #expect(bobs?.contains(1) == true && bobs?.contains(40) == true && bobs?.contains(41) == false)
        #expect(membership.admitted(carol.replica)?.isEmpty == true)
        #expect(membership.member(bob.publicKey)?.revoked == true)
        #expect(membership.problems.isEmpty)
    }

    @Test func theFoldIsTheSameInEveryOrderAndARevocationWinsOverAConcurrentGrant() {
        let alice = ReplicaKey(), bert = ReplicaKey(), carol = ReplicaKey()
        // Alice revokes Carol while Bert, another admin who has not seen it, grants her admin
        // with a later clock: a revoked key is never a member again.
        let log = [
            Self.found(alice, seq: 1, lamport: 1, .create, role: .admin),
            Self.found(alice, seq: 2, lamport: 2, .grant, role: .admin, subject: bert),
            Self.found(alice, seq: 3, lamport: 3, .grant, role: .draw, subject: carol),
            Self.found(alice, seq: 4, lamport: 10, .revoke, subject: carol, drawCut: 7),
            Self.found(bert, seq: 1, lamport: 11, .grant, role: .admin, subject: carol),
        ]
        var generator = SeededGenerator(seed: 42)
        let reference = Membership.fold(log)
        #expect(reference.member(carol.publicKey)?.revoked == true)
        #expect(reference.admitted(carol.replica)?.ranges == [1...7])
        #expect(reference.problems.count == 1)
        for _ in 0..<20 {
            let shuffled = log.shuffled(using: &generator)
            let membership = Membership.fold(shuffled + shuffled.prefix(2))
            #expect(membership.members == reference.members)
            #expect(membership.admitted(carol.replica) == reference.admitted(carol.replica))
        }
    }

    @Test func aForgedOrMovedStatementDoesNotVerify() {
        let alice = ReplicaKey(), mallory = ReplicaKey()
        let honest = Self.found(alice, seq: 2, lamport: 6, .grant, role: .draw, subject: mallory)
        #expect(MembershipSigning.verify(honest.statement, replica: honest.id.replica, seq: 2))
        // The same bytes moved to another seq, another board, or another role.
        #expect(!MembershipSigning.verify(honest.statement, replica: honest.id.replica, seq: 3))
        var other = honest.statement
        other.board = UUIDBits(high: 1, low: 1)
        #expect(!MembershipSigning.verify(other, replica: honest.id.replica, seq: 2))
        other = honest.statement
        other.role = .admin
        #expect(!MembershipSigning.verify(other, replica: honest.id.replica, seq: 2))
        // Signed by Mallory herself, in Alice's folder.
        let forged = Self.found(mallory, seq: 2, lamport: 6, .grant, role: .admin, subject: mallory)
        #expect(!MembershipSigning.verify(forged.statement, replica: honest.id.replica, seq: 2))
    }

    @Test func aStatementByANonAdminOrAfterItsSignersRevocationDoesNotCount() {
        let alice = ReplicaKey(), bob = ReplicaKey(), eve = ReplicaKey()
        let log = [
            Self.found(alice, seq: 1, lamport: 1, .create, role: .admin),
            Self.found(alice, seq: 2, lamport: 2, .grant, role: .admin, subject: bob),
            // Alice revokes Bob, having seen his membership statements up to seq 1.
            Self.found(alice, seq: 3, lamport: 50, .revoke, subject: bob, memberCut: 1),
            // Bob's seq 2, back-dated under the revocation's clock, grants Eve: not counted.
            Self.found(bob, seq: 1, lamport: 3, .grant, role: .draw, subject: eve),
            Self.found(bob, seq: 2, lamport: 4, .grant, role: .admin, subject: eve),
            // Eve, a drawer at most, tries to grant herself admin.
            Self.found(eve, seq: 1, lamport: 60, .grant, role: .admin, subject: eve),
        ]
        let membership = Membership.fold(log)
        #expect(membership.member(eve.publicKey)?.role == .draw)
        #expect(membership.problems.count == 2)
        #expect(membership.problems.allSatisfy { $0.kind == .quarantined })
    }

    @Test func theLastAdminCannotBeRemovedByOthersButMayLeave() {
        let alice = ReplicaKey(), bob = ReplicaKey()
        let demoted = Membership.fold([
            Self.found(alice, seq: 1, lamport: 1, .create, role: .admin),
            Self.found(alice, seq: 2, lamport: 2, .grant, role: .draw, subject: alice),
        ])
        #expect(demoted.member(alice.publicKey)?.role == .admin)
        #expect(demoted.problems.count == 1)
        let left = Membership.fold([
            Self.found(alice, seq: 1, lamport: 1, .create, role: .admin),
            Self.found(alice, seq: 2, lamport: 2, .grant, role: .draw, subject: bob),
            Self.found(alice, seq: 3, lamport: 3, .revoke, subject: alice, drawCut: 9, memberCut: 3),
        ])
        #expect(left.activeAdmins.isEmpty)
        #expect(left.member(bob.publicKey)?.role == .draw)
        #expect(left.admitted(alice.replica)?.ranges == [1...9])
    }

    /// Found by the membership campaign: concurrent revocations among admins (A revokes B while
    /// C, not having seen it, revokes A). A's revocation of B does not stand once A's own
    /// revocation cuts it, so B keeps its membership and no cut of B lingers from a revocation
    /// that no longer counts.
    @Test func aCutLastsOnlyWhileTheRevocationThatMadeItStands() {
        let alice = ReplicaKey(), bob = ReplicaKey(), carol = ReplicaKey(), dave = ReplicaKey()
        let membership = Membership.fold([
            Self.found(alice, seq: 1, lamport: 1, .create, role: .admin),
            Self.found(alice, seq: 2, lamport: 2, .grant, role: .admin, subject: bob),
            Self.found(alice, seq: 3, lamport: 3, .grant, role: .admin, subject: carol),
            Self.found(alice, seq: 4, lamport: 10, .revoke, subject: bob, memberCut: 0),
            Self.found(carol, seq: 1, lamport: 5, .revoke, subject: alice, memberCut: 3),
            Self.found(bob, seq: 1, lamport: 20, .grant, role: .draw, subject: dave),
        ])
        #expect(membership.member(alice.publicKey)?.revoked == true)
        #expect(membership.member(bob.publicKey)?.isActive == true && membership.member(bob.publicKey)?.role == .admin)
        #expect(membership.member(dave.publicKey)?.role == .draw)
    }

    /// Also from the campaign: the last admin revoking itself counts (its own revocation is the
    /// last statement its key signs, so the cut includes it).
    @Test func theLastAdminsOwnRevocationCounts() throws {
        let temp = TemporaryDirectory("membership-self-revoke")
        defer { temp.remove() }
        let alice = try JournalDirectory.create(at: temp.path + "/alice")
        let key = try #require(alice.replicaKey())
        let editor = MembershipEditor(journal: alice, key: key)
        try editor.create(label: "")
        try editor.revoke(key.publicKey)
        let membership = try #require(SegmentSet.load(alice).membership)
        #expect(membership.member(key.publicKey)?.revoked == true)
        #expect(membership.problems.isEmpty)
    }

    /// Also from the campaign: one admin key on two boards numbers each board's statements on
    /// its own, so the second board's statements never take the first's ids.
    @Test func oneKeyAdministeringTwoBoardsKeepsTheirStatementsApart() throws {
        let temp = TemporaryDirectory("membership-two-boards")
        defer { temp.remove() }
        let admin = ReplicaKey(), bob = ReplicaKey(), mallory = ReplicaKey()
        let first = try JournalDirectory.create(at: temp.path + "/first")
        let second = try JournalDirectory.create(at: temp.path + "/second")
        try MembershipEditor(journal: first, key: admin).create(label: "")
        try MembershipEditor(journal: first, key: admin).grant(bob.publicKey, role: .draw, label: "Bob")
        try MembershipEditor(journal: second, key: admin).create(label: "")
        try MembershipEditor(journal: second, key: admin).grant(mallory.publicKey, role: .admin, label: "")
        try Self.copyReplicas(from: second, to: first)
        let membership = try #require(SegmentSet.load(first).membership)
        #expect(membership.board == first.boardPin()?.board)
        #expect(membership.member(bob.publicKey)?.role == .draw)
        #expect(membership.member(mallory.publicKey) == nil)
    }

    @Test func rotationHandsTheRoleToTheNewKeyAndEndsTheOld() {
        let alice = ReplicaKey(), bob = ReplicaKey(), bob2 = ReplicaKey()
        let membership = Membership.fold([
            Self.found(alice, seq: 1, lamport: 1, .create, role: .admin),
            Self.found(alice, seq: 2, lamport: 2, .grant, role: .draw, subject: bob, label: "Bob"),
            Self.found(bob, seq: 1, lamport: 9, .rotate, subject: bob2, drawCut: 30, memberCut: 1),
        ])
        #expect(membership.member(bob2.publicKey)?.role == .draw)
        #expect(membership.member(bob2.publicKey)?.label == "Bob")
        #expect(membership.admitted(bob.replica)?.ranges == [1...30])
        #expect(membership.admitted(bob2.replica)?.contains(1) == true)
        #expect(membership.member(bob.publicKey)?.isActive == false)
    }

    /// An invitation (FORMAT.md §17.6): its key is no member; its one redemption, a grant it
    /// signs, makes another key a member with the invitation's role and label, before the
    /// expiry, once; a revoked invitation, a second redemption, a late one, another role, or
    /// anything else the invitation's key signs does not count.
    @Test func anInvitationIsRedeemedOnceBeforeItExpiresAndIsNoMemberItself() {
        let alice = ReplicaKey(), invitation = ReplicaKey(), dora = ReplicaKey(), eve = ReplicaKey()
        let expires: UInt64 = 1_790_000_000_000 + 1000
        let genesis = Self.found(alice, seq: 1, lamport: 1, .create, role: .admin, label: "Alice")
        let invite = Self.found(alice, seq: 2, lamport: 2, .invite, role: .draw, subject: invitation, drawCut: expires, label: "Dora")
        let redeem = Self.found(invitation, seq: 1, lamport: 3, .grant, role: .draw, subject: dora)

        let redeemed = Membership.fold([genesis, invite, redeem])
        #expect(redeemed.problems.isEmpty)
        #expect(redeemed.member(dora.publicKey)?.role == .draw && redeemed.member(dora.publicKey)?.label == "Dora")
        #expect(redeemed.admitted(dora.replica)?.contains(1) == true)
        #expect(redeemed.admitted(invitation.replica)?.isEmpty == true)
        #expect(redeemed.member(invitation.publicKey)?.rotatedTo == dora.publicKey)

        // Before its redemption the invitation's key draws nothing and grants nothing else.
        let pending = Membership.fold([genesis, invite, Self.found(invitation, seq: 1, lamport: 3, .revoke, subject: alice)])
        #expect(pending.admitted(invitation.replica)?.isEmpty == true)
        #expect(pending.member(alice.publicKey)?.isActive == true)
        #expect(pending.problems.count == 1)
        // A second redemption (another key) does not count.
        let twice = Membership.fold([genesis, invite, redeem, Self.found(invitation, seq: 2, lamport: 4, .grant, role: .draw, subject: eve)])
        #expect(twice.member(eve.publicKey) == nil)
        // Revoked before it was redeemed: withdrawn.
        let afterRevocation = Self.found(invitation, seq: 1, lamport: 4, .grant, role: .draw, subject: dora)
        let withdrawn = Membership.fold([genesis, invite, Self.found(alice, seq: 3, lamport: 3, .revoke, subject: invitation), afterRevocation])
        #expect(withdrawn.member(dora.publicKey) == nil)
        // Another role than the invitation's, or after the expiry.
        let promoted = Membership.fold([genesis, invite, Self.found(invitation, seq: 1, lamport: 3, .grant, role: .admin, subject: dora)])
        #expect(promoted.member(dora.publicKey) == nil)
        var lateStatement = redeem.statement
        lateStatement.wallTime = Int64(expires) + 1
        let late = Membership.Found(statement: MembershipSigning.sign(lateStatement, seq: 1, key: invitation), id: redeem.id, file: "mem", offset: 32)
        #expect(Membership.fold([genesis, invite, late]).member(dora.publicKey) == nil)
        // Ordered before its invitation: its signer is no member yet.
        let early = Self.found(invitation, seq: 1, lamport: 1, .grant, role: .draw, subject: dora)
        #expect(Membership.fold([genesis, invite, early]).member(dora.publicKey) == nil)
        // Only an admin invites; an admin never grants an invitation's key directly.
        let byDrawer = Membership.fold([genesis, Self.found(alice, seq: 2, lamport: 2, .grant, role: .draw, subject: eve),
                                        Self.found(eve, seq: 1, lamport: 3, .invite, role: .draw, subject: invitation, drawCut: expires)])
        #expect(byDrawer.member(invitation.publicKey) == nil)
        let granted = Membership.fold([genesis, invite, Self.found(alice, seq: 3, lamport: 3, .grant, role: .draw, subject: invitation)])
        #expect(granted.admitted(invitation.replica)?.isEmpty == true)
    }

    /// The editor's invitation and `Invitation`'s code and redemption, through the files: a
    /// version 5 segment for the invitation, a version 4 one for the redemption.
    @Test func anInvitationCodeRedeemsThroughTheJournalsFiles() throws {
        let temp = TemporaryDirectory("members-invite")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        let admin = try #require(journal.replicaKey())
        let editor = MembershipEditor(journal: journal, key: admin)
        try editor.create(label: "Alice")
        let (found, key) = try editor.invite(role: .draw, label: "Dora", expires: ProcessInfoLite.wallClockMilliseconds() + 60_000)
        // An invitation's key is never granted directly: the editor says so before writing.
        #expect(throws: MembershipError.self) { try editor.grant(key.publicKey, role: .draw, label: "Dora") }
        let code = Invitation(key: key, board: found.statement.board, lamport: found.statement.lamport, role: .draw).code
        #expect(code.utf8.count == 2 * Invitation.codeBytes)
        let invitation = try #require(Invitation(code: code))
        #expect(Invitation(code: String(code.dropLast(2)) + "00") == nil && Invitation(code: code.uppercased()) == nil)
        let header = try FileSystem.readFile(found.file)
        #expect(header[8] == 5 && header[9] == 0)

        let dora = ReplicaKey()
        let redemption = invitation.redemption(for: dora.publicKey, wallTime: ProcessInfoLite.wallClockMilliseconds())
        try MembershipLog.store(redemption, replica: invitation.replica, seq: 1, replicasPath: journal.replicasPath)
        let set = SegmentSet.load(journal)
        #expect(set.problems.filter { $0.kind != .ignored }.isEmpty)
        let membership = try #require(set.membership)
        #expect(membership.member(dora.publicKey)?.label == "Dora" && membership.member(dora.publicKey)?.role == .draw)
        // The editor refuses to invite without admin rights.
        #expect(throws: MembershipError.self) {
            try MembershipEditor(journal: journal, key: dora).invite(role: .draw, label: "X", expires: 0)
        }
    }

    @Test func aRivalGenesisDoesNotTakeOverAPinnedJournal() {
        let alice = ReplicaKey(), mallory = ReplicaKey()
        let honest = Self.found(alice, seq: 1, lamport: 50, .create, role: .admin)
        let rival = Self.found(mallory, seq: 1, lamport: 1, .create, role: .admin, board: UUIDBits(high: 6, low: 6))
        #expect(Membership.fold([honest, rival]).founder == mallory.publicKey)
        let pinned = Membership.fold([honest, rival], pin: Membership.Pin(board: Self.board, founder: alice.publicKey))
        #expect(pinned.founder == alice.publicKey)
        #expect(pinned.problems.contains { $0.reason.contains("another board") })
        #expect(Membership.fold([honest, rival]).problems.contains { $0.reason.contains("another board") })
    }

    // MARK: On disk

    /// Records `points` points into `journal`'s own replica and seals them.
    static func draw(_ journal: JournalDirectory, points: Int, x: Double) throws {
        try SignedSegmentTests.record(journal, points: points, x: x)
    }

    static func copyReplicas(from source: JournalDirectory, to target: JournalDirectory) throws {
        for file in source.listSealed().sealed {
            let bytes = try FileSystem.readFile(file.path)
            try SignedSegmentTests.place(bytes, replica: file.replica, seqs: file.name.firstSeq...file.name.lastSeq, in: target)
        }
    }

    @Test func twoMachinesWithDifferentLocalTrustAndTheSameFilesDrawTheSame() throws {
        let temp = TemporaryDirectory("membership-machines")
        defer { temp.remove() }
        let alice = try JournalDirectory.create(at: temp.path + "/alice")
        let bob = try JournalDirectory.create(at: temp.path + "/bob")
        let carol = try JournalDirectory.create(at: temp.path + "/carol")
        try Self.draw(alice, points: 30, x: 0)
        try Self.draw(bob, points: 20, x: 100)
        try Self.draw(carol, points: 10, x: 200)
        try Self.copyReplicas(from: bob, to: alice)
        try Self.copyReplicas(from: carol, to: alice)

        let aliceKey = try #require(alice.replicaKey()), bobKey = try #require(bob.replicaKey()), carolKey = try #require(carol.replicaKey())
        let editor = MembershipEditor(journal: alice, key: aliceKey)
        try editor.create(label: "Alice")
        try editor.grant(bobKey.publicKey, role: .draw, label: "Bob")

        // A second machine: the same files, and a local trust list that says Carol is fine.
        let other = try JournalDirectory.create(at: temp.path + "/other")
        try Self.copyReplicas(from: alice, to: other)
        try TrustList(entries: [TrustList.Entry(publicKey: carolKey.publicKey, mayHost: false, label: "carol")]).save(to: other)

        let here = Replay.load(alice, useSnapshots: false)
        let there = Replay.load(other, useSnapshots: false)
        #expect(here.report.eventCount == 50)
        #expect(there.report.eventCount == 50)
        #expect(here.drawing.digest == there.drawing.digest)
        #expect(SegmentSet.load(other).trustListOverridden)
        #expect(there.report.problems.contains { $0.kind == .quarantined && $0.replica == carolKey.replica })

        // Revoking Bob cuts his later events everywhere, once the statement travels.
        try MembershipEditor(journal: alice, key: aliceKey).revoke(bobKey.publicKey)
        try Self.draw(bob, points: 5, x: 300)
        try Self.copyReplicas(from: bob, to: alice)
        try Self.copyReplicas(from: alice, to: other)
        let afterHere = Replay.load(alice, useSnapshots: false)
        let afterThere = Replay.load(other, useSnapshots: false)
        #expect(afterHere.report.eventCount == 50)
        #expect(afterHere.report.notMemberEvents == 15)
        #expect(afterHere.drawing.digest == afterThere.drawing.digest)
    }

    /// A snapshot holds for the membership it was folded under, and only for it: a later
    /// statement that changes what counts makes the next open a full replay.
    @Test func aSnapshotIsUsedOnlyUnderTheMembershipItWasFoldedUnder() throws {
        let temp = TemporaryDirectory("membership-snapshot")
        defer { temp.remove() }
        let alice = try JournalDirectory.create(at: temp.path + "/alice")
        let aliceKey = try #require(alice.replicaKey())
        let bob = ReplicaKey()
        try SignedSegmentTests.place(SignedSegmentTests.signedSegment(SignedSegmentTests.events(bob.replica, 1...30, x: 0), key: bob),
                                     replica: bob.replica, seqs: 1...30, in: alice)
        try Self.draw(alice, points: 20, x: 500)
        let editor = MembershipEditor(journal: alice, key: aliceKey)
        try editor.create(label: "Alice")
        try editor.grant(bob.publicKey, role: .draw, label: "Bob")
        try SnapshotStore.create(alice)
        let snapshotted = Replay.load(alice, useSnapshots: true)
        let full = Replay.load(alice, useSnapshots: false)
        #expect(snapshotted.report.eventsFromSnapshot == 50)
        #expect(snapshotted.drawing.digest == full.drawing.digest)

        // Bob's later events, then his revocation after seq 25 (an admin who held only those):
        // the snapshot, which counts his 26...30, is not used.
        try SignedSegmentTests.place(SignedSegmentTests.signedSegment(SignedSegmentTests.events(bob.replica, 31...40, x: 0), key: bob),
                                     replica: bob.replica, seqs: 31...40, in: alice)
        try MembershipLog.append(MembershipStatement(
            lamport: 1000, wallTime: 1_790_000_000_000, action: .revoke, role: .none, board: try #require(alice.boardPin()).board,
            subject: bob.publicKey, drawCut: 25, signer: aliceKey.publicKey), key: aliceKey, replicasPath: alice.replicasPath)
        let after = Replay.load(alice, useSnapshots: true)
        #expect(after.report.eventsFromSnapshot == 0)
        #expect(after.report.eventCount == 45)
        #expect(after.drawing.digest == Replay.load(alice, useSnapshots: false).drawing.digest)
    }

    @Test func aRevokedKeyCannotSlipEventsInWithSmallClocks() throws {
        let temp = TemporaryDirectory("membership-backdate")
        defer { temp.remove() }
        let alice = try JournalDirectory.create(at: temp.path + "/alice")
        let aliceKey = try #require(alice.replicaKey())
        let mallory = ReplicaKey()
        try SignedSegmentTests.place(SignedSegmentTests.signedSegment(SignedSegmentTests.events(mallory.replica, 1...10, x: 0), key: mallory),
                                     replica: mallory.replica, seqs: 1...10, in: alice)
        let editor = MembershipEditor(journal: alice, key: aliceKey)
        try editor.create(label: "")
        try editor.grant(mallory.publicKey, role: .draw, label: "")
        try editor.revoke(mallory.publicKey)
        // After the revocation Mallory signs seqs 11...20 with clocks 1...10.
        let late = SignedSegmentTests.events(mallory.replica, 11...20, x: 0).enumerated().map { index, event in
            var event = event
            event.lamport = UInt64(index + 1)
            return event
        }
        try SignedSegmentTests.place(SignedSegmentTests.signedSegment(late, key: mallory), replica: mallory.replica, seqs: 11...20, in: alice)
        let (_, report) = Replay.load(alice, useSnapshots: false)
        #expect(report.eventCount == 10)
        #expect(report.notMemberEvents == 10)
    }

    @Test func unsignedAndForeignHostedSegmentsAreQuarantinedUnderMembership() throws {
        let temp = TemporaryDirectory("membership-unsigned")
        defer { temp.remove() }
        let alice = try JournalDirectory.create(at: temp.path + "/alice")
        let aliceKey = try #require(alice.replicaKey())
        try MembershipEditor(journal: alice, key: aliceKey).create(label: "")
        // An unsigned segment claiming Alice's replica (the forged "clock 1" file), and one
        // sealed as host by a key that is no relay member.
        let own = try alice.identity()
        let forged = SegmentEncoder.segment(replica: own, events: SignedSegmentTests.events(own, 1...3, x: 9), version: FormatV2.version)
        try SignedSegmentTests.place(forged, replica: own, seqs: 1...3, in: alice)
        let relay = ReplicaKey(), client = ReplicaKey()
        let hosted = SignedSegmentTests.signedSegment(SignedSegmentTests.events(client.replica, 1...4, x: 0), key: relay, role: .host)
        try SignedSegmentTests.place(hosted, replica: client.replica, seqs: 1...4, in: alice)
        try MembershipEditor(journal: alice, key: aliceKey).grant(client.publicKey, role: .draw, label: "page")
        var (_, report) = Replay.load(alice, useSnapshots: false)
        #expect(report.eventCount == 0)
        #expect(report.problems.filter { $0.kind == .quarantined }.count == 2)
        // Once the relay's key is a relay member, what it hosted counts.
        try MembershipEditor(journal: alice, key: aliceKey).grant(relay.publicKey, role: .relay, label: "relay-1")
        (_, report) = Replay.load(alice, useSnapshots: false)
        #expect(report.eventCount == 4)
    }

    @Test func editorRefusalsSayWhy() throws {
        let temp = TemporaryDirectory("membership-refusals")
        defer { temp.remove() }
        let alice = try JournalDirectory.create(at: temp.path + "/alice")
        let aliceKey = try #require(alice.replicaKey())
        let bob = ReplicaKey()
        let editor = MembershipEditor(journal: alice, key: aliceKey)
        #expect(throws: MembershipError.noMembership(path: alice.root)) { try editor.grant(bob.publicKey, role: .draw, label: "") }
        try editor.create(label: "Alice")
        #expect(throws: MembershipError.self) { try editor.create(label: "again") }
        #expect(throws: MembershipError.notAdmin(key: Hex.bytes(bob.publicKey))) {
            try MembershipEditor(journal: alice, key: bob).grant(bob.publicKey, role: .admin, label: "")
        }
        #expect(throws: MembershipError.notAMember(key: Hex.bytes(bob.publicKey))) { try editor.revoke(bob.publicKey) }
        #expect(throws: MembershipError.lastAdmin) { try editor.grant(aliceKey.publicKey, role: .draw, label: "") }
        try editor.grant(bob.publicKey, role: .draw, label: "")
        try editor.revoke(bob.publicKey)
        #expect(throws: MembershipError.neverAgain(key: Hex.bytes(bob.publicKey))) { try editor.grant(bob.publicKey, role: .draw, label: "") }
        #expect(alice.boardPin()?.founder == aliceKey.publicKey)
    }
}

/// A small deterministic generator for shuffles (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
