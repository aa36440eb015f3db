import JournalFormat

/// The drawing, folded one event at a time, with the same result as `Replay` for the same
/// set of events whatever order they are applied in (DESIGN.md's rules are max-registers and
/// sorted sets, so a late event is inserted at its place).
///
/// Points applied here keep their order key, so that a late point can find its place.
/// Points a replay loaded (`init(loading:)`) do not: replay only kept each stroke's last key,
/// so a late point that sorts inside such a stroke's loaded points cannot be placed, and
/// `apply` says so (`.needsReload`); that happens only when two replicas write one stroke.
///
/// The caller applies each event id at most once.
public struct LiveDrawing: Sendable {
    struct Key: Comparable, Sendable {
        var lamport: UInt64
        var wallTime: Int64
        var replica: ReplicaID
        var seq: UInt64

        init(_ event: Event) {
            lamport = event.lamport
            wallTime = event.wallTime
            replica = event.id.replica
            seq = event.id.seq
        }

        init(_ compact: CompactKey, replicas: [ReplicaID]) {
            lamport = compact.lamport
            wallTime = compact.wallTime
            replica = replicas[Int(compact.replica)]
            seq = compact.seq
        }

        static func < (lhs: Key, rhs: Key) -> Bool {
            if lhs.lamport != rhs.lamport { return lhs.lamport < rhs.lamport }
            if lhs.wallTime != rhs.wallTime { return lhs.wallTime < rhs.wallTime }
            if lhs.replica != rhs.replica { return lhs.replica < rhs.replica }
            return lhs.seq < rhs.seq
        }
    }

    /// A point that sorts before the last of its stroke's `keys` when it arrives.
    struct LatePoint: Comparable, Sendable {
        var key: Key
        var point: Drawing.Point
        var style: UInt32

        static func < (lhs: LatePoint, rhs: LatePoint) -> Bool { lhs.key < rhs.key }
        static func == (lhs: LatePoint, rhs: LatePoint) -> Bool { lhs.key == rhs.key }
    }

    struct StrokeState: Sendable {
        var id: StrokeID
        /// Sorted: the points a replay loaded, then those applied here (`keys`). Readers get
        /// this array as it is, without a copy, whenever `late` is empty.
        var points: [Drawing.Point] = []
        /// Style index of every point in `points`, or nil while all are `style`.
        var pointStyles: [UInt32]?
        /// The style of the last point in `points`.
        var style: UInt32 = 0
        /// Keys of the last `keys.count` points (those applied here, in order).
        var keys: [Key] = []
        /// Points that sorted before `keys.last` when they arrived, waiting until moving them
        /// into `points` is cheap (`settleLatePointsIfCheap`): inserting each one there costs
        /// O(n), and a stroke whose clocks fall sends every point there.
        var late = SortedChunks<LatePoint>()
        /// The key of the last point a replay loaded without keys (nil: none was).
        var loadedCeiling: Key?
        var creation: Key?
        var visibility: (key: Key, visible: Bool)?
        var ended = false
        /// Visible as of the last change reported.
        var shownVisible = true

        init(id: StrokeID) { self.id = id }

        var pointCount: Int { points.count + late.count }

        var leastKey: Key? {
            guard let late = late.first?.key else { return keys.first }
            return keys.first.map { Swift.min($0, late) } ?? late
        }

        /// Adds a point that sorts after every loaded one (`placement` checked that).
        mutating func add(_ point: Drawing.Point, style: UInt32, key: Key) {
            guard let last = keys.last, key < last else {
                // Every point gets a style entry once two differ; until then `style` covers them all.
                if pointStyles == nil && !points.isEmpty && style != self.style {
                    pointStyles = Array(repeating: self.style, count: points.count)
                }
                points.append(point)
                keys.append(key)
                pointStyles?.append(style)
                self.style = style
                return
            }
            late.insert(LatePoint(key: key, point: point, style: style))
            settleLatePointsIfCheap()
        }

