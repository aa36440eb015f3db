import JournalCompression
import JournalFormat

/// The strokes of a snapshot in chunks of consecutive slots, each encoded on its own so that
/// opening decodes them on every core (docs/SYNC.md, "Snapshots").
///
/// First, per stroke: 16-byte id, flags (1 ended, 2 visible, 4 per-point styles, 8 creation
/// key, 16 visibility key), the keys, style index, point count; if it has points, a byte of
/// presence modes (bits 0–1 pressure, 2–3 t: 0 none, 1 all, 2 bitmap of the points that have
/// one) and the bitmaps. Then the chunk's x, y, pressure and t columns, each one real column
/// as a block stores it (FORMAT.md §14.3, `RealColumnEncoderV2`) over the values present, in
/// slot order, predicted per stroke; then the per-point style indexes of the strokes that
/// have them. One coder for blocks and snapshots: a snapshot of device values costs what the
/// segments do, not the decimal grid's exceptions.
enum SnapshotChunks {
    struct Entry: Sendable {
        var firstSlot: Int
        var strokes: Int
        var points: Int
        var offset: Int
        var length: Int
        /// The chunk's length inflated; 0: stored as it is.
        var rawLength: Int
        /// How many of its first bytes (inflated) are its stroke records, before the columns.
        var recordsLength: Int
        var crc: UInt32
    }

    /// As a sealed block's body: the level sealing uses.
    static let compressionLevel: Int32 = 6

    /// How a chunk is deflated, part by part as a block body is (`EncodedBody`): its stroke
    /// records and its x, y and t columns at the sealing level, its pressures and point
    /// styles by runs, the columns' raw low bytes by Huffman codes alone; one stream at the
    /// sealing level if it is short. `partEnds` and `lowBytes`: where the records and each
    /// column end, and where the low bytes lie, as `encode` gives them.
    static func deflateSections(partEnds: [Int], lowBytes: [Range<Int>] = []) -> [DeflateSection] {
        guard let end = partEnds.last, end >= EncodedBody.minimumSectionedCount, partEnds.count == 6 else {
            return [DeflateSection(end: partEnds.last ?? 0, method: .matching(level: compressionLevel))]
        }
        let methods: [DeflateSection.Method] = [
            .matching(level: compressionLevel), .matching(level: compressionLevel), .matching(level: compressionLevel),
            .runs, .matching(level: compressionLevel), .runs,
        ]
        let parts = zip(partEnds, methods).map { DeflateSection(end: $0, method: $1) }
        return DeflateSection.carving(literals: lowBytes.filter { $0.count >= EncodedBody.minimumLowBytes }, from: parts)
    }

    /// The most bytes a chunk of `strokes` and `points` can take before compression: what
    /// inflating one may allocate (invariant 8). A stroke's header is under 128 bytes plus two
    /// bitmaps of a bit per point; a point's values under 4 × (9 + 18 + 18) bytes (an exception,
    /// a coarse and a fine residual per column) and a style index of 5; the columns' own
    /// headers fit in the rest.
    static func maxRawLength(strokes: Int, points: Int) -> Int {
        let (byStrokes, overflow1) = strokes.multipliedReportingOverflow(by: 256)
        let (byPoints, overflow2) = points.multipliedReportingOverflow(by: 256)
        guard !overflow1, !overflow2, byStrokes < Int.max / 2, byPoints < Int.max / 2 else { return Int.max }
        return byStrokes + byPoints + 256
    }

    /// Given a chunk's first slot and its stroke records, whether to decode its points.
    typealias Wanted = @Sendable (_ firstSlot: Int, _ records: Decoded) -> Bool

    struct Decoded: Sendable {
        var ids: [StrokeID]
        var strokes: [OrderedFoldState.StrokeState]
        /// Each stroke's point count, decoded or not.
        var counts: [Int32]
        var pointsDecoded: Bool
    }

    /// The bit pattern `Drawing.Point` uses for "absent"; any other value, even another NaN,
    /// is stored as a value so that the bits come back exactly.
    static let absent = Double.nan.bitPattern

    /// A chunk weighs at least this much (points, plus 8 per stroke) unless it is the last.
    static let minimumWeight = 65_536

