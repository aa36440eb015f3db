import JournalFormat

/// The events that make the drawing of now look as the drawing at an earlier moment did
/// (`journal restore`, docs/HISTORY.md): ordinary events, appended after everything, so a
/// restore syncs like any edit, loses no history and is undone by restoring again.
///
/// Events only add: a stroke that grew or changed after the moment cannot lose its later
/// points. Such a stroke is erased and drawn again, as it was then, under a new id (on top of
/// the others); every other stroke keeps its id and its place, and is erased or brought back
/// (`redo`: newer than any clear, it shows its stroke again).
public struct RestorePlan: Sendable, Equatable {
    public var payloads: [Payload] = []
    /// Strokes shown now and not then: erased.
    public var hidden: [StrokeID] = []
    /// Strokes shown then, unchanged since, hidden now: brought back.
    public var shown: [StrokeID] = []
    /// Strokes shown then that grew or changed since: the id of the stroke then, and of its copy.
    public var copied: [(original: StrokeID, copy: StrokeID)] = []

    public static func == (lhs: RestorePlan, rhs: RestorePlan) -> Bool {
        lhs.payloads == rhs.payloads && lhs.hidden == rhs.hidden && lhs.shown == rhs.shown
            && lhs.copied.map(\.original) == rhs.copied.map(\.original) && lhs.copied.map(\.copy) == rhs.copied.map(\.copy)
    }

    public var isEmpty: Bool { payloads.isEmpty }

    /// What turns `now` into `then` (the drawing at the moment), naming copies with `newStrokeID`
    /// (by default, one `StrokeIDAllocator`'s ids: a restore can copy thousands of strokes, and
    /// random ids would cost 16 bytes each in every block).
    public init(now: Drawing, then: Drawing, newStrokeID: (() -> StrokeID)? = nil) {
        var allocator = StrokeIDAllocator()
        let newStrokeID = newStrokeID ?? { allocator.next() }
        var shownThen: [StrokeID: Drawing.Stroke] = [:]
        for stroke in then.strokes where stroke.visible { shownThen[stroke.id] = stroke }
        var unchanged = Set<StrokeID>()
        for stroke in now.strokes {
            let before = shownThen[stroke.id]
            let same = before.map { Self.sameMarks(stroke, $0) } ?? false
            if same { unchanged.insert(stroke.id) }
            if stroke.visible && !same {
                payloads.append(.erase(stroke.id))
                hidden.append(stroke.id)
            } else if !stroke.visible && same {
                payloads.append(.redo(stroke.id))
                shown.append(stroke.id)
            }
        }
        for stroke in then.strokes where stroke.visible && !unchanged.contains(stroke.id) {
            let copy = newStrokeID()
            for (index, point) in stroke.points.enumerated() {
                payloads.append(.point(PointSample(
                    stroke: copy, x: point.x, y: point.y, pressure: point.pressure, t: point.t,
                    style: stroke.pointStyles?[index] ?? stroke.style)))
            }
            if stroke.ended { payloads.append(.end(copy)) }
            copied.append((stroke.id, copy))
        }
    }

    /// Whether two strokes leave the same marks: the same points with the same styles.
    static func sameMarks(_ a: Drawing.Stroke, _ b: Drawing.Stroke) -> Bool {
        a.points == b.points && a.style == b.style && a.pointStyles == b.pointStyles
    }
}

extension Drawing {
    /// The visible strokes' marks (points and styles), ids left out, in z-order: what a restore
    /// makes equal to the drawing at its moment, up to the order of the strokes it copied
    /// (`RestorePlan`), so compared as a sorted list.
    public var visibleMarks: [String] {
        visibleStrokes.map { stroke in
            var text = ""
            for (index, point) in stroke.points.enumerated() {
                let style = stroke.pointStyles?[index] ?? stroke.style
                text += "\(point.x.bitPattern),\(point.y.bitPattern),\(point.pressure?.bitPattern ?? 0),\(point.t?.bitPattern ?? 0),\(style.color.rawValue),\(style.width.bitPattern);"
            }
            return text
        }.sorted()
    }
}
