import JournalCompression
import JournalFormat
import JournalPlatform
@testable import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// The version 3 snapshot encoding (docs/SYNC.md, "Snapshots"): a snapshot decodes to exactly
/// the state it was made of, bit for bit; damaged, truncated or old-version files are ignored.
@Suite(.ownThreads) struct SnapshotEncodingTests {
    let replicas = [ReplicaID(UUIDBits(high: 1, low: 1)), ReplicaID(UUIDBits(high: 2, low: 2)), ReplicaID(UUIDBits(high: 3, low: 3))]

    func key(_ random: inout SeededGenerator) -> CompactKey {
        CompactKey(lamport: UInt64.random(in: 1...(1 << 40), using: &random), wallTime: Int64.random(in: .min ... .max, using: &random),
                   replica: UInt32.random(in: 0..<3, using: &random), seq: random.next() >> 2)
    }

    /// Any state at all: grid values, raw bits (-0.0, subnormals, NaN payloads), long and empty
    /// strokes, mixed presence of pressure and t, per-point styles.
    func arbitraryState(seed: UInt64, strokes: ClosedRange<Int> = 0...300, lengths: [Int] = [0, 1, 2, 3, 9, 200, 2000]) -> OrderedFoldState {
        var random = SeededGenerator(seed: seed)
        var generator = EventGenerator(seed: seed)
        var state = OrderedFoldState()
        for index in 0..<Int.random(in: 1...4, using: &random) {
            let style = Style(color: RGBA(rawValue: UInt32(index) * 77), width: Double(index) + 0.5)
            state.styleIndex[style] = UInt32(state.styles.count)
            state.styles.append(style)
        }
        if Bool.random(using: &random) { state.latestClear = key(&random) }
        for slot in 0..<Int.random(in: strokes, using: &random) {
            var stroke = OrderedFoldState.StrokeState()
            let count = lengths[Int.random(in: 0..<lengths.count, using: &random)]
            let kind = Int.random(in: 0..<5, using: &random)
            var x = Double(Int.random(in: -100_000...100_000, using: &random)) / 100
            for index in 0..<count {
                func value() -> Double {
                    switch kind {
                    case 0: return generator.arbitraryDouble()
                    case 1: return Bool.random(using: &random) ? Double(bitPattern: random.next()) : x
                    default: return x + Double(index % 7) / 1000
                    }
                }
                x += Double(Int.random(in: -300...300, using: &random)) / 100
                let pressure: Double = switch kind {
                case 3: Bool.random(using: &random) ? .nan : value()
                case 4: .nan
                default: index % 5 == 4 && kind == 0 ? Double(bitPattern: 0x7FF8_0000_0000_0001) : value()
                }
                stroke.points.append(Drawing.Point(x: value(), y: value(), pressureBits: pressure,
                                                   tBits: kind == 2 && index % 3 == 0 ? .nan : Double(index * 8) / 1000))
            }
            if count > 0 {
                stroke.creation = key(&random)
                stroke.style = UInt32.random(in: 0..<UInt32(state.styles.count), using: &random)
                if Int.random(in: 0..<4, using: &random) == 0 {
                    stroke.pointStyles = (0..<count).map { _ in UInt32.random(in: 0..<UInt32(state.styles.count), using: &random) }
                }
                state.creationOrder.append(Int32(slot))
            }
            if Bool.random(using: &random) { stroke.visibility = (key(&random), Bool.random(using: &random)) }
            stroke.ended = Bool.random(using: &random)
            let id = StrokeID(UUIDBits(high: random.next(), low: random.next()))
            state.slots[id] = Int32(slot)
            state.strokeIDs.append(id)
            state.strokes.append(stroke)
        }
        return state
    }

    func snapshot(_ state: OrderedFoldState, summary: DrawingSummary? = nil) -> Snapshot {
        Snapshot(replicas: replicas, covered: [replicas[0]: [1...10, 12...20], replicas[1]: [], replicas[2]: [4...4]],
                 lastLamports: [replicas[0]: 20, replicas[1]: 0, replicas[2]: 4],
                 sealedNames: ["\(replicas[0].hex)/a.sjs"], lastKey: CompactKey(lamport: 20, wallTime: -5, replica: 2, seq: 9),
                 eventCount: 21, pointCount: state.strokes.reduce(0) { $0 + $1.points.count }, maxLamport: 20,
                 duplicateEvents: 3, forks: [], state: state, summary: summary)
    }

