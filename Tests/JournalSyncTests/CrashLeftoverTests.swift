import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport
import Testing

/// Files a `kill -9` leaves at fixed temporary names created with O_EXCL (`local/index.tmp`,
/// `replica.tmp`, `latest.sjsnap.tmp`, `sync-cache.tmp`, staging `.files-from.tmp`) make no
/// later write fail with "File exists": temporaries have names of their own.
@Suite(.ownThreads) struct CrashLeftoverTests {
    @Test func leftoversOfAKilledProcessWedgeNeitherRecordNorSnapshotNorSync() async throws {
        let temp = TemporaryDirectory("leftovers")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 41)
        var bob = try Machine(temp.path + "/bob", seed: 42)
        try alice.draw(strokes: 2)
        try bob.draw(strokes: 2)
        let shared = temp.path + "/shared"
        try FileSystem.createDirectory(shared)
        _ = try await SyncEngine(journal: bob.journal).sync(.directory(shared))
        _ = try SnapshotStore.create(alice.journal)

        // What a kill -9 mid-write leaves: the old fixed names, and unique temporaries of a
        // process that is gone (pid 999999999 is above any pid_max).
        let local = alice.journal.localPath
        let snapshots = alice.journal.snapshotsPath
        let junk = Array("half written".utf8)
        let dead = "." + ProcessInfoLite.hostName + ".999999999.0123456789abcdef"
        let planted = [local + "/index.tmp", local + "/replica.tmp", local + "/sync-cache.tmp", local + "/open.sjo.new",
                       snapshots + "/latest.sjsnap.tmp", local + "/.tmp-index" + dead, local + "/.tmp-sync-cache" + dead,
                       snapshots + "/.tmp-latest.sjsnap" + dead]
        for path in planted { try copyBytes(junk, to: path) }

        try alice.draw(strokes: 2)                      // record: open, flush, seal, index
        _ = try SnapshotStore.create(alice.journal)     // snapshot
        let report = try await SyncEngine(journal: alice.journal).sync(.directory(shared))  // sync
        #expect(report.imported.count == 1 && report.rejected.isEmpty)
        #expect(report.published.count == 2)
        #expect(alice.digest == Replay.replay(SegmentSet.load(alice.journal)).drawing.digest)

        // Dead processes' temporaries are gone; nothing else of ours lingers.
        for path in planted where path.contains(".tmp-") { #expect(!FileSystem.exists(path), "\(path)") }
        let ours = try (FileSystem.list(local) + FileSystem.list(snapshots)).map(\.name).filter { $0.hasPrefix(".tmp-") }
        #expect(ours.isEmpty, "\(ours)")
    }

    func copyBytes(_ bytes: [UInt8], to path: String) throws {
        try FileSystem.createDirectory(FileSystem.parent(of: path))
        let file = try FileDescriptor.open(path, .createNew)
        defer { file.close() }
        try file.writeAll(bytes)
    }
}
