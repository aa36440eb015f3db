import JournalFormat
import JournalReplay

/// A journal's history as one animated SVG (`journal timelapse`, docs/HISTORY.md): every
/// stroke shown at some moment of the range appears as it was drawn, and disappears and
/// reappears when it was undone, erased, cleared or brought back, in any browser, with no
/// video encoder. Time runs with the events, not the wall clock: each event of the range
/// takes the same share of the animation, so pauses take no time and a busy minute is not
/// rushed.
public struct Timelapse {
    /// One stroke of the range, as it is at the range's end, with when each of its points
    /// came and when it was shown or hidden: positions in the total order.
    struct Track {
        var stroke: Drawing.Stroke
        var pointPositions: [Int]
        var changes: [(position: Int, visible: Bool)]
    }

    let tracks: [Track]
    /// Positions of the clears up to the range's end.
    let clears: Set<Int>
    /// Events before the range, shown as they stand at its start (positions, 0-based).
    public let start: Int
    public let end: Int

    /// The events after `start` through `end` (counts of events of the total order).
    public init(_ history: History, start: Int, end: Int) {
        let end = min(max(end, 0), history.events.count)
        let start = min(max(start, 0), end)
        self.start = start
        self.end = end
        var positions: [StrokeID: [Int]] = [:]
        var changes: [StrokeID: [(position: Int, visible: Bool)]] = [:]
        var lastOp: [StrokeID: Bool] = [:]
        var created = Set<StrokeID>()
        var shown = Set<StrokeID>()
        var clears = Set<Int>()
        // The fold's rules (DESIGN.md's visibility) replayed in total order: the newest of a
        // stroke's undo, redo and erase decides, and a clear hides every stroke created before
        // it whose decision is older.
        func set(_ stroke: StrokeID, visible: Bool, at position: Int) {
            guard shown.contains(stroke) != visible else { return }
            if visible { shown.insert(stroke) } else { shown.remove(stroke) }
            changes[stroke, default: []].append((position, visible))
        }
        for (index, event) in history.events.prefix(end).enumerated() {
            switch event.payload {
            case .point(let sample):
                positions[sample.stroke, default: []].append(index)
                if created.insert(sample.stroke).inserted { set(sample.stroke, visible: lastOp[sample.stroke] ?? true, at: index) }
            case .undo(let stroke), .erase(let stroke):
                lastOp[stroke] = false
                if created.contains(stroke) { set(stroke, visible: false, at: index) }
            case .redo(let stroke):
                lastOp[stroke] = true
                if created.contains(stroke) { set(stroke, visible: true, at: index) }
            case .clear:
                clears.insert(index)
                for stroke in shown { set(stroke, visible: false, at: index) }
            case .end:
                break
            }
        }
        self.clears = clears
        let drawing = history.drawing(ofFirst: end)
        tracks = drawing.strokes.compactMap { stroke in
            guard let changes = changes[stroke.id], let positions = positions[stroke.id] else { return nil }
            // Shown at some moment of the range (a stroke hidden before it began stays out).
            let shownInRange = changes.contains { $0.visible && $0.position >= start }
                || changes.last(where: { $0.position < start })?.visible == true
            guard shownInRange else { return nil }
            return Track(stroke: stroke, pointPositions: positions, changes: changes)
        }
    }

    /// Which strokes the animation shows once it has ended: the drawing at its end's visible ones.
    var visibleAtEnd: [StrokeID] { tracks.filter { $0.changes.last?.visible == true }.map(\.stroke.id) }

    /// The area of every stroke the range shows at some moment: what the picture covers.
    public var area: SVGRenderer.Area {
        SVGRenderer.contentBounds(Drawing(strokes: tracks.map { track in var stroke = track.stroke; stroke.visible = true; return stroke }))
    }

    /// The widest picture of `area`'s proportions that fits in `width` × `height` pixels.
    public func width(fitting width: Double, _ height: Double) -> Double {
        let area = self.area
        var fitted = min(width, (height * area.width / area.height).rounded(.down))
        // The SVG rounds its height: a pixel wider may still fit.
        while fitted + 1 <= width, ((fitted + 1) * area.height / area.width).rounded() <= height { fitted += 1 }
        return max(1, fitted)
    }

    /// The wall times of the range's events, in total order (for `TimelapseClock.drawn`).
    public static func wallTimes(_ history: History, start: Int, end: Int) -> [Int64] {
        history.events[min(start, end)..<end].map(\.wallTime)
    }

    /// The animated SVG: `duration` seconds for the range, `width` pixels wide, the area of
    /// every stroke it shows; events placed by `clock` (each the same share by default).
    public func svg(width: Double, duration: Double, clock: TimelapseClock? = nil,
                    background: RGBA? = RGBA(rawValue: 0xFFFF_FFFF)) -> String {
        let area = self.area
        let height = max(1, (width * area.height / area.width).rounded())
        let renderer = SVGRenderer(width: width, height: height, background: background, area: area)
        let clock = clock ?? .evenly(events: end - start)
        func seconds(_ position: Int) -> Double { position < start ? 0 : clock.fraction(ofEvent: position - start) * duration }

        var out = SVGWriter()
        out.reserve(512 + tracks.reduce(0) { $0 + 300 + 14 * $1.stroke.points.count })
        renderer.openDocument(&out, showing: area)
        out.text("<!-- a time-lapse of events ")
        out.integer(start + 1)
        out.text(" to ")
        out.integer(end)
        out.text(" in ")
        out.number(duration)
        out.text(" s: ")
        out.integer(tracks.count)
        out.text(" strokes -->")
        out.newline()
        renderer.fillBackground(&out, showing: area)
        for track in tracks {
            let shownAtStart = track.changes.last(where: { $0.position < start })?.visible == true
            out.text(shownAtStart ? "<g>" : #"<g visibility="hidden">"#)
            for change in track.changes where change.position >= start {
                out.text(change.visible ? #"<set attributeName="visibility" to="visible" begin=""# : #"<set attributeName="visibility" to="hidden" begin=""#)
                out.number(seconds(change.position), decimals: 3)
                out.text(#"s" fill="freeze"/>"#)
            }
            out.newline()
            let points = track.stroke.points
            if points.count == 1 {
                out.dot(points[0], style: track.stroke.style(ofPoint: 0))
            } else {
                for run in renderer.runs(of: track.stroke) {
                    // Drawn from its first point to its last while their events play:
                    // a dash of the whole length (pathLength 1) slides in.
                    let from = seconds(track.pointPositions[run.first]), to = seconds(track.pointPositions[run.last])
                    let already = track.pointPositions[run.last] < start
                    out.polyline(of: points, run)
                    if already {
                        out.text("/>")
                    } else {
                        out.text(#" pathLength="1" stroke-dasharray="1 1" stroke-dashoffset="1"><animate attributeName="stroke-dashoffset" from="1" to="0" begin=""#)
                        out.number(from, decimals: 3)
                        out.text(#"s" dur=""#)
                        out.number(max(to - from, 0.001), decimals: 3)
                        out.text(#"s" fill="freeze"/></polyline>"#)
                    }
                    out.newline()
                }
            }
            out.text("</g>")
            out.newline()
        }
        out.text("</svg>")
        out.newline()
        return out.string
    }
}
