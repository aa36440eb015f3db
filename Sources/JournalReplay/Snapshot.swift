import Dispatch
import JournalCompression
import JournalFormat
import JournalPlatform

/// A snapshot ("baseline"): the folded state of a journal and exactly which events it covers,
/// so that opening replays only the events it does not (docs/SYNC.md, "Snapshots").
///
/// A local cache under `local/snapshots/`: never synced, ignored if damaged (CRC-32 of the
/// header and of every chunk) or not sealed by this journal (`CacheSeal`), rebuilt by a full
/// replay. It is used only when every event it
/// lacks comes after every event it holds in the total order; a late event (older than the
/// snapshot) or a new copy of covered seqs (a re-cut segment, a conflict copy, a fork) means a
/// full replay, so a snapshot can never make the drawing differ from a full replay.
struct Snapshot {
    /// Version 6: version 3's columns, in chunks decoded in parallel, each column coded as a
    /// block codes it (`SnapshotChunks`), the file sealed (`CacheSeal`, by `SnapshotStore`),
    /// the drawing's summary in the header (`DrawingSummary`) with every stroke's hash
    /// (`StrokeHashes`), and each chunk's stroke records readable without its columns.
    /// A file of any other version is ignored and rebuilt: version 1 held raw Doubles (15× the
    /// journal), version 2 decimal-grid columns (1.8× the journal's segments for device values,
    /// whose every point was an exception), version 3 had no seal, version 4 only the digest,
    /// version 5 a version 1 digest (FORMAT.md §9.3) and no stroke hashes.
    static let magic: [UInt8] = Array("SJSNAP06".utf8)

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
    /// What `state.finish()` draws, in brief, when whoever wrote the snapshot computed it
    /// from this very state: a pure function of the state, so a load that applies nothing on
    /// top of the snapshot may print it (`journal digest`, with `--json` too) without decoding
    /// or hashing the drawing again.
    var summary: DrawingSummary? = nil
    var digest: String? { summary?.digest }
    /// With `summary`: the hash of each stroke of `state.creationOrder` that was created, in
    /// that order, so that a moment hashes only the strokes that differ from these.
    var strokeHashes: StrokeHashes? = nil

    /// Sets `summary` and `strokeHashes` from `drawing`, which must be `state.finish()`.
    mutating func summarize(_ drawing: Drawing) {
        let hashes = StrokeHashes(of: drawing.strokes)
        strokeHashes = hashes
        summary = DrawingSummary(digest: StrokeHashes.digest(visible: drawing.strokes.map(\.visible), hashes: hashes),
                                 strokes: drawing.strokes.count, visibleStrokes: drawing.strokes.reduce(0) { $0 + ($1.visible ? 1 : 0) })
    }
    /// The CRC-32 stored after the header, which covers every chunk's CRC: it names this very
    /// snapshot, so keyframes made with it can tell it apart from any other (0 until encoded
    /// or decoded).
    var headerCheck: UInt32 = 0
    /// Slots in `state` (its strokes, once decoded; a header-only decode has none).
    var strokeCount: Int { max(state.strokes.count, headerStrokeCount) }
    var headerStrokeCount = 0
    /// Keyframes taken by the merge that made this snapshot, written beside it; not part of
    /// the snapshot's own file.
    var keyframes: Keyframes? = nil
    /// The fingerprint of the membership it was folded under (`Membership.fingerprint`; nil:
    /// an open board), written beside it (`SnapshotStore`); not part of its own file.
    var membershipFingerprint: [UInt8]? = nil
    /// The least weight of a chunk (`SnapshotChunks.partition`); tests make it small to get
    /// many chunks from a few strokes.
    var minimumChunkWeight = SnapshotChunks.minimumWeight

    // MARK: Encoding