    func expectSame(_ lhs: OrderedFoldState, _ rhs: OrderedFoldState, _ comment: Comment) {
        #expect(lhs.strokeIDs == rhs.strokeIDs, comment)
        #expect(lhs.slots == rhs.slots, comment)
        #expect(lhs.creationOrder == rhs.creationOrder, comment)
        #expect(lhs.styles == rhs.styles, comment)
        #expect(lhs.latestClear == rhs.latestClear, comment)
        #expect(lhs.strokes.count == rhs.strokes.count, comment)
        // Point equality is by bit pattern, NaN payloads included.
        let differing = zip(lhs.strokes, rhs.strokes).enumerated().filter { _, pair in
            let (left, right) = pair
            return left.points != right.points || left.style != right.style || left.pointStyles != right.pointStyles
                || left.ended != right.ended || left.creation != right.creation
                || left.visibility?.key != right.visibility?.key || left.visibility?.visible != right.visibility?.visible
        }.map(\.offset)
        #expect(differing.isEmpty, "\(comment): strokes \(differing.prefix(5))")
        #expect(lhs.finish() == rhs.finish(), comment)
    }

    @Test func roundTripIsExactForArbitraryStates() throws {
        for seed in 1...12 as ClosedRange<UInt64> {
            let state = arbitraryState(seed: seed, strokes: 0...120)
            let summary = DrawingSummary(state.finish())
            let original = snapshot(state, summary: summary)
            let bytes = original.encoded()
            #expect(Array(bytes.prefix(8)) == Array("SJSNAP06".utf8))
            let decoded = try #require(Snapshot.decode(bytes), "seed \(seed)")
            expectSame(decoded.state, state, "seed \(seed)")
            #expect(decoded.summary == summary)
            #expect(decoded.covered == original.covered && decoded.sealedNames == original.sealedNames)
            #expect(decoded.lastKey == original.lastKey && decoded.duplicateEvents == 3 && decoded.pointCount == original.pointCount)
            #expect(decoded.encoded() == bytes, "seed \(seed): one spelling per state")
            // With its strokes' hashes, which the header holds (a moment's summary reads them).
            var hashed = original
            hashed.summarize(state.finish())
            let hashedBytes = hashed.encoded()
            #expect(Snapshot.decode(hashedBytes)?.strokeHashes == StrokeHashes(of: state.finish().strokes), "seed \(seed)")
            #expect(Snapshot.decode(hashedBytes, headerOnly: true)?.strokeHashes == hashed.strokeHashes, "seed \(seed)")
            #expect(hashed.summary == summary, "seed \(seed)")
            // The decoder allocates no more points than it is told the journal can hold.
            if original.pointCount > 0 { #expect(Snapshot.decode(bytes, maxPoints: original.pointCount - 1) == nil) }
        }
    }

    /// A chunk is deflated part by part as a block body is: its records, x, y and t at the
    /// sealing level, pressures and point styles by runs; its records still read alone.
    @Test func aChunkIsDeflatedByItsParts() throws {
        let state = arbitraryState(seed: 21, strokes: 40...40, lengths: [200, 2000])
        let (raw, recordsLength, partEnds, _) = SnapshotChunks.encode(state, slots: 0..<state.strokes.count)
        #expect(partEnds.first == recordsLength && partEnds.last == raw.count && partEnds == partEnds.sorted())
        let sections = SnapshotChunks.deflateSections(partEnds: partEnds)
        #expect(sections.map(\.method) == [.matching(level: 6), .matching(level: 6), .matching(level: 6), .runs, .matching(level: 6), .runs])
        let compressed = try RawDeflate.compress(raw, sections: sections)
        #expect(try compressed.withUnsafeBytes { try RawDeflate.decompress($0, expectedCount: raw.count) } == raw)
        var records = [UInt8](repeating: 0, count: recordsLength)
        try compressed.withUnsafeBytes { body in
            try records.withUnsafeMutableBytes { try RawDeflate.decompressPrefix(body, into: $0) }
        }
        #expect(records == Array(raw[0..<recordsLength]))
        // A short chunk: one stream.
        #expect(SnapshotChunks.deflateSections(partEnds: [10, 20, 30, 40, 50, 60]) == [DeflateSection(end: 60, method: .matching(level: 6))])
    }

    @Test func everyDamagedOrTruncatedFileIsRefused() throws {
        let bytes = snapshot(arbitraryState(seed: 5, strokes: 6...8, lengths: [0, 1, 2, 3, 9, 20])).encoded()
        #expect(Snapshot.decode(bytes) != nil)
        var random = SeededGenerator(seed: 6)
        for offset in 0..<bytes.count {
            #expect(Snapshot.decode(Damage.flipByte(bytes, at: offset, mask: UInt8.random(in: 1...255, using: &random))) == nil, "byte \(offset)")
            if offset % 7 == 0 { #expect(Snapshot.decode(Damage.truncate(bytes, at: offset)) == nil, "length \(offset)") }
        }
        #expect(Snapshot.decode(bytes + [0]) == nil)
    }

    /// A header whose CRC holds but whose counts could not come from any journal: refused,
    /// not trapped on (slots are Int32) or allocated for.
    @Test func aCraftedStrokeCountIsRefused() {
        /// A header of `strokes` slots, `creations` in creation order and one chunk of every
        /// slot, no point and no byte (all a header-only decode checks).
        func file(strokes: UInt64, creations: [UInt64]) -> [UInt8] {
            var header = ByteWriter(capacity: 64)
            // No replica, name, last key, counts, fork, summary, style or clear.
            for _ in 0..<11 { header.append(0) }
            header.appendVarint(strokes)
            header.appendVarint(UInt64(creations.count))
            creations.forEach { header.appendVarint($0) }
            header.append(0)  // no stroke hashes
            header.appendVarint(1)
            for field in [strokes, 0, 0, 0, 0] { header.appendVarint(field) }  // strokes, points, lengths
            header.appendLE(CRC32.checksum([UInt8]()))
            var out = ByteWriter(capacity: 128)
            out.append(contentsOf: Snapshot.magic)
            out.appendLE(UInt32(header.count))
            out.append(contentsOf: header.bytes)
            out.appendLE(CRC32.checksum(out.bytes))
            return out.bytes
        }
        // The shape is one a journal can have.
        #expect(Snapshot.decode(file(strokes: 5_000, creations: [3]), maxPoints: 5_000, headerOnly: true) != nil)
        // More slots than the journal has events, or than an Int32 can name.
        #expect(Snapshot.decode(file(strokes: 5_000, creations: [3]), maxPoints: 4_999, headerOnly: true) == nil)
        #expect(Snapshot.decode(file(strokes: 1 << 32, creations: [1 << 31]), maxPoints: 1 << 40, headerOnly: true) == nil)
    }

    /// A stroke with per-point styles but no point: the fold would append styles one short of
    /// the points it adds later, and hashing the stroke would read past them.
    @Test func aStrokeWithPointStylesButNoPointIsRefused() throws {
        var state = arbitraryState(seed: 4, strokes: 3...3)
        let id = StrokeID(UUIDBits(high: 77, low: 77))
        state.slots[id] = Int32(state.strokes.count)
        state.strokeIDs.append(id)
        var empty = OrderedFoldState.StrokeState()
        empty.pointStyles = []
        state.strokes.append(empty)
        let bytes = snapshot(state).encoded()
        #expect(Snapshot.decode(bytes) == nil)
        state.strokes[state.strokes.count - 1].pointStyles = nil
        #expect(Snapshot.decode(snapshot(state).encoded()) != nil)
    }

    @Test func anOldVersionIsIgnoredAndRebuilt() throws {
        let temp = TemporaryDirectory("snap-version")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        // Enough events for the automatic policy, cheaply: clears and a few strokes.
        var generator = EventGenerator(seed: 31)
        let writer = try JournalWriter(directory: journal)
        for index in 0..<(SnapshotStore.automaticThreshold + 10) {
            if index % 10_000 == 0 { for event in generator.stroke(points: 20) { try writer.append(event.payload) } }
            try writer.append(.clear)
        }
        try writer.close()
        let path = journal.localPath + "/snapshots/latest.sjsnap"
        let full = Replay.load(journal, useSnapshots: false)
        let first = Replay.load(journal)
        #expect(first.report.snapshotWritten != nil && first.report.digest == full.drawing.digest)
        // The same state under the version 1 magic: never trusted, replayed and rewritten.
        var old = try FileSystem.readFile(path)
        old.replaceSubrange(0..<8, with: Array("SJSNAP01".utf8))
        try FileSystem.writeAtomically(old, to: path)
        #expect(Snapshot.decode(old) == nil)
        let again = Replay.load(journal)
        #expect(again.report.eventsFromSnapshot == 0 && again.drawing == full.drawing)
        #expect(again.report.snapshotWritten != nil)
        #expect(Array(try FileSystem.readFile(path).prefix(8)) == Array("SJSNAP06".utf8))
        let fast = Replay.load(journal)
        #expect(fast.report.eventsFromSnapshot == full.report.eventCount && fast.drawing == full.drawing)
        #expect(fast.report.digest == full.drawing.digest && fast.report.snapshotWritten == nil)
    }

    @Test func theCachedDigestIsUsedOnlyWhenNothingWasAppliedOnTop() throws {
        let temp = TemporaryDirectory("snap-digest")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        var generator = EventGenerator(seed: 41)
        func record(_ strokes: Int) throws {
            let writer = try JournalWriter(directory: journal)
            for _ in 0..<strokes { for event in generator.stroke(points: 15) { try writer.append(event.payload) } }
            try writer.close()
        }
        try record(10)
        try SnapshotStore.create(journal)
        let cached = Replay.load(journal)
        #expect(cached.report.eventsFromSnapshot > 0)
        let full = Replay.load(journal, useSnapshots: false).drawing.digest
        #expect(cached.report.digest == full)
        let header = try #require(Replay.cachedDigest(journal))
        let drawing = Replay.load(journal, useSnapshots: false).drawing
        #expect(header.digest == full && header.summary == DrawingSummary(drawing))
        #expect(header.events == cached.report.eventCount && header.points == drawing.strokes.reduce(0) { $0 + $1.points.count })
        #expect(header.summary.visibleStrokes < header.summary.strokes || header.summary.strokes == drawing.strokes.filter(\.visible).count)
        try record(2)
        let moved = Replay.load(journal)
        #expect(moved.report.eventsFromSnapshot > 0 && moved.report.digest == nil)
        #expect(Replay.cachedDigest(journal) == nil, "events beyond the snapshot: hash the drawing")
        #expect(moved.drawing.digest == Replay.load(journal, useSnapshots: false).drawing.digest)
    }
}

/// A snapshot codes reals with the coder blocks use, so a snapshot of device values costs about
/// what its segments cost (a decimal grid alone made every such value an exception: 11× the
/// segments for float32 sensors), and the state still comes back bit for bit.
@Suite(.ownThreads) struct DeviceSnapshotTests {
    @Test(arguments: DeviceModel.allCases)
    func aSnapshotOfDeviceValuesIsNoLargerThanItsSegmentsAndExact(model: DeviceModel) throws {
        let temp = TemporaryDirectory("snap-device")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let writer = try JournalWriter(directory: journal)
        for event in model.session(seed: 5, strokes: 60, points: 400) { try writer.append(event.payload) }
        try writer.close()

        let info = try SnapshotStore.create(journal)
        let segments = SegmentSet.load(journal).totalBytes
        #expect(Double(info.bytes) <= 1.2 * Double(segments), "\(model): snapshot \(info.bytes) B, segments \(segments) B")
        let full = Replay.load(journal, useSnapshots: false)
        let opened = Replay.load(journal)
        #expect(opened.report.eventsFromSnapshot == full.report.eventCount)
        #expect(opened.drawing == full.drawing)
    }

    @Test func theInflateBoundGrowsWithStrokesAndPointsAndNeverOverflows() {
        // What a chunk table may claim (larger is refused before inflating): 2 strokes of 3
        // points can take at most 256 × 5 + 256 bytes before compression.
        #expect(SnapshotChunks.maxRawLength(strokes: 2, points: 3) == 1536)
        #expect(SnapshotChunks.maxRawLength(strokes: .max / 2, points: 1) == .max)
    }
}
