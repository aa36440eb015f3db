import Dispatch
import JournalFormat
import JournalPlatform
import JournalStorage
import JournalCompression

/// A snapshot ("baseline"): the folded state of a journal and exactly which events it covers,
/// so that opening replays only the events it does not (docs/SYNC.md, "Snapshots").
///
/// A local cache under `local/snapshots/`: never synced, ignored if damaged (CRC-32 of the
/// header and of every chunk), rebuilt by a full replay. It is used only when every event it
/// lacks comes after every event it holds in the total order; a late event (older than the
/// snapshot) or a new copy of covered seqs (a re-cut segment, a conflict copy, a fork) means a
/// full replay, so a snapshot can never make the drawing differ from a full replay.
struct Snapshot {
    /// Version 2: columnar, bit-packed points in chunks decoded in parallel. A file of any
    /// other version (SJSNAP01 held raw Doubles, 15× the journal) is ignored and rebuilt.
    static let magic: [UInt8] = Array("SJSNAP02".utf8)

    /// Replicas in id order; keys in `state` use indexes into this list.
    var replicas: [ReplicaID]
    /// Per replica, the seq ranges folded and the highest lamport folded.
    var covered: [ReplicaID: [ClosedRange<UInt64>]]
    var lastLamports: [ReplicaID: UInt64]
    /// `<replica-hex>/<file name>` of every sealed segment folded.
    var sealedNames: Set<String>
    var lastKey: CompactKey?
    var eventCount: Int
    var pointCount: Int
    var maxLamport: UInt64
    var duplicateEvents: Int
    var forks: [EventID]
    var state: OrderedFoldState
    /// `state.finish().digest`, when whoever wrote the snapshot computed it from this very
    /// state: the digest is a pure function of the state, so a load that applies nothing on
    /// top of the snapshot may print it without hashing the drawing again.
    var digest: String? = nil

    // MARK: Encoding

    func encoded() -> [UInt8] {
        let chunks = SnapshotChunks.partition(state)
        let bodies = ParallelResults<[UInt8]>(count: chunks.count)
        let state = self.state
        // Chunks are independent: encode them on every core, as they are decoded.
        DispatchQueue.concurrentPerform(iterations: chunks.count) { index in
            bodies.set(index, SnapshotChunks.encode(state, slots: chunks[index]))
        }

        var header = ByteWriter(capacity: 1 << 16)
        header.appendVarint(UInt64(replicas.count))
        for replica in replicas {
            header.append(contentsOf: replica.bits.bytes)
            let ranges = covered[replica] ?? []
            header.appendVarint(UInt64(ranges.count))
            for range in ranges {
                header.appendVarint(range.lowerBound)
                header.appendVarint(range.upperBound)
            }
            header.appendVarint(lastLamports[replica] ?? 0)
        }
        header.appendVarint(UInt64(sealedNames.count))
        for name in sealedNames.sorted() {
            header.appendVarint(UInt64(name.utf8.count))
            header.append(contentsOf: Array(name.utf8))
        }
        Self.put(lastKey, &header)
        header.appendVarint(UInt64(eventCount))
        header.appendVarint(UInt64(pointCount))
        header.appendVarint(maxLamport)
        header.appendVarint(UInt64(duplicateEvents))
        header.appendVarint(UInt64(forks.count))
        for fork in forks {
            header.append(contentsOf: fork.replica.bits.bytes)
            header.appendVarint(fork.seq)
        }
        if let digestBytes = digest.flatMap(Self.digestBytes) {
            header.append(1)
            header.append(contentsOf: digestBytes)
        } else {
            header.append(0)
        }
        header.appendVarint(UInt64(state.styles.count))
        for style in state.styles {
            header.appendLE(style.color.rawValue)
            header.appendLE(style.width.bitPattern)
        }
        Self.put(state.latestClear, &header)
        header.appendVarint(UInt64(state.strokes.count))
        header.appendVarint(UInt64(state.creationOrder.count))
        state.creationOrder.forEach { header.appendVarint(UInt64($0)) }
        header.appendVarint(UInt64(chunks.count))
        for (index, slots) in chunks.enumerated() {
            let body = bodies.take(index) ?? []
            header.appendVarint(UInt64(slots.count))
            header.appendVarint(UInt64(slots.reduce(0) { $0 + state.strokes[$1].points.count }))
            header.appendVarint(UInt64(body.count))
            header.appendLE(CRC32.checksum(body))
            bodies.set(index, body)
        }

        var out = ByteWriter(capacity: header.count + 16 + (0..<chunks.count).reduce(0) { $0 + (bodies.peek($1)?.count ?? 0) })
        out.append(contentsOf: Self.magic)
        out.appendLE(UInt32(header.count))
        out.append(contentsOf: header.bytes)
        out.appendLE(CRC32.checksum(out.bytes))
        for index in 0..<chunks.count { out.append(contentsOf: bodies.take(index) ?? []) }
        return out.bytes
    }

