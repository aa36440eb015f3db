import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing
import JournalCompression

@Suite(.ownThreads) struct ReplayTests {
    /// Three replicas' interleaved sessions with undo/redo/erase/clear, as sealed segment bytes.
    struct Session {
        var events: [ReplicaID: [Event]] = [:]
        var all: [Event] { events.values.flatMap { $0 } }
    }

    func makeSession(seed: UInt64) -> Session {
        var session = Session()
        var generators = (0..<3).map { EventGenerator(seed: seed * 10 + UInt64($0)) }
        var random = SeededGenerator(seed: seed)
        var shared: [StrokeID] = []
        for _ in 0..<30 {
            let who = Int.random(in: 0..<3, using: &random)
            var events = generators[who].stroke(points: Int.random(in: 1...40, using: &random))
            if case .point(let sample) = events[0].payload { shared.append(sample.stroke) }
            switch Int.random(in: 0..<8, using: &random) {
            case 0: events.append(generators[who].event(.undo(shared.randomElement(using: &random)!)))
            case 1: events.append(generators[who].event(.redo(shared.randomElement(using: &random)!)))
            case 2: events.append(generators[who].event(.erase(shared.randomElement(using: &random)!)))
            case 3 where Int.random(in: 0..<4, using: &random) == 0: events.append(generators[who].event(.clear))
            default: break
            }
            session.events[generators[who].replica, default: []] += events
        }
        return session
    }

    func drawing(_ events: [Event], shuffleSeed: UInt64? = nil) -> Drawing {
        var fold = Fold(replicas: events.map(\.id.replica))
        var ordered = events
        if let shuffleSeed {
            var random = SeededGenerator(seed: shuffleSeed)
            ordered.shuffle(using: &random)
        }
        ordered.forEach { fold.apply($0) }
        return fold.finish()
    }

    @Test func foldIsIndependentOfOrder() {
        for seed in 1...5 as ClosedRange<UInt64> {
            let session = makeSession(seed: seed)
            let reference = drawing(session.all)
            #expect(reference.strokes.count > 0)
            for shuffle in 0..<20 as Range<UInt64> {
                let shuffled = drawing(session.all, shuffleSeed: shuffle)
                #expect(shuffled == reference)
                #expect(shuffled.digest == reference.digest)
            }
        }
    }

    /// Writes each replica's events as segments cut at random places, plus duplicates.
    func writeSegments(_ session: Session, into replicasPath: String, seed: UInt64, duplicate: Bool) throws {
        var random = SeededGenerator(seed: seed)
        for (replica, events) in session.events {
            let folder = replicasPath + "/" + replica.hex
            try FileSystem.createDirectory(folder)
            var start = 0
            var pieces: [ArraySlice<Event>] = []
            while start < events.count {
                let end = min(events.count, start + Int.random(in: 1...60, using: &random))
                pieces.append(events[start..<end])
                start = end
            }
            if duplicate, let extra = pieces.randomElement(using: &random) {
                // An overlapping re-segmentation of some events: a second copy under another name.
                let lower = max(0, extra.startIndex - 5)
                pieces.append(events[lower..<min(events.count, extra.endIndex + 5)])
            }
            for piece in pieces {
                let bytes = SegmentEncoder.segment(replica: replica, events: Array(piece), targetEvents: Int.random(in: 1...30, using: &random))
                let name = SegmentName(firstSeq: piece.first!.id.seq, lastSeq: piece.last!.id.seq, fileCRC: CRC32.checksum(bytes))
                try FileSystem.writeAtomically(bytes, to: folder + "/" + name.fileName)
            }
        }
    }

