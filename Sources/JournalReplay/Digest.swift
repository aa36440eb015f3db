import Crypto
import JournalFormat

extension Drawing {
    /// SHA-256 over the canonical encoding of the drawing (docs/FORMAT.md, "Digest"): equal on
    /// every machine that holds the same set of events (invariant 3).
    public var digest: String {
        var hasher = SHA256()
        hasher.update(data: Array("StrokeJournal drawing v1\n".utf8))
        withUnsafeBytes(of: UInt64(strokes.count).littleEndian) { hasher.update(bufferPointer: $0) }
        // One buffer per stroke, filled through a raw pointer and hashed at once: per-field
        // hashing calls would cost more than the hashing itself.
        var buffer: [UInt8] = []
        for stroke in strokes {
            let size = 16 + 2 + 8 + stroke.points.reduce(0) { total, point in
                total + 1 + 16 + (point.pressure != nil ? 8 : 0) + (point.t != nil ? 8 : 0) + 12
            }
            if buffer.count < size { buffer = [UInt8](repeating: 0, count: max(size, buffer.count * 2)) }
            let used = buffer.withUnsafeMutableBytes { raw -> Int in
                var offset = 0
                func put<T: FixedWidthInteger>(_ value: T) {
                    raw.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
                    offset += MemoryLayout<T>.size
                }
                for byte in stroke.id.bits.bytes { put(byte) }
                put(UInt8(stroke.visible ? 1 : 0))
                put(UInt8(stroke.ended ? 1 : 0))
                put(UInt64(stroke.points.count))
                for (index, point) in stroke.points.enumerated() {
                    let style = stroke.style(ofPoint: index)
                    let pressure = point.pressure
                    let t = point.t
                    put(UInt8((pressure != nil ? 1 : 0) | (t != nil ? 2 : 0)))
                    put(point.x.bitPattern)
                    put(point.y.bitPattern)
                    if let pressure { put(pressure.bitPattern) }
                    if let t { put(t.bitPattern) }
                    put(style.color.rawValue)
                    put(style.width.bitPattern)
                }
                return offset
            }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<used])) }
        }
        return hasher.finalize().map { byte in
            let digits = String(byte, radix: 16)
            return byte < 16 ? "0" + digits : digits
        }.joined()
    }
}

/// A drawing in brief: its digest and what `journal digest --json` counts of its strokes.
public struct DrawingSummary: Sendable, Equatable {
    public var digest: String
    /// Strokes with at least one point, hidden ones included.
    public var strokes: Int
    public var visibleStrokes: Int

    public init(digest: String, strokes: Int, visibleStrokes: Int) {
        self.digest = digest
        self.strokes = strokes
        self.visibleStrokes = visibleStrokes
    }

    /// `digest`: the drawing's, when known already (a snapshot's); else hashed now.
    public init(_ drawing: Drawing, digest: String? = nil) {
        self.init(digest: digest ?? drawing.digest, strokes: drawing.strokes.count,
                  visibleStrokes: drawing.strokes.reduce(0) { $0 + ($1.visible ? 1 : 0) })
    }
}
