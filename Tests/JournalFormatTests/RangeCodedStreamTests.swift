import JournalFormat
import JournalTestSupport
import Testing

/// Range-coded streams (docs/FORMAT.md §18): exact round trips of every bit length, a decoder
/// that reads exactly the bytes it was given, and the block bodies of versions 6 and 7.
@Suite struct RangeCodedStreamTests {
    /// A deterministic generator, so a failure names a reproducible case.
    struct Numbers {
        private var generator: SeededGenerator
        init(state: UInt64) { generator = SeededGenerator(seed: state) }
        mutating func next() -> UInt64 { generator.next() }
        /// A value of exactly `length` bits.
        mutating func value(bits length: Int) -> UInt64 {
            guard length > 0 else { return 0 }
            let mask: UInt64 = length == 64 ? .max : (1 << UInt64(length)) - 1
            return (next() & mask) | (1 << UInt64(length - 1))
        }
    }

    /// The stream as a body holds it: marker, lengths, coded and raw bytes.
    func streamBytes(_ values: [UInt64], ages: [UInt8]) -> [UInt8] {
        let coded = RangeCodedStream.encode(values, ages: ages)
        return [RangeCodedStream.marker] + coded.lengths + coded.coded + coded.raw
    }

    func decode(_ bytes: [UInt8], ages: [UInt8]) throws(DecodeError) -> (values: [UInt64], atEnd: Bool) {
        var result: Result<([UInt64], Bool), DecodeError> = .success(([], false))
        bytes.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer)
            do throws(DecodeError) {
                guard try reader.readByte() == RangeCodedStream.marker else { throw .malformed(offset: 0, reason: "no marker") }
                let values = try RangeCodedStream.decode(&reader, ages: ages, what: "test")
                result = .success((values, reader.isAtEnd))
            } catch {
                result = .failure(error)
            }
        }
        return try result.get()
    }

    /// Ages of entries of strokes taking turns in runs, as interleaved drawers' do.
    func ages(count: Int, numbers: inout Numbers) -> [UInt8] {
        var seen: [Int: UInt8] = [:]
        var stroke = 0
        return (0..<count).map { _ in
            if numbers.next() % 7 == 0 { stroke = Int(numbers.next() % 9) }
            let age = seen[stroke, default: 0]
            seen[stroke] = min(age + 1, 2)
            return age
        }
    }

    @Test func everyBitLengthComesBackExactly() throws {
        var numbers = Numbers(state: 42)
        var values: [UInt64] = []
        for length in 0...64 {
            for _ in 0..<5 { values.append(numbers.value(bits: length)) }
        }
        // Then a long run of small residuals, as a smooth stroke gives, and some extremes.
        for _ in 0..<2_000 { values.append(numbers.value(bits: Int(numbers.next() % 6))) }
        values += [.max, 1 << 63, 0, 1, (1 << 15) - 1, 1 << 15]
        let ages = ages(count: values.count, numbers: &numbers)
        let (decoded, atEnd) = try decode(streamBytes(values, ages: ages), ages: ages)
        #expect(decoded == values)
        #expect(atEnd)
    }

    @Test func anEmptyStreamIsTheEncodersFlushAlone() throws {
        let coded = RangeCodedStream.encode([], ages: [])
        #expect(coded.coded == [0, 0, 0, 0, 0] && coded.raw.isEmpty)
        #expect(try decode(streamBytes([], ages: []), ages: []).values.isEmpty)
    }

    @Test func theDecoderReadsExactlyTheBytesItWasGiven() throws {
        var numbers = Numbers(state: 7)
        let values = (0..<500).map { _ in numbers.value(bits: Int(numbers.next() % 30)) }
        let ages = ages(count: values.count, numbers: &numbers)
        let coded = RangeCodedStream.encode(values, ages: ages)
        func lengths(_ codedCount: Int, _ rawCount: Int) -> [UInt8] {
            var writer = ByteWriter(capacity: 10)
            writer.appendVarint(UInt64(codedCount))
            writer.appendVarint(UInt64(rawCount))
            return writer.bytes
        }
        func reason(_ bytes: [UInt8]) -> String? {
            do throws(DecodeError) {
                _ = try decode(bytes, ages: ages)
                return nil
            } catch {
                return "\(error)"
            }
        }
        let marker = [RangeCodedStream.marker]
        // One coded byte more (taken from the raw bytes' place), one fewer, one raw byte more.
        var longer = coded.coded + [0x5A]
        #expect(reason(marker + lengths(longer.count, coded.raw.count) + longer + coded.raw)?.contains("bytes left") == true)
        longer = Array(coded.coded.dropLast())
        #expect(reason(marker + lengths(longer.count, coded.raw.count) + longer + coded.raw)?.contains("ends early") == true)
        let moreRaw = coded.raw + [0]
        #expect(reason(marker + lengths(coded.coded.count, moreRaw.count) + coded.coded + moreRaw)?.contains("bytes left") == true)
        let lessRaw = Array(coded.raw.dropLast())
        #expect(reason(marker + lengths(coded.coded.count, lessRaw.count) + coded.coded + lessRaw)?.contains("ends early") == true)
        // Lengths beyond the buffer, and fewer than the five bytes the decoder starts with.
        #expect(reason(marker + lengths(coded.coded.count + 1_000, 0) + coded.coded) != nil)
        #expect(reason(marker + lengths(4, 0) + [0, 0, 0, 0])?.contains("at least 5") == true)
    }

    @Test func aBitLengthAboveSixtyFourIsMalformed() {
        // Some byte strings decode a first bit length of 65…78 (the escape's 6 bits reach 78):
        // each must be refused by name, and no string may trap or read beyond its bytes.
        var numbers = Numbers(state: 3)
        var refused = 0
        for _ in 0..<20_000 {
            let bytes: [UInt8] = [0] + (0..<12).map { _ in UInt8(truncatingIfNeeded: numbers.next()) }
            var writer = ByteWriter(capacity: 32)
            writer.append(RangeCodedStream.marker)
            writer.appendVarint(UInt64(bytes.count))
            writer.appendVarint(0)
            writer.append(contentsOf: bytes)
            do throws(DecodeError) {
                _ = try decode(writer.bytes, ages: [0])
            } catch {
                if "\(error)".contains("bit length of") { refused += 1 }
            }
        }
        #expect(refused > 0)
    }

    // MARK: Block bodies

    /// Short strokes of handwriting-like values on a 2-decimal grid, with pressure and time.
    static func handwriting(points: Int, seed: UInt64) -> [Event] {
        var numbers = Numbers(state: seed)
        let replica = ReplicaID(hex: "0f0e0d0c0b0a09080706050403020100")!
        var events: [Event] = []
        var stroke = StrokeID(uuidString: "00000000-0000-4000-8000-000000000000")!
        var x = 10_000, y = 20_000, dx = 0, dy = 0, pressure = 50
        for index in 0..<points {
            if index % 23 == 0 {
                stroke = StrokeID(UUIDBits(high: numbers.next(), low: numbers.next()))
                x += Int(numbers.next() % 4_000) - 2_000
                dx = Int(numbers.next() % 200) - 100
                dy = Int(numbers.next() % 200) - 100
            }
            // Mostly no acceleration, sometimes a step of a few hundredths: a pen's residuals.
            func acceleration() -> Int {
                let draw = numbers.next()
                return draw % 10 < 6 ? 0 : (draw & 1024 == 0 ? 1 : -1) * (1 + Int((draw >> 12) % 8).trailingZeroBitCount)
            }
            dx += acceleration()
            dy += acceleration()
            x += dx
            y += dy
            pressure = max(1, min(100, pressure + (numbers.next() % 4 == 0 ? Int(numbers.next() % 3) - 1 : 0)))
            let sample = PointSample(stroke: stroke, x: Double(x) / 100, y: Double(y) / 100, pressure: Double(pressure) / 100,
                                     t: Double(index % 23) * 0.008, style: Style(color: RGBA(rawValue: 0x202020FF), width: 2))
            events.append(Event(id: EventID(replica: replica, seq: UInt64(index + 1)), lamport: UInt64(index + 1),
                                wallTime: 1_790_000_000_000 + Int64(index), payload: .point(sample)))
        }
        return events
    }

    func body(_ events: [Event], version: UInt16) -> [UInt8] { BlockCodec.encode(events, version: version) }

    func decodeBody(_ body: [UInt8], _ events: [Event], version: UInt16) throws(DecodeError) -> [Event] {
        var result: Result<[Event], DecodeError> = .success([])
        body.withUnsafeBytes { buffer in
            do throws(DecodeError) {
                result = .success(try BlockCodec.decode(buffer, replica: events[0].id.replica, firstSeq: 1,
                                                        eventCount: events.count, version: version))
            } catch {
                result = .failure(error)
            }
        }
        return try result.get()
    }

    @Test func versionSixBodiesAreSmallerAndDecodeToTheSameEvents() throws {
        let events = Self.handwriting(points: 4_000, seed: 11)
        let v2 = body(events, version: FormatV2.version)
        let v6 = body(events, version: FormatV6.version)
        #expect(try decodeBody(v6, events, version: FormatV6.version) == events)
        // A version 7 block is coded as version 6's.
        #expect(body(events, version: FormatV7.version) == v6)
        let deflatedV2 = SegmentEncoder.block(events[...], version: FormatV2.version).count
        let deflatedV6 = SegmentEncoder.block(events[...], version: FormatV6.version).count
        #expect(deflatedV6 < deflatedV2, "v6 \(deflatedV6) bytes, v2 \(deflatedV2)")
        // A version 2 body is a version 6 body; a version 6 body with range-coded streams is not
        // a version 2 body (`low` ≤ 7, §14.1).
        #expect(try decodeBody(v2, events, version: FormatV6.version) == events)
        #expect(throws: DecodeError.self) { try decodeBody(v6, events, version: FormatV2.version) }
    }

    @Test func shortColumnsKeepTheLowForm() throws {
        let events = Self.handwriting(points: RangeCodedStream.minimumCount - 1, seed: 5)
        #expect(body(events, version: FormatV6.version) == body(events, version: FormatV2.version))
    }
}
