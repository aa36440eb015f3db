import Foundation
import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport
import Testing

/// One sync per journal at a time (issue 8, finding 13): two `sync --via rsync` on one journal
/// used to delete each other's `local/staging` mid-import.
@Suite struct SyncLockTests {
    /// Bob's segments on an rsync board, and Alice, who lacks them.
    func scenario(_ temp: TemporaryDirectory, seed: UInt64) throws -> (alice: Machine, bob: Machine, board: String) {
        var bob = try Machine(temp.path + "/bob", seed: seed)
        try bob.draw(strokes: 3)
        try bob.draw(strokes: 3)
        let board = temp.path + "/board"
        try FileSystem.createDirectory(board)
        _ = try SyncEngine(journal: bob.journal).sync(.rsync(board))
        return (try Machine(temp.path + "/alice", seed: seed + 1), bob, board)
    }

    @Test func aSecondSyncDuringAnRsyncImportWaitsAndThenSaysWhoHoldsTheJournal() throws {
        guard hasRsync() else {
            Issue.record("rsync is not installed: .ci/run installs it (apt-get install rsync)")
            return
        }
        let temp = TemporaryDirectory("sync-lock")
        defer { temp.remove() }
        let (alice, bob, board) = try scenario(temp, seed: 131)
        // While the first sync imports from its staging folder, a second one starts on the
        // same journal (run right here: flock excludes two descriptors of one process too).
        var second: Result<ReconcileReport, SyncError>?
        var secondSeconds = 0.0
        var first = SyncEngine(journal: alice.journal)
        first.progress = { step in
            guard step.hasPrefix("importing 1/"), second == nil else { return }
            var engine = SyncEngine(journal: alice.journal)
            engine.lockWaitSeconds = 0.5
            let started = ProcessInfoLite.monotonicSeconds()
            do throws(SyncError) { second = .success(try engine.sync(.rsync(board))) } catch { second = .failure(error) }
            secondSeconds = ProcessInfoLite.monotonicSeconds() - started
        }
        let report = try first.sync(.rsync(board))
        #expect(report.rejected.isEmpty, "the first sync lost files under its feet: \(report.rejected)")
        #expect(report.imported.count == 2)
        #expect(alice.digest == bob.digest)
        guard case .failure(let error)? = second else {
            Issue.record("the second sync ran alongside the first: \(String(describing: second))")
            return
        }
        #expect(error == .busy(pid: ProcessInfoLite.processID))
        #expect(error.description == "another sync is running on this journal (pid \(ProcessInfoLite.processID))")
        #expect(secondSeconds >= 0.4 && secondSeconds < 5, "waited \(secondSeconds) s")
        // Nothing of either is left behind.
        #expect(!(try FileSystem.list(alice.journal.localPath)).contains { $0.name.hasPrefix("staging") })
    }

    @Test func twoConcurrentRsyncSyncsBothSucceedOrTheSecondIsTold() throws {
        guard hasRsync() else {
            Issue.record("rsync is not installed: .ci/run installs it (apt-get install rsync)")
            return
        }
        let temp = TemporaryDirectory("sync-lock-threads")
        defer { temp.remove() }
        let (alice, bob, board) = try scenario(temp, seed: 133)
        let journal = alice.journal
        let results = [Box<Result<ReconcileReport, SyncError>>(), Box<Result<ReconcileReport, SyncError>>()]
        let group = DispatchGroup()
        for box in results {
            group.enter()
            Thread {
                do throws(SyncError) { box.value = .success(try SyncEngine(journal: journal).sync(.rsync(board))) } catch {
                    box.value = .failure(error)
                }
                group.leave()
            }.start()
        }
        group.wait()
        var imported = 0
        for box in results {
            switch box.value {
            case .success(let report)?:
                #expect(report.rejected.isEmpty, "\(report.rejected)")
                imported += report.imported.count
            case .failure(let error)?:
                #expect(error.description.hasPrefix("another sync is running on this journal (pid "), "\(error)")
            case nil:
                Issue.record("a sync did not report")
            }
        }
        #expect(imported == 2)
        #expect(alice.digest == bob.digest)
    }

    @Test func aHeldLockIsReportedWithTheHoldersPid() throws {
        let temp = TemporaryDirectory("sync-lock-held")
        defer { temp.remove() }
        let alice = try Machine(temp.path + "/alice", seed: 135)
        let shared = temp.path + "/shared"
        try FileSystem.createDirectory(shared)
        let holder = try FileDescriptor.open(alice.journal.localPath + "/sync.lock", .readWrite)
        defer { holder.close() }
        try holder.tryLockExclusive()
        try holder.writeAll(Array("pid 4242\n".utf8))
        var engine = SyncEngine(journal: alice.journal)
        engine.lockWaitSeconds = 0.2
        #expect(throws: SyncError.busy(pid: 4242)) { try engine.sync(.directory(shared)) }
        #expect(throws: SyncError.busy(pid: 4242)) { try engine.merge(from: [shared]) }
        holder.close()
        #expect(throws: Never.self) { try engine.sync(.directory(shared)) }
    }

    @Test func onlyStagingFoldersOfDeadProcessesAreRemoved() throws {
        let temp = TemporaryDirectory("sync-staging")
        defer { temp.remove() }
        let alice = try Machine(temp.path + "/alice", seed: 137)
        let shared = temp.path + "/shared"
        try FileSystem.createDirectory(shared)
        let local = alice.journal.localPath
        // pid 999999999 is above any pid_max: dead. pid 1 (init) is alive.
        for name in ["staging", "staging-999999999", "staging-1"] {
            try FileSystem.createDirectory(local + "/" + name + "/" + String(repeating: "a", count: 32))
            try FileSystem.writeAtomically(Array("x\n".utf8), to: local + "/" + name + "/.files-from")
        }
        _ = try SyncEngine(journal: alice.journal).sync(.directory(shared))
        let left = try FileSystem.list(local).map(\.name).filter { $0.hasPrefix("staging") }
        #expect(left == ["staging-1"])
    }
}
