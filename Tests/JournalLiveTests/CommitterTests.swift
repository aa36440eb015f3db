import JournalCommit
import JournalFormat
import JournalLive
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport
import Testing

/// The board's one committer and the stream it publishes (`Board.observe`): events sync
/// brings are named once, as decoded; hosted replicas share the board's group commit and seal
/// policy; seals and durable seqs are reported as they happen.
@Suite struct CommitterTests {
    /// Everything a board publishes, collected from its threads.
    final class Recorder: Sendable {
        let activities = Locked<[JournalActivity]>([])

        func record(_ activity: JournalActivity) { activities.withLock { $0.append(activity) } }

        var integrated: [Event] {
            activities.withLock { all in all.flatMap { activity -> [Event] in
                if case .integrated(let events) = activity { return events }
                return []
            } }
        }

        var hostedStored: [Event] {
            activities.withLock { all in all.flatMap { activity -> [Event] in
                if case .hosted(let round) = activity { return round.stored.values.flatMap { $0 } }
                return []
            } }
        }

        var hostedBatches: Int {
            activities.withLock { all in all.reduce(0) { sum, activity in
                if case .hosted(let round) = activity { return sum + round.batches.values.reduce(0, +) }
                return sum
            } }
        }

        var sealed: [SealedSegment] {
            activities.withLock { all in all.flatMap { activity -> [SealedSegment] in
                if case .sealed(let files) = activity { return files }
                return []
            } }
        }

        var durableThrough: UInt64 {
            activities.withLock { all in all.reduce(0) { newest, activity in
                if case .durable(let seq) = activity { return max(newest, seq) }
                return newest
            } }
        }

        var reloads: Int {
            activities.withLock { all in all.count { if case .reloaded = $0 { return true } else { return false } } }
        }
    }

