import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

@Suite struct ReplayTests {
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
                try FileSystem.writeAtomically(bytes, to: folder + "/" + name.fileName, temporaryPath: folder + "/.tmp")
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
                try FileSystem.writeAtomically(bytes, to: folder + "/" + name.fileName, temporaryPath: folder + "/.tmp")
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
}
