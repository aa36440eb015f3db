import JournalCluster
import JournalFormat
import JournalLive
import JournalPlatform
import JournalRelay
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// `SyncedBoardSharing` on a folder store: what one relay's board publishes, another relay
/// adopts whole, and a board the store lacks is never half made.
@Suite struct SyncedBoardSharingTests {
    static func digest(_ path: String) throws -> String {
        try Replay.replay(SegmentSet.load(JournalDirectory.open(at: path))).drawing.digest
    }

    /// A new board at `path` holding one stroke of `points` points, closed (sealed).
    static func drawBoard(at path: String, points: Int) async throws {
        let board = try Board(path: path, create: true, options: BoardOptions(watchForSegments: false))
        let stroke = StrokeID(UUIDBits(high: 1, low: 2))
        for index in 0..<points {
            try board.append(.point(PointSample(stroke: stroke, x: Double(index), y: 1, pressure: nil, t: nil,
                                                style: Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2))))
        }
        try await board.close()
    }

    @Test func aBoardPublishedByOneRelayIsAdoptedWholeByAnother() async throws {
        let temp = TemporaryDirectory("cluster-synced-sharing")
        defer { temp.remove() }
        let sharing = SyncedBoardSharing(store: temp.path + "/store", interval: 3600)
        let wall = try BoardName("wall"), nowhere = try BoardName("nowhere")
        let first = temp.path + "/relay-a/wall"
        try await Self.drawBoard(at: first, points: 500)
        #expect(await sharing.sync(wall, journal: first, open: false) == nil)
        #expect(FileSystem.isDirectory(temp.path + "/store/wall/replicas"))

        let second = temp.path + "/relay-b/wall"
        try FileSystem.createDirectory(temp.path + "/relay-b")
        // Fetched while a lease was awaited, then not installed (the lease went elsewhere):
        // nothing is left, not even the copy built beside.
        #expect(await !sharing.adopt(wall, journal: second, installing: { false }))
        #expect(try FileSystem.list(temp.path + "/relay-b").isEmpty)
        #expect(await sharing.adopt(wall, journal: second, installing: { true }))
        #expect(try Self.digest(second) == Self.digest(first))
        // Adopting again keeps what is there.
        #expect(await sharing.adopt(wall, journal: second))

        // A board the store does not have: refused, and no folder (not even a half one) left.
        #expect(await !sharing.adopt(nowhere, journal: temp.path + "/relay-b/nowhere"))
        #expect(try FileSystem.list(temp.path + "/relay-b").map(\.name) == ["wall"])
    }

    /// What a sync put back into the store is counted for the operator: a copy lost from the
    /// store (held there at an earlier sync) published again, a copy damaged in place (same
    /// size) replaced; a sync with nothing to repair counts nothing.
    @Test func repairsOfTheStoreAreCounted() async throws {
        let temp = TemporaryDirectory("cluster-store-repairs")
        defer { temp.remove() }
        let sharing = SyncedBoardSharing(store: temp.path + "/store", interval: 3600)
        let wall = try BoardName("wall")
        let path = temp.path + "/relay/wall"
        try await Self.drawBoard(at: path, points: 50)
        // Published, then listed and verified there.
        for _ in 0..<2 {
            let synced = await sharing.syncRepairing(wall, journal: path, open: false)
            #expect(synced.failure == nil && synced.repairs == StoreRepairs())
        }
        let stored = JournalDirectory.listSealed(replicasPath: temp.path + "/store/wall/replicas").sealed
        let copy = try #require(stored.first).path
        #expect(stored.count == 1)

        try FileSystem.remove(copy)
        let restored = await sharing.syncRepairing(wall, journal: path, open: false)
        #expect(restored.failure == nil && restored.repairs == StoreRepairs(lostRestored: 1))
        #expect(FileSystem.exists(copy))

        var bytes = try FileSystem.readFile(copy)
        bytes[bytes.count / 2] ^= 0x40
        try FileSystem.writeAtomically(bytes, to: copy)
        let replaced = await sharing.syncRepairing(wall, journal: path, open: false)
        #expect(replaced.failure == nil && replaced.repairs == StoreRepairs(damagedReplaced: 1))
        #expect(await sharing.syncRepairing(wall, journal: path, open: false).repairs == StoreRepairs())
    }

    /// A copy the store loses is counted as restored by the relay that puts it back, even one
    /// that only ever fetched it (adopted the board): CI's pens campaign once saw a removed copy
    /// back in the store and no node's metrics counting it.
    @Test func aCopyOnlyFetchedIsCountedWhenItIsPutBack() async throws {
        let temp = TemporaryDirectory("cluster-fetched-repair")
        defer { temp.remove() }
        let store = temp.path + "/store"
        let wall = try BoardName("wall")
        let first = temp.path + "/relay-a/wall"
        try await Self.drawBoard(at: first, points: 30)
        #expect(await SyncedBoardSharing(store: store, interval: 3600).sync(wall, journal: first, open: false) == nil)
        let adopter = SyncedBoardSharing(store: store, interval: 3600)
        let second = temp.path + "/relay-b/wall"
        try FileSystem.createDirectory(temp.path + "/relay-b")
        #expect(await adopter.adopt(wall, journal: second))
        let copies = JournalDirectory.listSealed(replicasPath: store + "/wall/replicas").sealed
        #expect(copies.count == 1)
        let copy = try #require(copies.first).path
        try FileSystem.remove(copy)
        let synced = await adopter.syncRepairing(wall, journal: second, open: true)
        #expect(synced.failure == nil && synced.repairs == StoreRepairs(lostRestored: 1), "\(synced)")
        #expect(FileSystem.exists(copy))
    }

    /// A stroke's point `index` on `board`, sealed at once: what an ack round then publishes.
    static func drawSealed(_ board: Board, _ index: Int) async throws {
        try board.append(.point(PointSample(stroke: StrokeID(UUIDBits(high: 3, low: 4)), x: Double(index), y: 2, pressure: nil, t: nil,
                                            style: Style(color: RGBA(rawValue: 0x43A047FF), width: 3))))
        #expect(await board.sealNow() == nil)
    }

    static func sealed(_ replicas: String) -> Set<String> {
        Set(JournalDirectory.listSealed(replicasPath: replicas).sealed.map { $0.path.split(separator: "/").suffix(2).joined(separator: "/") })
    }

    /// An ack round that is a whole sync (the first of a board here, before any sync of it
    /// succeeded) puts back a copy the store lost, and says so: CI's pens campaign saw a removed
    /// copy back in the store that no node's metrics counted, and this round's repairs were
    /// dropped.
    @Test func aFirstRoundThatPutsBackALostCopyCountsIt() async throws {
        let temp = TemporaryDirectory("cluster-first-round-repair")
        defer { temp.remove() }
        let store = temp.path + "/store"
        let wall = try BoardName("wall")
        let path = temp.path + "/relay-a/wall"
        try await Self.drawBoard(at: path, points: 12)
        #expect(await SyncedBoardSharing(store: store, interval: 3600).sync(wall, journal: path, open: false) == nil)
        let copy = try #require(Self.sealed(store + "/wall/replicas").first)
        try FileSystem.remove(store + "/wall/replicas/" + copy)
        // The relay again, knowing nothing of the store (started again, its disk kept).
        let round = await SyncedBoardSharing(store: store, interval: 3600).publishSealedRepairing(wall, journal: path)
        #expect(round.failure == nil && round.repairs == StoreRepairs(lostRestored: 1), "\(round)")
        #expect(FileSystem.exists(store + "/wall/replicas/" + copy))
    }

    /// An ack round's publish (`publishSealed`): the first, knowing nothing of the store, is a
    /// whole sync (it brings what another relay put there); later ones send only the segments
    /// sealed since, and list, fetch and repair nothing, which the next whole sync does.
    @Test func anAckRoundSendsOnlyWhatTheStoreWasNotSeenToHold() async throws {
        let temp = TemporaryDirectory("cluster-publish-sealed")
        defer { temp.remove() }
        let store = temp.path + "/store"
        let sharing = SyncedBoardSharing(store: store, interval: 3600)
        let wall = try BoardName("wall")
        let elsewhere = temp.path + "/relay-b/wall"
        try await Self.drawBoard(at: elsewhere, points: 20)
        #expect(await SyncedBoardSharing(store: store, interval: 3600).sync(wall, journal: elsewhere, open: false) == nil)

        let path = temp.path + "/relay-a/wall"
        // No background compaction: the test names segments and damages one, and a cover of
        // the board's four one-event segments would retire it (a fresh-clone CI failed so, and
        // one run in six beside two busy loops).
        let board = try Board(path: path, create: true, options: BoardOptions(watchForSegments: false, automaticCompaction: false))
        try await Self.drawSealed(board, 1)
        #expect(await sharing.publishSealed(wall, journal: path) == nil)
        let first = Self.sealed(path + "/replicas")
        #expect(first.count == 2, "the whole sync fetched the other relay's segment: \(first)")
        #expect(Self.sealed(store + "/wall/replicas") == first)

        // The store gains a third relay's segment and loses our first one; then we seal again.
        let third = temp.path + "/relay-c/wall"
        try await Self.drawBoard(at: third, points: 5)
        #expect(await SyncedBoardSharing(store: store, interval: 3600).sync(wall, journal: third, open: false) == nil)
        let ours = try #require(first.subtracting(Self.sealed(elsewhere + "/replicas")).first)
        try FileSystem.remove(store + "/wall/replicas/" + ours)
        try await Self.drawSealed(board, 2)
        let new = try #require(Self.sealed(path + "/replicas").subtracting(first).first)
        #expect(await sharing.publishSealed(wall, journal: path) == nil)
        #expect(FileSystem.exists(store + "/wall/replicas/" + new), "the round sent the segment sealed since")
        #expect(!FileSystem.exists(store + "/wall/replicas/" + ours), "an ack round repairs nothing")
        #expect(Self.sealed(path + "/replicas").count == 3, "an ack round fetches nothing")
        // Nothing new: nothing sent, nothing to fail.
        #expect(await sharing.publishSealed(wall, journal: path) == nil)

        // The whole sync lists the store: our lost copy back, the third relay's fetched.
        let synced = await sharing.syncRepairing(wall, journal: path, open: true)
        #expect(synced.failure == nil && synced.repairs == StoreRepairs(lostRestored: 1))
        #expect(FileSystem.exists(store + "/wall/replicas/" + ours))
        #expect(Self.sealed(path + "/replicas").count == 4)

        // A copy an ack round sent, lost before any whole sync listed it there: put back, and
        // counted as such as well.
        try await Self.drawSealed(board, 3)
        let unlisted = try #require(Self.sealed(path + "/replicas").subtracting(Self.sealed(store + "/wall/replicas")).first)
        #expect(await sharing.publishSealed(wall, journal: path) == nil)
        try FileSystem.remove(store + "/wall/replicas/" + unlisted)
        let again = await sharing.syncRepairing(wall, journal: path, open: true)
        #expect(again.failure == nil && again.repairs == StoreRepairs(lostRestored: 1))
        #expect(FileSystem.exists(store + "/wall/replicas/" + unlisted))

        // A local copy that no longer verifies is never sent: the round says so.
        try await Self.drawSealed(board, 4)
        let damaged = try #require(Self.sealed(path + "/replicas").subtracting(Self.sealed(store + "/wall/replicas")).first)
        var bytes = try FileSystem.readFile(path + "/replicas/" + damaged)
        bytes[bytes.count / 2] ^= 0x40
        try FileSystem.writeAtomically(bytes, to: path + "/replicas/" + damaged)
        let refused = await sharing.publishSealed(wall, journal: path)
        #expect(refused?.contains("does not verify") == true, "\(refused ?? "nil")")
        #expect(!FileSystem.exists(store + "/wall/replicas/" + damaged))
        try await board.close()
    }

    /// What a whole sync fetched is known to be in the store: the ack rounds after it do not
    /// send it back, so a copy of it the store loses is put back by a whole sync, which counts
    /// it. Before, the next ack round re-sent every fetched segment, and one the store had lost
    /// meanwhile came back uncounted: CI's S3 pens campaign saw a removed copy back in the store
    /// that no node's metrics counted.
    @Test func aFetchedSegmentIsNotSentBackByAnAckRound() async throws {
        let temp = TemporaryDirectory("cluster-fetched-not-resent")
        defer { temp.remove() }
        let store = temp.path + "/store"
        let sharing = SyncedBoardSharing(store: store, interval: 3600)
        let wall = try BoardName("wall")
        let path = temp.path + "/relay-a/wall"
        let board = try Board(path: path, create: true, options: BoardOptions(watchForSegments: false))
        try await Self.drawSealed(board, 1)
        #expect(await sharing.publishSealed(wall, journal: path) == nil)

        // Another relay publishes; our whole sync fetches its segment.
        let elsewhere = temp.path + "/relay-b/wall"
        try await Self.drawBoard(at: elsewhere, points: 7)
        #expect(await SyncedBoardSharing(store: store, interval: 3600).sync(wall, journal: elsewhere, open: false) == nil)
        // Its own segment (it fetched ours too).
        let fetched = try #require(Self.sealed(elsewhere + "/replicas").subtracting(Self.sealed(path + "/replicas")).first)
        #expect(await sharing.syncRepairing(wall, journal: path, open: true).failure == nil)
        #expect(Self.sealed(path + "/replicas").contains(fetched))

        // The store loses it; an ack round with a new segment sends that one only.
        try FileSystem.remove(store + "/wall/replicas/" + fetched)
        try await Self.drawSealed(board, 2)
        #expect(await sharing.publishSealed(wall, journal: path) == nil)
        #expect(!FileSystem.exists(store + "/wall/replicas/" + fetched), "an ack round sent a fetched segment back")
        #expect(Self.sealed(store + "/wall/replicas") == Self.sealed(path + "/replicas").subtracting([fetched]))

        let synced = await sharing.syncRepairing(wall, journal: path, open: true)
        #expect(synced.failure == nil && synced.repairs == StoreRepairs(lostRestored: 1), "\(synced)")
        #expect(FileSystem.exists(store + "/wall/replicas/" + fetched))
        try await board.close()
    }
}