    /// Slot ranges of roughly equal weight (points, plus a little per stroke), at most 16.
    static func partition(_ state: OrderedFoldState, minimumWeight: Int = minimumWeight) -> [Range<Int>] {
        let total = state.strokes.reduce(0) { $0 + $1.points.count + 8 }
        let target = max(total / 16 + 1, minimumWeight)
        var chunks: [Range<Int>] = []
        var start = 0, weight = 0
        for (slot, stroke) in state.strokes.enumerated() {
            weight += stroke.points.count + 8
            if weight >= target {
                chunks.append(start..<(slot + 1))
                start = slot + 1
                weight = 0
            }
        }
        if start < state.strokes.count || chunks.isEmpty { chunks.append(start..<state.strokes.count) }
        return chunks
    }

    /// The chunk's bytes, how many of them are its stroke records, where the records, the
    /// x, y, pressure and t columns and the point styles end, and where the columns' raw low
    /// bytes lie.
    static func encode(
        _ state: OrderedFoldState, slots: Range<Int>
    ) -> (bytes: [UInt8], recordsLength: Int, partEnds: [Int], lowBytes: [Range<Int>]) {
        var out = ByteWriter(capacity: slots.reduce(0) { $0 + 32 + state.strokes[$1].points.count * 3 })
        var xs: [Double] = [], ys: [Double] = [], pressures: [Double] = [], times: [Double] = []
        var pointStrokes: [UInt32] = [], pressureStrokes: [UInt32] = [], timeStrokes: [UInt32] = []
        for (position, slot) in slots.enumerated() {
            let stroke = state.strokes[slot]
            // Big-endian, as `UUIDBits.bytes` spells an id.
            out.appendLE(state.strokeIDs[slot].bits.high.byteSwapped)
            out.appendLE(state.strokeIDs[slot].bits.low.byteSwapped)
            var flags: UInt8 = stroke.ended ? 1 : 0
            if stroke.visibility?.visible == true { flags |= 2 }
            if stroke.pointStyles != nil { flags |= 4 }
            if stroke.creation != nil { flags |= 8 }
            if stroke.visibility != nil { flags |= 16 }
            out.append(flags)
            if let creation = stroke.creation { Snapshot.putKey(creation, &out) }
            if let visibility = stroke.visibility { Snapshot.putKey(visibility.key, &out) }
            out.appendVarint(UInt64(stroke.style))
            let points = stroke.points
            out.appendVarint(UInt64(points.count))
            guard !points.isEmpty else { continue }
            func mode(_ bits: (Drawing.Point) -> UInt64) -> UInt8 {
                let present = points.reduce(0) { $0 + (bits($1) == absent ? 0 : 1) }
                return present == 0 ? 0 : present == points.count ? 1 : 2
            }
            let pressureMode = mode { $0.pressureBits.bitPattern }
            let timeMode = mode { $0.tBits.bitPattern }
            out.append(pressureMode | timeMode << 2)
            func bitmap(_ bits: (Drawing.Point) -> UInt64) {
                var byte: UInt8 = 0
                for (index, point) in points.enumerated() {
                    if bits(point) != absent { byte |= 1 << UInt8(index & 7) }
                    if index & 7 == 7 || index == points.count - 1 { out.append(byte); byte = 0 }
                }
            }
            if pressureMode == 2 { bitmap { $0.pressureBits.bitPattern } }
            if timeMode == 2 { bitmap { $0.tBits.bitPattern } }
            let ref = UInt32(position)
            for point in points {
                xs.append(point.x)
                ys.append(point.y)
                pointStrokes.append(ref)
                if point.pressureBits.bitPattern != absent {
                    pressures.append(point.pressureBits)
                    pressureStrokes.append(ref)
                }
                if point.tBits.bitPattern != absent {
                    times.append(point.tBits)
                    timeStrokes.append(ref)
                }
            }
        }
        let recordsLength = out.count
        var partEnds = [recordsLength]
        var lowBytes: [Range<Int>] = []
        for (values, strokes) in [(xs, pointStrokes), (ys, pointStrokes), (pressures, pressureStrokes), (times, timeStrokes)] {
            RealColumnEncoderV2(values: values, strokes: strokes, strokeCount: slots.count).write(to: &out, lowBytes: &lowBytes)
            partEnds.append(out.count)
        }
        for slot in slots { state.strokes[slot].pointStyles?.forEach { out.appendVarint(UInt64($0)) } }
        partEnds.append(out.count)
        return (out.bytes, recordsLength, partEnds, lowBytes)
    }

    /// How one stroke's optional values are stored: all, none, or those a bitmap marks.
    private enum Presence {
        case none, all
        /// The bitmap and how many points it marks.
        case marked(UnsafeRawBufferPointer, present: Int)

