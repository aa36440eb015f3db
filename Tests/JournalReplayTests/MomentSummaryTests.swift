import JournalFormat
import JournalPlatform
@testable import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// `journal digest --at` (`Replay.summary(at:in:)`): a stroke still as the snapshot holds it
/// is neither decoded nor hashed, its hash read from the snapshot. The digest and counts must
/// be those of the history's drawing at every moment all the same.
@Suite struct MomentSummaryTests {
    /// A snapshot of the first `count` events of `events` with keyframes every `interval`
    /// events, its strokes in many small chunks (so that most of a moment's are not decoded).
    static func journal(at path: String, _ events: [Event], interval: Int) throws -> (JournalDirectory, Snapshot) {
        let journal = try HistoryTests.journal(at: path, events, perSegment: 40)
        var report = ReplayReport()
        var snapshot = try #require(Replay.fullSnapshot(SegmentSet.load(journal), report: &report, keyframeInterval: interval))
        snapshot.minimumChunkWeight = 8
        try SnapshotStore.write(snapshot, to: journal)
        return (journal, snapshot)
    }

    static func expectSummary(_ found: Replay.SummaryAtMoment?, is drawing: Drawing, events: Int, _ comment: Comment) throws {
        let then = try #require(found, comment)
        #expect(then.summary == DrawingSummary(drawing), comment)
        #expect(then.points == drawing.pointCount, comment)
        #expect(then.events == events, comment)
    }

    /// Whether the fold at `count` left some stroke's points undecoded (the case this is about).
    static func withholdsPoints(at count: Int, _ set: SegmentSet, _ journal: JournalDirectory) -> Bool {
        guard case .folded(let state, _, _, _) = Replay.momentFromSnapshot(ofFirst: count, set, directory: journal,
                                                                              buildAbove: nil, points: .summary(also: []))
        else { return false }
        return state.baseline?.withholdsPoints(of: state) ?? false
    }

    @Test func everyMomentsSummaryIsTheHistorysDrawingInBrief() throws {
        let temp = TemporaryDirectory("summary-every")
        defer { temp.remove() }
        let (journal, snapshot) = try Self.journal(at: temp.path + "/j", KeyframeTests.events(count: 600), interval: 7)
        let stored = try #require(SnapshotStore.newest(journal, for: SegmentSet.load(journal)))
        #expect(stored.strokeHashes?.count == snapshot.state.creationOrder.count)
        let set = SegmentSet.load(journal)
        let history = History(set)
        let total = history.events.count
        var withheld = 0
        for count in 0...(total + 1) {
            let found = Replay.summaryFromSnapshot(ofFirst: count, set, directory: journal, snapshot: nil)
            let held = min(count, total)
            try Self.expectSummary(found, is: history.drawing(ofFirst: held), events: held, "at \(count)")
            if Self.withholdsPoints(at: count, set, journal) { withheld += 1 }
        }
        // Many moments took strokes from the snapshot's hashes, not their points (not those
        // in the first tenth, which merge from the start; 280 of 600 when this was written).
        #expect(withheld > total / 3, "\(withheld) of \(total) moments left points undecoded")
        // Through the public entry and `journal digest --at`'s moment forms.
        for count in [0, total / 3, total - 1, total] {
            let drawing = history.drawing(ofFirst: count)
            try Self.expectSummary(Replay.summary(at: .events(count), in: journal), is: drawing, events: count, "at \(count)")
        }
        try Self.expectSummary(Replay.summary(at: .end, in: journal), is: history.drawing(ofFirst: total), events: total, "end")
    }

    /// Events the snapshot lacks that add points to a stroke it holds: the first fold leaves
    /// that stroke undecoded, sees it touched, and folds again with it decoded.
    @Test func freshPointsOnAStrokeTheSnapshotHoldsAreFoldedWithItsPoints() throws {
        let temp = TemporaryDirectory("summary-fresh")
        defer { temp.remove() }
        let events = KeyframeTests.events(count: 500, seed: 9)
        let (first, later) = KeyframeTests.split(events, at: 350)
        let (journal, snapshot) = try Self.journal(at: temp.path + "/j", first, interval: 16)
        try KeyframeTests.add(later, to: journal)
        let set = SegmentSet.load(journal)
        let history = History(set)
        #expect(history.events.count == events.count)

        // Without a retry the summary would need points it never decoded.
        guard case .folded(let state, _, _, let hashes) = Replay.momentFromSnapshot(
            ofFirst: events.count, set, directory: journal, buildAbove: nil, points: .summary(also: []))
        else { Issue.record("the snapshot did not apply"); return }
        guard case .touched(let slots) = state.summary(stored: try #require(hashes)) else {
            Issue.record("no fresh point landed on a stroke the snapshot holds: the case is not tested")
            return
        }
        #expect(!slots.isEmpty)

        for count in stride(from: snapshot.eventCount, through: events.count + 1, by: 3) {
            let found = Replay.summaryFromSnapshot(ofFirst: count, set, directory: journal, snapshot: nil)
            let held = min(count, events.count)
            try Self.expectSummary(found, is: history.drawing(ofFirst: held), events: held, "at \(count)")
        }
    }

