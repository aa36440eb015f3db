import JournalCompression
import JournalFormat
import JournalTestSupport
import Testing

/// A body deflated part by part (`EncodedBody.deflateSections`, `RawDeflate.compress(_:sections:)`):
/// still one raw DEFLATE stream that inflates to the body, whole or joined from pieces.
@Suite(.ownThreads) struct SectionedDeflateTests {
    /// Runs, small integers and noise, the kinds of bytes a body holds, in random stretches.
    static func mixedInput(seed: UInt64, count: Int) -> (bytes: [UInt8], sections: [DeflateSection]) {
        var random = SeededGenerator(seed: seed)
        let methods: [DeflateSection.Method] = [.runs, .literals, .matching(level: 1), .matching(level: 4), .matching(level: 9)]
        var bytes: [UInt8] = []
        var sections: [DeflateSection] = []
        while bytes.count < count {
            let length = min(count - bytes.count, Int.random(in: 0...20_000, using: &random))
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes += [UInt8](repeating: UInt8.random(in: 0...3, using: &random), count: length)
            case 1: bytes += (0..<length).map { _ in UInt8.random(in: 0...9, using: &random) }
            default: bytes += (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            sections.append(DeflateSection(end: bytes.count, method: methods.randomElement(using: &random)!))
        }
        if sections.last?.end != bytes.count { sections.append(DeflateSection(end: bytes.count, method: .runs)) }
        return (bytes, sections)
    }

    @Test(arguments: [0, 1, 5_000, 150_000])
    func sectionsInflateToTheInputWholeAndInPieces(count: Int) throws {
        for seed in UInt64(1)...4 {
            let (input, sections) = Self.mixedInput(seed: seed &* 977 &+ UInt64(count), count: count)
            let whole = try RawDeflate.compress(input, sections: sections)
            #expect(try whole.withUnsafeBytes { try RawDeflate.decompress($0, expectedCount: count) } == input)
            // Cut anywhere, inside a section or at its end: the pieces join into one stream.
            var random = SeededGenerator(seed: seed)
            var cuts = Set([0, count])
            for _ in 0..<3 where count > 0 { cuts.insert(Int.random(in: 0...count, using: &random)) }
            cuts.formUnion(sections.prefix(2).map(\.end))
            let bounds = cuts.sorted()
            var joined: [UInt8] = []
            for (lower, upper) in zip(bounds, bounds.dropFirst()) {
                joined += try input.withUnsafeBytes { try RawDeflate.compressPiece($0, range: lower..<upper, sections: sections) }
            }
            if count > 0 {
                #expect(try joined.withUnsafeBytes { try RawDeflate.decompress($0, expectedCount: count) } == input)
            }
        }
    }

    /// zlib's bound plus slack is always room enough; should a try still run out, the piece
    /// is deflated again into twice the room, and beyond that refused with an error (the
    /// writer then deflates the body as one stream).
    @Test func aTryOutOfRoomIsRetriedThenRefused() throws {
        let (input, sections) = Self.mixedInput(seed: 5, count: 60_000)
        let whole = try RawDeflate.compress(input, sections: sections)
        let retried = try input.withUnsafeBytes {
            try RawDeflate.compressPiece($0, range: 0..<input.count, sections: sections, startingCapacity: whole.count - 1)
        }
        #expect(retried == whole)
        #expect(throws: ZlibError.internalFailure(code: -5)) {
            _ = try input.withUnsafeBytes { try RawDeflate.compressPiece($0, range: 0..<input.count, sections: sections, startingCapacity: 64) }
        }
    }

    /// The reason for the sections: a body of pen strokes is smaller deflated by its parts
    /// than as one stream at the same level.
    @Test func aBodyOfPenStrokesIsSmallerDeflatedByItsParts() throws {
        var generator = EventGenerator(seed: 11)
        var events: [Event] = []
        for _ in 0..<60 { events += generator.stroke(points: 100) }
        let body = BlockCodec.encodeBody(events, version: FormatV2.version)
        #expect(body.bytes.count >= EncodedBody.minimumSectionedCount)
        for level: Int32 in [1, 4, 6] {
            let sections = body.deflateSections(level: level)
            let lows = body.lowBytes.filter { $0.count >= EncodedBody.minimumLowBytes }.count
            #expect(sections.count == EncodedBody.Part.allCases.count + 2 * lows)
            let byParts = try RawDeflate.compress(body.bytes, sections: sections)
            let asOne = try RawDeflate.compress(body.bytes, level: level)
            #expect(byParts.count < asOne.count, "level \(level): \(byParts.count) bytes by parts, \(asOne.count) as one")
            #expect(try byParts.withUnsafeBytes { try RawDeflate.decompress($0, expectedCount: body.bytes.count) } == body.bytes)
        }
    }

