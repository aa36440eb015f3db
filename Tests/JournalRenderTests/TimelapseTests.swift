import JournalFormat
@testable import JournalRender
import JournalReplay
import JournalTestSupport
import Testing

/// The time-lapse replays visibility as the fold decides it: at every moment it animates to,
/// it shows exactly the strokes the drawing at that moment shows.
@Suite struct TimelapseTests {
    static func events() -> [Event] {
        var alice = EventGenerator(seed: 81)
        var bob = EventGenerator(seed: 82)
        var events: [Event] = []
        for _ in 0..<3 {
            events += alice.stroke(points: 4)
            events += bob.stroke(points: 3)
        }
        events.append(alice.event(.undo(alice.strokes[1]), lamportJump: 30))
        events.append(bob.event(.erase(alice.strokes[0]), lamportJump: 31))
        events.append(alice.event(.redo(alice.strokes[1])))
        events.append(alice.event(.clear, lamportJump: 3))
        events.append(bob.event(.redo(bob.strokes[2]), lamportJump: 10))
        events += alice.stroke(points: 5).map { event in var event = event; event.lamport += 40; return event }
        // An undo of a stroke before its first point: hidden from its creation on.
        let early = bob.newStroke()
        events.append(bob.event(.undo(early), lamportJump: 60))
        events.append(bob.event(.point(PointSample(stroke: early, x: 1, y: 1, style: Style(color: RGBA(rawValue: 0xFF), width: 2))), lamportJump: 1))
        return events
    }

    /// Translucent ink stays translucent in a time-lapse, as in a still (the time-lapse wrote
    /// its strokes' colour without their opacity).
    @Test func translucentInkKeepsItsOpacityInTheTimeLapse() {
        var pen = EventGenerator(seed: 90)
        let line = pen.newStroke(), dot = pen.newStroke()
        let ink = Style(color: RGBA(rawValue: 0x1E88E580), width: 3)
        var events = (0..<3).map { index in pen.event(.point(PointSample(stroke: line, x: Double(index) * 10, y: 5, style: ink))) }
        events.append(pen.event(.point(PointSample(stroke: dot, x: 50, y: 50, style: Style(color: RGBA(rawValue: 0xE5393540), width: 4)))))
        let history = History(events: events)
        let svg = Timelapse(history, start: 0, end: events.count).svg(width: 400, duration: 2, clock: nil)
        #expect(svg.contains(#"stroke-opacity="0.502""#), "\(svg)")
        #expect(svg.contains(#"fill-opacity="0.251""#), "\(svg)")
        let still = SVGRenderer(width: 400, height: 400, background: nil, area: SVGRenderer.contentBounds(history.drawing(ofFirst: events.count)))
            .render(history.drawing(ofFirst: events.count))
        #expect(still.contains(#"stroke-opacity="0.502""#) && still.contains(#"fill-opacity="0.251""#))
    }

    @Test func everyMomentShowsTheStrokesTheDrawingThenShows() {
        let history = History(events: Self.events())
        #expect(history.events.count == Self.events().count)
        for end in 0...history.events.count {
            let expected = Set(history.drawing(ofFirst: end).visibleStrokes.map(\.id))
            #expect(Set(Timelapse(history, start: 0, end: end).visibleAtEnd) == expected, "at \(end) events")
        }
        // From a later start: a stroke hidden before the range and never shown in it is left out.
        let clear = history.events.firstIndex { $0.payload == .clear }! + 1
        let late = Timelapse(history, start: clear, end: history.events.count)
        let everShown = Set(late.tracks.map(\.stroke.id))
        #expect(everShown.count < Timelapse(history, start: 0, end: history.events.count).tracks.count)
        #expect(Set(late.visibleAtEnd) == Set(history.drawing(ofFirst: history.events.count).visibleStrokes.map(\.id)))
    }

    @Test func theSVGHasAGroupPerStrokeAndAnAnimationPerRun() {
        let history = History(events: Self.events())
        let timelapse = Timelapse(history, start: 0, end: history.events.count)
        let svg = timelapse.svg(width: 400, duration: 5)
        #expect(svg.hasPrefix("<?xml") && svg.hasSuffix("</svg>\n"))
        #expect(Self.occurrences(of: "<g", in: svg) == timelapse.tracks.count)
        #expect(svg.contains(#"attributeName="stroke-dashoffset""#))
        #expect(Self.occurrences(of: "<set ", in: svg) == timelapse.tracks.reduce(0) { $0 + $1.changes.count })
    }

    static func occurrences(of needle: String, in text: String) -> Int {
        let bytes = Array(text.utf8), pattern = Array(needle.utf8)
        guard bytes.count >= pattern.count else { return 0 }
        return (0...(bytes.count - pattern.count)).count { bytes[$0..<($0 + pattern.count)].elementsEqual(pattern) }
    }
}

/// The video frames: drawn incrementally in two layers, each frame must show the strokes the
/// drawing at its moment shows, exactly where a fresh drawing of them puts ink.
@Suite struct TimelapseFramesTests {
    /// How far each pixel is from the white background (the darkest channel's distance).
    static func ink(_ image: RasterImage) -> [Int] {
        stride(from: 0, to: image.pixels.count, by: 3).map { index in
            255 - Int(min(image.pixels[index], image.pixels[index + 1], image.pixels[index + 2]))
        }
    }