    /// The snapshot's bytes. `limit`: a file over it is made again without the stroke hashes,
    /// which can outweigh a drawing of tiny strokes (the chunks are encoded once either way).
    func encoded(droppingStrokeHashesOver limit: Int? = nil) -> [UInt8] {
        assert(!(state.baseline?.withholdsPoints(of: state) ?? false), "snapshot: strokes whose points were not decoded")
        let chunks = SnapshotChunks.partition(state, minimumWeight: minimumChunkWeight)
        let bodies = ParallelResults<[UInt8]>(count: chunks.count)
        let state = self.state
        // Chunks are independent: encode them on every core, as they are decoded.
        let rawCounts = ParallelResults<Int>(count: chunks.count)
        let recordLengths = ParallelResults<Int>(count: chunks.count)
        DispatchQueue.concurrentPerform(iterations: chunks.count) { index in
            let (raw, records, partEnds, lowBytes) = SnapshotChunks.encode(state, slots: chunks[index])
            recordLengths.set(index, records)
            // Compressed as a block body is: a stored chunk (raw length 0) only where zlib
            // itself fails.
            let sections = SnapshotChunks.deflateSections(partEnds: partEnds, lowBytes: lowBytes)
            if let compressed = try? RawDeflate.compress(raw, sections: sections) {
                rawCounts.set(index, raw.count)
                bodies.set(index, compressed)
            } else {
                rawCounts.set(index, 0)
                bodies.set(index, raw)
            }
        }

        let chunkBodies = (0..<chunks.count).map { bodies.take($0) ?? [] }
        let chunkRawCounts = (0..<chunks.count).map { rawCounts.take($0) ?? 0 }
        let chunkRecordLengths = (0..<chunks.count).map { recordLengths.take($0) ?? 0 }
        let bytes = file(chunks: chunks, bodies: chunkBodies, rawCounts: chunkRawCounts, recordLengths: chunkRecordLengths,
                         strokeHashes: true)
        guard let limit, bytes.count > limit, strokeHashes != nil else { return bytes }
        return file(chunks: chunks, bodies: chunkBodies, rawCounts: chunkRawCounts, recordLengths: chunkRecordLengths,
                    strokeHashes: false)
    }

