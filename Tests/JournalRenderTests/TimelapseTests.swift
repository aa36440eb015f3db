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
