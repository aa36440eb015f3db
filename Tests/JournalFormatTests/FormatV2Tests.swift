
import JournalCompression
import JournalFormat
import JournalTestSupport
import Testing

/// Format v2 block bodies: exact round trips on every kind of Double, and sizes near what the
/// data holds on device-like values. The value models here are this file's own (uniform and
/// two-sided noise, sine curves, affine transforms), not the benchmark generator's, so the
/// coder is checked on data it was not tuned on.
@Suite(.ownThreads) struct FormatV2Tests {
    func roundTrip(_ events: [Event], version: UInt16 = FormatV2.version) throws -> [Event] {
        let raw = BlockCodec.encode(events, version: version)
        return try raw.withUnsafeBytes { buffer in
            try BlockCodec.decode(buffer, replica: events[0].id.replica, firstSeq: events[0].id.seq,
                                  eventCount: events.count, version: version)
        }
    }

    /// Compressed block bytes per point event, as a segment stores them.
    func bytesPerPoint(_ events: [Event], version: UInt16 = FormatV2.version) throws -> Double {
        let block = SegmentEncoder.block(events[...], version: version)
        let points = events.filter { $0.payload.kind == .point }.count
        return Double(block.count) / Double(points)
    }

    /// Compares bit patterns (so -0.0 and 0.0 differ) and names the first difference only:
    /// printing whole sessions helps nobody.
    func expectBitExact(_ original: [Event], _ copy: [Event], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(original.count == copy.count, sourceLocation: sourceLocation)
        for (index, (a, b)) in zip(original, copy).enumerated() {
            var same = a.id == b.id && a.lamport == b.lamport && a.wallTime == b.wallTime
            if case .point(let p) = a.payload, case .point(let q) = b.payload {
                same = same && p.stroke == q.stroke && p.style == q.style
                    && p.x.bitPattern == q.x.bitPattern && p.y.bitPattern == q.y.bitPattern
                    && p.pressure?.bitPattern == q.pressure?.bitPattern && p.t?.bitPattern == q.t?.bitPattern
            } else {
                same = same && a.payload == b.payload
            }
            if !same {
                Issue.record("event \(index) differs: \(a.payload) became \(b.payload)", sourceLocation: sourceLocation)
                return
            }
        }
    }

    @Test func arbitraryEventsRoundTripBitExact() throws {
        for seed in 0..<60 as Range<UInt64> {
            var generator = EventGenerator(seed: seed)
            let events = (0..<Int.random(in: 1...500, using: &generator.random)).map { _ in generator.arbitraryEvent() }
            expectBitExact(events, try roundTrip(events))
        }
    }

    @Test func everyDeviceModelRoundTripsBitExact() throws {
        for model in DeviceModel.allCases {
            for seed in 0..<4 as Range<UInt64> {
                let events = model.session(seed: seed, strokes: 30, points: 90)
                expectBitExact(events, try roundTrip(events))
            }
        }
    }

    @Test func edgeDoublesInOneStrokeAreExact() throws {
        let edges: [Double] = [
            -0.0, 0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude,
            .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 0.1 + 0.2, 1e-300, 123456789.123456789,
            9007199254740994, -9007199254740992, 1.0 / 3.0, Double(bitPattern: 1), Double(bitPattern: 0x000F_FFFF_FFFF_FFFF),
            Double(Float.leastNonzeroMagnitude), Double(Float.greatestFiniteMagnitude), 604.3333333333334,
            603.9993896484375, 0.008000617614015937, 4.611686018427388e18, -4.611686018427388e18,
        ]
        var generator = EventGenerator(seed: 3)
        let stroke = generator.newStroke()
        // Each edge among ordinary device values, so that the fine coders are the ones chosen
        // and must fall back to exceptions for it.
        var events: [Event] = []
        for (index, edge) in edges.enumerated() {
            for step in 0..<20 {
                let ordinary = Double(Float(100 + Double(index * 20 + step) * 0.37))
                let x = step == 10 ? edge : ordinary
                events.append(generator.event(.point(PointSample(
                    stroke: stroke, x: x, y: step == 11 ? edge : ordinary + 1, pressure: step == 12 ? edge : 0.5,
                    t: step == 13 ? edge : Double(step) / 120, style: Style(color: RGBA(rawValue: 0x11223344), width: 2)))))
            }
        }
        expectBitExact(events, try roundTrip(events))
    }

