import Crypto
import Dispatch
import JournalFormat

extension Drawing {
    /// SHA-256 over the canonical encoding of the drawing (docs/FORMAT.md, "Digest"): equal on
    /// every machine that holds the same set of events (invariant 3).
    public var digest: String {
        var hasher = SHA256()
        hasher.update(data: Array("StrokeJournal drawing v1\n".utf8))
        withUnsafeBytes(of: UInt64(strokes.count).littleEndian) { hasher.update(bufferPointer: $0) }
        // SHA-256 is serial and a 2 M-point drawing is about 90 MB of canonical bytes: while
        // one core hashes a batch, the other encodes the next (encoding costs about two
        // thirds of what hashing does).
        let lanes = DigestLanes(strokes: strokes, hasher: hasher)
        while !lanes.done {
            DispatchQueue.concurrentPerform(iterations: 2) { lane in
                if lane == 0 { lanes.hashFilled() } else { lanes.fillNext() }
            }
            lanes.swap()
        }
        return lanes.hasher.finalize().map { byte in
            let digits = String(byte, radix: 16)
            return byte < 16 ? "0" + digits : digits
        }.joined()
    }
}

/// The two halves of `Drawing.digest`'s pipeline. Between two `swap`s the hashing lane reads
/// only `filled` and `hasher`, the filling lane only `filling` and `next`: no lock is needed.
private final class DigestLanes: @unchecked Sendable {
    /// A batch is flushed once it holds this much; a stroke larger than a batch grows it.
    static let batchBytes = 1 << 20

    let strokes: [Drawing.Stroke]
    var hasher: SHA256
    private var filled: [UInt8] = []
    private var filledCount = 0
    private var filling: [UInt8] = []
    private var fillingCount = 0
    private var next = 0

    init(strokes: [Drawing.Stroke], hasher: SHA256) {
        self.strokes = strokes
        self.hasher = hasher
    }

    var done: Bool { next == strokes.count && filledCount == 0 }

    func hashFilled() {
        guard filledCount > 0 else { return }
        filled.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<filledCount])) }
    }

    func swap() {
        Swift.swap(&filled, &filling)
        filledCount = fillingCount
        fillingCount = 0
    }

    /// Encodes strokes from `next` until the batch is full or none are left.
    func fillNext() {
        while next < strokes.count, fillingCount < Self.batchBytes {
            let stroke = strokes[next]
            // At most 1 + 16 + 8 + 8 + 12 bytes a point.
            let bound = fillingCount + 16 + 2 + 8 + stroke.points.count * 45
            if filling.count < bound { filling += [UInt8](repeating: 0, count: max(bound, Self.batchBytes) - filling.count) }
            fillingCount = filling.withUnsafeMutableBytes { Self.encode(stroke, into: $0, at: fillingCount) }
            next += 1
        }
    }

    /// The stroke's canonical bytes (docs/FORMAT.md §9.3) at `start`; returns where they end.
    private static func encode(_ stroke: Drawing.Stroke, into raw: UnsafeMutableRawBufferPointer, at start: Int) -> Int {
        var offset = start
        @inline(__always) func put<T: FixedWidthInteger>(_ value: T) {
            raw.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
            offset += MemoryLayout<T>.size
        }
        // The id's 16 bytes most significant first (`UUIDBits.bytes`).
        raw.storeBytes(of: stroke.id.bits.high.bigEndian, toByteOffset: offset, as: UInt64.self)
        raw.storeBytes(of: stroke.id.bits.low.bigEndian, toByteOffset: offset + 8, as: UInt64.self)
        offset += 16
        put(UInt8(stroke.visible ? 1 : 0))
        put(UInt8(stroke.ended ? 1 : 0))
        put(UInt64(stroke.points.count))
        let shared = stroke.style
        let styles = stroke.pointStyles
        stroke.points.withUnsafeBufferPointer { points in
            for index in points.indices {
                let point = points[index]
                let style = styles?[index] ?? shared
                let hasPressure = !point.pressureBits.isNaN
                let hasT = !point.tBits.isNaN
                put(UInt8((hasPressure ? 1 : 0) | (hasT ? 2 : 0)))
                put(point.x.bitPattern)
                put(point.y.bitPattern)
                if hasPressure { put(point.pressureBits.bitPattern) }
                if hasT { put(point.tBits.bitPattern) }
                put(style.color.rawValue)
                put(style.width.bitPattern)
            }
        }
        return offset
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
