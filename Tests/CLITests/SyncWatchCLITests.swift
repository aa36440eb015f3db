import Foundation
import JournalTestSupport
import Testing

/// `journal sync --watch` as a process: it publishes what is recorded, stops cleanly on SIGINT
/// and SIGTERM, and a `kill -9` in the middle of a round loses and half-imports nothing.
@Suite(.ownThreads) struct SyncWatchCLITests {
    let cli = CLITests()

    /// A `journal` child left running, its output in files.
    typealias Child = JournalProcess.Child

    func segmentCount(_ folder: String) -> Int {
        (FileManager.default.enumerator(atPath: folder + "/replicas")?.compactMap { $0 as? String } ?? [])
            .filter { $0.hasSuffix(".sjs") && !$0.contains("/.") }.count
    }

    /// The digest of what `folder` (a shared board) holds, by merging it into a fresh journal.
    func boardDigest(_ folder: String, scratch: String) throws -> String {
        try? FileManager.default.removeItem(atPath: scratch)
        try cli.journal(["merge", folder, "--into", scratch])
        return try cli.journal(["digest", "-C", scratch]).stdout
    }

    @Test func recordedEventsReachTheTargetAndSIGTERMEndsWithStatus0() throws {
        let temp = TemporaryDirectory("watch-cli")
        defer { temp.remove() }
        let board = temp.path + "/board", shared = temp.path + "/shared"
        try cli.journal(["init", board])
        // A long interval: only a notification can publish within the few seconds allowed.
        let watch = try Child(["sync", "-C", board, shared, "--create", "--watch", "--interval", "60"])
        #expect(eventuallyBlocking(within: 20, every: 20) { watch.stdout.contains("sync: watching") }, "\(watch.stderr)")

        // A recorder that stays open holds the writer lock; its events are published once it seals.
        let recorder = Process()
        recorder.executableURL = URL(fileURLWithPath: CLITests.binary)
        recorder.arguments = ["record", "-C", board]
        let input = Pipe()
        recorder.standardInput = input
        recorder.standardOutput = FileHandle.nullDevice
        try recorder.run()
        input.fileHandleForWriting.write(Data(CLITests.sample.utf8))
        try input.fileHandleForWriting.close()
        try recorder.waitForExit()
        #expect(recorder.terminationStatus == 0)
        let sealedAt = Date()
        #expect(eventuallyBlocking(within: 40, every: 20) { segmentCount(shared) == 1 }, "\(watch.stdout) \(watch.stderr)")
        // Well before the 60 s interval (loose: a full parallel test run slows everything).
        #expect(Date().timeIntervalSince(sealedAt) < 20)
        #expect(try boardDigest(shared, scratch: temp.path + "/check") == cli.journal(["digest", "-C", board]).stdout)
        #expect(eventuallyBlocking(within: 20, every: 20) { watch.stdout.contains("sync: published 1 (") }, "\(watch.stdout)")

        // Recorded without sealing: the next interval round would seal it; SIGTERM first
        // finishes cleanly and says so.
        #expect(watch.stopBlocking(with: SIGTERM, seconds: 20) == 0, "\(watch.stderr)")
        #expect(watch.stdout.hasSuffix("sync: stopped\n"), "\(watch.stdout)")
        #expect(watch.stderr.isEmpty, "\(watch.stderr)")
        // The lock was released: a plain sync runs at once.
        #expect(try cli.journal(["sync", "-C", board, shared]).status == 0)
    }

