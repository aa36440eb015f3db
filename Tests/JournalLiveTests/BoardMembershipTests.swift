import JournalCommit
import JournalFormat
import JournalKeys
import JournalLive
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// A live board under membership (invariant 16): a statement that admits a key the board
/// holds nothing of is folded where it arrives, without reading the board again (a relay
/// admitting a flood of keys by token would otherwise replay the whole board per key); one
/// that changes what counts of events held still reloads, and the board is always the full
/// replay's.
@Suite struct BoardMembershipTests {
    /// A journal of its own (its own key) holding `count` points, sealed: a member's machine.
    static func drawer(at path: String, count: Int) throws -> (directory: JournalDirectory, key: [UInt8]) {
        let directory = try JournalDirectory.create(at: path)
        let writer = try JournalWriter(directory: directory)
        for index in 0..<count {
            try writer.append(.point(PointSample(stroke: StrokeID(UUIDBits(high: 1, low: UInt64(index / 10))), x: Double(index), y: 1, pressure: 0.5,
                                                 t: Double(index) / 60, style: Style(color: RGBA(rawValue: 0xE53935FF), width: 2))))
        }
        try writer.close()
        return (directory, try #require(directory.replicaKey()).publicKey)
    }

    /// Copies `from`'s sealed files into `to`: what a sync brings.
    static func bring(_ from: JournalDirectory, into to: JournalDirectory) throws {
        for file in from.listSealed().sealed {
            let target = to.segmentPath(file.replica, file.name)
            try FileSystem.createDirectory(FileSystem.parent(of: target))
            try FileSystem.writeAtomically(try FileSystem.readFile(file.path), to: target)
        }
    }

    @Test func aGrantToAKeyTheBoardHoldsNothingOfIsFoldedWithoutAReload() async throws {
        let temp = TemporaryDirectory("board-membership")
        defer { temp.remove() }
        let admin = ReplicaKey()
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        let editor = MembershipEditor(journal: journal, key: admin)
        try editor.create(label: "owner")
        let board = try Board(directory: journal, options: BoardOptions(sealAfterIdleMilliseconds: 100, watchForSegments: false))
        let activities = Locked<[String]>([])
        _ = board.observe { activity in
            switch activity {
            case .reloaded: activities.withLock { $0.append("reloaded") }
            case .membershipChanged: activities.withLock { $0.append("membership") }
            case .integrated(let events): activities.withLock { $0.append("integrated \(events.count)") }
            default: break
            }
        }

        // Alice is granted before anything of hers arrives: folded in place.
        let alice = try Self.drawer(at: temp.path + "/alice", count: 30)
        try editor.grant(alice.key, role: .draw, label: "Alice")
        _ = await board.refresh()
        #expect(board.membership?.member(alice.key)?.role == .draw)
        #expect(activities.withLock { $0 } == ["membership"])
        // Her segments then arrive and are integrated as any member's.
        try Self.bring(alice.directory, into: journal)
        _ = await board.refresh()
        #expect(board.covered[try alice.directory.identity()]?.count == 30)
        #expect(activities.withLock { $0 } == ["membership", "integrated 30"])

        // Bob's segments arrive before his grant: they do not count. His grant then changes
        // what counts of events the board holds: only a reload says what, and it does.
        let bob = try Self.drawer(at: temp.path + "/bob", count: 20)
        try Self.bring(bob.directory, into: journal)
        _ = await board.refresh()
        #expect(board.covered[try bob.directory.identity()] == nil)
        try editor.grant(bob.key, role: .draw, label: "Bob")
        activities.withLock { $0 = [] }
        _ = await board.refresh()
        #expect(board.covered[try bob.directory.identity()]?.count == 20)
        #expect(activities.withLock { $0 }.contains("reloaded"))

        // A revocation of a key with nothing here is folded in place too, and announced.
        let carol = ReplicaKey()
        try editor.grant(carol.publicKey, role: .draw, label: "Carol")
        _ = await board.refresh()
        try editor.revoke(carol.publicKey)
        activities.withLock { $0 = [] }
        _ = await board.refresh()
        #expect(board.membership?.member(carol.publicKey)?.revoked == true)
        #expect(activities.withLock { $0 } == ["membership"])
        try await board.close()

        // Whatever path it took, the board is the full replay's.
        let (replayed, report) = Replay.load(journal, useSnapshots: false)
        #expect(report.eventCount == 50)
        #expect(replayed.strokes.count == board.drawing.strokes.count)
    }
}