    @Test func eventsSyncBringsAreNamedOnceAsTheBoardAppliesThem() async throws {
        let temp = TemporaryDirectory("committer-integrated")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/a", create: true,
                              options: BoardOptions(rescanIntervalSeconds: 30, keepsDrawing: false, automaticCompaction: false))
        let recorder = Recorder()
        board.observe { recorder.record($0) }
        // Another machine's journal, synced in twice: two sealed segments.
        let other = try JournalDirectory.create(at: temp.path + "/b")
        var generator = EventGenerator(seed: 41)
        func record(_ payloads: [Event]) throws -> [Event] {
            let writer = try JournalWriter(directory: other, options: WriterOptions())
            let events = try payloads.map { event throws(JournalError) in try writer.appendEvent(event.payload) }
            try writer.close()
            return events
        }
        let first = try record(generator.stroke(points: 40) + generator.stroke(points: 25))
        _ = try await SyncEngine(journal: board.directory).merge(from: [other.root])
        #expect(await eventually(within: 20) { recorder.integrated.count >= first.count })
        let second = try record(generator.stroke(points: 60))
        _ = try await SyncEngine(journal: board.directory).merge(from: [other.root])
        let all = first + second
        #expect(await eventually(within: 20) { recorder.integrated.count >= all.count })
        // A look with nothing new names nothing again.
        await board.refresh()
        let named = recorder.integrated
        #expect(named.count == all.count, "named \(named.count) events for \(all.count) brought")
        #expect(Set(named.map(\.id)) == Set(all.map(\.id)))
        // As decoded: the same events, bit for bit, not a re-read.
        let byID = Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) })
        #expect(named.allSatisfy { byID[$0.id] == $0 })
        #expect(recorder.reloads == 0)
        try await board.close()
    }

    /// Closing seals what is open, and the board's last look at its files (the seal's report
    /// wakes it) knows that file for its own: a close never loads the whole journal again (in
    /// relay_load's ingest, every board the relay had created did, as the relay stopped).
    @Test func closingSealsWithoutLoadingTheJournalAgain() async throws {
        let temp = TemporaryDirectory("committer-close")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/a", create: true, options: BoardOptions(sealAfterIdleMilliseconds: nil))
        let recorder = Recorder()
        board.observe { recorder.record($0) }
        var generator = EventGenerator(seed: 8)
        for event in generator.stroke(points: 300) { _ = try board.append(event.payload) }
        try await board.flush()
        #expect(recorder.sealed.isEmpty, "nothing sealed before the close")
        try await board.close()
        #expect(recorder.sealed.count == 1, "the close sealed the open segment")
        #expect(recorder.reloads == 0, "the close loaded the journal again \(recorder.reloads) time(s)")
    }

    @Test func ownEventsAreReportedDurableAndSealedByTheSamePolicy() async throws {
        let temp = TemporaryDirectory("committer-own")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/a", create: true,
                              options: BoardOptions(sealAfterIdleMilliseconds: 100, watchForSegments: false, automaticCompaction: false))
        let recorder = Recorder()
        board.observe { recorder.record($0) }
        var generator = EventGenerator(seed: 5)
        let stroke = generator.newStroke()
        for index in 0..<30 {
            try board.append(.point(PointSample(stroke: stroke, x: Double(index), y: 1, style: Style(color: RGBA(rawValue: 0xFF), width: 2))))
        }
        try await board.flush()
        #expect(recorder.durableThrough == 30)
        // The pause seals the open segment: a deadline on the committer, reported once done.
        #expect(await eventually(within: 20) { !recorder.sealed.isEmpty })
        let sealed = recorder.sealed
        #expect(sealed.count == 1 && sealed[0].replica == board.replica && sealed[0].name.firstSeq == 1 && sealed[0].name.lastSeq == 30)
        #expect(FileSystem.exists(board.directory.replicaPath(board.replica) + "/" + sealed[0].name.fileName))
        try await board.close()
    }

    /// The seal a close makes is published and compacted like any other: a journal is closed
    /// compacted (here: the previous session's small files and this one's seal fold into one).
    @Test func theSealAtCloseIsPublishedAndCompacted() async throws {
        let temp = TemporaryDirectory("committer-close")
        defer { temp.remove() }
        let options = BoardOptions(sealAfterIdleMilliseconds: nil, watchForSegments: false)
        let stroke = StrokeID(UUIDBits(high: 3, low: 3))
        func draw(_ board: Board, _ count: Int) throws {
            for index in 0..<count {
                try board.append(.point(PointSample(stroke: stroke, x: Double(index), y: 1, style: Style(color: RGBA(rawValue: 0xFF), width: 2))))
            }
        }
        // Three sessions of small files, without compaction.
        for _ in 0..<3 {
            let board = try Board(path: temp.path + "/a", create: true,
                                  options: BoardOptions(sealAfterIdleMilliseconds: nil, watchForSegments: false, automaticCompaction: false))
            try draw(board, 10)
            try await board.close()
        }
        let board = try Board(path: temp.path + "/a", options: options)
        let recorder = Recorder()
        board.observe { recorder.record($0) }
        try draw(board, 10)
        try await board.close()
        #expect(recorder.sealed.map(\.name.lastSeq) == [40])
        let compacted = recorder.activities.withLock { $0.contains { if case .compacted = $0 { return true } else { return false } } }
        #expect(compacted, "no compaction reported")
        let files = try FileSystem.list(board.directory.replicaPath(board.replica)).filter { $0.name.hasSuffix(".sjs") }
        #expect(files.count == 1, "\(files.map(\.name))")
    }

    @Test func hostedReplicasShareTheGroupCommitAndAreSealedAfterAPause() async throws {
        let temp = TemporaryDirectory("committer-hosted")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/a", create: true,
                              options: BoardOptions(sealAfterIdleMilliseconds: 150, watchForSegments: false, automaticCompaction: false))
        let recorder = Recorder()
        board.observe { recorder.record($0) }
        var client = EventGenerator(seed: 99)
        let events = client.stroke(points: 49)
        // Two batches from two submitters, and own events in the same window.
        try board.host(Array(events[..<20]), of: client.replica, from: 1)
        try board.host(Array(events[20...]), of: client.replica, from: 2)
        let stroke = StrokeID(UUIDBits(high: 1, low: 1))
        try board.append(.point(PointSample(stroke: stroke, x: 1, y: 1, style: Style(color: RGBA(rawValue: 0xFF), width: 2))))
        #expect(await eventually(within: 20) { recorder.hostedStored.count == events.count })
        #expect(recorder.hostedStored == events)
        #expect(recorder.hostedBatches == 2)
        #expect(board.hostedStored[client.replica] == SeqRanges([1...50]))
        // Sealed by the board's policy after the pause: no poll, a deadline.
        #expect(await eventually(within: 20) { recorder.sealed.contains { $0.replica == client.replica } })
        let file = try #require(recorder.sealed.first { $0.replica == client.replica })
        #expect(file.name.firstSeq == 1 && file.name.lastSeq == 50)
        #expect(FileSystem.exists(board.directory.replicaPath(client.replica) + "/" + file.name.fileName))
        // The hosted events replay as the client's own.
        try await board.close()
        let replayed = Replay.load(board.directory, useSnapshots: false)
        #expect(replayed.report.replicas.first { $0.replica == client.replica }?.ranges == [1...50])
        // Closed: nothing more is taken.
        #expect(throws: JournalError.self) { try board.host([client.event(.end(StrokeID(UUIDBits(high: 2, low: 2))))], of: client.replica, from: 1) }
    }

    /// `sealNow` (a relay's shared-ack round) seals what was recorded before it was called:
    /// events a pen keeps adding meanwhile are the next round's. Counted as still unsealed,
    /// they failed the rounds of a relay whose one text-mode pen drew at 60 Hz (102 failures
    /// in 60 s, acks 1-7 s late).
    @Test func sealNowSealsWhatCameBeforeItWhileAPenKeepsDrawing() async throws {
        let temp = TemporaryDirectory("seal-now-pen")
        defer { temp.remove() }
        let board = try Board(path: temp.path + "/board", create: true,
                              options: BoardOptions(sealAfterIdleMilliseconds: nil, watchForSegments: false))
        let drawing = Locked(true)
        let penStopped = Locked(false)
        let pen = WorkerThread()
        pen.submit {
            var x = 0.0
            let style = Style(color: RGBA(rawValue: 0x000000FF), width: 1)
            // As fast as it can, so that points land while each round seals; bounded, so the
            // suite beside it gets the machine back.
            while drawing.withLock({ $0 }), x < 400_000 {
                x += 1
                _ = try? board.append(.point(PointSample(stroke: StrokeID(UUIDBits(high: 1, low: 1)), x: x, y: 0, style: style)))
            }
            penStopped.withLock { $0 = true }
        }
        var failures: [String] = []
        for _ in 0..<20 {
            // Each round while the pen draws: it has drawn since the last one.
            let last = board.durableSeq
            _ = await eventually(within: 60) { board.durableSeq > last + 100 || penStopped.withLock { $0 } }
            let before = board.durableSeq
            if let failure = await board.sealNow() { failures.append(failure.description) }
            // What was durable when the round began is in a sealed segment now.
            let sealedThrough = board.directory.listSealed().sealed.filter { $0.replica == board.replica }.map(\.name.lastSeq).max() ?? 0
            #expect(sealedThrough >= before)
        }
        drawing.withLock { $0 = false }
        pen.close()
        #expect(await eventually(within: 60) { penStopped.withLock { $0 } })
        #expect(failures.isEmpty, "\(failures.count) of 20 rounds failed: \(failures.first ?? "")")
        try await board.close()
    }
}
