import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// Journals written by a version 1 build keep working: an open segment it left keeps its
/// version until sealed, and a journal holding both versions replays to the drawing the same
/// events give in one version.
@Suite(.ownThreads) struct MixedVersionTests {
    func payload(_ index: Int, stroke: StrokeID) -> Payload {
        index % 25 == 24 ? .end(stroke) : .point(PointSample(
            stroke: stroke, x: Double(Float(100 + Double(index) * 0.37)), y: (Double(index) * 3 + 1).rounded() / 3,
            pressure: 0.5, t: Double(index % 25) / 120, style: Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2)))
    }

    @Test func anOpenSegmentOfVersionOneIsContinuedAndSealedInVersionOne() throws {
        let temp = TemporaryDirectory("mixed-versions")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/a")
        var strokes = (0..<4).map { StrokeID(UUIDBits(high: UInt64($0) + 1, low: 7)) }[...]
        var index = 0
        func appendSome(_ writer: JournalWriter, _ count: Int, flushingEvery flushCount: Int = .max) throws {
            for _ in 0..<count {
                try writer.append(payload(index, stroke: strokes.first!), flushingEvery: flushCount)
                if index % 25 == 24 { strokes = strokes.dropFirst() }
                index += 1
            }
        }
        // What a version 1 build leaves: an open segment with version 1 blocks.
        do {
            let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
            try appendSome(writer, 40)
            try writer.close()
        }
        let open = SegmentScanner.scan(path: journal.openSegmentPath, sealed: false)
        let replica = try #require(open.replica)
        let (oldEvents, oldProblems) = open.allEvents()
        #expect(oldProblems.isEmpty && oldEvents.count == 40)
        try FileSystem.writeAtomically(
            SegmentEncoder.segment(replica: replica, events: oldEvents, targetEvents: 9, version: FormatV1.version),
            to: journal.openSegmentPath)

        // This build appends to it (v1 blocks) and seals it as version 1; the next seal is
        // version 7 (signed: the journal has a key), its bodies coded as version 6's.
        do {
            let writer = try JournalWriter(directory: journal)
            try appendSome(writer, 35, flushingEvery: 5)
            try writer.close()
        }
        do {
            let writer = try JournalWriter(directory: journal)
            try appendSome(writer, 25)
            try writer.close()
        }
        let set = SegmentSet.load(journal)
        // The open segment, reset after the last seal, is empty and of the current version.
        let versions = set.members.filter { $0.scan.eventCount > 0 }
            .sorted { ($0.scan.seqRange?.lowerBound ?? 0) < ($1.scan.seqRange?.lowerBound ?? 0) }
            .map { $0.scan.header?.version }
        #expect(versions == [FormatV1.version, FormatV7.version])
        let (drawing, report) = Replay.replay(set)
        #expect(report.problems.isEmpty)

        // The same events, all in version 2, in another journal's replica folder.
        let copy = temp.path + "/b/replicas/" + replica.hex
        try FileSystem.createDirectory(copy)
        var allEvents: [Event] = []
        for member in set.members where member.scan.eventCount > 0 {
            let (events, problems) = member.scan.allEvents()
            #expect(problems.isEmpty)
            allEvents += events
            let bytes = SegmentEncoder.segment(replica: replica, events: events, version: FormatV2.version)
            let name = SegmentName(firstSeq: events.first!.id.seq, lastSeq: events.last!.id.seq, contents: bytes)
            try FileSystem.writeAtomically(bytes, to: copy + "/" + name.fileName)
        }
        #expect(allEvents.map(\.id.seq).sorted() == Array(1...100))
        let (again, againReport) = Replay.replay(SegmentSet.load(replicasPath: temp.path + "/b/replicas"))
        #expect(againReport.problems.isEmpty)
        #expect(again.digest == drawing.digest)
    }
}