    @Test func digestIsIndependentOfSegmentationAndDuplicates() throws {
        let session = makeSession(seed: 42)
        let reference = drawing(session.all).digest
        for variant in 0..<6 as Range<UInt64> {
            let temp = TemporaryDirectory("reseg")
            defer { temp.remove() }
            try writeSegments(session, into: temp.path + "/replicas", seed: variant, duplicate: variant % 2 == 1)
            let (replayed, report) = Replay.replay(SegmentSet.load(replicasPath: temp.path + "/replicas"))
            #expect(replayed.digest == reference, "variant \(variant)")
            #expect(report.problems.isEmpty)
            #expect(report.forks.isEmpty)
            #expect(report.eventCount == session.all.count)
            if variant % 2 == 1 { #expect(report.duplicateEvents > 0) }
        }
    }

    @Test func forksAreReportedAndResolvedTheSameWayEverywhere() throws {
        var generator = EventGenerator(seed: 8)
        let original = generator.stroke(points: 10)
        var forged = original
        if case .point(var sample) = forged[3].payload {
            sample.x += 1
            forged[3].payload = .point(sample)
        }
        var digests: Set<String> = []
        for order in [[original, forged], [forged, original]] {
            let temp = TemporaryDirectory("fork")
            defer { temp.remove() }
            let folder = temp.path + "/replicas/" + generator.replica.hex
            try FileSystem.createDirectory(folder)
            for events in order {
                let bytes = SegmentEncoder.segment(replica: generator.replica, events: events)
                let name = SegmentName(firstSeq: 1, lastSeq: UInt64(events.count), fileCRC: CRC32.checksum(bytes))
                try FileSystem.writeAtomically(bytes, to: folder + "/" + name.fileName)
            }
            let (replayed, report) = Replay.replay(SegmentSet.load(replicasPath: temp.path + "/replicas"))
            #expect(report.forks == [EventID(replica: generator.replica, seq: 4)])
            #expect(report.problems.contains { $0.kind == .fork })
            #expect(report.duplicateEvents == original.count - 1)
            digests.insert(replayed.digest)
        }
        #expect(digests.count == 1)
    }

    // MARK: Reconstruction rules

    struct Script {
        var generator = EventGenerator(seed: 77)
        var events: [Event] = []
        mutating func stroke() -> StrokeID {
            let events = generator.stroke(points: 3)
            self.events += events
            guard case .point(let sample) = events[0].payload else { fatalError("stroke starts with a point") }
            return sample.stroke
        }
        mutating func add(_ payload: Payload) { events.append(generator.event(payload)) }
        func visibility() -> [StrokeID: Bool] {
            var fold = Fold(replicas: [generator.replica])
            events.forEach { fold.apply($0) }
            return Dictionary(uniqueKeysWithValues: fold.finish().strokes.map { ($0.id, $0.visible) })
        }
    }

    @Test func undoRedoEraseAndClearFollowTheLatestOperation() {
        var script = Script()
        let a = script.stroke()
        let b = script.stroke()
        script.add(.undo(a))
        #expect(script.visibility() == [a: false, b: true])
        script.add(.redo(a))
        #expect(script.visibility() == [a: true, b: true])
        script.add(.erase(b))
        #expect(script.visibility() == [a: true, b: false])
        script.add(.clear)
        let c = script.stroke()
        #expect(script.visibility() == [a: false, b: false, c: true])
        script.add(.redo(a))      // later than the clear: shows it again
        #expect(script.visibility() == [a: true, b: false, c: true])
    }

    @Test func zOrderFollowsCreationAndPointsFollowTheirKeys() {
        var generator = EventGenerator(seed: 5)
        let first = generator.stroke(points: 5)
        let second = generator.stroke(points: 5)
        var fold = Fold(replicas: [generator.replica])
        (second + first).reversed().forEach { fold.apply($0) }
        let strokes = fold.finish().strokes
        #expect(strokes.count == 2)
        guard case .point(let a) = first[0].payload, case .point(let b) = second[0].payload else { return }
        #expect(strokes.map(\.id) == [a.stroke, b.stroke])
        let xs = first.compactMap { event -> Double? in
            if case .point(let sample) = event.payload { return sample.x } else { return nil }
        }
        #expect(strokes[0].points.map(\.x) == xs)
        #expect(strokes[0].ended)
    }

    @Test func eventsWithoutPointsCreateNoStroke() {
        var generator = EventGenerator(seed: 6)
        let ghost = generator.newStroke()
        var fold = Fold(replicas: [generator.replica])
        fold.apply(generator.event(.undo(ghost)))
        fold.apply(generator.event(.end(ghost)))
        #expect(fold.finish().strokes.isEmpty)
    }

    /// Clocks that do not rise with seqs (a forged or buggy writer) defeat the ordered merge;
    /// replay must notice and give the order-free fold's drawing anyway.
    @Test func unorderedClocksFallBackToTheOrderFreeFold() throws {
        var generator = EventGenerator(seed: 31)
        var events = generator.stroke(points: 20) + generator.stroke(points: 20)
        // Swap the clocks of two points: seq order and lamport order now disagree.
        let swapped = events[3].lamport
        events[3].lamport = events[30].lamport
        events[30].lamport = swapped
        let temp = TemporaryDirectory("unordered")
        defer { temp.remove() }
        let folder = temp.path + "/replicas/" + generator.replica.hex
        try FileSystem.createDirectory(folder)
        let bytes = SegmentEncoder.segment(replica: generator.replica, events: events, targetEvents: 7)
        let name = SegmentName(firstSeq: 1, lastSeq: UInt64(events.count), fileCRC: CRC32.checksum(bytes))
        try FileSystem.writeAtomically(bytes, to: folder + "/" + name.fileName)
        let (replayed, report) = Replay.replay(SegmentSet.load(replicasPath: temp.path + "/replicas"))
        #expect(replayed == drawing(events))
        #expect(report.eventCount == events.count)
    }

    /// The ordered merge and the order-free fold agree on many random multi-replica sessions,
    /// including replicas that saw each other's clocks and points styled differently.
    @Test func orderedMergeAgreesWithTheOrderFreeFold() throws {
        for seed in 100..<130 as Range<UInt64> {
            var session = makeSession(seed: seed)
            // Restyle some points so that per-point styles are exercised.
            for (replica, var events) in session.events {
                for index in events.indices where index % 17 == 0 {
                    if case .point(var sample) = events[index].payload {
                        sample.style.width += 1
                        events[index].payload = .point(sample)
                    }
                }
                session.events[replica] = events
            }
            let temp = TemporaryDirectory("oracle")
            defer { temp.remove() }
            try writeSegments(session, into: temp.path + "/replicas", seed: seed, duplicate: seed % 3 == 0)
            let (replayed, report) = Replay.replay(SegmentSet.load(replicasPath: temp.path + "/replicas"))
            #expect(replayed == drawing(session.all), "seed \(seed)")
            #expect(report.eventCount == session.all.count)
        }
    }
}

/// Snapshots change how fast a journal opens, never what it shows.
@Suite(.ownThreads) struct SnapshotTests {
    /// Records `count` strokes into the journal's own replica.
    func draw(_ journal: JournalDirectory, strokes count: Int, seed: UInt64, seal: Bool = true) throws {
        var generator = EventGenerator(seed: seed)
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: seal))
        for _ in 0..<count {
            for event in generator.stroke(points: Int.random(in: 1...30, using: &generator.random)) {
                try writer.append(event.payload, flushingEvery: 64)
            }
            if Bool.random(using: &generator.random), let stroke = generator.strokes.randomElement(using: &generator.random) {
                try writer.append(Bool.random(using: &generator.random) ? .undo(stroke) : .redo(stroke), flushingEvery: 64)
            }
        }
        try writer.close()
    }

    func snapshotPath(_ journal: JournalDirectory) -> String { journal.localPath + "/snapshots/latest.sjsnap" }

    @Test func openingFromASnapshotEqualsAFullReplayAtRandomPoints() throws {
        for seed in 1...6 as ClosedRange<UInt64> {
            let temp = TemporaryDirectory("snap")
            defer { temp.remove() }
            let journal = try JournalDirectory.create(at: temp.path + "/j")
            let other = try JournalDirectory.create(at: temp.path + "/other")
            var random = SeededGenerator(seed: seed)
            var usedSnapshot = false
            for step in 0..<6 {
                // New events from this replica (sealed or not) and from another one.
                try draw(journal, strokes: Int.random(in: 1...5, using: &random), seed: seed * 100 + UInt64(step), seal: Bool.random(using: &random))
                try draw(other, strokes: Int.random(in: 1...3, using: &random), seed: seed * 1000 + UInt64(step))
                for file in other.listSealed().sealed {
                    _ = SegmentImporter.importSegment(at: file.path, replica: file.replica, claimedName: file.name, intoReplicas: journal.replicasPath)
                }
                if Bool.random(using: &random) { try SnapshotStore.create(journal) }
                let full = Replay.load(journal, useSnapshots: false)
                let fast = Replay.load(journal, useSnapshots: true)
                #expect(fast.drawing == full.drawing, "seed \(seed) step \(step)")
                #expect(fast.drawing.digest == full.drawing.digest)
                #expect(fast.report.digest == nil || fast.report.digest == full.drawing.digest)
                if let cached = Replay.cachedDigest(journal) {
                    #expect(cached.digest == full.drawing.digest, "seed \(seed) step \(step)")
                    #expect(fast.report.eventsFromSnapshot == full.report.eventCount, "a cached digest only when nothing is left to apply")
                }
                #expect(fast.report.eventCount == full.report.eventCount)
                #expect(fast.report.replicas.map(\.ranges) == full.report.replicas.map(\.ranges))
                #expect(full.report.eventsFromSnapshot == 0)
                if fast.report.eventsFromSnapshot > 0 { usedSnapshot = true }
            }
            #expect(usedSnapshot, "seed \(seed): no load started from a snapshot, so nothing was compared")
        }
    }

    @Test func lateEventsOlderThanTheSnapshotAndDuplicatesGiveTheFullReplay() throws {
        let temp = TemporaryDirectory("snap-late")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let late = try JournalDirectory.create(at: temp.path + "/late")
        // The late replica records first (small clocks) but is imported only after the snapshot.
        try draw(late, strokes: 4, seed: 9)
        try draw(journal, strokes: 20, seed: 10)
        try SnapshotStore.create(journal)
        for file in late.listSealed().sealed {
            _ = SegmentImporter.importSegment(at: file.path, replica: file.replica, claimedName: file.name, intoReplicas: journal.replicasPath)
            // …and a duplicate delivery of the same events under another cut.
            let events = SegmentScanner.scan(path: file.path, sealed: true).allEvents().events
            let bytes = SegmentEncoder.segment(replica: file.replica, events: Array(events.prefix(10)), targetEvents: 3)
            let name = SegmentName(firstSeq: 1, lastSeq: 10, fileCRC: CRC32.checksum(bytes))
            try FileSystem.writeAtomically(bytes, to: journal.replicaPath(file.replica) + "/" + name.fileName)
        }
        let full = Replay.load(journal, useSnapshots: false)
        let fast = Replay.load(journal, useSnapshots: true)
        #expect(fast.drawing == full.drawing)
        #expect(fast.report.eventsFromSnapshot == 0, "a late event must force a full replay")
        #expect(Replay.cachedDigest(journal) == nil)
        #expect(fast.report.duplicateEvents == full.report.duplicateEvents && full.report.duplicateEvents == 10)
    }

    @Test func aSnapshotOfFilesSinceRemovedIsNotUsed() throws {
        let temp = TemporaryDirectory("snap-removed")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        try draw(journal, strokes: 5, seed: 13)
        try draw(journal, strokes: 5, seed: 14)
        try SnapshotStore.create(journal)
        let sealed = journal.listSealed().sealed.sorted { $0.name < $1.name }
        try FileSystem.remove(sealed[1].path)
        let fast = Replay.load(journal, useSnapshots: true)
        #expect(fast.report.eventsFromSnapshot == 0)
        #expect(fast.drawing == Replay.load(journal, useSnapshots: false).drawing)
        #expect(Replay.cachedDigest(journal) == nil, "a removed segment changes the drawing: never the stored digest")
    }

    @Test func aDamagedSnapshotNeverChangesTheDrawing() throws {
        let temp = TemporaryDirectory("snap-bad")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        try draw(journal, strokes: 10, seed: 11)
        let expected = Replay.load(journal, useSnapshots: false).drawing
        try SnapshotStore.create(journal)
        let good = try FileSystem.readFile(snapshotPath(journal))
        var random = SeededGenerator(seed: 12)
        for _ in 0..<200 {
            let offset = Int.random(in: 0..<good.count, using: &random)
            let damaged = Int.random(in: 0..<3, using: &random) == 0
                ? Damage.truncate(good, at: offset) : Damage.flipByte(good, at: offset, mask: UInt8.random(in: 1...255, using: &random))
            try FileSystem.writeAtomically(damaged, to: snapshotPath(journal))
            #expect(Replay.load(journal).drawing == expected)
        }
        try FileSystem.remove(snapshotPath(journal))
        #expect(Replay.load(journal).drawing == expected)
    }
}
