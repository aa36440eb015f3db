import JournalFormat

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
        /// The key of the last point applied; not kept in snapshots (a live board continuing
        /// a stroke needs it to place a late point, `LiveDrawing`).
        var lastKey: CompactKey?
        var visibility: (key: CompactKey, visible: Bool)?
        var ended = false

        /// Appends a point (events arrive in key order); true if it created the stroke.
        @inline(__always)
        mutating func add(_ sample: Drawing.Point, style: UInt32, key: CompactKey) -> Bool {
            points.append(sample)
            lastKey = key
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
    /// What a decoded snapshot held of each of its slots (nil for a state that came from no
    /// snapshot): the strokes a moment's summary may take from the snapshot's stroke hashes.
    var baseline: SnapshotBaseline?

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
        assert(!(baseline?.withholdsPoints(of: self) ?? false), "fold state: a drawing of strokes whose points were not decoded")
        var result: [Drawing.Stroke] = []
        result.reserveCapacity(creationOrder.count)
        for slot in creationOrder {
            if let stroke = finishedStroke(Int(slot)) { result.append(stroke) }
        }
        return Drawing(strokes: result)
    }

    /// The stroke in slot `slot` as the drawing shows it; nil if it was never created.
    func finishedStroke(_ slot: Int) -> Drawing.Stroke? {
        let state = strokes[slot]
        guard let creation = state.creation else { return nil }
        var pointStyles = state.pointStyles.map { $0.map { styles[Int($0)] } }
        // A stroke whose styles changed and changed back is still uniform: say so the way
        // the order-free fold does.
        if let all = pointStyles, all.allSatisfy({ $0 == all[0] }) { pointStyles = nil }
        return Drawing.Stroke(
            id: strokeIDs[slot], style: styles[Int(state.style)], pointStyles: pointStyles,
            points: state.points, visible: isVisible(state, created: creation), ended: state.ended)
    }

    private func isVisible(_ state: StrokeState, created creation: CompactKey) -> Bool {
        if let clear = latestClear, creation < clear, state.visibility.map({ $0.key < clear }) ?? true { return false }
        return state.visibility?.visible ?? true
    }

    /// The drawing's digest and counts (what `finish()` would give `DrawingSummary`), with the
    /// hash of every stroke that is still as the snapshot held it taken from `stored` (the
    /// snapshot's `strokeHashes`) and only the others hashed. `.touched`: strokes whose points
    /// were not decoded but that events since changed; decode them and fold again.
    func summary(stored: StrokeHashes) -> SummaryOutcome {
        guard let baseline else { return .touched([]) }
        var visible: [Bool] = []
        var hashes = StrokeHashes()
        var points = 0
        var touched: [Int] = []
        var scratch: [UInt8] = []
        visible.reserveCapacity(creationOrder.count)
        for slot in creationOrder.map(Int.init) {
            let state = strokes[slot]
            guard let creation = state.creation else { continue }
            visible.append(isVisible(state, created: creation))
            let position = slot < baseline.positions.count ? Int(baseline.positions[slot]) : -1
            if slot < baseline.withheld.count, baseline.withheld[slot] {
                guard state.points.isEmpty, state.ended == baseline.ended[slot], position >= 0 else {
                    touched.append(slot)
                    continue
                }
                hashes.append(copyOf: position, in: stored)
                points += Int(baseline.counts[slot])
            } else if position >= 0, state.points.count == Int(baseline.counts[slot]), state.ended == baseline.ended[slot] {
                // A stroke's points at any moment are a prefix of its points later, and `ended`
                // only ever becomes true: as many points and the same flag are the same stroke.
                hashes.append(copyOf: position, in: stored)
                points += state.points.count
            } else if let stroke = finishedStroke(slot) {
                hashes.append(stroke, scratch: &scratch)
                points += stroke.points.count
            }
        }
        guard touched.isEmpty else { return .touched(touched) }
        let summary = DrawingSummary(digest: StrokeHashes.digest(visible: visible, hashes: hashes),
                                     strokes: visible.count, visibleStrokes: visible.reduce(0) { $0 + ($1 ? 1 : 0) })
        return .summary(summary, points: points)
    }

    enum SummaryOutcome {
        case summary(DrawingSummary, points: Int)
        case touched([Int])
    }
}

/// Per slot of a decoded snapshot: its point count, `ended` flag and stroke-hash position
/// then, and whether its points were left out of the decode (`Snapshot.decode`'s `columns`).
struct SnapshotBaseline: Sendable {
    var counts: [Int32]
    var ended: [Bool]
    var withheld: [Bool]
    /// Index into the snapshot's `strokeHashes` (its creation order), or -1.
    var positions: [Int32]

    /// Whether some stroke of `state` has points that were not decoded.
    func withholdsPoints(of state: OrderedFoldState) -> Bool {
        withheld.indices.contains { withheld[$0] && $0 < state.strokes.count && state.strokes[$0].creation != nil }
    }
}