    /// Four drawers through one relay write one replica whose events interleave: its
    /// references and wall clock are periodic, not runs. Coded by runs they took 1.34x the
    /// bytes of one stream; by parts they must not take more.
    @Test func interleavedDrawersAreNotLargerDeflatedByParts() throws {
        var generator = EventGenerator(seed: 17)
        let strokes = (0..<4).map { _ in generator.stroke(points: 400) }
        var events: [Event] = []
        for index in 0..<401 {
            for stroke in strokes {
                let event = stroke[index]
                events.append(generator.event(event.payload))
            }
        }
        let body = BlockCodec.encodeBody(events, version: FormatV2.version)
        for level: Int32 in [1, 4, 6] {
            let byParts = try RawDeflate.compress(body.bytes, sections: body.deflateSections(level: level))
            let asOne = try RawDeflate.compress(body.bytes, level: level)
            #expect(byParts.count <= asOne.count, "level \(level): \(byParts.count) bytes by parts, \(asOne.count) as one")
        }
    }

    /// Device values keep raw low bytes in their streams (§14.1): noise, deflated smaller by
    /// Huffman codes of their own than inside their column's block.
    @Test(arguments: [DeviceModel.float32Sensor, .transformedDoubles])
    func lowBytesAreSmallerWithCodesOfTheirOwn(model: DeviceModel) throws {
        let events = model.session(seed: 4, strokes: 30, points: 200)
        let body = BlockCodec.encodeBody(events, version: FormatV2.version)
        let lows = body.lowBytes.filter { $0.count >= EncodedBody.minimumLowBytes }
        #expect(!lows.isEmpty)
        #expect(lows.allSatisfy { low in body.partEnds.contains { $0 >= low.upperBound } })
        let sections = body.deflateSections(level: 6)
        #expect(sections.filter { $0.method == .literals }.count == lows.count)
        let without = EncodedBody(bytes: body.bytes, partEnds: body.partEnds).deflateSections(level: 6)
        let carved = try RawDeflate.compress(body.bytes, sections: sections)
        let uncarved = try RawDeflate.compress(body.bytes, sections: without)
        #expect(carved.count < uncarved.count, "\(model): \(carved.count) bytes with the low bytes apart, \(uncarved.count) without")
        #expect(try carved.withUnsafeBytes { try RawDeflate.decompress($0, expectedCount: body.bytes.count) } == body.bytes)
    }

    @Test func aBodysPartsEndInOrderAtItsEnd() {
        var generator = EventGenerator(seed: 3)
        var events = generator.stroke(points: 40)
        events.append(generator.event(.clear))
        events.append(generator.event(.undo(events[0].payload.stroke!)))
        for version in [FormatV1.version, FormatV2.version] {
            let body = BlockCodec.encodeBody(events, version: version)
            #expect(body.bytes == BlockCodec.encode(events, version: version))
            #expect(body.partEnds.count == EncodedBody.Part.allCases.count)
            #expect(body.partEnds == body.partEnds.sorted())
            #expect(body.partEnds.last == body.bytes.count)
            // The kind column is one byte an event, right after the tables.
            #expect(body.partEnds[EncodedBody.Part.kinds.rawValue] - body.partEnds[EncodedBody.Part.tables.rawValue] == events.count)
            // Too short to win back each block's codes: one section at the level asked for.
            #expect(body.deflateSections(level: 6) == [DeflateSection(end: body.bytes.count, method: .matching(level: 6))])
        }
    }
}

/// Where a body is cut for two cores (`DeflateSection.seam`).
struct DeflateSeamTests {
    @Test func theSeamIsAtASectionEndWhereTheWorkIsEven() {
        // Cheap runs first, then three parts matched at level 4 (three times the work a byte).
        let sections = [DeflateSection(end: 1_000, method: .literals)]
            + (1...6).map { DeflateSection(end: 1_000 + $0 * 30_000, method: .runs) }
            + (1...3).map { DeflateSection(end: 181_000 + $0 * 40_000, method: .matching(level: 4)) }
        let count = 301_000
        // Work: 181,000 before the matched parts, 360,000 in them. After the first matched
        // part 301,000 of 541,000, the nearest to even.
        #expect(DeflateSection.seam(sections, count: count) == 221_000)
        // Cut where the bytes are even, every matched part would be in the second piece.
        #expect(DeflateSection.seam(sections.map { DeflateSection(end: $0.end, method: .runs) }, count: count) == 151_000)
    }

    @Test func literalsAreCarvedOutOfTheSectionsThatHoldThem() {
        let sections = [DeflateSection(end: 100, method: .runs), DeflateSection(end: 300, method: .matching(level: 4))]
        let carved = DeflateSection.carving(literals: [10..<20, 90..<150, 200..<300], from: sections)
        // 90..<150 crosses a section's end: left where it is.
        #expect(carved == [
            DeflateSection(end: 10, method: .runs), DeflateSection(end: 20, method: .literals), DeflateSection(end: 100, method: .runs),
            DeflateSection(end: 200, method: .matching(level: 4)), DeflateSection(end: 300, method: .literals),
            DeflateSection(end: 300, method: .matching(level: 4)),
        ])
    }

    @Test func oneSectionIsCutInItsMiddle() {
        #expect(DeflateSection.seam([DeflateSection(end: 10_000, method: .matching(level: 6))], count: 10_000) == 5_000)
    }
}
