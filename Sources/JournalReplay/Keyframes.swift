import JournalCompression
import JournalFormat

/// The fold state at every `interval` events of the total order, kept beside a snapshot so
/// that the drawing at a moment is the snapshot cut back to the nearest keyframe before it,
/// plus at most `interval` events merged on top (docs/HISTORY.md, "Keyframes").
///
/// A keyframe copies no point. A stroke's points are sorted by their events' keys, and the
/// events of a prefix of the total order are a prefix of every stroke's points; strokes are
/// created in the order `creationOrder` lists. So the state at event *j* is the snapshot's
/// with `creationOrder` cut to the strokes created by *j*, and only the strokes that changed
/// after *j* (still being drawn, ended, undone, erased or shown again later) need a word:
/// how many points they had, whether they had ended, and their visibility then.
struct Keyframes {
    struct Frame {
        /// Events of the total order folded: the keyframe is the drawing at `.events(events)`.
        var events: Int
        /// The key of the last of them (replica indexes into the snapshot's `replicas`).
        var lastKey: CompactKey
        /// Per replica of the snapshot, in its order: every event of that replica up to this
        /// seq is folded, none after (its clocks rise with its seqs: a snapshot exists).
        var cursors: [UInt64]
        /// How many entries of the snapshot's `creationOrder` existed.
        var created: Int
        var latestClear: CompactKey?
        /// Slots whose state then differs from the snapshot's (or, not yet created, from an
        /// empty stroke's), in slot order.
        var changes: [Change]
        /// Per replica of the snapshot, in its order: the lowest and highest wall time of its
        /// events since the keyframe before (the first: since the start). A wall-clock moment
        /// counts these events without reading them unless its time falls inside
        /// (`WallCensus`): one replica's clock follows its seqs even where the replicas'
        /// events interleave in ways their wall times do not.
        var replicaWalls: [ClosedRange<Int64>?]
    }

    struct Change {
        var slot: Int32
        var points: Int
        var ended: Bool
        var visibility: (key: CompactKey, visible: Bool)?
    }

    var frames: [Frame]

    /// The lowest and highest of `walls` (nil where there are none).
    static func union(_ walls: [ClosedRange<Int64>?]) -> ClosedRange<Int64>? {
        let present = walls.compactMap { $0 }
        guard let low = present.map(\.lowerBound).min(), let high = present.map(\.upperBound).max() else { return nil }
        return low...high
    }

    /// Per replica, the wall times of the snapshot's events after the last keyframe (all of
    /// them without one); nil where there are none.
    var tailWalls: [ClosedRange<Int64>?]

    /// A keyframe every this many events, at most `maximumFrames` of them: the merge from a
    /// keyframe decodes at most about one interval of events.
    static func interval(forEvents events: Int) -> Int { max(16_384, events / maximumFrames + 1) }
    static let maximumFrames = 128