        init(mode: UInt8, count: Int, reader: inout ByteReader) throws(DecodeError) {
            switch mode {
            case 0: self = .none
            case 1: self = .all
            default:
                let map = try reader.readBytes((count + 7) / 8)
                let present = map.reduce(0) { $0 + $1.nonzeroBitCount }
                // Bits beyond the last point must be clear: one spelling per snapshot.
                guard present > 0, present < count, count % 8 == 0 || map[map.count - 1] >> UInt8(count % 8) == 0 else {
                    throw .malformed(offset: reader.offset, reason: "presence bitmap")
                }
                self = .marked(map, present: present)
            }
        }

        func present(count: Int) -> Int {
            switch self {
            case .none: return 0
            case .all: return count
            case .marked(_, let present): return present
            }
        }

        func has(_ index: Int) -> Bool {
            switch self {
            case .none: return false
            case .all: return true
            case .marked(let map, _): return map[index >> 3] & (1 << UInt8(index & 7)) != 0
            }
        }
    }

    /// The chunk's stroke records only (`raw`: its first `recordsLength` bytes): every stroke
    /// without its points, what a moment needs of strokes created after its keyframe
    /// (`Keyframes`) or of strokes the snapshot's hashes stand for.
    static func decodeRecords(_ raw: UnsafeRawBufferPointer, entry: Entry) throws(DecodeError) -> Decoded {
        var reader = ByteReader(raw)
        let records = try strokeRecords(&reader, entry: entry)
        guard reader.isAtEnd else { throw .malformed(offset: reader.offset, reason: "stroke records length") }
        return Decoded(ids: records.ids, strokes: records.strokes, counts: records.counts.map { Int32($0) }, pointsDecoded: false)
    }

    /// What a chunk says of each stroke before its columns.
    private struct StrokeRecords {
        var ids: [StrokeID] = []
        var strokes: [OrderedFoldState.StrokeState] = []
        var counts: [Int] = []
        var presence: [(pressure: Presence, time: Presence)] = []
        var pointStrokes: [UInt32] = [], pressureStrokes: [UInt32] = [], timeStrokes: [UInt32] = []
        var styled: [Int] = []
    }

    /// Buffers one decoding lane reuses from chunk to chunk: decoded into fresh arrays, the
    /// 2 M-point session's chunks allocated about 90 MB of columns and indexes besides the
    /// points themselves, each page of it faulted in anew, and page faults were about a fifth
    /// of a moment's CPU time (`perf`).
    final class Scratch {
        var raw: [UInt8] = []
        var xs: [Double] = [], ys: [Double] = [], pressures: [Double] = [], times: [Double] = []
        var pointStrokes: [UInt32] = [], pressureStrokes: [UInt32] = [], timeStrokes: [UInt32] = []

        init() {}

        /// The inflated chunk, in `raw`'s first `count` bytes; `whole`: `count` is the whole
        /// chunk, else only its first bytes are wanted.
        func inflate(_ body: UnsafeRawBufferPointer, count: Int, whole: Bool = true) throws(ZlibError) {
            if raw.count < count { raw = [UInt8](repeating: 0, count: count) }
            var failure: ZlibError?
            raw.withUnsafeMutableBytes { buffer in
                do throws(ZlibError) {
                    let out = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
                    if whole { try RawDeflate.decompress(body, into: out) } else { try RawDeflate.decompressPrefix(body, into: out) }
                } catch { failure = error }
            }
            if let failure { throw failure }
        }
    }

