import JournalFormat

/// The reconstructed drawing: a pure function of the set of events (invariant 3).
public struct Drawing: Equatable, Sendable {
    /// Every stroke ever created, hidden ones included, in z-order (by creation order key).
    public var strokes: [Stroke]

    public init(strokes: [Stroke] = []) { self.strokes = strokes }

    public var visibleStrokes: [Stroke] { strokes.filter(\.visible) }
    public var pointCount: Int { strokes.reduce(0) { $0 + $1.points.count } }

    public struct Point: Equatable, Sendable {
        public var x: Double
        public var y: Double
        /// NaN stands for "absent": recorded values are always finite, so NaN is never data.
        var pressureBits: Double
        var tBits: Double

        public init(x: Double, y: Double, pressure: Double?, t: Double?) {
            self.x = x
            self.y = y
            pressureBits = pressure ?? .nan
            tBits = t ?? .nan
        }

        /// NaN-coded optionals, as decoded columns hold them.
        init(x: Double, y: Double, pressureBits: Double, tBits: Double) {
            self.x = x
            self.y = y
            self.pressureBits = pressureBits
            self.tBits = tBits
        }

        public var pressure: Double? { pressureBits.isNaN ? nil : pressureBits }
        public var t: Double? { tBits.isNaN ? nil : tBits }

        public static func == (lhs: Point, rhs: Point) -> Bool {
            lhs.x.bitPattern == rhs.x.bitPattern && lhs.y.bitPattern == rhs.y.bitPattern
                && lhs.pressureBits.bitPattern == rhs.pressureBits.bitPattern
                && lhs.tBits.bitPattern == rhs.tBits.bitPattern
        }
    }

    public struct Stroke: Equatable, Sendable {
        public var id: StrokeID
        /// The style of the stroke's latest point (by order key).
        public var style: Style
        /// Per-point styles, present only when the points disagree; else every point has `style`.
        public var pointStyles: [Style]?
        /// The stroke's points, sorted by the order key of their events.
        public var points: [Point]
        public var visible: Bool
        /// An `end` event for this stroke was recorded.
        public var ended: Bool

        public init(id: StrokeID, style: Style, pointStyles: [Style]? = nil, points: [Point], visible: Bool, ended: Bool) {
            self.id = id
            self.style = style
            self.pointStyles = pointStyles
            self.points = points
            self.visible = visible
            self.ended = ended
        }

        public func style(ofPoint index: Int) -> Style { pointStyles?[index] ?? style }
    }
}
