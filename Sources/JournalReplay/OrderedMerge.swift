import Dispatch
import JournalFormat
import JournalStorage

/// Replays a segment set by merging its replicas' event streams in total order (lamport, wall
/// clock, replica, seq) and folding each event as it comes: points arrive already sorted,
/// the first point of a stroke is its creation, the last visibility operation wins. No key is
/// kept per point, no point is sorted, and only one decoded block per replica is in memory.
///
/// Correct only if every replica's clocks rise with its seqs (true of any honest writer,
/// invariant 4); `run` returns nil as soon as one does not, and the caller uses `Fold`.
struct OrderedMerge {
    private let replicaCount: Int
    private var streams: [Prefetcher?]
    private var heads: [Head?]
    /// Each replica's next event key, kept beside the heads so the heap never copies a head.
    private var headKeys: [CompactKey]
    private var lastLamport: [UInt64]
    private var heap: [Int] = []
    private(set) var state: OrderedFoldState
    /// Every event applied must come after this key (the last one a snapshot folded).
    private let floor: CompactKey?
    /// The last key applied.
    private(set) var lastKey: CompactKey?

    /// `replicas` orders the keys (sorted ids; it may name replicas `set` lacks); `state`
    /// continues a snapshot whose events all precede `floor`, with `lastLamports` per replica.
    init(set: SegmentSet, replicas: [ReplicaID]? = nil, state: OrderedFoldState = OrderedFoldState(),
         floor: CompactKey? = nil, lastLamports: [ReplicaID: UInt64] = [:], skipThrough: [ReplicaID: UInt64] = [:],
         plausibilityLimit: UInt64? = nil) {
        let replicas = replicas ?? set.replicas
        let present = Set(set.replicas)
        let limit = plausibilityLimit ?? set.plausibilityLimit
        replicaCount = replicas.count
        streams = replicas.map { replica in
            guard present.contains(replica) else { return nil }
            var stream = ReplicaStream(set: set, replica: replica, plausibilityLimit: limit)
            stream.skipThrough = skipThrough[replica] ?? 0
            return Prefetcher(stream)
        }
        heads = Array(repeating: nil, count: replicas.count)
        headKeys = Array(repeating: CompactKey(lamport: 0, wallTime: 0, replica: 0, seq: 0), count: replicas.count)
        lastLamport = replicas.map { lastLamports[$0] ?? 0 }
        self.state = state
        self.floor = floor
        lastKey = floor
    }

    var lastLamports: [UInt64] { lastLamport }

    private enum Load { case loaded, exhausted, unordered }

    mutating func run(report: inout ReplayReport) -> Drawing? {
        for replica in 0..<replicaCount {
            switch load(replica, report: &report) {
            case .loaded: push(replica)
            case .exhausted: break
            case .unordered: return nil
            }
        }
        while let replica = pop() {
            // Take events from this replica while they precede every other replica's next one.
            let bound = heap.first.map { key(of: $0) }
            if let last = lastKey, !(last < headKeys[replica]) { return nil }
            while true {
                let key = headKeys[replica]
                if let bound, bound < key { push(replica); break }
                assert(lastKey.map { $0 < key } ?? true, "ordered merge: events out of order")
                lastKey = key
                let more = state.apply(&heads[replica]!, key: key, nextKey: &headKeys[replica], report: &report)
                if !more {
                    switch load(replica, report: &report) {
                    case .loaded: continue
                    case .exhausted: break
                    case .unordered: return nil
                    }
                    break
                }
            }
        }
        for stream in streams.compactMap({ $0 }) { report.replicas.append(stream.summary) }
        state.checkInvariants()
        return state.finish()
    }

    /// Loads the replica's next block, checking that its clocks keep rising.
    private mutating func load(_ replica: Int, report: inout ReplayReport) -> Load {
        guard let columns = streams[replica]?.next(report: &report) else {
            heads[replica] = nil
            return .exhausted
        }
        var previous = lastLamport[replica]
        for lamport in columns.lamports {
            guard lamport > previous else { return .unordered }
            previous = lamport
        }
        lastLamport[replica] = previous
        headKeys[replica] = CompactKey(lamport: columns.lamports[0], wallTime: columns.walls[0],
                                       replica: UInt32(replica), seq: columns.firstSeq)
        heads[replica] = state.head(for: columns)
        return .loaded
    }