    /// The file around encoded chunks: magic, header (with the stroke hashes or not), CRC, chunks.
    private func file(chunks: [Range<Int>], bodies: [[UInt8]], rawCounts: [Int], recordLengths: [Int],
                      strokeHashes includeHashes: Bool) -> [UInt8] {
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
        if let summary, let digestBytes = Self.digestBytes(summary.digest) {
            header.append(1)
            header.append(contentsOf: digestBytes)
            header.appendVarint(UInt64(summary.strokes))
            header.appendVarint(UInt64(summary.visibleStrokes))
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
        if includeHashes, let strokeHashes, summary != nil, strokeHashes.count == state.creationOrder.count {
            header.append(1)
            header.append(contentsOf: strokeHashes.bytes)
        } else {
            header.append(0)
        }
        header.appendVarint(UInt64(chunks.count))
        for (index, slots) in chunks.enumerated() {
            let body = bodies[index]
            header.appendVarint(UInt64(slots.count))
            header.appendVarint(UInt64(slots.reduce(0) { $0 + state.strokes[$1].points.count }))
            header.appendVarint(UInt64(body.count))
            header.appendVarint(UInt64(rawCounts[index]))
            header.appendVarint(UInt64(recordLengths[index]))
            header.appendLE(CRC32.checksum(body))
        }

        var out = ByteWriter(capacity: header.count + 16 + bodies.reduce(0) { $0 + $1.count })
        out.append(contentsOf: Self.magic)
        out.appendLE(UInt32(header.count))
        out.append(contentsOf: header.bytes)
        out.appendLE(CRC32.checksum(out.bytes))
        for body in bodies { out.append(contentsOf: body) }
        return out.bytes
    }

    /// The CRC-32 after the header of an encoded snapshot (`headerCheck`), if it has one.
    static func headerCheck(of bytes: [UInt8]) -> UInt32? {
        let prefix = magic.count + 4
        guard bytes.count >= prefix + 4 else { return nil }
        return bytes.withUnsafeBytes { buffer -> UInt32? in
            let headerLength = Int(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: magic.count, as: UInt32.self)))
            guard headerLength <= buffer.count - prefix - 4 else { return nil }
            return UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: prefix + headerLength, as: UInt32.self))
        }
    }

    /// Decodes a snapshot, or nil if anything about it is off. `maxPoints` bounds what the
    /// decoder may allocate (invariant 8): a snapshot cannot hold more points than the journal
    /// has events, and bit-packed points of width 0 take no bytes, so the file size is no bound.
    ///
    /// `headerOnly` checks and reads the header (coverage, names, keys, digest: all under the
    /// header's CRC) and leaves `state` empty: enough to tell whether the snapshot covers a
    /// journal exactly, never enough to continue from.
    /// `columns`: given a chunk's first slot and its stroke records, whether to decode its
    /// points; a chunk it refuses gets its strokes without their points (marked in
    /// `state.baseline`): a moment cut back from a keyframe needs no more of strokes created
    /// after it, and its summary no more of strokes the snapshot's hashes stand for. Nil
    /// decodes every chunk.
    static func decode(_ bytes: [UInt8], maxPoints: Int? = nil, headerOnly: Bool = false,
                       columns: SnapshotChunks.Wanted? = nil) -> Snapshot? {
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
                var summary: DrawingSummary?
                switch try reader.readByte() {
                case 0: break
                case 1:
                    let digest = hex(try reader.readBytes(32))
                    let strokes = try count(&reader), visible = try count(&reader)
                    guard visible <= strokes else { throw DecodeError.malformed(offset: reader.offset, reason: "visible strokes") }
                    summary = DrawingSummary(digest: digest, strokes: strokes, visibleStrokes: visible)
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
                // Slots are Int32, and each came from an event of the journal: a count past
                // either is a crafted header, whose arrays would trap or exhaust memory.
                guard strokeCount <= Int(Int32.max), strokeCount <= maxPoints ?? bytes.count * 64 else {
                    throw .malformed(offset: reader.offset, reason: "stroke count")
                }
                for _ in 0..<(try reader.readCount(minimumItemSize: 1, what: "creation")) {
                    let slot = try reader.readVarint()
                    guard slot < UInt64(strokeCount) else { throw .malformed(offset: reader.offset, reason: "slot") }
                    state.creationOrder.append(Int32(slot))
                }
                var strokeHashes: StrokeHashes?
                switch try reader.readByte() {
                case 0: break
                case 1:
                    guard summary != nil else { throw .malformed(offset: reader.offset, reason: "stroke hashes without a digest") }
                    strokeHashes = StrokeHashes(bytes: Array(try reader.readBytes(state.creationOrder.count * StrokeHashes.size)))
                default: throw .malformed(offset: reader.offset, reason: "stroke hashes flag")
                }
                // The chunk table: every chunk's size and CRC are covered by the header's CRC,
                // and the chunks must tile the rest of the file exactly.
                let chunkCount = try reader.readCount(minimumItemSize: 8, what: "chunk")
                var chunks: [SnapshotChunks.Entry] = []
                var offset = prefix + headerLength + 4
                var firstSlot = 0
                var pointBudget = maxPoints ?? bytes.count * 64
                for _ in 0..<chunkCount {
                    let strokes = try count(&reader), points = try count(&reader), length = try count(&reader)
                    let rawLength = try count(&reader)
                    let recordsLength = try count(&reader)
                    let crc = try reader.readLE(UInt32.self)
                    guard strokes <= strokeCount - firstSlot, points <= pointBudget, length <= buffer.count - offset,
                          rawLength <= SnapshotChunks.maxRawLength(strokes: strokes, points: points),
                          recordsLength <= (rawLength > 0 ? rawLength : length)
                    else {
                        throw .malformed(offset: reader.offset, reason: "chunk table")
                    }
                    pointBudget -= points
                    chunks.append(SnapshotChunks.Entry(firstSlot: firstSlot, strokes: strokes, points: points,
                                                       offset: offset, length: length, rawLength: rawLength,
                                                       recordsLength: recordsLength, crc: crc))
                    firstSlot += strokes
                    offset += length
                }
                guard reader.isAtEnd, firstSlot == strokeCount, offset == buffer.count,
                      lastKey.map({ Int($0.replica) < replicaCount }) ?? true,
                      zip(replicas, replicas.dropFirst()).allSatisfy({ $0 < $1 })
                else { return nil }
                if headerOnly {
                    // The creation order and the slot count come with the header (keyframes need them).
                    var header = OrderedFoldState()
                    header.creationOrder = state.creationOrder
                    return Snapshot(replicas: replicas, covered: covered, lastLamports: lastLamports, sealedNames: names,
                                    lastKey: lastKey, eventCount: eventCount, pointCount: pointCount, maxLamport: maxLamport,
                                    duplicateEvents: duplicates, forks: forks, state: header, summary: summary,
                                    strokeHashes: strokeHashes, headerCheck: stored, headerStrokeCount: strokeCount)
                }

                let decoded = ParallelResults<SnapshotChunks.Decoded>(count: chunks.count)
                let whole = UnsafeRawBufferPointer(buffer)
                nonisolated(unsafe) let shared = whole
                let table = chunks
                // One lane a core, each taking every `lanes`-th chunk (they are of about equal
                // weight) with buffers it reuses from one chunk to the next.
                let lanes = min(table.count, ProcessInfoLite.activeProcessorCount)
                DispatchQueue.concurrentPerform(iterations: lanes) { lane in
                    let scratch = SnapshotChunks.Scratch()
                    for index in stride(from: lane, to: table.count, by: lanes) {
                        let entry = table[index]
                        let body = UnsafeRawBufferPointer(rebasing: shared[entry.offset..<(entry.offset + entry.length)])
                        guard CRC32.checksum(body) == entry.crc else { continue }
                        if let columns {
                            // The stroke records first (the chunk inflated only that far): they
                            // may be all the caller wants of it.
                            let records: SnapshotChunks.Decoded?
                            if entry.rawLength == 0 {
                                records = try? SnapshotChunks.decodeRecords(
                                    UnsafeRawBufferPointer(rebasing: body[0..<entry.recordsLength]), entry: entry)
                            } else if (try? scratch.inflate(body, count: entry.recordsLength, whole: false)) != nil {
                                records = scratch.raw.withUnsafeBytes { raw in
                                    try? SnapshotChunks.decodeRecords(UnsafeRawBufferPointer(rebasing: raw[0..<entry.recordsLength]), entry: entry)
                                }
                            } else {
                                records = nil
                            }
                            guard let records else { continue }
                            guard columns(entry.firstSlot, records) else {
                                decoded.set(index, records)
                                continue
                            }
                        }
                        guard entry.rawLength > 0 else {
                            decoded.set(index, try? SnapshotChunks.decode(body, entry: entry, scratch: scratch))
                            continue
                        }
                        guard (try? scratch.inflate(body, count: entry.rawLength)) != nil else { continue }
                        scratch.raw.withUnsafeBytes { raw in
                            decoded.set(index, try? SnapshotChunks.decode(UnsafeRawBufferPointer(rebasing: raw[0..<entry.rawLength]),
                                                                          entry: entry, scratch: scratch))
                        }
                    }
                }
                state.strokes.reserveCapacity(strokeCount)
                state.strokeIDs.reserveCapacity(strokeCount)
                state.slots.reserveCapacity(strokeCount)
                var baseline = SnapshotBaseline(counts: [], ended: [], withheld: [],
                                                positions: Array(repeating: -1, count: strokeCount))
                for index in 0..<chunks.count {
                    guard let chunk = decoded.take(index) else { return nil }
                    state.strokeIDs += chunk.ids
                    state.strokes += chunk.strokes
                    baseline.counts += chunk.counts
                    baseline.ended += chunk.strokes.map(\.ended)
                    baseline.withheld += chunk.counts.map { !chunk.pointsDecoded && $0 > 0 }
                }
                var position: Int32 = 0
                for slot in state.creationOrder where state.strokes[Int(slot)].creation != nil {
                    baseline.positions[Int(slot)] = position
                    position += 1
                }
                // Hashes stand for the strokes `finish()` draws, one each, in creation order.
                if let strokeHashes, strokeHashes.count != Int(position) { return nil }
                state.baseline = baseline
                for (slot, id) in state.strokeIDs.enumerated() {
                    // Two slots with one id would make the fold append to either: refuse.
                    guard state.slots.updateValue(Int32(slot), forKey: id) == nil else { return nil }
                }
                // A CRC proves only that some build wrote these bytes: every index and order
                // the replay relies on is checked, so a crafted snapshot is ignored, not trusted.
                let keys = [state.latestClear] + state.strokes.flatMap { [$0.creation, $0.visibility?.key] }
                guard keys.allSatisfy({ ($0?.replica ?? 0) < UInt32(max(replicaCount, 1)) }),
                      state.strokes.allSatisfy({ stroke in
                          // A stroke created has a style, whether or not its points were decoded.
                          ((stroke.points.isEmpty && stroke.creation == nil) || Int(stroke.style) < state.styles.count)
                              && (stroke.pointStyles?.allSatisfy { Int($0) < state.styles.count } ?? true)
                              && (stroke.pointStyles.map { $0.count == stroke.points.count && !$0.isEmpty } ?? true)
                      })
                else { return nil }
                return Snapshot(replicas: replicas, covered: covered, lastLamports: lastLamports, sealedNames: names,
                                lastKey: lastKey, eventCount: eventCount, pointCount: pointCount, maxLamport: maxLamport,
                                duplicateEvents: duplicates, forks: forks, state: state, summary: summary,
                                strokeHashes: strokeHashes, headerCheck: stored, headerStrokeCount: strokeCount)
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
            strokes[index].lastKey = remapped(strokes[index].lastKey)
            if let visibility = strokes[index].visibility {
                strokes[index].visibility = (remapped(visibility.key)!, visibility.visible)
            }
        }
    }
}