        /// The index in `keys` of the first key after `key`.
        func firstKeyIndex(after key: Key) -> Int {
            // Falling clocks put every late point before the first key.
            if let first = keys.first, key < first { return 0 }
            var low = 0
            var high = keys.count
            while low < high {
                let mid = (low + high) / 2
                if keys[mid] < key { low = mid + 1 } else { high = mid }
            }
            return low
        }

        /// Moves the late points into `points` once the keyed points they land among are few: at
        /// most 32, or at most half as many as the late points. Each late point then pays for a
        /// bounded number of moves whatever order clocks come in (falling clocks: about one and
        /// a half), and a point that lands among the last few (a second writer on the stroke) is
        /// moved in at once, so that readers share one array again.
        private mutating func settleLatePointsIfCheap() {
            guard let least = late.first else { return }
            let cut = firstKeyIndex(after: least.key)
            if Self.settlingIsCheap(moving: keys.count - cut, late: late.count) { settleLatePoints(from: cut) }
        }

        static func settlingIsCheap(moving: Int, late: Int) -> Bool { moving <= Swift.max(32, late / 2) }

        /// Merges `late` into `points`; `cut` is the index in `keys` of the first key after
        /// the least late point. Only the keyed points from `cut` on move, each once: as one
        /// block when the late points all fall in one gap, else merged from the back into room
        /// made at the end.
        mutating func settleLatePoints(from cut: Int? = nil) {
            guard let least = late.first, let greatest = late.last else { return }
            let cut = cut ?? firstKeyIndex(after: least.key)
            let late = self.late
            self.late = SortedChunks(capacity: late.capacity)
            if pointStyles == nil && late.contains(where: { $0.style != style }) {
                pointStyles = Array(repeating: style, count: points.count)
            }
            // Taken out of `self` so that each is uniquely held while it is written in place.
            var points = self.points
            var keys = self.keys
            var styles = pointStyles ?? []
            self.points = []
            self.keys = []
            pointStyles = nil
            let hasStyles = !styles.isEmpty
            let loaded = points.count - keys.count
            defer {
                self.points = points
                self.keys = keys
                if hasStyles {
                    style = styles[styles.count - 1]
                    pointStyles = styles
                }
            }
            if cut == keys.count || greatest.key < keys[cut] {
                // All in one gap (falling clocks, or one delayed batch): one block move.
                var gapPoints: [Drawing.Point] = []
                var gapKeys: [Key] = []
                var gapStyles: [UInt32] = []
                gapPoints.reserveCapacity(late.count)
                gapKeys.reserveCapacity(late.count)
                if hasStyles { gapStyles.reserveCapacity(late.count) }
                for arrival in late {
                    gapPoints.append(arrival.point)
                    gapKeys.append(arrival.key)
                    if hasStyles { gapStyles.append(arrival.style) }
                }
                points.insert(contentsOf: gapPoints, at: loaded + cut)
                keys.insert(contentsOf: gapKeys, at: cut)
                if hasStyles { styles.insert(contentsOf: gapStyles, at: loaded + cut) }
                return
            }
            let arrivals = Array(late)
            for arrival in arrivals {
                points.append(arrival.point)
                keys.append(arrival.key)
                if hasStyles { styles.append(arrival.style) }
            }
            var settled = keys.count - arrivals.count
            var next = arrivals.count
            var to = keys.count
            while next > 0 {
                to -= 1
                if settled > cut && arrivals[next - 1].key < keys[settled - 1] {
                    settled -= 1
                    keys[to] = keys[settled]
                    points[loaded + to] = points[loaded + settled]
                    if hasStyles { styles[loaded + to] = styles[loaded + settled] }
                } else {
                    next -= 1
                    keys[to] = arrivals[next].key
                    points[loaded + to] = arrivals[next].point
                    if hasStyles { styles[loaded + to] = arrivals[next].style }
                }
            }
        }
    }

