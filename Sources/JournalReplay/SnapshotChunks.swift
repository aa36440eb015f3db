import JournalFormat

/// The strokes of a snapshot in chunks of consecutive slots, each encoded on its own so that
/// opening decodes them on every core.
///
/// Per stroke: 16-byte id, flags (1 ended, 2 visible, 4 per-point styles, 8 creation key,
/// 16 visibility key), the keys, style index, point count; if it has points, a byte of
/// presence modes (bits 0–1 pressure, 2–3 t: 0 none, 1 all, 2 bitmap of the points that have
/// one), the bitmaps, then the x, y, pressure and t columns (`PackedReals`), then the per-point
/// style indexes if any.
enum SnapshotChunks {
    struct Entry: Sendable {
        var firstSlot: Int
        var strokes: Int
        var points: Int
        var offset: Int
        var length: Int
        var crc: UInt32
    }

    struct Decoded: Sendable {
        var ids: [StrokeID]
        var strokes: [OrderedFoldState.StrokeState]
    }

    /// The bit pattern `Drawing.Point` uses for "absent"; any other value, even another NaN,
    /// is stored as a value so that the bits come back exactly.
    static let absent = Double.nan.bitPattern

    /// Slot ranges of roughly equal weight (points, plus a little per stroke), at most 16.
    static func partition(_ state: OrderedFoldState) -> [Range<Int>] {
        let total = state.strokes.reduce(0) { $0 + $1.points.count + 8 }
        let target = max(total / 16 + 1, 65_536)
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

    static func encode(_ state: OrderedFoldState, slots: Range<Int>) -> [UInt8] {
        var out = ByteWriter(capacity: slots.reduce(0) { $0 + 32 + state.strokes[$1].points.count * 4 })
        var column: [Double] = []
        for slot in slots {
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
            if !points.isEmpty {
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
                column.removeAll(keepingCapacity: true)
                column.append(contentsOf: points.lazy.map(\.x))
                PackedReals.write(column, order: 2, to: &out)
                column.removeAll(keepingCapacity: true)
                column.append(contentsOf: points.lazy.map(\.y))
                PackedReals.write(column, order: 2, to: &out)
                column.removeAll(keepingCapacity: true)
                column.append(contentsOf: points.lazy.map(\.pressureBits).filter { $0.bitPattern != absent })
                PackedReals.write(column, order: 1, to: &out)
                column.removeAll(keepingCapacity: true)
                column.append(contentsOf: points.lazy.map(\.tBits).filter { $0.bitPattern != absent })
                PackedReals.write(column, order: 2, to: &out)
            }
            stroke.pointStyles?.forEach { out.appendVarint(UInt64($0)) }
        }
        return out.bytes
    }

    static let pointStride = MemoryLayout<Drawing.Point>.stride / 8
    static let fieldOffsets = [\Drawing.Point.x, \Drawing.Point.y, \Drawing.Point.pressureBits, \Drawing.Point.tBits]
        .map { (MemoryLayout<Drawing.Point>.offset(of: $0) ?? 0) / 8 }

    static func decode(_ raw: UnsafeRawBufferPointer, entry: Entry) throws(DecodeError) -> Decoded {
        var reader = ByteReader(raw)
        var ids: [StrokeID] = []
        var strokes: [OrderedFoldState.StrokeState] = []
        ids.reserveCapacity(entry.strokes)
        strokes.reserveCapacity(entry.strokes)
        var pointsLeft = entry.points
        var scratch: [Double] = []
        for _ in 0..<entry.strokes {
            ids.append(StrokeID(Snapshot.uuid(try reader.readBytes(16))))
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
            if count > 0 {
                let modes = try reader.readByte()
                let pressureMode = modes & 3, timeMode = modes >> 2
                guard pressureMode <= 2, timeMode <= 2 else { throw .malformed(offset: reader.offset, reason: "presence modes") }
                let pressureMap = pressureMode == 2 ? try reader.readBytes((count + 7) / 8) : nil
                let timeMap = timeMode == 2 ? try reader.readBytes((count + 7) / 8) : nil
                var failure: DecodeError?
                stroke.points = [Drawing.Point](unsafeUninitializedCapacity: count) { buffer, initialized in
                    let base = UnsafeMutableRawPointer(buffer.baseAddress!).assumingMemoryBound(to: Double.self)
                    func column(_ mode: UInt8, map: UnsafeRawBufferPointer?, order: UInt8, field: Int) throws(DecodeError) {
                        let target = base + field
                        switch mode {
                        case 0:
                            for index in 0..<count { target[index * pointStride] = .nan }
                        case 1:
                            try PackedReals.read(&reader, count: count, order: order, into: target, stride: pointStride)
                        default:
                            let map = map!
                            let present = map.reduce(0) { $0 + $1.nonzeroBitCount }
                            // Bits beyond the last point must be clear: one spelling per snapshot.
                            guard present > 0, present < count, count % 8 == 0 || map[map.count - 1] >> UInt8(count % 8) == 0 else {
                                throw .malformed(offset: reader.offset, reason: "presence bitmap")
                            }
                            if scratch.count < present { scratch = [Double](repeating: 0, count: present) }
                            try scratch.withUnsafeMutableBufferPointer { values throws(DecodeError) in
                                try PackedReals.read(&reader, count: present, order: order, into: values.baseAddress!, stride: 1)
                                var next = 0
                                for index in 0..<count {
                                    if map[index >> 3] & (1 << UInt8(index & 7)) != 0 {
                                        target[index * pointStride] = values[next]
                                        next += 1
                                    } else {
                                        target[index * pointStride] = .nan
                                    }
                                }
                            }
                        }
                    }

                    do throws(DecodeError) {
                        try PackedReals.read(&reader, count: count, order: 2, into: base + fieldOffsets[0], stride: pointStride)
                        try PackedReals.read(&reader, count: count, order: 2, into: base + fieldOffsets[1], stride: pointStride)
                        try column(pressureMode, map: pressureMap, order: 1, field: fieldOffsets[2])
                        try column(timeMode, map: timeMap, order: 2, field: fieldOffsets[3])
                    } catch {
                        failure = error
                        for index in 0..<count { (base + index * pointStride).initialize(repeating: 0, count: pointStride) }
                    }
                    initialized = count
                }
                if let failure { throw failure }
            }
            if flags & 4 != 0 {
                var pointStyles: [UInt32] = []
                pointStyles.reserveCapacity(count)
                for _ in 0..<count { pointStyles.append(UInt32(truncatingIfNeeded: try reader.readVarint())) }
                stroke.pointStyles = pointStyles
            }
            strokes.append(stroke)
        }
        guard pointsLeft == 0, reader.isAtEnd else { throw .malformed(offset: reader.offset, reason: "chunk length") }
        return Decoded(ids: ids, strokes: strokes)
    }
}
