import Crypto
import Dispatch
import JournalFormat
import JournalPlatform

extension Drawing {
    /// The drawing's digest (docs/FORMAT.md §9.3, version 2): equal on every machine that
    /// holds the same set of events (invariant 3). One SHA-256 over each stroke's canonical
    /// bytes, then one over the strokes' hashes in z-order: the strokes are hashed on every
    /// core, and a snapshot keeps their hashes, so a moment late in a session hashes only the
    /// strokes that differ from the snapshot's instead of the whole drawing again.
    public var digest: String { StrokeHashes.digest(visible: strokes.map(\.visible), hashes: StrokeHashes(of: strokes)) }

    /// Version 1 of §9.3 (every stroke's bytes through one SHA-256), which earlier releases
    /// printed: `journal digest --digest-version 1` compares with them.
    public var digestVersion1: String {
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
        return StrokeHashes.hex(lanes.hasher.finalize())
    }
}

/// The SHA-256 of each stroke's canonical bytes (docs/FORMAT.md §9.3, `strokeHash`), 32 bytes
/// a stroke, in the order of the strokes they were made from.
struct StrokeHashes: Equatable, Sendable {
    static let size = 32
    private(set) var bytes: [UInt8]

    var count: Int { bytes.count / Self.size }

    init(bytes: [UInt8]) {
        precondition(bytes.count % Self.size == 0, "stroke hashes: not a whole number of hashes")
        self.bytes = bytes
    }

    init() { bytes = [] }

    /// Hashes every stroke, on every core when there is enough to share.
    init(of strokes: [Drawing.Stroke]) {
        var output = [UInt8](repeating: 0, count: strokes.count * Self.size)
        let lanes = StrokeHashes.lanes(strokes)
        output.withUnsafeMutableBytes { raw in
            nonisolated(unsafe) let out = raw
            DispatchQueue.concurrentPerform(iterations: lanes.count) { lane in
                var scratch: [UInt8] = []
                for index in lanes[lane] { Self.hash(strokes[index], into: out, at: index, scratch: &scratch) }
            }
        }
        bytes = output
    }

    /// Contiguous ranges of strokes of about equal weight, one a core (one for a small drawing).
    private static func lanes(_ strokes: [Drawing.Stroke]) -> [Range<Int>] {
        let weights = strokes.map { $0.points.count + 1 }
        let total = weights.reduce(0, +)
        let count = total < 65_536 ? 1 : max(1, ProcessInfoLite.activeProcessorCount)
        var lanes: [Range<Int>] = []
        var start = 0, weight = 0
        for (index, strokeWeight) in weights.enumerated() {
            weight += strokeWeight
            if lanes.count < count - 1, weight * count >= total * (lanes.count + 1) {
                lanes.append(start..<(index + 1))
                start = index + 1
            }
        }
        lanes.append(start..<strokes.count)
        return lanes
    }

    mutating func append(_ stroke: Drawing.Stroke, scratch: inout [UInt8]) {
        let index = count
        bytes += repeatElement(0, count: Self.size)
        bytes.withUnsafeMutableBytes { Self.hash(stroke, into: $0, at: index, scratch: &scratch) }
    }

    mutating func append(copyOf index: Int, in other: StrokeHashes) {
        bytes += other.bytes[(index * Self.size)..<((index + 1) * Self.size)]
    }

    /// The stroke's hash at `index` of `out`; `scratch` holds its canonical bytes meanwhile.
    private static func hash(_ stroke: Drawing.Stroke, into out: UnsafeMutableRawBufferPointer, at index: Int, scratch: inout [UInt8]) {
        let needed = 16 + 1 + 8 + stroke.points.count * 45
        if scratch.count < needed { scratch = [UInt8](repeating: 0, count: needed) }
        let digest = scratch.withUnsafeMutableBytes { raw in
            let end = StrokeEncoding.encode(stroke, into: raw, at: 0, visible: nil)
            var hasher = SHA256()
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: raw[0..<end]))
            return hasher.finalize()
        }
        digest.withUnsafeBytes { hash in
            UnsafeMutableRawBufferPointer(rebasing: out[(index * size)..<((index + 1) * size)]).copyMemory(from: hash)
        }
    }

    /// §9.3's digest of strokes in z-order, each visible or not, from their hashes.
    static func digest(visible: [Bool], hashes: StrokeHashes) -> String {
        precondition(visible.count == hashes.count, "stroke hashes: one a stroke")
        var input: [UInt8] = []
        input.reserveCapacity(25 + 8 + visible.count * (1 + size))
        input += Array("StrokeJournal drawing v2\n".utf8)
        withUnsafeBytes(of: UInt64(visible.count).littleEndian) { input += $0 }
        for (index, isVisible) in visible.enumerated() {
            input.append(isVisible ? 1 : 0)
            input += hashes.bytes[(index * size)..<((index + 1) * size)]
        }
        return hex(SHA256.hash(data: input))
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        digest.map { byte in
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
            fillingCount = filling.withUnsafeMutableBytes { StrokeEncoding.encode(stroke, into: $0, at: fillingCount, visible: stroke.visible) }
            next += 1
        }
    }
}

/// A stroke's canonical bytes (docs/FORMAT.md §9.3).
enum StrokeEncoding {
    /// The stroke's bytes at `start`, with its `visible` byte (version 1) or without (nil,
    /// version 2's `strokeHash`); returns where they end.
    static func encode(_ stroke: Drawing.Stroke, into raw: UnsafeMutableRawBufferPointer, at start: Int, visible: Bool?) -> Int {
        var offset = start
        @inline(__always) func put<T: FixedWidthInteger>(_ value: T) {
            raw.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
            offset += MemoryLayout<T>.size
        }
        // The id's 16 bytes most significant first (`UUIDBits.bytes`).
        raw.storeBytes(of: stroke.id.bits.high.bigEndian, toByteOffset: offset, as: UInt64.self)
        raw.storeBytes(of: stroke.id.bits.low.bigEndian, toByteOffset: offset + 8, as: UInt64.self)
        offset += 16
        if let visible { put(UInt8(visible ? 1 : 0)) }
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
