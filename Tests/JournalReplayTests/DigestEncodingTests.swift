import Crypto
import JournalFormat
@testable import JournalReplay
import JournalTestSupport
import Testing

/// `Drawing.digest` hashes strokes on every core, and `digestVersion1` encodes strokes in
/// batches on one core while it hashes the batch before on the other: the bytes hashed must
/// still be FORMAT.md §9.3's, in order, whatever the lanes and batch boundaries.
@Suite struct DigestEncodingTests {
    /// §9.3's version 2 spelled out one field at a time, as a reader of FORMAT.md would write it.
    static func plainDigest(_ drawing: Drawing) -> String {
        var input = Array("StrokeJournal drawing v2\n".utf8)
        withUnsafeBytes(of: UInt64(drawing.strokes.count).littleEndian) { input += $0 }
        for stroke in drawing.strokes {
            input.append(stroke.visible ? 1 : 0)
            input += SHA256.hash(data: strokeBytes(stroke, visible: nil))
        }
        return SHA256.hash(data: input).map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
    }

    /// §9.3's version 1: one hash over every stroke's bytes, each with its visible byte.
    static func plainDigestVersion1(_ drawing: Drawing) -> String {
        var bytes = Array("StrokeJournal drawing v1\n".utf8)
        withUnsafeBytes(of: UInt64(drawing.strokes.count).littleEndian) { bytes += $0 }
        for stroke in drawing.strokes { bytes += strokeBytes(stroke, visible: stroke.visible) }
        return SHA256.hash(data: bytes).map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
    }

    /// A stroke's `strokeBytes`, with version 1's visible byte after the id when given.
    static func strokeBytes(_ stroke: Drawing.Stroke, visible: Bool?) -> [UInt8] {
        var bytes: [UInt8] = []
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        bytes += stroke.id.bits.bytes
        if let visible { put(UInt8(visible ? 1 : 0)) }
        put(UInt8(stroke.ended ? 1 : 0))
        put(UInt64(stroke.points.count))
        for (index, point) in stroke.points.enumerated() {
            put(UInt8((point.pressure != nil ? 1 : 0) | (point.t != nil ? 2 : 0)))
            put(point.x.bitPattern)
            put(point.y.bitPattern)
            if let pressure = point.pressure { put(pressure.bitPattern) }
            if let t = point.t { put(t.bitPattern) }
            put(stroke.style(ofPoint: index).color.rawValue)
            put(stroke.style(ofPoint: index).width.bitPattern)
        }
        return bytes
    }

    /// Strokes of every shape the encoder distinguishes: shared and per-point styles, pressure
    /// and time present or not, hidden and ended, empty, and one stroke larger than a batch.
    static func drawing(seed: UInt64, strokes: Int, pointsPerStroke: ClosedRange<Int>, huge: Int?) -> Drawing {
        var random = SeededGenerator(seed: seed)
        var result: [Drawing.Stroke] = []
        for index in 0..<strokes {
            let count = index == 0 ? huge ?? pointsPerStroke.lowerBound : Int.random(in: pointsPerStroke, using: &random)
            let points = (0..<count).map { step -> Drawing.Point in
                let x: Double = Double(step) * 0.25 + Double(index)
                let pressure: Double? = step % 3 == 0 ? nil : Double(step % 100) / 100
                let t: Double? = index % 4 == 1 ? nil : Double(step) / 120
                return Drawing.Point(x: x, y: -Double(step) / 3, pressure: pressure, t: t)
            }
            let style = Style(color: RGBA(rawValue: UInt32(truncatingIfNeeded: random.next())), width: Double(index % 7) + 0.5)
            let pointStyles = index % 5 == 2 && count > 0
                ? (0..<count).map { Style(color: RGBA(rawValue: UInt32($0 % 3)), width: Double($0 % 4)) } : nil
            result.append(Drawing.Stroke(id: StrokeID(UUIDBits(high: random.next(), low: random.next())), style: style,
                                         pointStyles: pointStyles, points: points,
                                         visible: index % 3 != 0, ended: index % 2 == 0))
        }
        return Drawing(strokes: result)
    }

    @Test(arguments: [
        (seed: UInt64(1), strokes: 0, points: 0...0, huge: Int?.none),
        (seed: 2, strokes: 3, points: 0...40, huge: nil),
        // About 4.5 MB of canonical bytes: several batches, one stroke alone larger than a batch.
        (seed: 3, strokes: 900, points: 0...1_200, huge: 60_000),
    ])
    func pipelinedDigestHashesTheSameBytesAsThePlainEncoding(seed: UInt64, strokes: Int, points: ClosedRange<Int>, huge: Int?) {
        let drawing = Self.drawing(seed: seed, strokes: strokes, pointsPerStroke: points, huge: huge)
        #expect(drawing.digest == Self.plainDigest(drawing))
        #expect(drawing.digestVersion1 == Self.plainDigestVersion1(drawing))
        #expect(drawing.digest != drawing.digestVersion1)
    }

    /// A stroke's `visible` flag is outside its hash (a clear changes many at once), but the
    /// digest still tells a hidden stroke from a shown one.
    @Test func hidingAStrokeChangesTheDigestButNotItsHash() {
        var drawing = Self.drawing(seed: 5, strokes: 40, pointsPerStroke: 1...30, huge: nil)
        let before = drawing.digest
        let hashes = StrokeHashes(of: drawing.strokes)
        drawing.strokes[7].visible.toggle()
        #expect(StrokeHashes(of: drawing.strokes) == hashes)
        #expect(drawing.digest != before)
        #expect(drawing.digest == Self.plainDigest(drawing))
    }

    @Test func aDrawingThatDiffersInOnePointOfALateBatchDigestsDifferently() {
        var drawing = Self.drawing(seed: 4, strokes: 600, pointsPerStroke: 100...1_000, huge: nil)
        let before = drawing.digest
        let last = drawing.strokes.count - 1
        drawing.strokes[last].points[drawing.strokes[last].points.count - 1].x += 1
        #expect(drawing.digest != before)
        #expect(drawing.digest == Self.plainDigest(drawing))
        #expect(drawing.digestVersion1 == Self.plainDigestVersion1(drawing))
    }
}
