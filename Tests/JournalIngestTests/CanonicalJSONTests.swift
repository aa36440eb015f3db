import JournalFormat
import JournalIngest
import JournalTestSupport
import Testing

@Suite(.ownThreads) struct CanonicalJSONTests {
    @Test func pointLineShape() {
        let payload = point(x: 1.5, y: 2.25, pressure: 0.5, t: 0.016, color: 0xE539_35FF, width: 4)
        #expect(CanonicalJSON.line(for: payload)
            == ##"{"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":1.5,"y":2.25,"color":"#E53935FF","width":4.0,"pressure":0.5,"t":0.016}"##)
        #expect(CanonicalJSON.line(for: point(x: -0.0, y: 1e-05, color: 0x0000_0000, width: 2))
            == ##"{"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":-0.0,"y":1e-05,"color":"#00000000","width":2.0}"##)
    }

    @Test func otherKinds() {
        #expect(CanonicalJSON.line(for: .end(stroke)) == #"{"type":"end","stroke":"\#(strokeText)"}"#)
        #expect(CanonicalJSON.line(for: .undo(stroke)) == #"{"type":"undo","stroke":"\#(strokeText)"}"#)
        #expect(CanonicalJSON.line(for: .redo(stroke)) == #"{"type":"redo","stroke":"\#(strokeText)"}"#)
        #expect(CanonicalJSON.line(for: .erase(stroke)) == #"{"type":"erase","stroke":"\#(strokeText)"}"#)
        #expect(CanonicalJSON.line(for: .clear) == #"{"type":"clear"}"#)
    }

    @Test func eventLine() {
        let replica = ReplicaID(hex: "0123456789abcdef00000000000000ff")!
        let event = Event(id: EventID(replica: replica, seq: 42), lamport: 7, wallTime: -3, payload: .end(stroke))
        let line = CanonicalJSON.line(for: event)
        #expect(line == #"{"type":"end","stroke":"\#(strokeText)","replica":"0123456789abcdef00000000000000ff","seq":42,"lamport":7,"time":-3}"#)
        #expect(parsed(line) == [.end(stroke)])
    }

    @Test func numbers() {
        #expect(CanonicalJSON.number(1.5) == "1.5")
        #expect(CanonicalJSON.number(4) == "4.0")
        #expect(CanonicalJSON.number(.leastNonzeroMagnitude) == "5e-324")
        #expect(CanonicalJSON.number(1e-05) == "1e-05")
        #expect(CanonicalJSON.number(-0.0) == "-0.0")
        #expect(CanonicalJSON.number(.infinity) == "null")
        #expect(CanonicalJSON.number(.nan) == "null")
        var random = SeededGenerator(seed: 5)
        for _ in 0..<50_000 {
            let value = Double(bitPattern: random.next())
            guard value.isFinite else { continue }
            let text = CanonicalJSON.number(value)
            // Valid JSON grammar (JSONNumber is strict about it) and the same bits back.
            #expect(JSONNumber.parse(text)?.bitPattern == value.bitPattern, "\(text)")
        }
    }

    @Test func identifiersMatchJournalFormatSpelling() {
        var random = SeededGenerator(seed: 3)
        for _ in 0..<2_000 {
            let id = StrokeID(UUIDBits(high: random.next(), low: random.next()))
            let color = RGBA(rawValue: UInt32(truncatingIfNeeded: random.next()))
            let line = CanonicalJSON.line(for: .point(PointSample(stroke: id, x: 0, y: 0, style: Style(color: color, width: 1))))
            #expect(line.contains("\"stroke\":\"\(id.uuidString)\""), "\(line)")
            #expect(line.contains("\"color\":\"\(color.hexString)\""), "\(line)")
            let replica = ReplicaID(UUIDBits(high: random.next(), low: random.next()))
            let event = Event(id: EventID(replica: replica, seq: random.next() >> 2), lamport: random.next() >> 2,
                              wallTime: Int64(bitPattern: random.next()), payload: .clear)
            #expect(CanonicalJSON.line(for: event).contains("\"replica\":\"\(replica.hex)\",\"seq\":\(event.id.seq),"))
        }
    }

    /// A random finite Double of any kind: bit patterns (all magnitudes and subnormals),
    /// typical coordinates, zeros.
    static func randomDouble(_ random: inout SeededGenerator, nonNegative: Bool = false) -> Double {
        var value: Double
        switch random.next() % 6 {
        case 0: value = Double(bitPattern: random.next() & 0x000F_FFFF_FFFF_FFFF)  // subnormal
        case 1: value = random.next() & 1 == 0 ? 0.0 : -0.0
        case 2: value = Double(Int(random.next() % 200_000)) / 100
        default:
            repeat { value = Double(bitPattern: random.next()) } while !value.isFinite
        }
        if nonNegative, value.sign == .minus, value != 0 { value = -value }
        return value
    }

    static func randomPayload(_ random: inout SeededGenerator) -> Payload {
        let id = StrokeID(UUIDBits(high: random.next(), low: random.next()))
        switch random.next() % 10 {
        case 0: return .end(id)
        case 1: return .undo(id)
        case 2: return .redo(id)
        case 3: return .erase(id)
        case 4: return .clear
        default:
            return .point(PointSample(
                stroke: id, x: randomDouble(&random), y: randomDouble(&random),
                pressure: random.next() & 1 == 0 ? randomDouble(&random) : nil,
                t: random.next() & 1 == 0 ? randomDouble(&random) : nil,
                style: Style(color: RGBA(rawValue: UInt32(truncatingIfNeeded: random.next())),
                             width: randomDouble(&random, nonNegative: true))))
        }
    }

    @Test func roundTripsRandomPayloadsBitForBit() throws {
        var random = SeededGenerator(seed: 42)
        for index in 0..<20_000 {
            let payload = Self.randomPayload(&random)
            let line = CanonicalJSON.line(for: payload)
            let back = try LineParser.parse(line)
            #expect(back == [payload], "\(line)")
            // With the envelope too.
            let event = Event(id: EventID(replica: .random(), seq: UInt64(index + 1)), lamport: UInt64(index + 1),
                              wallTime: 1_732_190_000_000 + Int64(index), payload: payload)
            #expect(try LineParser.parse(CanonicalJSON.line(for: event)) == [payload])
        }
    }

    @Test func canonicalLinesAreFixedPoints() throws {
        // Parsing a canonical line and printing it again gives the same text.
        var random = SeededGenerator(seed: 8)
        for _ in 0..<2_000 {
            let line = CanonicalJSON.line(for: Self.randomPayload(&random))
            let again = try LineParser.parse(line).map(CanonicalJSON.line(for:))
            #expect(again == [line])
        }
    }
}