    private static func strokeRecords(_ reader: inout ByteReader, entry: Entry, scratch: Scratch? = nil) throws(DecodeError) -> StrokeRecords {
        var records = StrokeRecords()
        if let scratch {
            // Taken, so that appending does not copy them; given back by `decode`.
            swap(&records.pointStrokes, &scratch.pointStrokes)
            swap(&records.pressureStrokes, &scratch.pressureStrokes)
            swap(&records.timeStrokes, &scratch.timeStrokes)
            records.pointStrokes.removeAll(keepingCapacity: true)
            records.pressureStrokes.removeAll(keepingCapacity: true)
            records.timeStrokes.removeAll(keepingCapacity: true)
        }
        records.ids.reserveCapacity(entry.strokes)
        records.strokes.reserveCapacity(entry.strokes)
        records.counts.reserveCapacity(entry.strokes)
        records.presence.reserveCapacity(entry.strokes)
        var pointsLeft = entry.points
        for position in 0..<entry.strokes {
            records.ids.append(StrokeID(Snapshot.uuid(try reader.readBytes(16))))
            let flags = try reader.readByte()
            guard flags & ~31 == 0 else { throw .malformed(offset: reader.offset, reason: "stroke flags") }
            var stroke = OrderedFoldState.StrokeState()
            stroke.ended = flags & 1 != 0
            if flags & 8 != 0 { stroke.creation = try Snapshot.takeKey(&reader) }
            if flags & 16 != 0 { stroke.visibility = (try Snapshot.takeKey(&reader), flags & 2 != 0) }
            stroke.style = UInt32(truncatingIfNeeded: try reader.readVarint())
            let countValue = try reader.readVarint()
            guard countValue <= UInt64(pointsLeft) else { throw .malformed(offset: reader.offset, reason: "point count") }
            let count = Int(countValue)
            pointsLeft -= count
            var optional = (pressure: Presence.none, time: Presence.none)
            if count > 0 {
                let modes = try reader.readByte()
                let pressureMode = modes & 3, timeMode = modes >> 2
                guard pressureMode <= 2, timeMode <= 2 else { throw .malformed(offset: reader.offset, reason: "presence modes") }
                optional = (try Presence(mode: pressureMode, count: count, reader: &reader),
                            try Presence(mode: timeMode, count: count, reader: &reader))
                let ref = UInt32(position)
                records.pointStrokes.append(contentsOf: repeatElement(ref, count: count))
                records.pressureStrokes.append(contentsOf: repeatElement(ref, count: optional.pressure.present(count: count)))
                records.timeStrokes.append(contentsOf: repeatElement(ref, count: optional.time.present(count: count)))
            }
            if flags & 4 != 0 { records.styled.append(position) }
            records.strokes.append(stroke)
            records.counts.append(count)
            records.presence.append(optional)
        }
        guard pointsLeft == 0 else { throw .malformed(offset: reader.offset, reason: "point count") }
        return records
    }

    static func decode(_ raw: UnsafeRawBufferPointer, entry: Entry, scratch: Scratch = Scratch()) throws(DecodeError) -> Decoded {
        var reader = ByteReader(raw)
        var records = try strokeRecords(&reader, entry: entry, scratch: scratch)
        guard reader.offset == entry.recordsLength else { throw .malformed(offset: reader.offset, reason: "stroke records length") }
        defer {
            swap(&records.pointStrokes, &scratch.pointStrokes)
            swap(&records.pressureStrokes, &scratch.pressureStrokes)
            swap(&records.timeStrokes, &scratch.timeStrokes)
        }
        let (ids, counts, presence, styled) = (records.ids, records.counts, records.presence, records.styled)
        var strokes = records.strokes
        try RealColumnDecoderV2.decode(&reader, strokes: records.pointStrokes, strokeCount: entry.strokes, into: &scratch.xs)
        try RealColumnDecoderV2.decode(&reader, strokes: records.pointStrokes, strokeCount: entry.strokes, into: &scratch.ys)
        try RealColumnDecoderV2.decode(&reader, strokes: records.pressureStrokes, strokeCount: entry.strokes, into: &scratch.pressures)
        try RealColumnDecoderV2.decode(&reader, strokes: records.timeStrokes, strokeCount: entry.strokes, into: &scratch.times)
        let (xs, ys, pressures, times) = (scratch.xs, scratch.ys, scratch.pressures, scratch.times)
        var point = 0, pressure = 0, time = 0
        for position in strokes.indices {
            let count = counts[position]
            guard count > 0 else { continue }
            let (pressurePresence, timePresence) = presence[position]
            strokes[position].points = [Drawing.Point](unsafeUninitializedCapacity: count) { buffer, initialized in
                for index in 0..<count {
                    var p = Double.nan, t = Double.nan
                    if pressurePresence.has(index) {
                        p = pressures[pressure]
                        pressure += 1
                    }
                    if timePresence.has(index) {
                        t = times[time]
                        time += 1
                    }
                    buffer.initializeElement(at: index, to: Drawing.Point(x: xs[point + index], y: ys[point + index], pressureBits: p, tBits: t))
                }
                initialized = count
            }
            point += count
        }
        for position in styled {
            var pointStyles: [UInt32] = []
            pointStyles.reserveCapacity(counts[position])
            for _ in 0..<counts[position] { pointStyles.append(UInt32(truncatingIfNeeded: try reader.readVarint())) }
            strokes[position].pointStyles = pointStyles
        }
        guard reader.isAtEnd else { throw .malformed(offset: reader.offset, reason: "chunk length") }
        return Decoded(ids: ids, strokes: strokes, counts: counts.map { Int32($0) }, pointsDecoded: true)
    }
}