    /// A stroke's place in z-order. Creation keys name events, so they differ; the slot orders
    /// two that do not (a damaged snapshot), so that every stroke has one exact place.
    struct OrderEntry: Comparable, Sendable {
        var creation: Key
        var slot: Int

        static func < (lhs: OrderEntry, rhs: OrderEntry) -> Bool {
            lhs.creation != rhs.creation ? lhs.creation < rhs.creation : lhs.slot < rhs.slot
        }
    }

    /// Where a point goes among its stroke's points: what `apply` reports depends on it.
    private enum Placement { case first, inside, last }

    /// The outcome of `apply`.
    public enum Outcome: Sendable, Equatable {
        case applied
        /// The event's point sorts inside points a replay loaded without keys: rebuild from
        /// the journal (the event is not applied).
        case needsReload
    }

    private var strokes: [StrokeState] = []
    private var slots: [StrokeID: Int] = [:]
    /// Strokes that have points, in z-order. Not a sorted array: a stroke whose clocks fall
    /// moves to the front with every point, and strokes may be created in any order.
    private var order = SortedChunks<OrderEntry>()
    private var styles: [Style] = []
    private var styleIndex: [Style: UInt32] = [:]
    private var latestClear: Key?
    /// The stroke and style of the previous point: consecutive points nearly always share
    /// both, and two hash lookups per point would be most of the cost of folding one in.
    private var recentStroke: (id: StrokeID, slot: Int)?
    private var recentStyle: (style: Style, index: UInt32)?
    public private(set) var eventCount = 0
    public private(set) var pointCount = 0

    public init() {}

    /// The drawing a replay folded, to be continued event by event. Every event it holds
    /// sorts at or before `floor`: the bound for strokes whose last key is not known (a
    /// snapshot does not store it).
    init(loading state: OrderedFoldState, replicas: [ReplicaID], floor: CompactKey?) {
        styles = state.styles
        styleIndex = state.styleIndex
        latestClear = state.latestClear.map { Key($0, replicas: replicas) }
        strokes.reserveCapacity(state.strokes.count)
        for (slot, loaded) in state.strokes.enumerated() {
            var stroke = StrokeState(id: state.strokeIDs[slot])
            stroke.points = loaded.points
            stroke.style = loaded.style
            stroke.pointStyles = loaded.pointStyles
            stroke.creation = loaded.creation.map { Key($0, replicas: replicas) }
            stroke.loadedCeiling = (loaded.lastKey ?? floor).map { Key($0, replicas: replicas) }
            stroke.visibility = loaded.visibility.map { (Key($0.key, replicas: replicas), $0.visible) }
            stroke.ended = loaded.ended
            pointCount += loaded.points.count
            slots[stroke.id] = slot
            strokes.append(stroke)
        }
        // Rebuilt from the creation keys rather than taken from the state's list: a snapshot
        // is a file, and z-order must never depend on it being well formed.
        var entries: [OrderEntry] = []
        for (slot, stroke) in strokes.enumerated() {
            if let creation = stroke.creation { entries.append(OrderEntry(creation: creation, slot: slot)) }
        }
        entries.sort()
        order = SortedChunks(sorted: entries)
        for entry in order { strokes[entry.slot].shownVisible = isVisible(strokes[entry.slot]) }
    }

    // MARK: Applying

    @discardableResult
    public mutating func apply(_ event: Event, changes: inout [DrawingChange]) -> Outcome {
        let key = Key(event)
        switch event.payload {
        case .point(let sample):
            let slot = slot(for: sample.stroke)
            guard let placement = placement(of: key, in: strokes[slot]) else { return .needsReload }
            let style = intern(sample.style)
            let point = Drawing.Point(x: sample.x, y: sample.y, pressure: sample.pressure, t: sample.t)
            insertPoint(point, style: style, key: key, placement: placement, slot: slot, changes: &changes)
            pointCount += 1
        case .end(let stroke):
            let slot = slot(for: stroke)
            if !strokes[slot].ended {
                strokes[slot].ended = true
                if strokes[slot].creation != nil { changes.append(.ended(stroke)) }
            }
        case .undo(let stroke), .erase(let stroke):
            setVisibility(false, of: slot(for: stroke), at: key, changes: &changes)
        case .redo(let stroke):
            setVisibility(true, of: slot(for: stroke), at: key, changes: &changes)
        case .clear:
            if latestClear.map({ $0 < key }) ?? true {
                latestClear = key
                for entry in order { reportVisibility(of: entry.slot, changes: &changes) }
            }
        }
        eventCount += 1
        return .applied
    }

