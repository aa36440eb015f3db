import JournalFormat

/// Folds events into a `Drawing` by DESIGN.md's rules. Every rule is a max-register or a
/// sorted set, so the result depends only on the set of events applied, never on their
/// order: apply in any order, `finish()` sorts.
///
/// The caller must apply each event id at most once (replay dedups before folding).
public struct Fold {
    /// Replicas in id order; a key's `replica` field is an index into this table, so that
    /// comparing indexes compares ids.
    public let replicas: [ReplicaID]
    private var replicaOrdinals: [ReplicaID: UInt32]
    private var strokes: [StrokeID: StrokeState] = [:]
    private var latestClear: CompactKey?
    private var styles: [Style] = []
    private var styleIndex: [Style: UInt32] = [:]

    public init(replicas: some Sequence<ReplicaID>) {
        let sorted = Array(Set(replicas)).sorted()
        self.replicas = sorted
        var ordinals: [ReplicaID: UInt32] = [:]
        for (index, replica) in sorted.enumerated() { ordinals[replica] = UInt32(index) }
        replicaOrdinals = ordinals
    }

    public mutating func apply(_ event: Event) {
        guard let ordinal = replicaOrdinals[event.id.replica] else {
            preconditionFailure("Fold was not told about replica \(event.id.replica)")
        }
        let key = CompactKey(lamport: event.lamport, wallTime: event.wallTime, replica: ordinal, seq: event.id.seq)
        switch event.payload {
        case .point(let sample):
            let style = intern(sample.style)
            let point = Drawing.Point(x: sample.x, y: sample.y, pressure: sample.pressure, t: sample.t)
            strokes[sample.stroke, default: StrokeState()].add(point, style: style, key: key)
        case .end(let stroke):
            strokes[stroke, default: StrokeState()].ended = true
        case .undo(let stroke), .erase(let stroke):
            strokes[stroke, default: StrokeState()].setVisibility(false, at: key)
        case .redo(let stroke):
            strokes[stroke, default: StrokeState()].setVisibility(true, at: key)
        case .clear:
            if latestClear.map({ $0 < key }) ?? true { latestClear = key }
        }
    }

    /// The drawing: strokes that have at least one point, in creation order.
    public func finish() -> Drawing {
        var created: [(key: CompactKey, id: StrokeID, state: StrokeState)] = []
        created.reserveCapacity(strokes.count)
        for (id, state) in strokes {
            guard let creation = state.creation else { continue }
            created.append((creation, id, state))
        }
        created.sort { $0.key < $1.key }
        var result: [Drawing.Stroke] = []
        result.reserveCapacity(created.count)
        for (creation, id, var state) in created {
            state.sortPoints()
            var visible = true
            var decidedBy: CompactKey? = nil
            if let op = state.visibilityOp {
                visible = op.visible
                decidedBy = op.key
            }
            if let clear = latestClear, creation < clear, decidedBy.map({ $0 < clear }) ?? true {
                visible = false
            }
            let pointStyles = state.styleRefs.map { styles[Int($0)] }
            let latestStyle = pointStyles.last!
            let uniform = state.styleRefs.allSatisfy { $0 == state.styleRefs[0] }
            result.append(Drawing.Stroke(
                id: id, style: latestStyle, pointStyles: uniform ? nil : pointStyles,
                points: state.points, visible: visible, ended: state.ended))
        }
        return Drawing(strokes: result)
    }

    private mutating func intern(_ style: Style) -> UInt32 {
        if let known = styleIndex[style] { return known }
        let index = UInt32(styles.count)
        styles.append(style)
        styleIndex[style] = index
        return index
    }
}

/// The order key with the replica replaced by its rank among the fold's replicas.
struct CompactKey: Comparable {
    var lamport: UInt64
    var wallTime: Int64
    var replica: UInt32
    var seq: UInt64

    static func < (lhs: CompactKey, rhs: CompactKey) -> Bool {
        if lhs.lamport != rhs.lamport { return lhs.lamport < rhs.lamport }
        if lhs.wallTime != rhs.wallTime { return lhs.wallTime < rhs.wallTime }
        if lhs.replica != rhs.replica { return lhs.replica < rhs.replica }
        return lhs.seq < rhs.seq
    }
}

private struct StrokeState {
    var points: [Drawing.Point] = []
    var keys: [CompactKey] = []
    var styleRefs: [UInt32] = []
    var sorted = true
    var ended = false
    var visibilityOp: (key: CompactKey, visible: Bool)?

    var creation: CompactKey? {
        guard !keys.isEmpty else { return nil }
        return sorted ? keys[0] : keys.min()
    }

    mutating func add(_ point: Drawing.Point, style: UInt32, key: CompactKey) {
        if let last = keys.last, key < last { sorted = false }
        points.append(point)
        keys.append(key)
        styleRefs.append(style)
    }

    mutating func setVisibility(_ visible: Bool, at key: CompactKey) {
        if visibilityOp.map({ $0.key < key }) ?? true { visibilityOp = (key, visible) }
    }

    mutating func sortPoints() {
        guard !sorted else { return }
        let order = keys.indices.sorted { keys[$0] < keys[$1] }
        points = order.map { points[$0] }
        styleRefs = order.map { styleRefs[$0] }
        keys = order.map { keys[$0] }
        sorted = true
    }
}