    /// Every byte of a chunk damaged in turn (under a CRC an attacker can recompute): read with
    /// its points or only its records, the chunk decodes or is refused, never traps.
    @Test func aDamagedChunkIsDecodedOrRefusedWithOrWithoutItsPoints() throws {
        let state = SnapshotEncodingTests().arbitraryState(seed: 8, strokes: 12...12, lengths: [0, 1, 2, 9, 30])
        let (raw, recordsLength, _, _) = SnapshotChunks.encode(state, slots: 0..<state.strokes.count)
        let entry = SnapshotChunks.Entry(firstSlot: 0, strokes: state.strokes.count, points: state.strokes.reduce(0) { $0 + $1.points.count },
                                         offset: 0, length: raw.count, rawLength: raw.count, recordsLength: recordsLength, crc: 0)
        var random = SeededGenerator(seed: 9)
        var refused = 0
        for offset in raw.indices {
            let damaged = Damage.flipByte(raw, at: offset, mask: UInt8.random(in: 1...255, using: &random))
            damaged.withUnsafeBytes { bytes in
                let whole = try? SnapshotChunks.decode(bytes, entry: entry)
                let records = try? SnapshotChunks.decodeRecords(UnsafeRawBufferPointer(rebasing: bytes[0..<recordsLength]), entry: entry)
                if whole == nil { refused += 1 }
                // What the records say is what the whole chunk says, when both are read.
                if let whole, let records { #expect(whole.ids == records.ids && whole.counts == records.counts, "byte \(offset)") }
            }
        }
        #expect(refused > 0)
    }

    /// A drawing of dots: stroke hashes would make the automatic snapshot larger than it may
    /// be (twice the segments), so it is written without them, and a moment's summary is
    /// the whole drawing's.
    @Test func anAutomaticSnapshotOfDotsIsWrittenWithoutStrokeHashes() throws {
        let temp = TemporaryDirectory("summary-dots")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        var generator = EventGenerator(seed: 51)
        let writer = try JournalWriter(directory: journal)
        for _ in 0..<(SnapshotStore.automaticThreshold + 10) {
            for event in generator.stroke(points: 1) { try writer.append(event.payload) }
        }
        try writer.close()
        let first = Replay.load(journal)
        #expect(first.report.snapshotWritten != nil, "no automatic snapshot")
        let set = SegmentSet.load(journal)
        let stored = try #require(SnapshotStore.newest(journal, for: set, headerOnly: true))
        #expect(stored.strokeHashes == nil && stored.summary?.digest == first.drawing.digest)
        let count = first.report.eventCount / 2
        let then = Replay.drawing(at: .events(count), in: journal)
        try Self.expectSummary(Replay.summary(at: .events(count), in: journal), is: then.drawing, events: count, "half")
    }

    /// A chunk whose stroke records do not end where its table entry says is refused, read
    /// with its points or without them.
    @Test func aChunkWhoseRecordsDoNotEndWhereTheTableSaysIsRefused() throws {
        let state = SnapshotEncodingTests().arbitraryState(seed: 3, strokes: 20...20)
        state.checkInvariants()
        let (raw, recordsLength, _, _) = SnapshotChunks.encode(state, slots: 0..<state.strokes.count)
        let points = state.strokes.reduce(0) { $0 + $1.points.count }
        func entry(_ records: Int) -> SnapshotChunks.Entry {
            SnapshotChunks.Entry(firstSlot: 0, strokes: state.strokes.count, points: points, offset: 0, length: raw.count,
                                 rawLength: raw.count, recordsLength: records, crc: 0)
        }
        try raw.withUnsafeBytes { bytes in
            let whole = try SnapshotChunks.decode(bytes, entry: entry(recordsLength))
            let records = try SnapshotChunks.decodeRecords(UnsafeRawBufferPointer(rebasing: bytes[0..<recordsLength]),
                                                           entry: entry(recordsLength))
            #expect(whole.ids == records.ids && whole.counts == records.counts)
            #expect(records.strokes.allSatisfy(\.points.isEmpty) && !records.pointsDecoded)
            #expect(throws: DecodeError.self) { try SnapshotChunks.decode(bytes, entry: entry(recordsLength + 1)) }
            #expect(throws: DecodeError.self) {
                try SnapshotChunks.decodeRecords(UnsafeRawBufferPointer(rebasing: bytes[0..<(recordsLength - 1)]),
                                                 entry: entry(recordsLength - 1))
            }
            #expect(throws: DecodeError.self) {
                try SnapshotChunks.decodeRecords(UnsafeRawBufferPointer(rebasing: bytes[0..<(recordsLength + 1)]),
                                                 entry: entry(recordsLength + 1))
            }
        }
    }
}