    /// Where a point with `key` goes among the stroke's points, or nil when it sorts inside
    /// points loaded without keys.
    private func placement(of key: Key, in stroke: StrokeState) -> Placement? {
        if let last = stroke.keys.last, last < key, stroke.late.last.map({ $0.key < key }) ?? true { return .last }
        let loaded = stroke.points.count - stroke.keys.count
        if let ceiling = stroke.loadedCeiling, loaded > 0, key < ceiling { return nil }
        // No keyed point yet (so no late one either): it follows the loaded ones.
        guard let first = stroke.keys.first else { return .last }
        let beforeLate = stroke.late.first.map { key < $0.key } ?? true
        return loaded == 0 && key < first && beforeLate ? .first : .inside
    }

    private mutating func insertPoint(_ point: Drawing.Point, style: UInt32, key: Key, placement: Placement, slot: Int,
                                      changes: inout [DrawingChange]) {
        let id = strokes[slot].id
        let isNew = strokes[slot].creation == nil
        let position = strokes[slot].pointCount
        strokes[slot].add(point, style: style, key: key)
        if isNew {
            strokes[slot].creation = key
            insertInOrder(slot)
            strokes[slot].shownVisible = isVisible(strokes[slot])
            changes.append(.added(id))
            return
        }
        switch placement {
        case .first:
            // A point that sorts before the first: the stroke was created earlier than thought.
            order.replace(OrderEntry(creation: strokes[slot].creation!, slot: slot), with: OrderEntry(creation: key, slot: slot))
            strokes[slot].creation = key
            changes.append(.moved(id))
            changes.append(.reshaped(id))
            reportVisibility(of: slot, changes: &changes)
        case .last:
            // One entry per run of appends to a stroke: the app redraws from the first.
            if case .extended(let last, _)? = changes.last, last == id { return }
            changes.append(.extended(id, from: position))
        case .inside:
            changes.append(.reshaped(id))
        }
    }

    private mutating func setVisibility(_ visible: Bool, of slot: Int, at key: Key, changes: inout [DrawingChange]) {
        guard strokes[slot].visibility.map({ $0.key < key }) ?? true else { return }
        strokes[slot].visibility = (key, visible)
        reportVisibility(of: slot, changes: &changes)
    }

    private mutating func reportVisibility(of slot: Int, changes: inout [DrawingChange]) {
        guard strokes[slot].creation != nil else { return }
        let visible = isVisible(strokes[slot])
        guard visible != strokes[slot].shownVisible else { return }
        strokes[slot].shownVisible = visible
        changes.append(.visibility(strokes[slot].id, visible: visible))
    }

    /// DESIGN.md: the latest visibility operation decides, and a clear hides every stroke
    /// created before it unless a later operation shows it again.
    private func isVisible(_ stroke: StrokeState) -> Bool {
        var visible = stroke.visibility?.visible ?? true
        if let clear = latestClear, let creation = stroke.creation, creation < clear,
           stroke.visibility.map({ $0.key < clear }) ?? true {
            visible = false
        }
        return visible
    }

    // MARK: Z-order

    private mutating func insertInOrder(_ slot: Int) {
        order.insert(OrderEntry(creation: strokes[slot].creation!, slot: slot))
    }

    private mutating func slot(for id: StrokeID) -> Int {
        if let recent = recentStroke, recent.id == id { return recent.slot }
        let slot: Int
        if let known = slots[id] {
            slot = known
        } else {
            slot = strokes.count
            strokes.append(StrokeState(id: id))
            slots[id] = slot
        }
        recentStroke = (id, slot)
        return slot
    }

