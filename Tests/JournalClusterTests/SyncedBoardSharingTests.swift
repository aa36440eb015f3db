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
        #expect(await sharing.adopt(wall, journal: second))
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
}