    /// Decodes a snapshot, or nil if anything about it is off. `maxPoints` bounds what the
    /// decoder may allocate (invariant 8): a snapshot cannot hold more points than the journal
    /// has events, and bit-packed points of width 0 take no bytes, so the file size is no bound.
    ///
    /// `headerOnly` checks and reads the header (coverage, names, keys, digest: all under the
    /// header's CRC) and leaves `state` empty: enough to tell whether the snapshot covers a
    /// journal exactly, never enough to continue from.
    static func decode(_ bytes: [UInt8], maxPoints: Int? = nil, headerOnly: Bool = false) -> Snapshot? {
        let prefix = magic.count + 4
        guard bytes.count >= prefix + 4, Array(bytes.prefix(magic.count)) == magic else { return nil }
        return bytes.withUnsafeBytes { buffer -> Snapshot? in
            let headerLength = Int(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: magic.count, as: UInt32.self)))
            guard headerLength <= buffer.count - prefix - 4 else { return nil }
            let stored = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: prefix + headerLength, as: UInt32.self))
            guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<(prefix + headerLength)])) == stored else { return nil }
            var reader = ByteReader(UnsafeRawBufferPointer(rebasing: buffer[prefix..<(prefix + headerLength)]))
            do throws(DecodeError) {
                let replicaCount = try reader.readCount(minimumItemSize: 18, what: "replica")
                var replicas: [ReplicaID] = []
                var covered: [ReplicaID: [ClosedRange<UInt64>]] = [:]
                var lastLamports: [ReplicaID: UInt64] = [:]
                for _ in 0..<replicaCount {
                    let replica = ReplicaID(Snapshot.uuid(try reader.readBytes(16)))
                    replicas.append(replica)
                    var ranges: [ClosedRange<UInt64>] = []
                    for _ in 0..<(try reader.readCount(minimumItemSize: 2, what: "range")) {
                        let lower = try reader.readVarint(), upper = try reader.readVarint()
                        guard lower <= upper else { throw DecodeError.malformed(offset: reader.offset, reason: "range") }
                        ranges.append(lower...upper)
                    }
                    covered[replica] = ranges
                    lastLamports[replica] = try reader.readVarint()
                }
                var names = Set<String>()
                for _ in 0..<(try reader.readCount(minimumItemSize: 1, what: "name")) {
                    let length = try reader.readCount(minimumItemSize: 1, what: "name byte")
                    names.insert(String(decoding: try reader.readBytes(length), as: UTF8.self))
                }
                let lastKey = try take(&reader)
                let eventCount = try count(&reader)
                let pointCount = try count(&reader)
                let maxLamport = try reader.readVarint()
                let duplicates = try count(&reader)
                var forks: [EventID] = []
                for _ in 0..<(try reader.readCount(minimumItemSize: 17, what: "fork")) {
                    let replica = ReplicaID(Snapshot.uuid(try reader.readBytes(16)))
                    forks.append(EventID(replica: replica, seq: try reader.readVarint()))
                }
                var digest: String?
                switch try reader.readByte() {
                case 0: break
                case 1: digest = hex(try reader.readBytes(32))
                default: throw DecodeError.malformed(offset: reader.offset, reason: "digest flag")
                }
                var state = OrderedFoldState()
                for _ in 0..<(try reader.readCount(minimumItemSize: 12, what: "style")) {
                    let color = try reader.readLE(UInt32.self)
                    let style = Style(color: RGBA(rawValue: color), width: Double(bitPattern: try reader.readLE(UInt64.self)))
                    state.styleIndex[style] = UInt32(state.styles.count)
                    state.styles.append(style)
                }
                state.latestClear = try take(&reader)
                let strokeCount = try count(&reader)
                for _ in 0..<(try reader.readCount(minimumItemSize: 1, what: "creation")) {
                    let slot = try reader.readVarint()
                    guard slot < UInt64(strokeCount) else { throw .malformed(offset: reader.offset, reason: "slot") }
                    state.creationOrder.append(Int32(slot))
                }
                // The chunk table: every chunk's size and CRC are covered by the header's CRC,
                // and the chunks must tile the rest of the file exactly.
                let chunkCount = try reader.readCount(minimumItemSize: 7, what: "chunk")
                var chunks: [SnapshotChunks.Entry] = []
                var offset = prefix + headerLength + 4
                var firstSlot = 0
                var pointBudget = maxPoints ?? bytes.count * 64
                for _ in 0..<chunkCount {
                    let strokes = try count(&reader), points = try count(&reader), length = try count(&reader)
                    let crc = try reader.readLE(UInt32.self)
                    guard strokes <= strokeCount - firstSlot, points <= pointBudget, length <= buffer.count - offset else {
                        throw .malformed(offset: reader.offset, reason: "chunk table")
                    }
                    pointBudget -= points
                    chunks.append(SnapshotChunks.Entry(firstSlot: firstSlot, strokes: strokes, points: points,
                                                       offset: offset, length: length, crc: crc))
                    firstSlot += strokes
                    offset += length
                }
                guard reader.isAtEnd, firstSlot == strokeCount, offset == buffer.count,
                      lastKey.map({ Int($0.replica) < replicaCount }) ?? true,
                      zip(replicas, replicas.dropFirst()).allSatisfy({ $0 < $1 })
                else { return nil }
                if headerOnly {
                    return Snapshot(replicas: replicas, covered: covered, lastLamports: lastLamports, sealedNames: names,
                                    lastKey: lastKey, eventCount: eventCount, pointCount: pointCount, maxLamport: maxLamport,
                                    duplicateEvents: duplicates, forks: forks, state: OrderedFoldState(), digest: digest)
                }

                let decoded = ParallelResults<SnapshotChunks.Decoded>(count: chunks.count)
                let whole = UnsafeRawBufferPointer(buffer)
                nonisolated(unsafe) let shared = whole
                let table = chunks
                DispatchQueue.concurrentPerform(iterations: table.count) { index in
                    let entry = table[index]
                    let body = UnsafeRawBufferPointer(rebasing: shared[entry.offset..<(entry.offset + entry.length)])
                    guard CRC32.checksum(body) == entry.crc else { return }
                    decoded.set(index, try? SnapshotChunks.decode(body, entry: entry))
                }
                state.strokes.reserveCapacity(strokeCount)
                state.strokeIDs.reserveCapacity(strokeCount)
                state.slots.reserveCapacity(strokeCount)
                for index in 0..<chunks.count {
                    guard let chunk = decoded.take(index) else { return nil }
                    state.strokeIDs += chunk.ids
                    state.strokes += chunk.strokes
                }
                for (slot, id) in state.strokeIDs.enumerated() {
                    // Two slots with one id would make the fold append to either: refuse.
                    guard state.slots.updateValue(Int32(slot), forKey: id) == nil else { return nil }
                }
                // A CRC proves only that some build wrote these bytes: every index and order
                // the replay relies on is checked, so a crafted snapshot is ignored, not trusted.
                let keys = [state.latestClear] + state.strokes.flatMap { [$0.creation, $0.visibility?.key] }
                guard keys.allSatisfy({ ($0?.replica ?? 0) < UInt32(max(replicaCount, 1)) }),
                      state.strokes.allSatisfy({ stroke in
                          (stroke.points.isEmpty || Int(stroke.style) < state.styles.count)
                              && (stroke.pointStyles?.allSatisfy { Int($0) < state.styles.count } ?? true)
                              && (stroke.pointStyles.map { $0.count == stroke.points.count } ?? true)
                      })
                else { return nil }
                return Snapshot(replicas: replicas, covered: covered, lastLamports: lastLamports, sealedNames: names,
                                lastKey: lastKey, eventCount: eventCount, pointCount: pointCount, maxLamport: maxLamport,
                                duplicateEvents: duplicates, forks: forks, state: state, digest: digest)
            } catch {
                return nil
            }
        }
    }

    static func put(_ key: CompactKey?, _ out: inout ByteWriter) {
        guard let key else { out.append(0); return }
        out.append(1)
        putKey(key, &out)
    }

    static func putKey(_ key: CompactKey, _ out: inout ByteWriter) {
        out.appendVarint(key.lamport)
        out.appendZigZag(key.wallTime)
        out.appendVarint(UInt64(key.replica))
        out.appendVarint(key.seq)
    }

    static func count(_ reader: inout ByteReader) throws(DecodeError) -> Int {
        guard let value = Int(exactly: try reader.readVarint()), value <= Int(Int32.max) * 1024 else {
            throw .malformed(offset: reader.offset, reason: "count out of range")
        }
        return value
    }

    static func take(_ reader: inout ByteReader) throws(DecodeError) -> CompactKey? {
        switch try reader.readByte() {
        case 0: return nil
        case 1: return try takeKey(&reader)
        default: throw .malformed(offset: reader.offset, reason: "key flag")
        }
    }

    static func takeKey(_ reader: inout ByteReader) throws(DecodeError) -> CompactKey {
        CompactKey(lamport: try reader.readVarint(), wallTime: try reader.readZigZag(),
                   replica: UInt32(truncatingIfNeeded: try reader.readVarint()), seq: try reader.readVarint())
    }

    /// 16 bytes, most significant first, as `UUIDBits(bytes:)` reads them, without its
    /// generic byte loop (a sixth of decoding 10,000 strokes).
    @inline(__always)
    static func uuid(_ raw: UnsafeRawBufferPointer) -> UUIDBits {
        UUIDBits(high: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                 low: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }

    /// 64 lowercase hex digits → 32 bytes; nil for anything else (never a digest).
    static func digestBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 64, by: 2) {
            func value(_ digit: UInt8) -> UInt8? {
                switch digit {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
                default: return nil
                }
            }
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// One result slot per parallel task: each task writes only its own index, so no lock.
final class ParallelResults<T>: @unchecked Sendable {
    private let slots: UnsafeMutablePointer<T?>
    private let count: Int

    init(count: Int) {
        self.count = count
        slots = .allocate(capacity: max(count, 1))
        slots.initialize(repeating: nil, count: max(count, 1))
    }

    deinit {
        slots.deinitialize(count: max(count, 1))
        slots.deallocate()
    }

    func set(_ index: Int, _ value: T?) { slots[index] = value }
    func peek(_ index: Int) -> T? { slots[index] }
    func take(_ index: Int) -> T? {
        let value = slots[index]
        slots[index] = nil
        return value
    }
}

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

/// A column of Doubles on a decimal grid (value = n / 10^scale, the smallest scale that makes
/// every value of the column exact, like the block codec's real columns), predicted from the
/// previous one (order 1) or two (order 2) values. The first `order` residuals are zigzag
/// varints; the rest are zigzag residuals bit-packed at one width (0–56, or 64: raw 8 bytes
/// each), so a decoder reads them without a branch per byte. A value the grid cannot
/// reproduce bit for bit is an exception stored as its raw 64 bits: lossless, never rounded.
///
/// `scale:u8 width:u8 head:svarint{min(n, order)} packed:ceil((n-head)*width/8) bytes
///  exceptionCount:varint (gap:varint bits:u64le)*`
enum PackedReals {
    static func write(_ values: [Double], order: UInt8, to out: inout ByteWriter) {
        guard !values.isEmpty else { return }
        var scale: UInt8 = 0
        for value in values where RealGrid.integer(value, scale: scale) == nil {
            var candidate = scale + 1
            while candidate <= FormatV1.maxDecimalScale {
                if RealGrid.integer(value, scale: candidate) != nil { scale = candidate; break }
                candidate += 1
            }
        }
        var residuals = [UInt64](repeating: 0, count: values.count)
        var exceptions: [Int] = []
        var previous: Int64 = 0, delta: Int64 = 0
        for (index, value) in values.enumerated() {
            let predicted = index == 0 ? 0 : (order == 2 ? previous &+ delta : previous)
            let integer: Int64
            if let onGrid = RealGrid.integer(value, scale: scale) {
                integer = onGrid
            } else {
                exceptions.append(index)
                integer = predicted
            }
            let residual = integer &- predicted
            residuals[index] = UInt64(bitPattern: (residual << 1) ^ (residual >> 63))
            delta = index == 0 ? 0 : integer &- previous
            previous = integer
        }
        let head = min(values.count, Int(order))
        let union = residuals[head...].reduce(0, |)
        var width = UInt8(64 - union.leadingZeroBitCount)
        if width > 56 { width = 64 }
        out.append(scale)
        out.append(width)
        for index in 0..<head { out.appendVarint(residuals[index]) }
        if width == 64 {
            for index in head..<values.count { out.appendLE(residuals[index]) }
        } else if width > 0 {
            var word: UInt64 = 0, used: UInt64 = 0
            for index in head..<values.count {
                word |= residuals[index] << used
                used += UInt64(width)
                while used >= 8 {
                    out.append(UInt8(truncatingIfNeeded: word))
                    word >>= 8
                    used -= 8
                }
            }
            if used > 0 { out.append(UInt8(truncatingIfNeeded: word)) }
        }
        out.appendVarint(UInt64(exceptions.count))
        var last = -1
        for index in exceptions {
            out.appendVarint(UInt64(index - last - 1))
            out.appendLE(values[index].bitPattern)
            last = index
        }
    }

    /// Decodes `count` values into `target[0]`, `target[stride]`, …
    static func read(
        _ reader: inout ByteReader, count: Int, order: UInt8, into target: UnsafeMutablePointer<Double>, stride: Int
    ) throws(DecodeError) {
        guard count > 0 else { return }
        let scale = try reader.readByte()
        let width = try reader.readByte()
        guard scale <= FormatV1.maxDecimalScale, width <= 56 || width == 64 else {
            throw .malformed(offset: reader.offset, reason: "packed column header")
        }
        let divisor = FormatV1.powersOfTen[Int(scale)]
        let head = min(count, Int(order))
        // Integers first, their bits held in the target's slots, then one pass of divisions: the
        // divisions, most of the cost, are independent and overlap, away from the serial
        // predictor chain.
        @inline(__always) func hold(_ index: Int, _ integer: Int64) { target[index] = Double(bitPattern: UInt64(bitPattern: integer)) }
        var previous: Int64 = 0, delta: Int64 = 0
        @inline(__always) func unzig(_ raw: UInt64) -> Int64 { Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1) }
        for index in 0..<head {
            let predicted = index == 0 ? 0 : previous
            let integer = predicted &+ unzig(try reader.readVarint())
            delta = index == 0 ? 0 : integer &- previous
            previous = integer
            hold(index * stride, integer)
        }
        let rest = count - head
        let packed = try reader.readBytes(width == 64 ? rest * 8 : (rest * Int(width) + 7) / 8)
        if width == 64 {
            for index in 0..<rest {
                let residual = unzig(UInt64(littleEndian: packed.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)))
                let integer = (order == 2 ? previous &+ delta : previous) &+ residual
                delta = integer &- previous
                previous = integer
                hold((head &+ index) &* stride, integer)
            }
        } else if width == 0 {
            // Every residual is 0: the values follow the prediction exactly.
            for index in 0..<rest {
                let integer = order == 2 ? previous &+ delta : previous
                delta = integer &- previous
                previous = integer
                hold((head &+ index) &* stride, integer)
            }
        } else {
            let bits = Int(width)
            let mask: UInt64 = (1 << UInt64(width)) &- 1
            let bytes = packed.count
            var bit = 0
            var slot = target + head &* stride
            // Values whose 8-byte window lies inside the packed bytes need no bounds check:
            // the hot loop, one unaligned load per value, specialised per predictor order.
            let unchecked = bytes >= 8 ? min(rest, ((bytes - 8) * 8 + 7) / bits + 1) : 0
            if unchecked > 0, let base = packed.baseAddress {
                if order == 2 {
                    for _ in 0..<unchecked {
                        let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: bit &>> 3, as: UInt64.self))
                        let integer = previous &+ delta &+ unzig((word &>> UInt64(bit & 7)) & mask)
                        delta = integer &- previous
                        previous = integer
                        slot.pointee = Double(bitPattern: UInt64(bitPattern: integer))
                        slot += stride
                        bit &+= bits
                    }
                } else {
                    for _ in 0..<unchecked {
                        let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: bit &>> 3, as: UInt64.self))
                        previous = previous &+ unzig((word &>> UInt64(bit & 7)) & mask)
                        slot.pointee = Double(bitPattern: UInt64(bitPattern: previous))
                        slot += stride
                        bit &+= bits
                    }
                    delta = 0
                }
            }
            for _ in unchecked..<rest {
                let byte = bit >> 3
                var word: UInt64 = 0
                for offset in 0..<min(8, bytes - byte) { word |= UInt64(packed[byte + offset]) << UInt64(8 * offset) }
                let residual = unzig((word >> UInt64(bit & 7)) & mask)
                bit &+= bits
                let integer = (order == 2 ? previous &+ delta : previous) &+ residual
                delta = integer &- previous
                previous = integer
                slot.pointee = Double(bitPattern: UInt64(bitPattern: integer))
                slot += stride
            }
        }
        var slot = target
        for _ in 0..<count {
            slot.pointee = Double(Int64(bitPattern: slot.pointee.bitPattern)) / divisor
            slot += stride
        }
        let exceptionCount = try reader.readCount(minimumItemSize: 9, what: "exception")
        guard exceptionCount <= count else { throw .malformed(offset: reader.offset, reason: "exception count") }
        var index = -1
        for _ in 0..<exceptionCount {
            let gap = try reader.readVarint()
            guard gap < UInt64(count), index + Int(gap) + 1 < count else {
                throw .malformed(offset: reader.offset, reason: "exception index")
            }
            index += Int(gap) + 1
            target[index * stride] = Double(bitPattern: try reader.readLE(UInt64.self))
        }
    }
}

