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
