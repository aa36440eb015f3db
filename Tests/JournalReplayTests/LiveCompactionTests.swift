import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// A live replay and compaction (docs/LIVE.md, "Compaction"): files retired for their cover
/// change nothing, and what the log cannot explain still asks for a reload.
@Suite(.ownThreads) struct LiveCompactionTests {
    /// Seals `files` small segments of `perFile` events each into `journal`'s own replica.
    func seal(_ journal: JournalDirectory, files: Int, perFile: Int = 12, from stroke: UInt64 = 0) throws {
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealEveryEvents: perFile))
        for file in 0..<files {
            let id = StrokeID(UUIDBits(high: 21, low: stroke + UInt64(file)))
            for index in 0..<(perFile - 1) {
                try writer.append(.point(PointSample(stroke: id, x: Double(index), y: Double(file), style: Style(color: RGBA(rawValue: 0x112233FF), width: 1))))
            }
            try writer.append(.end(id), flushingEvery: perFile)
        }
        try writer.close()
    }

    @Test func filesRetiredForTheirCoverChangeNothingAndAreNotRead() throws {
        let temp = TemporaryDirectory("live-compaction")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        try seal(journal, files: 8)
        var (live, _) = LiveReplay.load(journal)
        let compaction = Compactor(directory: journal, policy: .everything).run()
        #expect(compaction.covers.count == 1 && compaction.retired.count == 8)

        // Seen from another process (own: nil): eight applied files gone, one file over them.
        let increment = LiveReplay.readNew(journal, after: live.readCursor, own: nil)
        #expect(!increment.needsReload)
        #expect(increment.events.isEmpty)
        var changes: [DrawingChange] = []
        #expect(live.integrate(increment, changes: &changes))
        #expect(changes.isEmpty)
        #expect(live.drawing.drawing.digest == Replay.load(journal, useSnapshots: false).drawing.digest)
        #expect(LiveReplay.readNew(journal, after: live.readCursor, own: nil).isEmpty)

        // Files sealed afterwards are still read as new events.
        try seal(journal, files: 2, from: 100)
        let more = LiveReplay.readNew(journal, after: live.readCursor, own: nil)
        #expect(!more.needsReload && more.events.count == 24)
        #expect(live.integrate(more, changes: &changes))
        #expect(live.drawing.drawing.digest == Replay.load(journal, useSnapshots: false).drawing.digest)
    }

    @Test func aCoverOfFilesNeverAppliedHereAsksForAReload() throws {
        let temp = TemporaryDirectory("live-compaction-unseen")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        try seal(journal, files: 6)
        let (live, _) = LiveReplay.load(journal)
        // Two more seals, compacted with the rest before this replay looked: the cover holds
        // events it never applied, and only a replay can tell whether the rest are the same.
        try seal(journal, files: 2, from: 50)
        _ = Compactor(directory: journal, policy: .everything).run()
        let increment = LiveReplay.readNew(journal, after: live.readCursor, own: nil)
        #expect(increment.needsReload)
        let reloaded = LiveReplay.load(journal).0
        #expect(reloaded.drawing.drawing.digest == Replay.load(journal, useSnapshots: false).drawing.digest)
    }

    @Test func aFileThatVanishesWithoutACoverAsksForAReload() throws {
        let temp = TemporaryDirectory("live-compaction-vanished")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/board")
        try seal(journal, files: 3)
        let (live, _) = LiveReplay.load(journal)
        let victim = try #require(journal.listSealed().sealed.first)
        try FileSystem.remove(victim.path)
        #expect(LiveReplay.readNew(journal, after: live.readCursor, own: nil).needsReload)
    }
}