    @Test func withJSONOnlyRoundsThatChangeSomethingPrintAndSIGINTStopsWithStatus0() throws {
        let temp = TemporaryDirectory("watch-cli-json")
        defer { temp.remove() }
        let alice = temp.path + "/alice", bob = temp.path + "/bob", shared = temp.path + "/shared"
        try cli.journal(["init", alice])
        try cli.journal(["init", bob])
        try cli.journal(["sync", "-C", bob, shared, "--create"])
        let rounds = SyncRoundWitness(journal: bob)
        #expect(eventuallyBlocking(within: 60) { rounds.mark() })
        let watch = try Child(["sync", "-C", bob, shared, "--watch", "--json", "--interval", "60"])
        // Its first round, over before alice publishes anything, has nothing to do: nothing
        // printed (then, and in the end: one line, the import's).
        #expect(eventuallyBlocking(within: 120) { rounds.roundRanSinceMark }, "\(watch.stderr)")
        #expect(watch.stdout.isEmpty)
        #expect(try cli.journal(["record", "-C", alice], stdin: CLITests.sample).status == 0)
        #expect(try cli.journal(["sync", "-C", alice, shared]).status == 0)
        #expect(eventuallyBlocking(within: 40, every: 20) { watch.stdout.contains("\"importedEvents\":8") }, "\(watch.stdout) \(watch.stderr)")
        #expect(watch.stopBlocking(with: SIGINT, seconds: 20) == 0)
        let lines = watch.stdout.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("{\"target\":"), "\(watch.stdout)")
        #expect(watch.stderr.hasSuffix("sync: stopped\n"), "\(watch.stderr)")
        #expect(try cli.journal(["digest", "-C", bob]).stdout == cli.journal(["digest", "-C", alice]).stdout)
    }

    @Test func watchOptionsAreChecked() throws {
        let temp = TemporaryDirectory("watch-cli-usage")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        #expect(try cli.journal(["sync", "-C", board, temp.path + "/s", "--interval", "5"]).status == 64)
        #expect(try cli.journal(["sync", "-C", board, temp.path + "/s", "--watch", "--interval", "0"]).status == 64)
        // A mistyped target ends the loop at once, as it ends a single sync.
        let typo = try cli.journal(["sync", "-C", board, temp.path + "/shraed", "--watch"])
        #expect(typo.status == 64 && typo.stderr.contains("--create"), "\(typo.stderr)")
        let help = try cli.journal(["sync", "--help"])
        #expect(help.stdout.contains("--watch") && help.stdout.contains("--interval"))
    }

    /// `kill -9` while a watching sync imports a large batch; a plain sync afterwards completes
    /// the import, and nothing is lost or half-imported.
    @Test func killDashNineMidRoundLosesNothing() throws {
        let temp = TemporaryDirectory("watch-crash")
        defer { temp.remove() }
        let source = temp.path + "/source", shared = temp.path + "/shared"
        try cli.journal(["init", source])
        let crash = SyncCrashTests()
        for part in 0..<24 {
            // Kept as 24 files, so that a kill can land between two imports.
            #expect(try cli.journal(["record", "-C", source, "--no-compact"], stdin: crash.session(100 + part, strokes: 40)).status == 0)
        }
        try cli.journal(["sync", "-C", source, shared, "--create", "--no-compact"])
        let reference = try cli.journal(["digest", "-C", source]).stdout
        #expect(segmentCount(shared) == 24)

        var killedMidImport = 0
        for (attempt, delay) in [0, 15_000, 40_000, 80_000].enumerated() {
            let journal = temp.path + "/j\(attempt)"
            try cli.journal(["init", journal])
            let watch = try Child(["sync", "-C", journal, shared, "--watch"])
            // Killed right after its first imported file lands (plus a delay), mid-batch.
            _ = eventuallyBlocking(within: 20, every: 20) { segmentCount(journal) > 0 }
            usleep(UInt32(delay))
            let held = segmentCount(journal)
            kill(watch.process.processIdentifier, SIGKILL)
            try watch.process.waitForExit()
            if held > 0 && held < 24 { killedMidImport += 1 }

            let again = try cli.journal(["sync", "-C", journal, shared])
            #expect(again.status == 0, "\(again.stderr)")
            let verify = try cli.journal(["verify", "-C", journal])
            #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
            #expect(try cli.journal(["digest", "-C", journal]).stdout == reference)
            #expect(segmentCount(journal) == 24)
            let leftovers = (FileManager.default.enumerator(atPath: journal)?.compactMap { $0 as? String } ?? [])
                .filter { $0.contains(".tmp-") || $0.contains("staging") }
            #expect(leftovers.isEmpty, "\(leftovers)")
        }
        // At least one kill must have landed mid-batch for this test to mean anything.
        #expect(killedMidImport > 0)
        #expect(segmentCount(shared) == 24)
    }
}