    private mutating func intern(_ style: Style) -> UInt32 {
        if let recent = recentStyle, recent.style == style { return recent.index }
        let index: UInt32
        if let known = styleIndex[style] {
            index = known
        } else {
            index = UInt32(styles.count)
            styles.append(style)
            styleIndex[style] = index
        }
        recentStyle = (style, index)
        return index
    }

    /// Debug builds only: each stroke's keyed points sorted and after its loaded ones, its late
    /// points too and left apart only while merging them in is not cheap, and z-order holding
    /// exactly the strokes that have points, under their creation keys. O(n): for tests.
    func checkInvariants() {
        #if DEBUG
        var created = 0
        for stroke in strokes {
            let loaded = stroke.points.count - stroke.keys.count
            assert(loaded >= 0, "live drawing: more keys than points")
            assert(stroke.pointStyles.map { $0.count == stroke.points.count } ?? true, "live drawing: point styles and points differ in number")
            for (before, after) in zip(stroke.keys, stroke.keys.dropFirst()) { assert(before < after, "live drawing: keys out of order") }
            stroke.late.checkInvariants()
            if let least = stroke.late.first {
                assert(!stroke.keys.isEmpty, "live drawing: late points in a stroke with no keyed point")
                let moving = stroke.keys.count - stroke.firstKeyIndex(after: least.key)
                assert(!StrokeState.settlingIsCheap(moving: moving, late: stroke.late.count),
                       "live drawing: late points left where merging them was cheap")
            }
            if loaded > 0, let ceiling = stroke.loadedCeiling, let least = stroke.leastKey {
                assert(!(least < ceiling), "live drawing: a keyed point among the loaded ones")
            }
            if let creation = stroke.creation {
                created += 1
                if loaded == 0 { assert(stroke.leastKey == creation, "live drawing: creation is not the first point's key") }
            } else {
                assert(stroke.pointCount == 0, "live drawing: points in a stroke never created")
            }
        }
        order.checkInvariants()
        assert(order.count == created, "live drawing: z-order holds \(order.count) strokes, \(created) have points")
        var placed = Set<Int>()
        for entry in order {
            assert(placed.insert(entry.slot).inserted, "live drawing: a stroke twice in z-order")
            assert(strokes[entry.slot].creation == entry.creation, "live drawing: z-order under a stale key")
        }
        #endif
    }

    // MARK: Reading

    /// Strokes with at least one point, hidden ones included.
    public var strokeCount: Int { order.count }

    /// The stroke as `Replay` would give it, or nil if it has no point yet.
    public func stroke(_ id: StrokeID) -> Drawing.Stroke? {
        guard let slot = slots[id], strokes[slot].creation != nil else { return nil }
        return materialize(strokes[slot])
    }

    /// The stroke's place in z-order (0: drawn first), or nil if it has no point yet.
    public func zIndex(of id: StrokeID) -> Int? {
        guard let slot = slots[id], let creation = strokes[slot].creation else { return nil }
        return order.rank(of: OrderEntry(creation: creation, slot: slot))
    }

    /// The whole drawing, equal to what `Replay` builds from the same set of events.
    public var drawing: Drawing {
        Drawing(strokes: order.map { materialize(strokes[$0.slot]) })
    }

    private func materialize(_ stroke: StrokeState) -> Drawing.Stroke {
        var stroke = stroke
        // Late points are merged on every read until `apply` merges them for good.
        stroke.settleLatePoints()
        var pointStyles = stroke.pointStyles.map { $0.map { styles[Int($0)] } }
        if let all = pointStyles, all.allSatisfy({ $0 == all[0] }) { pointStyles = nil }
        return Drawing.Stroke(id: stroke.id, style: styles[Int(stroke.style)], pointStyles: pointStyles,
                              points: stroke.points, visible: isVisible(stroke), ended: stroke.ended)
    }
}