extension OrderedFoldState {
    /// Re-expresses every key's replica index in another replica list.
    mutating func remap(_ map: [UInt32]) {
        func remapped(_ key: CompactKey?) -> CompactKey? {
            guard var key else { return nil }
            key.replica = map[Int(key.replica)]
            return key
        }
        latestClear = remapped(latestClear)
        for index in strokes.indices {
            strokes[index].creation = remapped(strokes[index].creation)
            if let visibility = strokes[index].visibility {
                strokes[index].visibility = (remapped(visibility.key)!, visibility.visible)
            }
        }
    }
}

/// Where snapshots live and when they are taken.
public enum SnapshotStore {
    /// Automatic policy: after a replay, a new snapshot is written when at least this many
    /// events were replayed beyond the newest snapshot and they are at least a quarter of the
    /// journal. Small journals replay fast enough without one.
    public static let automaticThreshold = 100_000

    public struct Info: Sendable, Equatable {
        public var path: String
        public var bytes: Int
        public var events: Int
    }

    static func folder(_ directory: JournalDirectory) -> String { directory.snapshotsPath }

    /// Replays the whole journal and writes a snapshot of it.
    @discardableResult
    public static func create(_ directory: JournalDirectory) throws(SnapshotError) -> Info {
        let set = SegmentSet.load(directory)
        var report = ReplayReport()
        report.problems = set.problems
        guard let snapshot = Replay.fullSnapshot(set, report: &report) else {
            throw .clocksOutOfOrder(path: directory.root)
        }
        // Quarantined events may become plausible as the journal grows; a snapshot would
        // keep hiding them.
        guard report.quarantinedEvents == 0 else { throw .quarantinedEvents(path: directory.root, count: report.quarantinedEvents) }
        do { return try write(snapshot, to: directory) } catch { throw .io(error) }
    }

