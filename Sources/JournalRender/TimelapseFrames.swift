import JournalFormat
import JournalReplay

/// A time-lapse as a sequence of raster frames, for a video encoder (`journal timelapse
/// OUT.mp4`, docs/HISTORY.md). The frames follow the animated SVG's clock: each event of the
/// range takes the same share of the time, and frame `f` of `n` shows the events up to the
/// end of its share.
///
/// Redrawing every stroke for every frame is what a long session cannot afford (hundreds of
/// thousands of segments, hundreds of frames), so strokes are kept in two layers:
/// - the base holds the strokes that stay until the end of the range or the next clear: only
///   their new points are drawn, frame after frame, and it is drawn afresh only when one of
///   them goes (at a clear);
/// - a stroke that will be undone or erased later is drawn whole over a copy of the base, for
///   each frame while it shows.
/// So a stroke about to be undone shows above the others, where the SVG keeps creation order.
public struct TimelapseFrames {
    public let width: Int
    public let height: Int
    public let count: Int
    /// The longest side a frame may have (8K), whatever the drawing's shape.
    public static let maximumSide = 7680
    /// The most pixels a frame may have: 3840×2160 (UHD). Measured on the demo board at 240 fps:
    /// this process holds about 18 bytes a pixel, ffmpeg's x264 about 105 (4.6 GB at
    /// 7680×6128), so a frame this size keeps both near 1 GB.
    public static let pixelBudget = 3840 * 2160
    private let timelapse: Timelapse
    private let background: RGBA
    private let clock: TimelapseClock
    private var tracks: [TrackState]
    private var base: RasterImage
    private var nextFrame = 0

    /// The area every stroke of the range covers at some moment, scaled to `width` pixels;
    /// both sides even, as video encoders need.
    /// `clock` places the events (each the same share by default).
    public init(_ timelapse: Timelapse, frames: Int, width: Int, clock: TimelapseClock? = nil,
                background: RGBA = RGBA(rawValue: 0xFFFF_FFFF)) {
        precondition(frames > 0 && width > 0, "a video needs a frame and a pixel")
        let area = timelapse.area
        self.clock = clock ?? .evenly(events: timelapse.end - timelapse.start)
        let (evenWidth, height) = Self.frameSize(timelapse, width: width)
        let scale = min(Double(evenWidth) / area.width, Double(height) / area.height)
        let renderer = SVGRenderer(width: Double(evenWidth), height: Double(height), background: background, area: area)
        self.timelapse = timelapse
        self.width = evenWidth
        self.height = height
        self.count = frames
        self.background = background
        tracks = timelapse.tracks.map { TrackState($0, clears: timelapse.clears, area: area, scale: scale, renderer: renderer) }
        base = RasterImage(width: evenWidth, height: height, background: background)
    }

    /// The frame size for `width`: the drawing's shape, both sides even (as video encoders
    /// need), the height capped at `maximumSide` (then the width follows).
    public static func frameSize(_ timelapse: Timelapse, width: Int) -> (width: Int, height: Int) {
        let area = timelapse.area
        var evenWidth = max(2, width + width % 2)
        var height = Int(min(Double(evenWidth) * area.height / area.width, 1e9).rounded())
        if height > Self.maximumSide {
            // A tall, thin drawing: the height is capped and the width follows.
            height = Self.maximumSide
            evenWidth = Int((Double(height) * area.width / area.height).rounded())
            evenWidth = max(2, evenWidth + evenWidth % 2)
        }
        return (evenWidth, max(2, height + height % 2))
    }

    /// How many events of the total order frame `index` shows.
    func events(throughFrame index: Int) -> Int {
        timelapse.start + clock.events(throughFrame: index, of: count)
    }

    /// The picture of the first `held` events drawn from scratch, every visible stroke in
    /// creation order: what the layered frames must agree with (tests).
    func drawnAfresh(at held: Int) -> RasterImage {
        var image = RasterImage(width: width, height: height, background: background)
        for var track in tracks.map({ $0.restarted() }) {
            track.advanceVisibility(to: held)
            if track.visible { track.draw(upTo: held, on: &image) }
        }
        return image
    }