    @Test func everyFrameHasTheInkOfAFreshDrawingOfItsMoment() {
        let history = History(events: TimelapseTests.events())
        let total = history.events.count
        let timelapse = Timelapse(history, start: 0, end: total)
        // One frame per event: frame f shows the first f + 1 events.
        var frames = TimelapseFrames(timelapse, frames: total, width: 120)
        var index = 0
        while let frame = frames.next() {
            let held = index + 1
            let expected = frames.drawnAfresh(at: held)
            #expect(frame.width == expected.width && frame.height == expected.height)
            let got = Self.ink(frame), want = Self.ink(expected)
            // A stroke left behind or missing is ink where the other has none. (Edges may
            // differ by a shade: a stroke drawn over several frames blends its joins again.)
            let leftOver = zip(got, want).filter { $0 > 64 && $1 == 0 }.count
            let missing = zip(got, want).filter { $0 == 0 && $1 > 64 }.count
            #expect(leftOver == 0 && missing == 0, "frame \(index) (\(held) events): \(leftOver) pixels of ink too many, \(missing) missing")
            let strokes = history.drawing(ofFirst: held).visibleStrokes.count
            #expect((strokes == 0) == !got.contains { $0 > 0 }, "frame \(index): \(strokes) visible strokes")
            index += 1
        }
        #expect(index == total)
        #expect(frames.next() == nil)
    }

    /// `--speed`: events placed by their wall times, a pause cut to the limit, a clock that
    /// runs behind taken as no time passing.
    @Test func theDrawnClockPlacesEventsByWallTimeWithPausesShortened() {
        let (clock, milliseconds) = TimelapseClock.drawn(wallTimes: [0, 100, 100, 5_100, 5_200, 4_000, 5_300], maxIdle: 1_000)
        #expect(milliseconds == 1_300)
        #expect([0, 1, 2, 3, 4, 5, 6].map { clock.fraction(ofEvent: $0) * 1_300 } == [0, 100, 100, 1_100, 1_200, 1_200, 1_300])
        #expect(clock.events(through: 0.5) == 3)
        #expect(clock.events(through: 1) == 7)
        // Frames: 13 frames of a 1.3 s clip, one per 100 ms of drawing.
        #expect((0..<13).map { clock.events(throughFrame: $0, of: 13) } == [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 6, 7])
        #expect(TimelapseClock.drawn(wallTimes: [7, 7, 7], maxIdle: 1_000).milliseconds == 0)

        // The SVG's animation times follow the clock: the third stroke's first point (event 8
        // of the events above) comes after a pause cut to 1 s, so no later than 1 s after the
        // second stroke's last point.
        let history = History(events: TimelapseTests.events())
        let timelapse = Timelapse(history, start: 0, end: history.events.count)
        let times = Timelapse.wallTimes(history, start: 0, end: history.events.count)
        #expect(times.count == history.events.count)
        let drawn = TimelapseClock.drawn(wallTimes: times, maxIdle: 1_000)
        let evenly = timelapse.svg(width: 200, duration: 10)
        let asDrawn = timelapse.svg(width: 200, duration: 10, clock: drawn.clock)
        #expect(evenly != asDrawn)
        #expect(TimelapseTests.occurrences(of: "<animate", in: evenly) == TimelapseTests.occurrences(of: "<animate", in: asDrawn))
    }

    @Test func aTallThinDrawingGetsFramesOfABoundedHeight() {
        var generator = EventGenerator(seed: 91)
        let stroke = generator.newStroke()
        let style = Style(color: RGBA(rawValue: 0x0000_00FF), width: 1)
        let events = (0..<3).map { index in
            generator.event(.point(PointSample(stroke: stroke, x: 5, y: Double(index) * 500_000, style: style)), lamportJump: 1)
        }
        let history = History(events: events)
        var frames = TimelapseFrames(Timelapse(history, start: 0, end: history.events.count), frames: 1, width: 1280)
        #expect(frames.height == TimelapseFrames.maximumSide && frames.width >= 2 && frames.width % 2 == 0, "\(frames.width)×\(frames.height)")
        #expect(frames.next()?.pixels.count == frames.width * frames.height * 3)
    }

    @Test func aTranslucentStrokeIsBlendedOnceWhereItsSegmentsOverlap() {
        var image = RasterImage(width: 40, height: 20, background: RGBA(rawValue: 0xFFFF_FFFF))
        let red = RGBA(red: 255, green: 0, blue: 0, alpha: 128)
        image.addSegment(from: (10, 10), to: (20, 10), radius: 3)
        image.addSegment(from: (18, 10), to: (30, 10), radius: 3)
        image.paintShape(red)
        let once = UInt8((255 * (1 - 128.0 / 255)).rounded())
        #expect(image.pixel(x: 19, y: 9) == (255, once, once), "the overlap is blended once")
        #expect(image.pixel(x: 12, y: 9) == (255, once, once))
        #expect(image.pixel(x: 19, y: 2) == (255, 255, 255), "far from the segment: untouched")
        #expect(image.pixel(x: 36, y: 9) == (255, 255, 255), "past the round end: untouched")
        // Painting again blends again: the next shape is a new one.
        image.addSegment(from: (10, 10), to: (12, 10), radius: 1)
        image.paintShape(red)
        #expect(image.pixel(x: 10, y: 9).green < once)
    }
}
