import JournalFormat

/// What applying events changed in a `LiveDrawing`: enough for an app to redraw only that.
public enum DrawingChange: Sendable, Hashable {
    /// A stroke got its first point (its place in z-order: `LiveDrawing.zIndex(of:)`).
    case added(StrokeID)
    /// Points were appended to a stroke, from this index on; the points before are unchanged.
    case extended(StrokeID, from: Int)
    /// A stroke's points or styles changed other than by appending: redraw it whole.
    case reshaped(StrokeID)
    /// A stroke moved in z-order (a point that sorts before its first one arrived late).
    case moved(StrokeID)
    /// A stroke was shown or hidden (undo, redo, erase, clear).
    case visibility(StrokeID, visible: Bool)
    /// An `end` event for a stroke was recorded.
    case ended(StrokeID)
    /// The whole drawing was rebuilt: redraw everything.
    case reset
}

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

    struct StrokeState: Sendable {
        var id: StrokeID
        var points: [Drawing.Point] = []
        /// Style index of every point, or nil while all are `style`.
        var pointStyles: [UInt32]?
        var style: UInt32 = 0
        /// Keys of the last `keys.count` points (those applied here, in order).
        var keys: [Key] = []
        /// The key of the last point a replay loaded without keys (nil: none was).
        var loadedCeiling: Key?
        var creation: Key?
        var visibility: (key: Key, visible: Bool)?
        var ended = false
        /// Visible as of the last change reported.
        var shownVisible = true

        init(id: StrokeID) { self.id = id }
    }

    /// The outcome of `apply`.
    public enum Outcome: Sendable, Equatable {
        case applied
        /// The event's point sorts inside points a replay loaded without keys: rebuild from
        /// the journal (the event is not applied).
        case needsReload
    }

    private var strokes: [StrokeState] = []
    private var slots: [StrokeID: Int] = [:]
    /// Slots of strokes that have points, sorted by creation key (z-order).
    private var order: [Int] = []
    private var styles: [Style] = []
    private var styleIndex: [Style: UInt32] = [:]
    private var latestClear: Key?
    /// The stroke and style of the previous point: consecutive points nearly always share
    /// both, and two hash lookups per point were most of the cost of folding one in.
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
        order = strokes.indices.filter { strokes[$0].creation != nil }
        order.sort { strokes[$0].creation! < strokes[$1].creation! }
        for slot in order { strokes[slot].shownVisible = isVisible(strokes[slot]) }
    }

    // MARK: Applying

    @discardableResult
    public mutating func apply(_ event: Event, changes: inout [DrawingChange]) -> Outcome {
        let key = Key(event)
        switch event.payload {
        case .point(let sample):
            let slot = slot(for: sample.stroke)
            guard let position = insertionIndex(of: key, in: strokes[slot]) else { return .needsReload }
            let style = intern(sample.style)
            let point = Drawing.Point(x: sample.x, y: sample.y, pressure: sample.pressure, t: sample.t)
            insertPoint(point, style: style, key: key, at: position, slot: slot, changes: &changes)
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
                for slot in order { reportVisibility(of: slot, changes: &changes) }
            }
        }
        eventCount += 1
        return .applied
    }

    /// Where a point with `key` goes among the stroke's points, or nil when it sorts inside
    /// points loaded without keys.
    private func insertionIndex(of key: Key, in stroke: StrokeState) -> Int? {
        let loaded = stroke.points.count - stroke.keys.count
        if let last = stroke.keys.last, last < key { return stroke.points.count }
        if let ceiling = stroke.loadedCeiling, loaded > 0, key < ceiling { return nil }
        // Binary search among the keyed points (all after the loaded ones).
        var low = 0
        var high = stroke.keys.count
        while low < high {
            let mid = (low + high) / 2
            if stroke.keys[mid] < key { low = mid + 1 } else { high = mid }
        }
        return loaded + low
    }

    private mutating func insertPoint(_ point: Drawing.Point, style: UInt32, key: Key, at position: Int, slot: Int,
                                      changes: inout [DrawingChange]) {
        let id = strokes[slot].id
        let isNew = strokes[slot].creation == nil
        let appended = position == strokes[slot].points.count
        let loaded = strokes[slot].points.count - strokes[slot].keys.count
        // Every point gets a style entry once two differ; until then `style` covers them all.
        if strokes[slot].pointStyles == nil && !isNew && style != strokes[slot].style {
            strokes[slot].pointStyles = Array(repeating: strokes[slot].style, count: strokes[slot].points.count)
        }
        strokes[slot].points.insert(point, at: position)
        strokes[slot].keys.insert(key, at: position - loaded)
        if strokes[slot].pointStyles != nil { strokes[slot].pointStyles!.insert(style, at: position) }
        // The stroke's style is its last point's.
        if appended { strokes[slot].style = style }
        if isNew {
            strokes[slot].creation = key
            insertInOrder(slot)
            strokes[slot].shownVisible = isVisible(strokes[slot])
            changes.append(.added(id))
            return
        }
        if position == 0 {
            // A point that sorts before the first: the stroke was created earlier than thought.
            removeFromOrder(slot)
            strokes[slot].creation = key
            insertInOrder(slot)
            changes.append(.moved(id))
            changes.append(.reshaped(id))
            reportVisibility(of: slot, changes: &changes)
            return
        }
        if appended {
            // One entry per run of appends to a stroke: the app redraws from the first.
            if case .extended(let last, _)? = changes.last, last == id { return }
            changes.append(.extended(id, from: position))
        } else {
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

    private func orderPosition(of key: Key) -> Int {
        var low = 0
        var high = order.count
        while low < high {
            let mid = (low + high) / 2
            if strokes[order[mid]].creation! < key { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private mutating func insertInOrder(_ slot: Int) {
        order.insert(slot, at: orderPosition(of: strokes[slot].creation!))
    }

    private mutating func removeFromOrder(_ slot: Int) {
        // Creation keys name events, so they are distinct and the search lands on the slot;
        // the scan after it only matters if they were not (a damaged snapshot).
        var position = orderPosition(of: strokes[slot].creation!)
        while position < order.count && order[position] != slot { position += 1 }
        if position == order.count, let anywhere = order.firstIndex(of: slot) { position = anywhere }
        if position < order.count { order.remove(at: position) }
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
        return orderPosition(of: creation)
    }

    /// The whole drawing, equal to what `Replay` builds from the same set of events.
    public var drawing: Drawing {
        Drawing(strokes: order.map { materialize(strokes[$0]) })
    }

    private func materialize(_ stroke: StrokeState) -> Drawing.Stroke {
        var pointStyles = stroke.pointStyles.map { $0.map { styles[Int($0)] } }
        if let all = pointStyles, all.allSatisfy({ $0 == all[0] }) { pointStyles = nil }
        return Drawing.Stroke(id: stroke.id, style: styles[Int(stroke.style)], pointStyles: pointStyles,
                              points: stroke.points, visible: isVisible(stroke), ended: stroke.ended)
    }
}

extension [DrawingChange] {
    /// The same changes with each stroke's appends merged into one, for one redraw.
    public func coalesced() -> [DrawingChange] {
        var result: [DrawingChange] = []
        var extendedAt: [StrokeID: Int] = [:]
        for change in self {
            if case .extended(let id, let from) = change, let index = extendedAt[id],
               case .extended(_, let earlier) = result[index] {
                result[index] = .extended(id, from: Swift.min(earlier, from))
                continue
            }
            if case .extended(let id, _) = change { extendedAt[id] = result.count }
            if case .reset = change { extendedAt = [:] }
            result.append(change)
        }
        return result
    }
}
