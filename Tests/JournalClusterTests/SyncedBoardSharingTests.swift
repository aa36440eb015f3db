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

    @Test func aBoardPublishedByOneRelayIsAdoptedWholeByAnother() async throws {
        let temp = TemporaryDirectory("cluster-synced-sharing")
        defer { temp.remove() }
        let sharing = SyncedBoardSharing(store: temp.path + "/store", interval: 3600)
        let wall = try BoardName("wall"), nowhere = try BoardName("nowhere")
        let first = temp.path + "/relay-a/wall"
        let board = try Board(path: first, create: true, options: BoardOptions(watchForSegments: false))
        let stroke = StrokeID(UUIDBits(high: 1, low: 2))
        for index in 0..<500 {
            try board.append(.point(PointSample(stroke: stroke, x: Double(index), y: 1, pressure: nil, t: nil,
                                                style: Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2))))
        }
        try await board.close()
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
}
