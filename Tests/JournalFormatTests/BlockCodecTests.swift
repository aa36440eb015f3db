import JournalFormat
import JournalTestSupport
import Testing

/// Version 1 bodies, which every build still reads (and writes into a v1 open segment);
/// version 2 has FormatV2Tests.
@Suite(.ownThreads) struct BlockCodecTests {
    func roundTrip(_ events: [Event]) throws -> [Event] {
        let raw = BlockCodec.encode(events, version: FormatV1.version)
        return try raw.withUnsafeBytes { buffer in
            try BlockCodec.decode(buffer, replica: events[0].id.replica, firstSeq: events[0].id.seq, eventCount: events.count,
                                  version: FormatV1.version)
        }
    }

    @Test func arbitraryEventsRoundTripBitExact() throws {
        for seed in 0..<40 as Range<UInt64> {
            var generator = EventGenerator(seed: seed)
            let events = (0..<Int.random(in: 1...400, using: &generator.random)).map { _ in generator.arbitraryEvent() }
            let decoded = try roundTrip(events)
            #expect(decoded == events, "seed \(seed)")
            // Equality is bitwise; check the raw bits once more so -0.0 vs 0.0 cannot slip.
            for (original, copy) in zip(events, decoded) {
                if case .point(let a) = original.payload, case .point(let b) = copy.payload {
                    #expect(a.x.bitPattern == b.x.bitPattern && a.y.bitPattern == b.y.bitPattern)
                    #expect(a.pressure?.bitPattern == b.pressure?.bitPattern && a.t?.bitPattern == b.t?.bitPattern)
                    #expect(a.style.width.bitPattern == b.style.width.bitPattern)
                }
            }
        }
    }

    @Test func penStrokesRoundTripAndStayCompact() throws {
        var generator = EventGenerator(seed: 7)
        var events: [Event] = []
        for _ in 0..<20 { events += generator.stroke(points: 200) }
        #expect(try roundTrip(events) == events)
        let raw = BlockCodec.encode(events, version: FormatV1.version)
        // Grid values never need the 8-byte exception path.
        #expect(Double(raw.count) / Double(events.count) < 12)
    }

    @Test func edgeDoublesAreExact() throws {
        let edges: [Double] = [
            -0.0, 0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude,
            .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 0.1 + 0.2, 1e-300, 123456789.123456789,
            9007199254740994, -9007199254740992, 1.0 / 3.0, Double(bitPattern: 1), Double(bitPattern: 0x000F_FFFF_FFFF_FFFF),
        ]
        var generator = EventGenerator(seed: 1)
        let stroke = generator.newStroke()
        let events = edges.flatMap { value in
            [generator.event(.point(PointSample(stroke: stroke, x: value, y: -value, pressure: value, t: value,
                                               style: Style(color: RGBA(rawValue: 0x11223344), width: abs(value)))))]
        }
        #expect(try roundTrip(events) == events)
    }

    @Test func gridChoiceIsExactOrFallsBack() {
        #expect(RealGrid.integer(523.41, scale: 2) == 52341)
        #expect(RealGrid.integer(-0.0, scale: 0) == nil)
        #expect(RealGrid.integer(0.1 + 0.2, scale: 9) == nil)
        #expect(RealGrid.integer(.nan, scale: 2) == nil)
        #expect(RealGrid.integer(.infinity, scale: 0) == nil)
        #expect(RealGrid.integer(1e300, scale: 0) == nil)
    }

