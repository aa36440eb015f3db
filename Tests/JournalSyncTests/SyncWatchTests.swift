import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport
import Synchronization
import Testing

/// `SyncWatch`: journals kept in sync through a shared folder by loops that sleep until a
/// segment appears. Intervals are long (60 s) wherever a test checks promptness, so that only a
/// notification can make it pass in time; the bounds are loose (a full parallel test run can
/// keep the loops' tasks waiting for a pool thread for seconds), but far below the interval.
@Suite struct SyncWatchTests {
    /// What a loop said, shared between the loop's task and the test.
    final class Log: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// A running loop and what it said.
    final class Running: Sendable {
        let loop: SyncWatch
        let log: Log
        let task: Task<SyncError?, Never>

        init(_ journal: JournalDirectory, _ target: SyncTarget, _ options: SyncWatch.Options) {
            let loop = SyncWatch(journal: journal, target: target, options: options)
            let log = Log()
            self.loop = loop
            self.log = log
            task = Task {
                do throws(SyncError) {
                    try await loop.run { event in log.append(Running.describe(event)) }
                    return nil
                } catch {
                    return error
                }
            }
        }

        var events: [String] { log.all }

        /// Stops the loop; the error it ended with, if any.
        func finish() async -> SyncError? {
            loop.stop()
            return await task.value
        }

        static func describe(_ event: SyncWatch.Event) -> String {
            switch event {
            case .synced(let report):
                return "synced imported=\(report.imported.count) published=\(report.published.count) sealed=\(report.sealed != nil) problems=\(report.rejected.count)"
            case .busy: return "busy"
            case .failed(let error): return "failed \(error)"
            case .recovered: return "recovered"
            case .intervalOnly(let why): return "intervalOnly \(why)"
            }
        }
    }

    /// The deadline of waits that check that something happens, not how soon: it only bounds a
    /// full parallel `swift test`, whose relay and CLI tests can starve these loops for a minute.
    static let starvedDeadline: Double = 180

    /// Waits until a round of the loop `witness` watches has run (and ended) since this call:
    /// the progress a check that rounds did nothing waits for.
    func nextRound(of witness: SyncRoundWitness) async -> Bool {
        guard await eventually(within: 60, { witness.mark() }) else { return false }
        return await eventually(within: Self.starvedDeadline) { witness.roundRanSinceMark }
    }

    @Test func twoWatchingJournalsConvergeThroughASharedFolderWithinSeconds() async throws {
        let temp = TemporaryDirectory("watch-two")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 501)
        let bob = try Machine(temp.path + "/bob", seed: 502)
        let shared = temp.path + "/shared"
        _ = try await SyncEngine(journal: alice.journal).sync(.directory(shared), create: true)
        // Rounds on the interval are an hour apart: whatever bob sees, notifications brought.
        let slow = SyncWatch.Options(interval: 3600)
        let witnesses = [alice.journal, bob.journal].map { SyncRoundWitness(journal: $0.root) }
        for witness in witnesses { #expect(await eventually(within: 60) { witness.mark() }) }
        let aliceLoop = Running(alice.journal, .directory(shared), slow)
        let bobLoop = Running(bob.journal, .directory(shared), slow)
        // Both loops have run their first round (nothing to do) and sleep until notified.
        #expect(await eventually(within: Self.starvedDeadline) { witnesses.allSatisfy(\.roundRanSinceMark) },
                "a loop's first round never ran: \(aliceLoop.events) / \(bobLoop.events)")

        // Alice records and seals; bob's replay shows it after one notification each way.
        try alice.draw(strokes: 20)
        let aliceDigest = alice.digest
        let seen = await eventually(within: 40) { bob.digest == aliceDigest }
        #expect(seen, "bob never saw alice's strokes: \(aliceLoop.events) / \(bobLoop.events)")

