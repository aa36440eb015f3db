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
    /// No block is decoded ahead once the blocks loaded hold this many events past those
    /// applied: a moment (`run`'s limit) whose clocks are known to rise reads no further.
    private var readAheadLimit = Int.max

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
        wallLows = Array(repeating: .max, count: replicas.count)
        wallHighs = Array(repeating: .min, count: replicas.count)
        self.state = state
        self.floor = floor
        lastKey = floor
    }

    var lastLamports: [UInt64] { lastLamport }

    private enum Load { case loaded, exhausted, unordered }

    /// Events folded so far.
    private(set) var applied = 0

    /// Keyframes: the state is noted every this many events (`Keyframes`); 0 notes none.
    var keyframeInterval = 0 {
        didSet { nextKeyframe = keyframeInterval > 0 ? applied + keyframeInterval : .max }
    }
    private var nextKeyframe = Int.max
    private(set) var keyframes: [KeyframeCapture] = []
    /// Per replica, the lowest and highest wall time of its events applied since the last
    /// keyframe (or since the start): each keyframe's wall census, and at the end the tail's.
    private var wallLows: [Int64], wallHighs: [Int64]
    /// Per replica, the wall times of the events applied after the last keyframe, once `run`
    /// has folded all.
    var tailWalls: [ClosedRange<Int64>?] {
        (0..<replicaCount).map { index in wallLows[index] <= wallHighs[index] ? wallLows[index]...wallHighs[index] : nil }
    }

    /// Folds every event, or only the first `limit` of the total order (the drawing at a
    /// moment, docs/HISTORY.md); nil if some replica's clocks do not rise with its seqs.
    ///
    /// With a limit, the blocks past it are still decoded to check their clocks: an event
    /// whose clock fell would belong earlier in the total order, perhaps inside the limit, and
    /// then only the caller's order-free fallback gives the right prefix.
    /// `clocksChecked`: the caller has already seen every replica's clocks rise, so the blocks
    /// past the limit are not read at all.
    mutating func run(report: inout ReplayReport, limit: Int = .max, clocksChecked: Bool = false) -> Drawing? {
        fold(report: &report, limit: limit, clocksChecked: clocksChecked) ? state.finish() : nil
    }

    /// `run` without drawing the result: false if some replica's clocks do not rise with its
    /// seqs; else `state` holds the fold.
    mutating func fold(report: inout ReplayReport, limit: Int = .max, clocksChecked: Bool = false) -> Bool {
        readAheadLimit = clocksChecked ? limit : .max
        for replica in 0..<replicaCount {
            switch load(replica, report: &report) {
            case .loaded: push(replica)
            case .exhausted: break
            case .unordered: return false
            }
        }
        merging: while let replica = pop() {
            // Take events from this replica while they precede every other replica's next one.
            let bound = heap.first.map { key(of: $0) }
            if let last = lastKey, !(last < headKeys[replica]) { return false }
            while true {
                let key = headKeys[replica]
                if let bound, bound < key { push(replica); break }
                // Here every replica's next key is its next event's, as a keyframe needs.
                if applied == nextKeyframe { noteKeyframe() }
                if applied == limit {
                    push(replica)
                    guard clocksChecked || checkClocksOfTheRest(report: &report) else { return false }
                    break merging
                }
                applied += 1
                assert(lastKey.map { $0 < key } ?? true, "ordered merge: events out of order")
                lastKey = key
                wallLows[replica] = min(wallLows[replica], key.wallTime)
                wallHighs[replica] = max(wallHighs[replica], key.wallTime)
                let more = state.apply(&heads[replica]!, key: key, nextKey: &headKeys[replica], report: &report)
                if !more {
                    switch load(replica, report: &report) {
                    case .loaded: continue
                    case .exhausted: break
                    case .unordered: return false
                    }
                    break
                }
            }
        }
        for stream in streams.compactMap({ $0 }) { report.replicas.append(stream.summary) }
        state.checkInvariants()
        return true
    }

    private mutating func noteKeyframe() {
        nextKeyframe += keyframeInterval
        guard let lastKey else { return }
        let cursors = (0..<replicaCount).map { heads[$0] == nil ? UInt64.max : headKeys[$0].seq - 1 }
        keyframes.append(KeyframeCapture(of: state, events: applied, lastKey: lastKey, cursors: cursors, walls: tailWalls))
        wallLows = Array(repeating: .max, count: replicaCount)
        wallHighs = Array(repeating: .min, count: replicaCount)
    }

    /// Reads every block not yet loaded, only to check that each replica's clocks keep rising.
    private mutating func checkClocksOfTheRest(report: inout ReplayReport) -> Bool {
        for replica in 0..<replicaCount where heads[replica] != nil {
            while let columns = streams[replica]?.next(report: &report) {
                guard let last = Self.lastOfRising(columns.lamports, after: lastLamport[replica]) else { return false }
                lastLamport[replica] = last
            }
        }
        return true
    }

    /// The last of `lamports` if each is above the one before (the first above `previous`),
    /// else nil.
    static func lastOfRising(_ lamports: [UInt64], after previous: UInt64) -> UInt64? {
        var previous = previous
        for lamport in lamports {
            guard lamport > previous else { return nil }
            previous = lamport
        }
        return previous
    }

    /// Loads the replica's next block, checking that its clocks keep rising.
    private mutating func load(_ replica: Int, report: inout ReplayReport) -> Load {
        // This replica's next block can be needed only if this one may run out before the
        // limit: the events still to apply, of every replica, are fewer than it holds.
        let stillNeeded = readAheadLimit == .max ? Int.max : readAheadLimit - applied
        guard let columns = streams[replica]?.next(report: &report, readAhead: { $0 < stillNeeded }) else {
            heads[replica] = nil
            return .exhausted
        }
        guard let last = Self.lastOfRising(columns.lamports, after: lastLamport[replica]) else { return .unordered }
        lastLamport[replica] = last
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
