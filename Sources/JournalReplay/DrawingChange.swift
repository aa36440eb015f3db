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
