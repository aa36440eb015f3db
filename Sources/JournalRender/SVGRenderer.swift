import JournalFormat
import JournalReplay

/// Draws a `Drawing` as an SVG picture.
///
/// Only visible strokes are drawn, in the drawing's z-order (later strokes on top). The
/// picture is `width` × `height` pixels and shows `area` of the drawing (its `viewBox`), scaled
/// to fit; without an area it shows every visible stroke (`contentBounds`). The SVG is a
/// picture, not the data: coordinates are printed with at most two decimals, and a pen stroke
/// whose pressure varies becomes a few polylines of different widths rather than one element
/// per segment.
public struct SVGRenderer {
    /// A rectangle in drawing units.
    public struct Area: Equatable, Sendable {
        public var x: Double
        public var y: Double
        public var width: Double
        public var height: Double

        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }

        public func contains(_ point: Drawing.Point) -> Bool {
            point.x >= x && point.x <= x + width && point.y >= y && point.y <= y + height
        }
    }

    public var width: Double
    public var height: Double
    /// Fills the canvas first; `nil` (or a fully transparent colour) leaves it transparent.
    public var background: RGBA?
    /// What part of the drawing to show; nil: all of it.
    public var area: Area?

    public init(width: Double = 1000, height: Double = 800, background: RGBA? = RGBA(rawValue: 0xFFFF_FFFF), area: Area? = nil) {
        self.width = width
        self.height = height
        self.background = background
        self.area = area
    }

    /// The smallest area holding every visible stroke, with room for half the widest pen and
    /// a 2% margin; a blank drawing gives the default 1000 × 800 canvas.
    public static func contentBounds(_ drawing: Drawing) -> Area {
        var minX = Double.infinity, minY = Double.infinity, maxX = -Double.infinity, maxY = -Double.infinity
        var pen = 0.0
        for stroke in drawing.visibleStrokes {
            for (index, point) in stroke.points.enumerated() {
                minX = min(minX, point.x); maxX = max(maxX, point.x)
                minY = min(minY, point.y); maxY = max(maxY, point.y)
                pen = max(pen, stroke.style(ofPoint: index).width)
            }
        }
        guard minX <= maxX else { return Area(x: 0, y: 0, width: 1000, height: 800) }
        let spanX = max(maxX - minX, 1), spanY = max(maxY - minY, 1)
        let padX = pen / 2 + spanX * 0.02, padY = pen / 2 + spanY * 0.02
        return Area(x: minX - padX, y: minY - padY, width: spanX + 2 * padX, height: spanY + 2 * padY)
    }

    /// Visible strokes with at least one point outside `area`: cut off in the picture.
    public static func strokesOutside(_ area: Area, of drawing: Drawing) -> Int {
        drawing.visibleStrokes.filter { stroke in stroke.points.contains { !area.contains($0) } }.count
    }

    /// Consecutive segments whose effective widths differ by less than this fraction share
    /// one polyline.
    static let widthTolerance = 0.1

    public func render(_ drawing: Drawing) -> String {
        let strokes = drawing.visibleStrokes
        var out = SVGWriter()
        out.reserve(256 + strokes.reduce(0) { $0 + 120 + 14 * $1.points.count })

        let shown = area ?? Self.contentBounds(drawing)
        openDocument(&out, showing: shown)
        out.text("<!-- ")
        out.integer(strokes.count)
        out.text(strokes.count == 1 ? " stroke" : " strokes")
        out.text(" (")
        out.integer(drawing.strokes.count - strokes.count)
        out.text(" hidden) -->")
        out.newline()
        fillBackground(&out, showing: shown)

        for stroke in strokes { draw(stroke, into: &out) }

        out.text("</svg>")
        out.newline()
        return out.string
    }

    /// The XML declaration and the `<svg>` element showing `shown` at `width` × `height`.
    func openDocument(_ out: inout SVGWriter, showing shown: Area) {
        out.text(#"<?xml version="1.0" encoding="UTF-8"?>"#)
        out.newline()
        out.text(#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width=""#)
        out.number(width)
        out.text(#"" height=""#)
        out.number(height)
        out.text(#"" viewBox=""#)
        out.number(shown.x)
        out.text(" ")
        out.number(shown.y)
        out.text(" ")
        out.number(shown.width)
        out.text(" ")
        out.number(shown.height)
        out.text(#"">"#)
        out.newline()
    }

    /// The canvas colour over `shown`, when there is one.
    func fillBackground(_ out: inout SVGWriter, showing shown: Area) {
        if let background, background.alpha > 0 {
            out.text(#"<rect x=""#)
            out.number(shown.x)
            out.text(#"" y=""#)
            out.number(shown.y)
            out.text(#"" width=""#)
            out.number(shown.width)
            out.text(#"" height=""#)
            out.number(shown.height)
            out.text(#"" fill=""#)
            out.color(background)
            out.text("\"")
            if background.alpha < 255 {
                out.text(#" fill-opacity=""#)
                out.opacity(background.alpha)
                out.text("\"")
            }
            out.text("/>")
            out.newline()
        }
    }

    // MARK: Strokes

    private func draw(_ stroke: Drawing.Stroke, into out: inout SVGWriter) {
        let points = stroke.points
        guard let first = points.first else { return }

        if points.count == 1 {
            out.dot(first, style: stroke.style(ofPoint: 0))
            return
        }
        for run in runs(of: stroke) {
            out.polyline(of: points, run)
            out.text("/>")
            out.newline()
        }
    }

    /// A polyline of one stroke: points `first...last` (at least two), one style, one width.
    struct Run: Equatable {
        var first: Int
        var last: Int
        var style: Style
        var width: Double
    }

    /// Splits a stroke of two or more points into runs of segments. Segment `i` joins points
    /// `i` and `i + 1` and takes the style of point `i`. Without pressure the run breaks only
    /// where the style changes; with pressure also where a segment's effective width strays
    /// 10 % or more from the width of the run's first segment. A run is drawn at the style's
    /// width × (0.4 + 0.6 × the mean pressure of its segments), pressure clamped to 0…1.
    func runs(of stroke: Drawing.Stroke) -> [Run] {
        let points = stroke.points
        precondition(points.count >= 2, "runs need at least one segment")
        let hasPressure = points.contains { $0.pressure != nil }

        /// A segment's pressure: the mean of whichever ends have one; full pressure if neither.
        func pressure(ofSegment index: Int) -> Double {
            guard hasPressure else { return 1 }
            switch (points[index].pressure, points[index + 1].pressure) {
            case let (start?, end?): return (start + end) / 2
            case let (start?, nil): return start
            case let (nil, end?): return end
            case (nil, nil): return 1
            }
        }
        func factor(_ pressure: Double) -> Double { 0.4 + 0.6 * Swift.min(Swift.max(pressure, 0), 1) }

        var runs: [Run] = []
        var runStart = 0
        var runStyle = stroke.style(ofPoint: 0)
        var anchorWidth = runStyle.width * factor(pressure(ofSegment: 0))
        var pressureSum = pressure(ofSegment: 0)

        func closeRun(at endSegment: Int) {
            let segments = Double(endSegment - runStart + 1)
            let width = hasPressure ? runStyle.width * factor(pressureSum / segments) : runStyle.width
            runs.append(Run(first: runStart, last: endSegment + 1, style: runStyle, width: width))
        }

        for segment in 1..<(points.count - 1) {
            let style = stroke.style(ofPoint: segment)
            let segmentPressure = pressure(ofSegment: segment)
            let segmentWidth = style.width * factor(segmentPressure)
            let sameWidth = abs(segmentWidth - anchorWidth) <= Self.widthTolerance * anchorWidth
            if style == runStyle && (!hasPressure || sameWidth) {
                pressureSum += segmentPressure
                continue
            }
            closeRun(at: segment - 1)
            runStart = segment
            runStyle = style
            anchorWidth = segmentWidth
            pressureSum = segmentPressure
        }
        closeRun(at: points.count - 2)
        return runs
    }
}

// MARK: - Output

/// Accumulates ASCII bytes; numbers are formatted without Foundation.
struct SVGWriter {
    private var bytes: [UInt8] = []

    mutating func reserve(_ capacity: Int) { bytes.reserveCapacity(capacity) }

    var string: String { String(decoding: bytes, as: UTF8.self) }

    mutating func text(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func newline() { bytes.append(UInt8(ascii: "\n")) }

    mutating func integer(_ value: Int) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        unsigned(value.magnitude)
    }

    private mutating func unsigned(_ value: UInt) {
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[index]) }
        }
    }

    /// At most `decimals` decimals, no trailing zeros, no `-0`. Non-finite values print as 0
    /// (a recorded drawing never holds one) and huge ones are clamped to stay printable.
    mutating func number(_ value: Double, decimals: Int = 2) {
        guard value.isFinite else {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var scale: UInt = 1
        for _ in 0..<decimals { scale *= 10 }
        let limit = 1e15
        let clamped = Swift.min(Swift.max(value, -limit), limit)
        let scaled = (clamped * Double(scale)).rounded()
        let magnitude = UInt(abs(scaled))
        if magnitude == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        if scaled < 0 { bytes.append(UInt8(ascii: "-")) }
        unsigned(magnitude / scale)
        var fraction = magnitude % scale
        guard fraction > 0 else { return }
        bytes.append(UInt8(ascii: "."))
        var digitsLeft = decimals
        var divisor = scale / 10
        while fraction > 0, digitsLeft > 0 {
            let digit = fraction / divisor
            bytes.append(UInt8(ascii: "0") + UInt8(digit))
            fraction -= digit * divisor
            divisor /= 10
            digitsLeft -= 1
        }
    }

    /// `#RRGGBB`, uppercase; alpha goes in a separate opacity attribute.
    mutating func color(_ color: RGBA) {
        let digits: StaticString = "0123456789ABCDEF"
        bytes.append(UInt8(ascii: "#"))
        digits.withUTF8Buffer { table in
            for shift in stride(from: 28, through: 8, by: -4) {
                bytes.append(table[Int((color.rawValue >> UInt32(shift)) & 0xF)])
            }
        }
    }

    /// alpha / 255 with up to three decimals.
    /// ` fill="#RRGGBB"` (or stroke), and its opacity when the colour is not opaque: every
    /// picture of a stroke (a still, a time-lapse) paints it so.
    mutating func paint(_ attribute: Paint, _ color: RGBA) {
        text(attribute == .fill ? #" fill=""# : #" stroke=""#)
        self.color(color)
        text("\"")
        if color.alpha < 255 {
            text(attribute == .fill ? #" fill-opacity=""# : #" stroke-opacity=""#)
            opacity(color.alpha)
            text("\"")
        }
    }

    enum Paint { case fill, stroke }

    /// A stroke of one point: a dot as wide as its pen, on a line of its own. Stills and
    /// time-lapses draw strokes with this and `polyline`, so both paint them alike.
    mutating func dot(_ point: Drawing.Point, style: Style) {
        text(#"<circle cx=""#)
        number(point.x)
        text(#"" cy=""#)
        number(point.y)
        text(#"" r=""#)
        number(style.width / 2)
        text("\"")
        paint(.fill, style.color)
        text("/>")
        newline()
    }

    /// A run of a stroke's points as a polyline element, left open after its last attribute:
    /// the caller closes it (`/>`) or animates it.
    mutating func polyline(of points: [Drawing.Point], _ run: SVGRenderer.Run) {
        text(#"<polyline points=""#)
        for index in run.first...run.last {
            if index > run.first { text(" ") }
            number(points[index].x)
            text(",")
            number(points[index].y)
        }
        text(#"" fill="none""#)
        paint(.stroke, run.style.color)
        text(#" stroke-width=""#)
        number(run.width)
        text(#"" stroke-linecap="round" stroke-linejoin="round""#)
    }

    mutating func opacity(_ alpha: UInt8) {
        number(Double(alpha) / 255, decimals: 3)
    }
}