    /// v2 spends at most the noise's information plus 2.5 B/pt (stroke ids, the generator's
    /// random wall clocks, headers); v1 stores such values as 8-byte exceptions (in the
    /// clock-difference model only t, a quarter of the values).
    @Test func deviceValuesCostNearTheirInformation() throws {
        for model in DeviceModel.allCases {
            let events = model.session(seed: 11, strokes: 60, points: 150)
            let v1 = try bytesPerPoint(events, version: FormatV1.version)
            let v2 = try bytesPerPoint(events)
            let limit = model.informationBitsPerPoint / 8 + 2.5
            #expect(v2 <= limit, "\(model): \(v2) B/pt, information \(model.informationBitsPerPoint / 8) B/pt")
            #expect(v2 <= v1 * 0.85, "\(model): v2 \(v2) B/pt against v1 \(v1)")
        }
    }

    @Test func tidyValuesCostWhatV1Costs() throws {
        var generator = EventGenerator(seed: 5)
        var events: [Event] = []
        for _ in 0..<40 { events += generator.stroke(points: 150) }
        let v1 = try bytesPerPoint(events, version: FormatV1.version)
        let v2 = try bytesPerPoint(events)
        #expect(v2 <= v1 * 1.01, "2-decimal values: v2 \(v2) B/pt against v1 \(v1)")
    }

    @Test func damagedBodiesAreRefusedNotTrapped() throws {
        let events = DeviceModel.clockDifferences.session(seed: 2, strokes: 6, points: 40)
            + DeviceModel.float32Sensor.session(seed: 2, strokes: 6, points: 40)
        let renumbered = events.enumerated().map { index, event in
            Event(id: EventID(replica: events[0].id.replica, seq: UInt64(index + 1)), lamport: UInt64(index + 1),
                  wallTime: event.wallTime, payload: event.payload)
        }
        let raw = BlockCodec.encode(renumbered)
        var random = SeededGenerator(seed: 99)
        var refused = 0
        for _ in 0..<3000 {
            var damaged = raw
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                damaged[Int.random(in: 0..<damaged.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            if Bool.random(using: &random) { damaged = Array(damaged.prefix(Int.random(in: 0..<damaged.count, using: &random))) }
            do {
                let columns = try damaged.withUnsafeBytes { buffer in
                    try BlockCodec.decodeColumns(buffer, firstSeq: 1, eventCount: renumbered.count)
                }
                try columns.validate()
            } catch {
                refused += 1
            }
        }
        #expect(refused > 2000)
    }

    /// The column decoder reads each entry's stroke through an unchecked buffer: an entry
    /// naming a stroke beyond the count must be an error, not a read past the predictors.
    @Test func aColumnEntryNamingAStrokeBeyondTheCountIsRefused() throws {
        let values: [Double] = [1.5, 2.25, 3.0, -7.125]
        var out = ByteWriter()
        RealColumnEncoderV2(values: values, strokes: [0, 0, 1, 1], strokeCount: 2).write(to: &out)
        func decode(_ strokes: [UInt32]) throws -> [Double] {
            try out.bytes.withUnsafeBytes { buffer in
                var reader = ByteReader(buffer)
                return try RealColumnDecoderV2.decode(&reader, strokes: strokes, strokeCount: 2)
            }
        }
        #expect(try decode([0, 0, 1, 1]).map(\.bitPattern) == values.map(\.bitPattern))
        #expect(throws: DecodeError.self) { try decode([0, 0, 1, 2]) }
    }

    @Test func versionOneBodiesStillDecodeAndDifferFromVersionTwo() throws {
        let events = DeviceModel.thirdsGrid.session(seed: 4, strokes: 10, points: 50)
        let v1 = BlockCodec.encode(events, version: FormatV1.version)
        let v2 = BlockCodec.encode(events, version: FormatV2.version)
        #expect(v1 != v2)
        expectBitExact(events, try roundTrip(events, version: FormatV1.version))
        // A v2 reader given a v1 body (or the reverse) must not silently produce other events.
        let crossed = try? v1.withUnsafeBytes { buffer in
            try BlockCodec.decode(buffer, replica: events[0].id.replica, firstSeq: 1, eventCount: events.count,
                                  version: FormatV2.version)
        }
        #expect(crossed != events)
    }
}
