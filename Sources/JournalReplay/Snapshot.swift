import JournalFormat
import JournalPlatform
import JournalStorage
import JournalCompression

/// A snapshot ("baseline"): the folded state of a journal and exactly which events it covers,
/// so that opening replays only the events it does not (docs/SYNC.md, "Snapshots").
///
/// A local cache under `local/snapshots/`: never synced, ignored if damaged (whole-file
/// CRC-32), rebuilt by a full replay. It is used only when every event it lacks comes after
/// every event it holds in the total order; a late event (older than the snapshot) or a new
/// copy of covered seqs (a re-cut segment, a conflict copy, a fork) means a full replay, so a
/// snapshot can never make the drawing differ from a full replay.
struct Snapshot {
    static let magic: [UInt8] = Array("SJSNAP01".utf8)

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

    // MARK: Encoding

    func encoded() -> [UInt8] {
        var out = ByteWriter(capacity: 1 << 20)
        out.append(contentsOf: Self.magic)
        out.appendVarint(UInt64(replicas.count))
        for replica in replicas {
            out.append(contentsOf: replica.bits.bytes)
            let ranges = covered[replica] ?? []
            out.appendVarint(UInt64(ranges.count))
            for range in ranges {
                out.appendVarint(range.lowerBound)
                out.appendVarint(range.upperBound)
            }
            out.appendVarint(lastLamports[replica] ?? 0)
        }
        out.appendVarint(UInt64(sealedNames.count))
        for name in sealedNames.sorted() {
            out.appendVarint(UInt64(name.utf8.count))
            out.append(contentsOf: Array(name.utf8))
        }
        Self.put(lastKey, &out)
        out.appendVarint(UInt64(eventCount))
        out.appendVarint(UInt64(pointCount))
        out.appendVarint(maxLamport)
        out.appendVarint(UInt64(duplicateEvents))
        out.appendVarint(UInt64(forks.count))
        for fork in forks {
            out.append(contentsOf: fork.replica.bits.bytes)
            out.appendVarint(fork.seq)
        }
        state.encode(&out)
        out.appendLE(CRC32.checksum(out.bytes))
        return out.bytes
    }

    static func decode(_ bytes: [UInt8]) -> Snapshot? {
        guard bytes.count > magic.count + 4, Array(bytes.prefix(magic.count)) == magic else { return nil }
        let stored = bytes.suffix(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * $1.offset) }
        guard CRC32.checksum(Array(bytes.dropLast(4))) == stored else { return nil }
        return bytes.withUnsafeBytes { buffer -> Snapshot? in
            var reader = ByteReader(UnsafeRawBufferPointer(rebasing: buffer[magic.count..<(buffer.count - 4)]))
            do throws(DecodeError) {
                let replicaCount = try reader.readCount(minimumItemSize: 18, what: "replica")
                var replicas: [ReplicaID] = []
                var covered: [ReplicaID: [ClosedRange<UInt64>]] = [:]
                var lastLamports: [ReplicaID: UInt64] = [:]
                for _ in 0..<replicaCount {
                    let replica = ReplicaID(UUIDBits(bytes: try reader.readBytes(16)))
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
                    let replica = ReplicaID(UUIDBits(bytes: try reader.readBytes(16)))
                    forks.append(EventID(replica: replica, seq: try reader.readVarint()))
                }
                let state = try OrderedFoldState.decode(&reader, replicaCount: replicaCount)
                // A CRC proves only that some build wrote these bytes: every index and order
                // the replay relies on is checked, so a crafted snapshot is ignored, not trusted.
                guard reader.isAtEnd,
                      lastKey.map({ Int($0.replica) < replicaCount }) ?? true,
                      zip(replicas, replicas.dropFirst()).allSatisfy({ $0 < $1 })
                else { return nil }
                return Snapshot(replicas: replicas, covered: covered, lastLamports: lastLamports, sealedNames: names,
                                lastKey: lastKey, eventCount: eventCount, pointCount: pointCount, maxLamport: maxLamport,
                                duplicateEvents: duplicates, forks: forks, state: state)
            } catch {
                return nil
            }
        }
    }

    static func put(_ key: CompactKey?, _ out: inout ByteWriter) {
        guard let key else { out.append(0); return }
        out.append(1)
        out.appendVarint(key.lamport)
        out.appendZigZag(key.wallTime)
        out.appendVarint(UInt64(key.replica))
        out.appendVarint(key.seq)
    }

    private static func count(_ reader: inout ByteReader) throws(DecodeError) -> Int {
        guard let value = Int(exactly: try reader.readVarint()), value <= Int(Int32.max) * 1024 else {
            throw .malformed(offset: reader.offset, reason: "count out of range")
        }
        return value
    }

    static func take(_ reader: inout ByteReader) throws(DecodeError) -> CompactKey? {
        guard try reader.readByte() == 1 else { return nil }
        return CompactKey(lamport: try reader.readVarint(), wallTime: try reader.readZigZag(),
                          replica: UInt32(truncatingIfNeeded: try reader.readVarint()), seq: try reader.readVarint())
    }
}