        // Both record at once: they converge to one drawing.
        let (aliceRoot, bobRoot) = (alice.journal.root, bob.journal.root)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var machine = try Machine(opening: aliceRoot, seed: 601)
                try machine.draw(strokes: 15)
                try machine.draw(strokes: 5)
            }
            group.addTask {
                var machine = try Machine(opening: bobRoot, seed: 602)
                try machine.draw(strokes: 12)
            }
            try await group.waitForAll()
        }
        let converged = await eventually(within: 40) {
            let a = alice.digest
            return a == bob.digest && Replay.load(alice.journal).drawing.visibleStrokes.count > 20
                && alice.journal.listSealed().sealed.count == 4 && bob.journal.listSealed().sealed.count == 4
        }
        #expect(converged, "no convergence: \(aliceLoop.events) / \(bobLoop.events)")
        #expect(await aliceLoop.finish() == nil)
        #expect(await bobLoop.finish() == nil)
        for events in [aliceLoop.events, bobLoop.events] {
            #expect(!events.contains { $0.hasPrefix("failed") || $0.contains("problems=1") }, "\(events)")
        }
        #expect(alice.digest == bob.digest)
    }

    @Test func aSegmentALiveWriterSealsIsPublishedPromptly() async throws {
        let temp = TemporaryDirectory("watch-live")
        defer { temp.remove() }
        let board = try JournalDirectory.create(at: temp.path + "/board")
        let shared = temp.path + "/shared"
        // An interval no test run reaches: only a notification can start the round that publishes.
        let witness = SyncRoundWitness(journal: board.root)
        #expect(await eventually(within: 60) { witness.mark() })
        let running = Running(board, .directory(shared), SyncWatch.Options(interval: 3600, create: true))
        // A drawing app: it holds the writer for its whole life and seals when the pen rests.
        let writer = try JournalWriter(directory: board)
        defer { try? writer.close() }
        let stroke = StrokeID()
        for index in 0..<200 {
            try writer.append(.point(PointSample(stroke: stroke, x: Double(index), y: 1, pressure: 0.5, t: 0,
                                                 style: Style(color: RGBA(red: 1, green: 2, blue: 3), width: 2))))
        }
        try writer.append(.end(stroke))
        // The loop's first round (it creates the board) is over before the seal: the round that
        // publishes the sealed file is one a notification started.
        #expect(await eventually(within: Self.starvedDeadline) { witness.roundRanSinceMark }, "\(running.events)")
        guard let sealed = try writer.seal() else {
            Issue.record("nothing sealed")
            return
        }
        // The cover of a background compaction may replace the sealed file: what counts is that
        // its events are published, whatever file holds them.
        let published = await eventually(within: 120) {
            JournalDirectory.listSealed(replicasPath: FileSystem.join(shared, "replicas")).sealed
                .contains { $0.replica == writer.replica && $0.name.firstSeq <= sealed.firstSeq && sealed.lastSeq <= $0.name.lastSeq }
        }
        #expect(published, "\(running.events)")
        #expect(await running.finish() == nil)
    }

    @Test func aHeldLockIsSaidOnceAndRoundsRetryUntilItIsFree() async throws {
        let temp = TemporaryDirectory("watch-busy")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 511)
        try alice.draw(strokes: 3)
        let shared = temp.path + "/shared"
        // Another sync's lock (flock excludes two descriptors of one process too). Waited for:
        // a writer's background compaction may hold it for a moment.
        let lock = try FileDescriptor.open(alice.journal.localPath + "/sync.lock", .readWrite)
        #expect(await eventually(within: 60) { (try? lock.tryLockExclusive()) != nil }, "the lock stayed taken")
        // Rounds on the interval are an hour apart: a round soon after the lock is freed can only
        // be one of the retries a held lock makes (every quarter second), so seeing it proves the
        // loop went on retrying the whole time the lock was held.
        var options = SyncWatch.Options(interval: 3600, create: true)
        options.busyQuietSeconds = 0
        let running = Running(alice.journal, .directory(shared), options)
        #expect(await eventually(within: 40) { running.events == ["busy"] }, "\(running.events)")
        // Said once, however many rounds are skipped: held for a second more of this task's turns
        // (`patientSleep` stretches with a starved pool), retried some four times meanwhile.
        await patientSleep(seconds: 1)
        #expect(running.events == ["busy"])
        lock.close()
        let synced = await eventually(within: 40) { running.events.contains { $0.hasPrefix("synced") } }
        #expect(synced, "the loop stopped retrying while the lock was held: \(running.events)")
        #expect(await running.finish() == nil)
        // No second "busy" at any retry, up to the one that found the lock free.
        #expect(Array(running.events.prefix(3)) == ["busy", "recovered", "synced imported=0 published=1 sealed=false problems=0"])
    }

    @Test func aVanishedTargetIsWaitedForAndNeverRecreated() async throws {
        let temp = TemporaryDirectory("watch-gone")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 521)
        try alice.draw(strokes: 3)
        let shared = temp.path + "/stick/board"
        let running = Running(alice.journal, .directory(shared), SyncWatch.Options(interval: 0.2, create: true))
        // Nothing here checks promptness (interval 0.2 s).
        #expect(await eventually(within: Self.starvedDeadline) { running.events.contains { $0.contains("published=1") } })
        // The stick is pulled: reported once, retried, and no new board appears at the path
        // (`create` was for the first round).
        let aside = temp.path + "/pulled"
        try FileSystem.rename(temp.path + "/stick", to: aside)
        #expect(await eventually(within: Self.starvedDeadline) { running.events.contains { $0.hasPrefix("failed") } }, "\(running.events)")
        // Two more rounds have run (each retried the missing target) before the checks.
        let witness = SyncRoundWitness(journal: alice.journal.root)
        for _ in 0..<2 { #expect(await nextRound(of: witness), "the loop stopped retrying: \(running.events)") }
        #expect(!FileSystem.exists(shared))
        #expect(running.events.filter { $0.hasPrefix("failed") }.count == 1, "\(running.events)")
        // Plugged back in with a segment from elsewhere: imported.
        var bob = try Machine(temp.path + "/bob", seed: 522)
        try bob.draw(strokes: 2)
        _ = try await SyncEngine(journal: bob.journal).sync(.directory(aside + "/board"))
        try FileSystem.rename(aside, to: temp.path + "/stick")
        let caughtUp = await eventually(within: Self.starvedDeadline) { running.events.contains { $0.hasPrefix("synced imported=1") } }
        #expect(caughtUp, "\(running.events)")
        #expect(running.events.contains("recovered"))
        #expect(await running.finish() == nil)
    }

    @Test func whatNoRoundCanMendEndsTheLoop() async throws {
        let temp = TemporaryDirectory("watch-fatal")
        defer { temp.remove() }
        let alice = try Machine(temp.path + "/alice", seed: 531)
        // A missing folder at the first round is a typo, as for a single sync.
        let typo = Running(alice.journal, .directory(temp.path + "/no-such-board"), SyncWatch.Options(interval: 0.2))
        let typoError = await typo.task.value
        #expect(typoError == .targetMissing(temp.path + "/no-such-board"))

        // The journal itself removed while the loop runs.
        let shared = temp.path + "/shared"
        let running = Running(alice.journal, .directory(shared), SyncWatch.Options(interval: 0.2, create: true))
        #expect(await eventually(within: 40) { FileSystem.exists(shared + "/replicas") })
        try FileSystem.rename(alice.journal.root, to: temp.path + "/moved-away")
        let error = await running.task.value
        #expect(error != nil, "the loop went on without its journal: \(running.events)")
    }

    @Test func cancellingTheTaskStopsTheLoopLikeStop() async throws {
        let temp = TemporaryDirectory("watch-cancel")
        defer { temp.remove() }
        let alice = try Machine(temp.path + "/alice", seed: 541)
        // A round an hour away: a loop that ended only then would be seen (and the run slow).
        let witness = SyncRoundWitness(journal: alice.journal.root)
        #expect(await eventually(within: 60) { witness.mark() })
        let running = Running(alice.journal, .directory(temp.path + "/shared"), SyncWatch.Options(interval: 3600, create: true))
        // Cancelled once its first round is over, while it sleeps until the next.
        #expect(await eventually(within: Self.starvedDeadline) { witness.roundRanSinceMark }, "\(running.events)")
        let started = ProcessInfoLite.monotonicSeconds()
        running.task.cancel()
        #expect(await running.task.value == nil)
        #expect(ProcessInfoLite.monotonicSeconds() - started < 1800, "the loop ended at its next round, not when cancelled")
        #expect(running.loop.isStopped)
    }

    @Test func roundLinesSayWhatHappenedInWords() {
        var report = ReconcileReport(target: "shared")
        report.sealed = "abc/1-2-x.sjs"
        report.published = ["abc/1-2-x.sjs"]
        report.publishedBytes = 34 * 1024 + 100
        report.imported = ["def/1-5-y.sjs", "def/6-9-z.sjs"]
        report.importedEvents = 1_204
        report.seconds = 0.041
        #expect(SyncWatch.summary(of: report) == "sealed 1, published 1 (34 KB), imported 2 (1,204 events) in 0.04 s")
        var quiet = ReconcileReport(target: "shared")
        quiet.seconds = 2
        #expect(SyncWatch.summary(of: quiet) == "nothing new in 2 s")
        quiet.publishedBytes = 3 * 1024 * 1024 / 2
        quiet.published = ["a", "b"]
        quiet.seconds = 0.5
        #expect(SyncWatch.summary(of: quiet) == "published 2 (1.5 MB) in 0.5 s")
    }
}

extension Machine {
    /// Another pen on an existing journal (its own seed: strokes must not repeat ids).
    init(opening path: String, seed: UInt64) throws {
        journal = try JournalDirectory.open(at: path)
        random = SeededGenerator(seed: seed)
    }
}
