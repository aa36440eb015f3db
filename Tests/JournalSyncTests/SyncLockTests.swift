import Foundation
import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport
import Testing

/// One sync per journal at a time: two `sync --via rsync` on one journal would otherwise delete
/// each other's `local/staging` mid-import.
@Suite(.ownThreads) struct SyncLockTests {
    /// Bob's segments on an rsync board, and Alice, who lacks them.
    func scenario(_ temp: TemporaryDirectory, seed: UInt64) async throws -> (alice: Machine, bob: Machine, board: String) {
        var bob = try Machine(temp.path + "/bob", seed: seed)
        try bob.draw(strokes: 3)
        try bob.draw(strokes: 3)
        let board = temp.path + "/board"
        try FileSystem.createDirectory(board)
        _ = try await SyncEngine(journal: bob.journal).sync(.rsync(board))
        return (try Machine(temp.path + "/alice", seed: seed + 1), bob, board)
    }

    @Test(.enabled(if: hasRsync(), "rsync is not installed (apt-get install rsync)"))
    func aSecondSyncDuringAnRsyncImportWaitsAndThenSaysWhoHoldsTheJournal() async throws {
        let temp = TemporaryDirectory("sync-lock")
        defer { temp.remove() }
        let (alice, bob, board) = try await scenario(temp, seed: 131)
        // While the first sync imports from its staging folder, a second one starts on the
        // same journal (run right here: flock excludes two descriptors of one process too).
        // The first sync's progress callback starts the second one and waits for it, so the
        // second runs while the first holds the lock, whatever the timing.
        let outcome = Box<(Result<ReconcileReport, SyncError>, Double)>()
        let journal = alice.journal
        var first = SyncEngine(journal: journal)
        first.progress = { step in
            guard step.hasPrefix("importing 1/"), outcome.value == nil else { return }
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                var engine = SyncEngine(journal: journal)
                engine.lockWaitSeconds = 0.5
                let started = ProcessInfoLite.monotonicSeconds()
                let result: Result<ReconcileReport, SyncError>
                do throws(SyncError) { result = .success(try await engine.sync(.rsync(board))) } catch { result = .failure(error) }
                outcome.value = (result, ProcessInfoLite.monotonicSeconds() - started)
                done.signal()
            }
            if done.wait(timeout: .now() + 20) == .timedOut { Issue.record("the second sync never finished") }
        }
        var second: Result<ReconcileReport, SyncError>? { outcome.value?.0 }
        var secondSeconds: Double { outcome.value?.1 ?? 0 }
        let report = try await first.sync(.rsync(board))
        #expect(report.rejected.isEmpty, "the first sync lost files under its feet: \(report.rejected)")
        #expect(report.imported.count == 2)
        #expect(alice.digest == bob.digest)
        guard case .failure(let error)? = second else {
            Issue.record("the second sync ran alongside the first: \(String(describing: second))")
            return
        }
        #expect(error == .busy(pid: ProcessInfoLite.processID))
        #expect(error.description == "another sync or compaction is running on this journal (pid \(ProcessInfoLite.processID))")
        // It waited for the lock before it gave up (how long beyond that depends on the machine).
        #expect(secondSeconds >= 0.4, "waited \(secondSeconds) s")
        // Nothing of either is left behind.
        #expect(!(try FileSystem.list(alice.journal.localPath)).contains { $0.name.hasPrefix("staging") })
    }

    @Test(.enabled(if: hasRsync(), "rsync is not installed (apt-get install rsync)"))
    func twoConcurrentRsyncSyncsBothSucceedOrTheSecondIsTold() async throws {
        let temp = TemporaryDirectory("sync-lock-threads")
        defer { temp.remove() }
        let (alice, bob, board) = try await scenario(temp, seed: 133)
        let journal = alice.journal
        let results = await withTaskGroup(of: Result<ReconcileReport, SyncError>.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    do throws(SyncError) { return .success(try await SyncEngine(journal: journal).sync(.rsync(board))) } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        var imported = 0
        for result in results.map(Optional.some) {
            switch result {
            case .success(let report)?:
                #expect(report.rejected.isEmpty, "\(report.rejected)")
                imported += report.imported.count
            case .failure(let error)?:
                #expect(error.description.hasPrefix("another sync or compaction is running on this journal (pid "), "\(error)")
            case nil:
                Issue.record("a sync did not report")
            }
        }
        #expect(imported == 2)
        #expect(alice.digest == bob.digest)
    }

    @Test func aHeldLockIsReportedWithTheHoldersPid() async throws {
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
        await #expect(throws: SyncError.busy(pid: 4242)) { try await engine.sync(.directory(shared)) }
        await #expect(throws: SyncError.busy(pid: 4242)) { try await engine.merge(from: [shared]) }
        holder.close()
        // Waited for, not tried once: a child another test forks at that moment holds a copy of
        // the descriptor (and so the flock) until it execs, and a writer's background compaction
        // takes the lock for moments.
        engine.lockWaitSeconds = 60
        await #expect(throws: Never.self) { try await engine.sync(.directory(shared)) }
    }

    @Test func onlyStagingFoldersOfDeadProcessesAreRemoved() async throws {
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
        _ = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        let left = try FileSystem.list(local).map(\.name).filter { $0.hasPrefix("staging") }
        #expect(left == ["staging-1"])
    }
}