    /// The next frame, or nil after the last.
    public mutating func next() -> RasterImage? {
        guard nextFrame < count else { return nil }
        let held = events(throughFrame: nextFrame)
        var rebuild = nextFrame == 0
        for index in tracks.indices {
            let before = tracks[index].layer
            tracks[index].advanceVisibility(to: held)
            let after = tracks[index].layer
            if before == .base && after != .base { rebuild = true }
            if after == .base && before != .base { tracks[index].drawn = 0 }
        }
        if rebuild {
            base.fill(background)
            for index in tracks.indices where tracks[index].layer == .base { tracks[index].drawn = 0 }
        }
        for index in tracks.indices where tracks[index].layer == .base { tracks[index].draw(upTo: held, on: &base) }
        var frame = base
        for index in tracks.indices where tracks[index].layer == .overlay {
            tracks[index].drawn = 0
            tracks[index].draw(upTo: held, on: &frame)
        }
        nextFrame += 1
        return frame
    }
}

/// One stroke's points in pixels and how far the frames have drawn it.
private struct TrackState {
    let positions: [Int]
    let changes: [(position: Int, visible: Bool)]
    /// Point `i` in pixel coordinates.
    let points: [(x: Double, y: Double)]
    /// Segment `i` joins points `i` and `i + 1`; a lone point uses `radii[0]`.
    let radii: [Double]
    let colors: [RGBA]
    /// Whether change `i` is a hide by a clear.
    let hiddenByClear: [Bool]
    var drawn = 0
    var visible = false
    private var nextChange = 0

    enum Layer { case hidden, base, overlay }

    /// Where the stroke is drawn now: hidden; in the base if it stays until the end or the
    /// next clear; over the base if an undo or erase will hide it.
    var layer: Layer {
        guard visible else { return .hidden }
        return nextChange < changes.count && !hiddenByClear[nextChange] ? .overlay : .base
    }

    init(_ track: Timelapse.Track, clears: Set<Int>, area: SVGRenderer.Area, scale: Double, renderer: SVGRenderer) {
        let stroke = track.stroke
        positions = track.pointPositions
        changes = track.changes
        hiddenByClear = track.changes.map { !$0.visible && clears.contains($0.position) }
        points = stroke.points.map { ((($0.x - area.x) * scale), (($0.y - area.y) * scale)) }
        var radii: [Double] = [], colors: [RGBA] = []
        if stroke.points.count >= 2 {
            radii.reserveCapacity(stroke.points.count - 1)
            colors.reserveCapacity(stroke.points.count - 1)
            for run in renderer.runs(of: stroke) {
                for _ in run.first..<run.last {
                    radii.append(max(run.width * scale / 2, 0.5))
                    colors.append(run.style.color)
                }
            }
        } else {
            radii = [max(stroke.style.width * scale / 2, 0.5)]
            colors = [stroke.style.color]
        }
        self.radii = radii
        self.colors = colors
    }

    /// The same stroke with nothing drawn and no change applied.
    func restarted() -> TrackState {
        var track = self
        track.drawn = 0
        track.visible = false
        track.nextChange = 0
        return track
    }

    /// Applies the changes of visibility before event `held`.
    mutating func advanceVisibility(to held: Int) {
        while nextChange < changes.count, changes[nextChange].position < held {
            visible = changes[nextChange].visible
            nextChange += 1
        }
    }

    /// Draws the points that came before event `held` and are not drawn yet.
    mutating func draw(upTo held: Int, on image: inout RasterImage) {
        var upTo = drawn
        while upTo < positions.count, positions[upTo] < held { upTo += 1 }
        paint(upTo: upTo, on: &image)
    }

    /// Paints points `drawn..<upTo` (the segments that reach them).
    private mutating func paint(upTo: Int, on image: inout RasterImage) {
        guard upTo > drawn else { return }
        if upTo == 1 {
            // The first point alone: a dot, until a segment leaves it.
            image.addSegment(from: points[0], to: points[0], radius: radii[0])
            image.paintShape(colors[0])
        }
        var color = colors[max(drawn, 1) - 1]
        for index in max(drawn, 1)..<max(upTo, 1) {
            if colors[index - 1] != color {
                image.paintShape(color)
                color = colors[index - 1]
            }
            image.addSegment(from: points[index - 1], to: points[index], radius: radii[index - 1])
        }
        image.paintShape(color)
        drawn = upTo
    }
}