    /// The one-pass tidy column (`decimalIntegers`) finds what the two passes it replaced
    /// found: `smallestScale`'s grid and each value's `integer` on it; nil exactly when some
    /// value has none there. Columns whose scale grows late, values on no grid, huge values.
    @Test func decimalIntegersAgreeWithSmallestScaleAndInteger() {
        var random = SeededGenerator(seed: 42)
        let oddities: [Double] = [0.1 + 0.2, 1e300, -0.0, 4_503_599_627_370_497, 123.456_789_123, 7]
        var tidy = 0, untidy = 0
        for trial in 0..<400 {
            let count = Int.random(in: 1...300, using: &random)
            var values: [Double] = (0..<count).map { _ in
                let scale = Int.random(in: 0...(trial % 3 == 0 ? 4 : 2), using: &random)
                let n = Int64.random(in: -2_000_000...2_000_000, using: &random)
                return Double(n) / FormatV1.powersOfTen[scale]
            }
            if trial % 5 == 0 { values[Int.random(in: 0..<count, using: &random)] = oddities.randomElement(using: &random)! }
            let scale = RealGrid.smallestScale(values)
            let expected = values.map { RealGrid.integer($0, scale: scale) }
            if let found = RealGrid.decimalIntegers(values) {
                tidy += 1
                #expect(found.scale == scale)
                #expect(found.integers == expected.map { $0 ?? .min }, "trial \(trial)")
            } else {
                untidy += 1
                #expect(expected.contains(nil), "trial \(trial): every value is on grid \(scale)")
            }
        }
        #expect(tidy > 100 && untidy > 10)
    }

    @Test func damagedBodiesThrowInsteadOfTrapping() throws {
        var generator = EventGenerator(seed: 3)
        var events: [Event] = []
        for _ in 0..<3 { events += generator.stroke(points: 30) }
        events.append(generator.event(.clear))
        let raw = BlockCodec.encode(events)
        var random = SeededGenerator(seed: 99)
        var failures = 0
        for offset in 0..<raw.count {
            for _ in 0..<3 {
                let damaged = Damage.flipByte(raw, at: offset, mask: UInt8.random(in: 1...255, using: &random))
                do {
                    _ = try damaged.withUnsafeBytes { buffer in
                        try BlockCodec.decode(buffer, replica: generator.replica, firstSeq: 1, eventCount: events.count)
                    }
                } catch {
                    failures += 1
                }
            }
        }
        // Most flips must be caught by structure alone (the CRC catches the rest in a segment).
        #expect(failures > 0)
        for length in 0..<raw.count {
            #expect(throws: DecodeError.self) {
                _ = try Damage.truncate(raw, at: length).withUnsafeBytes { buffer in
                    try BlockCodec.decode(buffer, replica: generator.replica, firstSeq: 1, eventCount: events.count)
                }
            }
        }
    }

    @Test func absurdCountsAreRefusedBeforeAllocating() {
        var writer = ByteWriter()
        writer.appendVarint(UInt64(1) << 40)   // a stroke table of a trillion entries
        #expect(throws: DecodeError.self) {
            _ = try writer.bytes.withUnsafeBytes { buffer in
                try BlockCodec.decode(buffer, replica: ReplicaID(UUIDBits(high: 1, low: 2)), firstSeq: 1, eventCount: 1)
            }
        }
    }

    @Test func varintsAndZigZagRoundTrip() throws {
        var writer = ByteWriter()
        let unsigned: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, UInt64.max, 1 << 63]
        let signed: [Int64] = [0, -1, 1, -64, 64, Int64.min, Int64.max]
        unsigned.forEach { writer.appendVarint($0) }
        signed.forEach { writer.appendZigZag($0) }
        try writer.bytes.withUnsafeBytes { (buffer) throws in
            var reader = ByteReader(buffer)
            for value in unsigned {
                let decoded = try reader.readVarint()
                #expect(decoded == value)
            }
            for value in signed {
                let decoded = try reader.readZigZag()
                #expect(decoded == value)
            }
            #expect(reader.isAtEnd)
        }
        // Eleven continuation bytes: malformed, not an infinite loop or overflow trap.
        let overlong = [UInt8](repeating: 0xFF, count: 11) + [0]
        overlong.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer)
            #expect(throws: DecodeError.self) { _ = try reader.readVarint() }
        }
    }
}