    /// The latest keyframe at or before `count` events; nil if none is.
    func frame(atOrBefore count: Int) -> Frame? {
        var low = 0, high = frames.count
        while low < high {
            let middle = (low + high) / 2
            if frames[middle].events <= count { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : frames[low - 1]
    }

    /// The fold state after `frame.events` events, from the state `snapshot` holds after all
    /// of its events (the keyframes' own snapshot); nil if the keyframe does not fit it.
    static func state(at frame: Frame, from snapshot: OrderedFoldState) -> OrderedFoldState? {
        var state = snapshot
        guard frame.created <= state.creationOrder.count else { return nil }
        var createdThen = [Bool](repeating: false, count: state.strokes.count)
        for slot in state.creationOrder.prefix(frame.created) { createdThen[Int(slot)] = true }
        for slot in state.strokes.indices where !createdThen[slot] {
            let stroke = state.strokes[slot]
            if stroke.creation != nil || stroke.visibility != nil || stroke.ended { state.strokes[slot] = .init() }
            // Its points then were none, whether or not the snapshot's were decoded.
            if slot < state.baseline?.withheld.count ?? 0 { state.baseline?.withheld[slot] = false }
        }
        state.creationOrder.removeSubrange(frame.created...)
        state.latestClear = frame.latestClear
        for change in frame.changes {
            guard Int(change.slot) < state.strokes.count else { return nil }
            var stroke = state.strokes[Int(change.slot)]
            // A stroke created by then had a point; one not created had none.
            guard (change.points > 0) == createdThen[Int(change.slot)] else { return nil }
            if let baseline = state.baseline, baseline.withheld[Int(change.slot)] {
                // Points not decoded cannot be cut back: the caller decodes every stroke that
                // had fewer points then (a change of visibility or of `ended` alone needs none).
                guard change.points == Int(baseline.counts[Int(change.slot)]) else { return nil }
            } else if change.points > stroke.points.count {
                return nil
            } else if change.points < stroke.points.count {
                stroke.points.removeSubrange(change.points...)
                if var styles = stroke.pointStyles {
                    styles.removeSubrange(change.points...)
                    if let last = styles.last { stroke.style = last }
                    stroke.pointStyles = styles
                }
                if change.points == 0 { stroke.creation = nil; stroke.pointStyles = nil }
            }
            stroke.lastKey = nil
            stroke.ended = change.ended
            stroke.visibility = change.visibility
            state.strokes[Int(change.slot)] = stroke
        }
        return state
    }
}

/// What the ordered merge notes at each keyframe while it runs: every slot's point count,
/// ended flag and visibility then. Memory is a few bytes per stroke per keyframe.
struct KeyframeCapture {
    var events: Int
    var lastKey: CompactKey
    var cursors: [UInt64]
    var created: Int
    var latestClear: CompactKey?
    var pointCounts: [Int32]
    var ended: [Bool]
    var visibilities: [(slot: Int32, key: CompactKey, visible: Bool)]
    var walls: [ClosedRange<Int64>?]

    init(of state: OrderedFoldState, events: Int, lastKey: CompactKey, cursors: [UInt64], walls: [ClosedRange<Int64>?]) {
        self.events = events
        self.walls = walls
        self.lastKey = lastKey
        self.cursors = cursors
        created = state.creationOrder.count
        latestClear = state.latestClear
        pointCounts = state.strokes.map { Int32(clamping: $0.points.count) }
        ended = state.strokes.map(\.ended)
        visibilities = state.strokes.indices.compactMap { slot in
            state.strokes[slot].visibility.map { (Int32(slot), $0.key, $0.visible) }
        }
    }

    /// The keyframe: what differs from `final`, the state after every event of the merge.
    func frame(against final: OrderedFoldState) -> Keyframes.Frame {
        var createdThen = [Bool](repeating: false, count: final.strokes.count)
        for slot in final.creationOrder.prefix(created) { createdThen[Int(slot)] = true }
        var visibilityThen: [Int32: (key: CompactKey, visible: Bool)] = [:]
        for entry in visibilities { visibilityThen[entry.slot] = (entry.key, entry.visible) }
        var changes: [Keyframes.Change] = []
        for slot in final.strokes.indices {
            let now = final.strokes[slot]
            let points = slot < pointCounts.count ? Int(pointCounts[slot]) : 0
            let endedThen = slot < ended.count && ended[slot]
            let visibility = visibilityThen[Int32(slot)]
            // What `Keyframes.state` would give without a change for this slot.
            let kept = createdThen[slot]
            let differs = kept
                ? points != now.points.count || endedThen != now.ended || !Self.same(visibility, now.visibility)
                : points != 0 || endedThen || visibility != nil
            if differs {
                changes.append(Keyframes.Change(slot: Int32(slot), points: points, ended: endedThen, visibility: visibility))
            }
        }
        return Keyframes.Frame(events: events, lastKey: lastKey, cursors: cursors, created: created,
                               latestClear: latestClear, changes: changes, replicaWalls: walls)
    }

    private static func same(_ a: (key: CompactKey, visible: Bool)?, _ b: (key: CompactKey, visible: Bool)?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (a?, b?): return a.visible == b.visible && !(a.key < b.key) && !(b.key < a.key)
        default: return false
        }
    }
}

// MARK: The file

extension Keyframes {
    /// `local/snapshots/latest.sjkeys`: a cache like the snapshot, never synced, ignored when
    /// damaged or when it was not made with the snapshot beside it (docs/SYNC.md, "Keyframes").
    /// Version 2: version 1 sealed (`CacheSeal`, by `SnapshotStore`); version 3: each frame's
    /// wall census, and the tail's; version 4: the census per replica.
    static let magic: [UInt8] = Array("SJKEYS04".utf8)

    static func put(_ walls: ClosedRange<Int64>?, _ out: inout ByteWriter) {
        guard let walls else { out.append(0); return }
        out.append(1)
        out.appendZigZag(walls.lowerBound)
        out.appendVarint(UInt64(bitPattern: walls.upperBound &- walls.lowerBound))
    }

    static func takeWalls(_ reader: inout ByteReader) throws(DecodeError) -> ClosedRange<Int64>? {
        let offset = reader.offset
        switch try reader.readByte() {
        case 0: return nil
        case 1:
            let low = try reader.readZigZag()
            let (high, overflow) = low.addingReportingOverflow(Int64(bitPattern: try reader.readVarint()))
            guard !overflow, low <= high else { throw .malformed(offset: offset, reason: "wall census") }
            return low...high
        default: throw .malformed(offset: offset, reason: "wall census flag")
        }
    }