    /// An automatic snapshot is a cache nobody asked for: it may take at most twice the room
    /// of the segments it saves replaying, or it is not written (`journal snapshot` writes one
    /// of any size on request).
    static func automaticSizeLimit(_ set: SegmentSet) -> Int { Int(set.totalBytes) * 2 }

    /// Writes the snapshot; nil when it would be larger than `atMost` bytes.
    static func write(_ snapshot: Snapshot, to directory: JournalDirectory, atMost limit: Int) throws(IOError) -> Info? {
        var snapshot = snapshot
        if snapshot.digest == nil { snapshot.digest = snapshot.state.finish().digest }
        let bytes = snapshot.encoded()
        guard bytes.count <= limit else { return nil }
        return try write(bytes: bytes, events: snapshot.eventCount, to: directory)
    }

    static func write(_ snapshot: Snapshot, to directory: JournalDirectory) throws(IOError) -> Info {
        var snapshot = snapshot
        if snapshot.digest == nil { snapshot.digest = snapshot.state.finish().digest }
        return try write(bytes: snapshot.encoded(), events: snapshot.eventCount, to: directory)
    }

    private static func write(bytes: [UInt8], events: Int, to directory: JournalDirectory) throws(IOError) -> Info {
        let folder = Self.folder(directory)
        try FileSystem.createDirectory(folder)
        let path = folder + "/latest.sjsnap"
        try FileSystem.writeAtomically(bytes, to: path)
        return Info(path: path, bytes: bytes.count, events: events)
    }