    @inline(__always)
    private func key(of replica: Int) -> CompactKey { headKeys[replica] }

    // MARK: A binary heap of replicas, by their next event's key

    private mutating func push(_ replica: Int) {
        heap.append(replica)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard key(of: heap[child]) < key(of: heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func pop() -> Int? {
        guard !heap.isEmpty else { return nil }
        let top = heap[0]
        let last = heap.removeLast()
        guard !heap.isEmpty else { return top }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, key(of: heap[left]) < key(of: heap[smallest]) { smallest = left }
            if right < heap.count, key(of: heap[right]) < key(of: heap[smallest]) { smallest = right }
            if smallest == parent { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        checkHeapInvariant()
        return top
    }

    /// Debug builds only: every replica in the heap sorts no earlier than its parent.
    private func checkHeapInvariant() {
        #if DEBUG
        for child in heap.indices.dropFirst() {
            assert(!(key(of: heap[child]) < key(of: heap[(child - 1) / 2])), "ordered merge: heap order broken at \(child)")
        }
        #endif
    }
}

/// The current decoded block of one replica and where the merge is in it.
struct Head {
    var columns: BlockColumns
    var index = 0
    var point = 0
    /// Block stroke table index → global stroke slot; block style index → global style.
    var slotMap: [Int32]
    var styleMap: [UInt32]
}

/// The drawing being built from events applied in total order.
struct OrderedFoldState {
    struct StrokeState {
        var points: [Drawing.Point] = []
        var style: UInt32 = 0
        var pointStyles: [UInt32]?
        var creation: CompactKey?
        var visibility: (key: CompactKey, visible: Bool)?
        var ended = false

        /// Appends a point (events arrive in key order); true if it created the stroke.
        @inline(__always)
        mutating func add(_ sample: Drawing.Point, style: UInt32, key: CompactKey) -> Bool {
            points.append(sample)
            if creation == nil {
                creation = key
                self.style = style
                return true
            }
            if style != self.style || pointStyles != nil {
                if pointStyles == nil { pointStyles = Array(repeating: self.style, count: points.count - 1) }
                pointStyles!.append(style)
                self.style = style
            }
            return false
        }
    }

    var strokes: [StrokeState] = []
    var slots: [StrokeID: Int32] = [:]
    var strokeIDs: [StrokeID] = []
    var creationOrder: [Int32] = []
    var styles: [Style] = []
    var styleIndex: [Style: UInt32] = [:]
    var latestClear: CompactKey?

    /// Debug builds only: each stroke has one slot, one id and at most one creation entry,
    /// and every style index points into `styles`.
    func checkInvariants() {
        #if DEBUG
        assert(strokes.count == strokeIDs.count && slots.count == strokeIDs.count, "fold state: slot tables disagree")
        for (slot, id) in strokeIDs.enumerated() { assert(slots[id] == Int32(slot), "fold state: slot of \(id) is wrong") }
        assert(Set(creationOrder).count == creationOrder.count, "fold state: a stroke created twice")
        assert(styleIndex.count == styles.count, "fold state: style tables disagree")
        for stroke in strokes { assert(Int(stroke.style) < max(1, styles.count), "fold state: style index out of range") }
        #endif
    }

    /// Maps a block's stroke and style tables onto global slots, once per block.
    mutating func head(for columns: BlockColumns) -> Head {
        var slotMap: [Int32] = []
        slotMap.reserveCapacity(columns.strokes.count)
        for stroke in columns.strokes {
            if let slot = slots[stroke] {
                slotMap.append(slot)
            } else {
                let slot = Int32(strokes.count)
                slots[stroke] = slot
                strokes.append(StrokeState())
                strokeIDs.append(stroke)
                slotMap.append(slot)
            }
        }
        var styleMap: [UInt32] = []
        styleMap.reserveCapacity(columns.styles.count)
        for style in columns.styles {
            if let known = styleIndex[style] {
                styleMap.append(known)
            } else {
                styles.append(style)
                styleIndex[style] = UInt32(styles.count - 1)
                styleMap.append(UInt32(styles.count - 1))
            }
        }
        return Head(columns: columns, slotMap: slotMap, styleMap: styleMap)
    }

    /// Applies the head's current event, advances the head and sets `nextKey` to its next
    /// event's key. Returns false when the head's block is used up.
    @inline(__always)
    mutating func apply(_ head: inout Head, key: CompactKey, nextKey: inout CompactKey, report: inout ReplayReport) -> Bool {
        let index = head.index
        head.index += 1
        let kind = head.columns.kinds[index]
        report.count(key.lamport, isPoint: kind == .point)
        if kind == .clear {
            latestClear = key
        } else {
            let slot = Int(head.slotMap[Int(head.columns.strokeRefs[index])])
            switch kind {
            case .point:
                let point = head.point
                head.point += 1
                let style = head.styleMap[Int(head.columns.styleRefs[point])]
                let sample = Drawing.Point(x: head.columns.xs[point], y: head.columns.ys[point],
                                           pressureBits: head.columns.pressures[point], tBits: head.columns.times[point])
                if strokes[slot].add(sample, style: style, key: key) { creationOrder.append(Int32(slot)) }
            case .end: strokes[slot].ended = true
            case .undo, .erase: strokes[slot].visibility = (key, false)
            case .redo: strokes[slot].visibility = (key, true)
            case .clear: break
            }
        }
        guard head.index < head.columns.count else { return false }
        nextKey = CompactKey(lamport: head.columns.lamports[head.index], wallTime: head.columns.walls[head.index],
                             replica: key.replica, seq: key.seq + 1)
        return true
    }

    func finish() -> Drawing {
        var result: [Drawing.Stroke] = []
        result.reserveCapacity(creationOrder.count)
        for slot in creationOrder {
            let state = strokes[Int(slot)]
            guard let creation = state.creation else { continue }
            var visible = state.visibility?.visible ?? true
            if let clear = latestClear, creation < clear, state.visibility.map({ $0.key < clear }) ?? true {
                visible = false
            }
            var pointStyles = state.pointStyles.map { $0.map { styles[Int($0)] } }
            // A stroke whose styles changed and changed back is still uniform: say so the way
            // the order-free fold does.
            if let all = pointStyles, all.allSatisfy({ $0 == all[0] }) { pointStyles = nil }
            result.append(Drawing.Stroke(
                id: strokeIDs[Int(slot)], style: styles[Int(state.style)], pointStyles: pointStyles,
                points: state.points, visible: visible, ended: state.ended))
        }
        return Drawing(strokes: result)
    }
}

/// Decodes a replica's next block on another core while the merge folds the current one:
/// inflating and decoding are a third of replay, and the fold never waits for them unless it
/// runs ahead. At most one block per replica is decoded ahead, so memory stays bounded.
final class Prefetcher: @unchecked Sendable {
    // Touched by the background decode only between `start()` and the matching `wait()`.
    private var stream: ReplicaStream
    private var result: (columns: BlockColumns?, report: ReplayReport)?
    private let ready = DispatchSemaphore(value: 0)
    private var inFlight = false

    init(_ stream: ReplicaStream) { self.stream = stream }

    private func start() {
        inFlight = true
        DispatchQueue.global().async {
            var report = ReplayReport()
            let columns = self.stream.next(report: &report)
            self.result = (columns, report)
            self.ready.signal()
        }
    }

    /// The next batch, merging what decoding it reported into `report`.
    func next(report: inout ReplayReport) -> BlockColumns? {
        if !inFlight { start() }
        ready.wait()
        inFlight = false
        guard let (columns, found) = result else { return nil }
        result = nil
        report.problems += found.problems
        report.duplicateEvents += found.duplicateEvents
        report.quarantinedEvents += found.quarantinedEvents
        for fork in found.forks where report.forkSet.insert(fork).inserted { report.forks.append(fork) }
        if columns != nil { start() }
        return columns
    }

    var summary: ReplayReport.ReplicaSummary {
        if inFlight {
            ready.wait()
            inFlight = false
        }
        return stream.summary
    }
}
