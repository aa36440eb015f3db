import Dispatch
import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport
import Testing

/// Covers across machines (docs/SYNC.md, "Covers"): a cover travels instead of the files it
/// covers, each machine retires its covered copies, a shared folder is cleaned only beside a
/// verified cover, and two machines never send files back and forth.
@Suite(.ownThreads) struct CoverSyncTests {
    /// A machine whose own replica holds `files` small sealed segments (no automatic compaction).
    static func smallSegments(_ path: String, files: Int, perFile: Int = 20, replica: ReplicaID? = nil) throws -> JournalDirectory {
        let journal = try JournalDirectory.create(at: path, replica: replica)
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealEveryEvents: perFile))
        for file in 0..<files {
            let stroke = StrokeID(UUIDBits(high: 3, low: UInt64(file)))
            for index in 0..<(perFile - 1) {
                try writer.append(.point(PointSample(stroke: stroke, x: Double(index), y: Double(file), style: Style(color: RGBA(rawValue: 0x000000FF), width: 2))))
            }
            try writer.append(.end(stroke), flushingEvery: perFile)
        }
        try writer.close()
        return journal
    }

    static func sealedCount(_ root: String) -> Int { JournalDirectory.listSealed(replicasPath: root + "/replicas").sealed.count }

    @Test func aCoverReplacesItsFilesOnEveryMachineAndInTheSharedFolder() async throws {
        let temp = TemporaryDirectory("cover-sync")
        defer { temp.remove() }
        let shared = temp.path + "/shared"
        let a = try Self.smallSegments(temp.path + "/a", files: 20)
        let b = try JournalDirectory.create(at: temp.path + "/b")
        // Published one by one, as a release before covers (or a sync that ran between seals) did.
        for file in a.listSealed().sealed {
            try copyFile(file.path, shared + "/replicas/" + file.name.relativePath(in: file.replica))
        }
        _ = try await SyncEngine(journal: b).sync(.directory(shared))
        #expect(Self.sealedCount(shared) == 20)
        #expect(Self.sealedCount(b.root) == 20)
        let digest = Replay.load(a).drawing.digest

        // A compacts and syncs: the cover goes out, and the files it covers leave the folder.
        let compaction = Compactor(directory: a, policy: .everything).run()
        #expect(compaction.covers.count == 1 && compaction.retired.count == 20)
        let fromA = try await SyncEngine(journal: a).sync(.directory(shared))
        #expect(fromA.published.count == 1)
        #expect(fromA.removedFromTarget.count == 20)
        #expect(Self.sealedCount(shared) == 1)

        // B imports the cover and retires its twenty copies.
        let fromB = try await SyncEngine(journal: b).sync(.directory(shared))
        #expect(fromB.imported.count == 1)
        #expect(fromB.retired.count == 20)
        #expect(Self.sealedCount(b.root) == 1)
        #expect(Replay.load(b).drawing.digest == digest)

        // Nothing goes back and forth afterwards.
        for journal in [a, b, a, b] {
            let again = try await SyncEngine(journal: journal).sync(.directory(shared))
            #expect(again.nothingNew, "\(again.text)")
        }
        // A newcomer gets one file.
        let c = try JournalDirectory.create(at: temp.path + "/c")
        let fromC = try await SyncEngine(journal: c).sync(.directory(shared))
        #expect(fromC.imported.count == 1)
        #expect(Replay.load(c).drawing.digest == digest)
    }

    @Test func aMachineThatHasNotYetSeenTheCoverLosesNothingWhenTheFolderIsCleaned() async throws {
        let temp = TemporaryDirectory("cover-late")
        defer { temp.remove() }
        let shared = temp.path + "/shared"
        let a = try Self.smallSegments(temp.path + "/a", files: 10)
        _ = try await SyncEngine(journal: a).sync(.directory(shared), create: true)
        let digest = Replay.load(a).drawing.digest
        _ = Compactor(directory: a, policy: .everything).run()
        _ = try await SyncEngine(journal: a).sync(.directory(shared))
        // D never saw the small files: it finds the cover alone, and it holds every event.
        let d = try JournalDirectory.create(at: temp.path + "/d")
        let fromD = try await SyncEngine(journal: d).sync(.directory(shared))
        #expect(fromD.imported.count == 1)
        #expect(Replay.load(d).drawing.digest == digest)
    }

    /// A machine compacts and cleans the shared folder while another's sync is between its
    /// listing and its fetch: the files listed are gone, their cover is there. The sync lists
    /// again and reads the cover, so it ends holding every event the folder held when it began
    /// (a revocation's cut is taken from such a sync: left for the next sync, the files' events
    /// were cut away as never seen).
    @Test func aSyncWhoseFilesAreReplacedByTheirCoverMeanwhileStillHoldsTheirEvents() async throws {
        let temp = TemporaryDirectory("cover-meanwhile")
        defer { temp.remove() }
        let shared = temp.path + "/shared"
        let a = try Self.smallSegments(temp.path + "/a", files: 10)
        // Published one by one (a relay's rounds seal a file each).
        for file in a.listSealed().sealed {
            try copyFile(file.path, shared + "/replicas/" + file.name.relativePath(in: file.replica))
        }
        let digest = Replay.load(a).drawing.digest
        let b = try JournalDirectory.create(at: temp.path + "/b")
        let cleaned = Locked(false)
        var engine = SyncEngine(journal: b)
        engine.progress = { step in
            // B has listed the ten files and is about to fetch them: A compacts and cleans now.
            guard step.hasPrefix("fetching"), !cleaned.withLock({ $0 }) else { return }
            cleaned.withLock { $0 = true }
                _ = Compactor(directory: a, policy: .everything).run()
            let semaphore = DispatchSemaphore(value: 0)
            Task {
                _ = try? await SyncEngine(journal: a).sync(.directory(shared))
                semaphore.signal()
            }
            semaphore.wait()
        }
        let fromB = try await engine.sync(.directory(shared))
        #expect(cleaned.withLock { $0 } && Self.sealedCount(shared) == 1, "the folder was not cleaned during the sync")
        #expect(Replay.load(b).drawing.digest == digest, "\(fromB.text)")
        #expect(fromB.rejected.isEmpty, "\(fromB.rejected)")
    }

    @Test func twoCoversOfTheSameEventsSettleOnTheSmallerName() async throws {
        // Two relays hosting one native client, compacting it differently: unsigned journals,
        // so that either may cover the other.
        let temp = TemporaryDirectory("cover-equal")
        defer { temp.remove() }
        let shared = temp.path + "/shared"
        let replica = ReplicaID(UUIDBits(high: 0xAB, low: 0xCD))
        let a = try Self.smallSegments(temp.path + "/a", files: 6, replica: replica)
        _ = Compactor(directory: a, policy: .everything).run()
        let ours = JournalDirectory.listSealed(replicasPath: a.replicasPath).sealed[0]
        // The same events cut into other blocks: another file, another name, the same events.
        let events = SegmentScanner.scan(path: ours.path, sealed: true).allEvents().events
        let other = SegmentEncoder.segment(replica: replica, events: events, targetEvents: 7)
        let otherName = SegmentName(firstSeq: ours.name.firstSeq, lastSeq: ours.name.lastSeq, contents: other)
        try FileSystem.createDirectory(shared + "/replicas/" + replica.hex)
        try FileSystem.writeAtomically(other, to: shared + "/replicas/" + otherName.relativePath(in: replica))
        let digest = Replay.load(a).drawing.digest
        let keep = min(ours.name.fileName, otherName.fileName)

        _ = try await SyncEngine(journal: a).sync(.directory(shared))
        #expect(JournalDirectory.listSealed(replicasPath: a.replicasPath).sealed.map(\.name.fileName) == [keep])
        #expect(JournalDirectory.listSealed(replicasPath: shared + "/replicas").sealed.map(\.name.fileName) == [keep])
        #expect(Replay.load(a).drawing.digest == digest)
        let again = try await SyncEngine(journal: a).sync(.directory(shared))
        #expect(again.nothingNew, "\(again.text)")
    }

    @Test func aReaderThatIgnoresCoversStillReadsTheSameDrawing() throws {
        // What an older release sees: a folder holding a cover and the files it covers.
        let temp = TemporaryDirectory("cover-old-reader")
        defer { temp.remove() }
        let a = try Self.smallSegments(temp.path + "/a", files: 8)
        let before = Replay.load(a).drawing.digest
        let saved = try JournalDirectory.listSealed(replicasPath: a.replicasPath).sealed.map { ($0.path, try FileSystem.readFile($0.path)) }
        _ = Compactor(directory: a, policy: .everything).run()
        for (path, bytes) in saved { try FileSystem.writeAtomically(bytes, to: path) }
        #expect(Self.sealedCount(a.root) == 9)
        let (drawing, report) = Replay.load(a)
        #expect(drawing.digest == before)
        #expect(report.forks.isEmpty)
        #expect(report.duplicateEvents == 160)
    }
}