extension OrderedFoldState {
    func encode(_ out: inout ByteWriter) {
        out.appendVarint(UInt64(styles.count))
        for style in styles {
            out.appendLE(style.color.rawValue)
            out.appendLE(style.width.bitPattern)
        }
        Snapshot.put(latestClear, &out)
        out.appendVarint(UInt64(strokes.count))
        for (slot, stroke) in strokes.enumerated() {
            out.append(contentsOf: strokeIDs[slot].bits.bytes)
            out.append((stroke.ended ? 1 : 0) | (stroke.visibility?.visible == true ? 2 : 0) | (stroke.pointStyles != nil ? 4 : 0))
            Snapshot.put(stroke.creation, &out)
            Snapshot.put(stroke.visibility?.key, &out)
            out.appendVarint(UInt64(stroke.style))
            out.appendVarint(UInt64(stroke.points.count))
            // Points as raw little-endian Double bits: loading is a copy, not a decode.
            stroke.points.withUnsafeBytes { raw in
                if 1.littleEndian == 1 {
                    out.append(contentsOf: raw)
                } else {
                    for index in stride(from: 0, to: raw.count, by: 8) {
                        out.appendLE(raw.load(fromByteOffset: index, as: UInt64.self))
                    }
                }
            }
            if let pointStyles = stroke.pointStyles { pointStyles.forEach { out.appendVarint(UInt64($0)) } }
        }
        out.appendVarint(UInt64(creationOrder.count))
        creationOrder.forEach { out.appendVarint(UInt64($0)) }
    }

    static func decode(_ reader: inout ByteReader, replicaCount: Int) throws(DecodeError) -> OrderedFoldState {
        var state = OrderedFoldState()
        for _ in 0..<(try reader.readCount(minimumItemSize: 12, what: "style")) {
            let color = try reader.readLE(UInt32.self)
            let style = Style(color: RGBA(rawValue: color), width: Double(bitPattern: try reader.readLE(UInt64.self)))
            state.styleIndex[style] = UInt32(state.styles.count)
            state.styles.append(style)
        }
        state.latestClear = try Snapshot.take(&reader)
        let strokeCount = try reader.readCount(minimumItemSize: 20, what: "stroke")
        state.strokes.reserveCapacity(strokeCount)
        for slot in 0..<strokeCount {
            let id = StrokeID(UUIDBits(bytes: try reader.readBytes(16)))
            let flags = try reader.readByte()
            var stroke = StrokeState()
            stroke.ended = flags & 1 != 0
            stroke.creation = try Snapshot.take(&reader)
            if let key = try Snapshot.take(&reader) { stroke.visibility = (key, flags & 2 != 0) }
            stroke.style = UInt32(truncatingIfNeeded: try reader.readVarint())
            let count = try reader.readCount(minimumItemSize: 32, what: "point")
            let raw = try reader.readBytes(count * 32)
            stroke.points = Array(unsafeUninitializedCapacity: count) { buffer, initialized in
                if MemoryLayout<Drawing.Point>.size == 32 && 1.littleEndian == 1 {
                    // Same layout as the file (four little-endian Doubles): one copy.
                    UnsafeMutableRawBufferPointer(buffer).copyMemory(from: raw)
                } else {
                    for index in 0..<count {
                        let base = index * 32
                        func double(_ offset: Int) -> Double {
                            Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: base + offset, as: UInt64.self)))
                        }
                        buffer[index] = Drawing.Point(x: double(0), y: double(8), pressureBits: double(16), tBits: double(24))
                    }
                }
                initialized = count
            }
            if flags & 4 != 0 {
                stroke.pointStyles = try (0..<count).map { _ throws(DecodeError) in UInt32(truncatingIfNeeded: try reader.readVarint()) }
            }
            state.slots[id] = Int32(slot)
            state.strokeIDs.append(id)
            state.strokes.append(stroke)
        }
        for _ in 0..<(try reader.readCount(minimumItemSize: 1, what: "creation")) {
            let slot = try reader.readVarint()
            guard slot < UInt64(strokeCount) else { throw .malformed(offset: reader.offset, reason: "slot") }
            state.creationOrder.append(Int32(slot))
        }
        // Every index must point inside its table: a snapshot that passes its CRC but was
        // written by a buggy build must still not crash or mislead the reader.
        let keys = [state.latestClear] + state.strokes.flatMap { [$0.creation, $0.visibility?.key] }
        guard keys.allSatisfy({ ($0?.replica ?? 0) < UInt32(max(replicaCount, 1)) }),
              state.strokes.allSatisfy({ stroke in
                  (stroke.points.isEmpty || Int(stroke.style) < state.styles.count)
                      && (stroke.pointStyles?.allSatisfy { Int($0) < state.styles.count } ?? true)
                      && (stroke.pointStyles.map { $0.count == stroke.points.count } ?? true)
              })
        else { throw .malformed(offset: reader.offset, reason: "index out of range") }
        return state
    }

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
        let bytes = snapshot.encoded()
        guard bytes.count <= limit else { return nil }
        return try write(bytes: bytes, events: snapshot.eventCount, to: directory)
    }

    static func write(_ snapshot: Snapshot, to directory: JournalDirectory) throws(IOError) -> Info {
        try write(bytes: snapshot.encoded(), events: snapshot.eventCount, to: directory)
    }

    private static func write(bytes: [UInt8], events: Int, to directory: JournalDirectory) throws(IOError) -> Info {
        let folder = Self.folder(directory)
        try FileSystem.createDirectory(folder)
        let path = folder + "/latest.sjsnap"
        try FileSystem.writeAtomically(bytes, to: path)
        return Info(path: path, bytes: bytes.count, events: events)
    }

    static func newest(_ directory: JournalDirectory) -> Snapshot? {
        guard let bytes = try? FileSystem.readFile(folder(directory) + "/latest.sjsnap") else { return nil }
        return Snapshot.decode(bytes)
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