    /// `snapshotCheck` names the snapshot the keyframes cut back: its header's CRC-32, which
    /// covers every chunk's CRC, so a different snapshot is a different number.
    func encoded(snapshotCheck: UInt32, replicaCount: Int) -> [UInt8] {
        var out = ByteWriter(capacity: 64 + frames.reduce(0) { $0 + 48 + replicaCount * 4 + $1.changes.count * 8 })
        out.append(contentsOf: Self.magic)
        out.appendLE(snapshotCheck)
        out.appendVarint(UInt64(replicaCount))
        out.appendVarint(UInt64(frames.count))
        var previousEvents = 0
        for frame in frames {
            out.appendVarint(UInt64(frame.events - previousEvents))
            previousEvents = frame.events
            Snapshot.putKey(frame.lastKey, &out)
            // Stored plus one so that "all of it" (UInt64.max) takes one byte, as 0.
            for cursor in frame.cursors { out.appendVarint(cursor &+ 1) }
            out.appendVarint(UInt64(frame.created))
            Snapshot.put(frame.latestClear, &out)
            out.appendVarint(UInt64(frame.changes.count))
            var previousSlot: Int32 = -1
            for change in frame.changes {
                out.appendVarint(UInt64(change.slot - previousSlot - 1))
                previousSlot = change.slot
                out.appendVarint(UInt64(change.points))
                let flags: UInt8 = (change.ended ? 1 : 0) | (change.visibility == nil ? 0 : 2)
                    | (change.visibility?.visible == true ? 4 : 0)
                out.append(flags)
                if let visibility = change.visibility { Snapshot.putKey(visibility.key, &out) }
            }
            for walls in frame.replicaWalls { Self.put(walls, &out) }
        }
        for walls in tailWalls { Self.put(walls, &out) }
        out.appendLE(CRC32.checksum(out.bytes))
        return out.bytes
    }

    /// The keyframes, if `bytes` are a whole keyframe file made with the snapshot whose check
    /// is `snapshotCheck`, whose state has `strokes` slots and `created` creations.
    static func decode(_ bytes: [UInt8], snapshotCheck: UInt32, replicaCount: Int, strokes: Int,
                       created: Int, events: Int) -> Keyframes? {
        guard bytes.count >= magic.count + 8, Array(bytes.prefix(magic.count)) == magic else { return nil }
        return bytes.withUnsafeBytes { buffer -> Keyframes? in
            let body = buffer.count - 4
            guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<body]))
                    == UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: body, as: UInt32.self)),
                  UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: magic.count, as: UInt32.self)) == snapshotCheck
            else { return nil }
            var reader = ByteReader(UnsafeRawBufferPointer(rebasing: buffer[(magic.count + 4)..<body]))
            do throws(DecodeError) {
                guard try reader.readVarint() == UInt64(replicaCount) else { return nil }
                let frameCount = try reader.readCount(minimumItemSize: 8, what: "keyframe")
                var frames: [Frame] = []
                frames.reserveCapacity(frameCount)
                var eventsSoFar = 0
                for _ in 0..<frameCount {
                    let step = try Snapshot.count(&reader)
                    guard step > 0, eventsSoFar + step <= events else { return nil }
                    eventsSoFar += step
                    let lastKey = try Snapshot.takeKey(&reader)
                    var cursors: [UInt64] = []
                    for _ in 0..<replicaCount { cursors.append(try reader.readVarint() &- 1) }
                    let createdThen = try Snapshot.count(&reader)
                    guard createdThen <= created else { return nil }
                    let latestClear = try Snapshot.take(&reader)
                    var changes: [Change] = []
                    var slot: Int32 = -1
                    for _ in 0..<(try reader.readCount(minimumItemSize: 3, what: "keyframe change")) {
                        let gap = try Snapshot.count(&reader)
                        guard Int(slot) + gap + 1 < strokes else { return nil }
                        slot += Int32(gap + 1)
                        let points = try Snapshot.count(&reader)
                        let flags = try reader.readByte()
                        guard flags & ~7 == 0 else { return nil }
                        let visibility = flags & 2 != 0 ? (key: try Snapshot.takeKey(&reader), visible: flags & 4 != 0) : nil
                        changes.append(Change(slot: slot, points: points, ended: flags & 1 != 0, visibility: visibility))
                    }
                    var walls: [ClosedRange<Int64>?] = []
                    for _ in 0..<replicaCount { walls.append(try takeWalls(&reader)) }
                    frames.append(Frame(events: eventsSoFar, lastKey: lastKey, cursors: cursors, created: createdThen,
                                        latestClear: latestClear, changes: changes, replicaWalls: walls))
                }
                var tailWalls: [ClosedRange<Int64>?] = []
                for _ in 0..<replicaCount { tailWalls.append(try takeWalls(&reader)) }
                guard reader.isAtEnd else { return nil }
                return Keyframes(frames: frames, tailWalls: tailWalls)
            } catch {
                return nil
            }
        }
    }
}