    /// The snapshot, if there is a valid one of this version. It can hold no more points than
    /// `set` has events, which bounds what decoding it may allocate.
    static func newest(_ directory: JournalDirectory, for set: SegmentSet, headerOnly: Bool = false) -> Snapshot? {
        guard let bytes = try? FileSystem.readFile(folder(directory) + "/latest.sjsnap") else { return nil }
        let events = set.members.reduce(0) { total, member in
            member.scan.blocks.reduce(total) { $0 + $1.frame.eventCount }
        }
        return Snapshot.decode(bytes, maxPoints: events, headerOnly: headerOnly)
    }
}

/// Why `journal snapshot` could not take one.
public enum SnapshotError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A replica's clocks do not rise with its seqs, so the ordered fold a snapshot keeps
    /// cannot be built; the journal still replays (with the order-free fold).
    case clocksOutOfOrder(path: String)
    case quarantinedEvents(path: String, count: Int)
    case io(IOError)

    public var description: String {
        switch self {
        case .clocksOutOfOrder(let path):
            return "\(path): a replica's clocks do not rise with its seqs (a forged or damaged segment); no snapshot taken, replay still works without one"
        case .quarantinedEvents(let path, let count):
            return "\(path): \(count) event(s) are quarantined (implausible clocks, see `journal verify`); no snapshot taken"
        case .io(let error): return error.description
        }
    }
}
