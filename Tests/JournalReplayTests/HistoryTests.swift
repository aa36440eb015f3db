import JournalFormat
import JournalPlatform
@testable import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// The drawing at a moment (docs/HISTORY.md): what a moment means, the same on every machine
/// that holds the same events, and the session's spans.
@Suite struct HistoryTests {
    @Test func momentsAreReadAsDocumented() throws {
        #expect(try Moment(parsing: "5230") == .events(5230))
        #expect(try Moment(parsing: " now ") == .end)
        #expect(try Moment(parsing: "-15m") == .beforeEnd(milliseconds: 900_000))
        #expect(try Moment(parsing: "-2h") == .beforeEnd(milliseconds: 7_200_000))
        #expect(try Moment(parsing: "2026-11-26T10:05Z") == .wallTime(1_795_687_500_000))
        #expect(try Moment(parsing: "2026-11-26T10:05:30Z") == .wallTime(1_795_687_530_000))
        #expect(try Moment(parsing: "2026-11-26T11:05+01:00") == .wallTime(1_795_687_500_000))
        #expect(try Moment(parsing: "2026-11-26T05:05-05:00") == .wallTime(1_795_687_500_000))
        let today = WallClock.today()
        #expect(try Moment(parsing: "10:05") == .wallTime(WallClock.localMilliseconds(
            year: today.year, month: today.month, day: today.day, hour: 10, minute: 5, second: 0)!))
        #expect(try Moment(parsing: "2026-11-26") == .wallTime(WallClock.localMilliseconds(
            year: 2026, month: 11, day: 26, hour: 0, minute: 0, second: 0)!))
        for bad in ["", "10:61", "25:00", "2026-13-01", "2026-11-26T10", "-5x", "-m", "yesterday", "10:05+01:00", "99999999999999999999"] {
            #expect(throws: MomentError.self, "\(bad.debugDescription)") { try Moment(parsing: bad) }
        }
    }

    /// Two replicas, one whose wall clock runs a minute behind; a clear, a pause, more strokes.
    static func events() -> [Event] {
        var alice = EventGenerator(seed: 71)
        var bob = EventGenerator(seed: 72)
        bob.wallTime -= 60_000
        var events: [Event] = []
        for _ in 0..<3 {
            events += alice.stroke(points: 6)
            events += bob.stroke(points: 4)
        }
        events.append(alice.event(.clear, lamportJump: 40))
        // A pause of ten minutes on both clocks.
        alice.wallTime += 600_000
        bob.wallTime += 600_000
        events += bob.stroke(points: 5).map { event in var event = event; event.lamport += 100; return event }
        events += alice.stroke(points: 3)
        return events
    }

    /// Writes `events` as segments of at most `perSegment` events each, per replica.
    static func journal(at path: String, _ events: [Event], perSegment: Int) throws -> JournalDirectory {
        let journal = try JournalDirectory.create(at: path)
        for replica in Set(events.map(\.id.replica)) {
            let own = events.filter { $0.id.replica == replica }.sorted { $0.id.seq < $1.id.seq }
            try FileSystem.createDirectory(journal.replicaPath(replica))
            for start in stride(from: 0, to: own.count, by: perSegment) {
                let part = Array(own[start..<min(own.count, start + perSegment)])
                let bytes = SegmentEncoder.segment(replica: replica, events: part)
                let name = SegmentName(firstSeq: part.first!.id.seq, lastSeq: part.last!.id.seq, contents: bytes)
                let descriptor = try FileDescriptor.open(journal.segmentPath(replica, name), .createNew)
                try descriptor.writeAll(bytes)
                descriptor.close()
            }
        }
        return journal
    }

    @Test func theDrawingAtAMomentIsThePrefixOfTheTotalOrderOnEveryMachine() throws {
        let temp = TemporaryDirectory("history-moments")
        defer { temp.remove() }
        let events = Self.events()
        let one = History.load(try Self.journal(at: temp.path + "/one", events, perSegment: 1000))
        let other = History.load(try Self.journal(at: temp.path + "/other", events.reversed(), perSegment: 3))
        #expect(one.events.count == events.count)
        #expect(one.events == events.sorted { $0.orderKey < $1.orderKey })
        #expect(one.events == other.events)

        // At the end: what replay reconstructs, digest and all.
        let (now, _) = Replay.load(JournalDirectory(root: temp.path + "/one"))
        #expect(one.drawing(at: .end).digest == now.digest)
        #expect(one.drawing(at: .events(0)).strokes.isEmpty)

        // A time stands for as many events as were made by then: bob's slow clock moves the
        // cut by bob's events only.
        let times = events.map(\.wallTime).sorted()
        for time in [times[0] - 1, times[5], times[times.count / 2], times.last!] {
            let expected = events.filter { $0.wallTime <= time }.count
            #expect(one.count(at: .wallTime(time)) == expected)
            #expect(one.count(at: .wallTime(time)) == other.count(at: .wallTime(time)))
            #expect(one.drawing(at: .wallTime(time)).digest == other.drawing(at: .wallTime(time)).digest)
        }
        #expect(one.count(at: .beforeEnd(milliseconds: 0)) == events.count)
        #expect(one.count(at: .beforeEnd(milliseconds: 10_000_000)) == 0)
        #expect(one.count(at: .events(10_000)) == events.count)

        // Just before the clear every stroke drawn so far shows; at it, none does.
        let clear = one.events.firstIndex { $0.payload == .clear }! + 1
        #expect(one.drawing(at: .events(clear - 1)).visibleStrokes.count == 6)
        #expect(one.drawing(at: .events(clear)).visibleStrokes.isEmpty)
        #expect(one.events(after: .events(clear - 1), through: .events(clear)).map(\.payload) == [.clear])
        #expect(one.events(after: .events(9), through: .events(3)).isEmpty)
    }

    /// `Replay.drawing(at:)` stops the ordered merge at the moment instead of sorting every
    /// event: the same drawing as the history's prefix, at every count and time, whatever the
    /// segment layout; and when a replica's clocks fall (a late event that sorts early), the
    /// fallback still puts that event where the total order does.
    @Test func theStoppedMergeGivesTheHistorysDrawingAtEveryMoment() throws {
        let temp = TemporaryDirectory("history-merge")
        defer { temp.remove() }
        var events = Self.events()
        var falling = events
        let late = falling.lastIndex { $0.id.replica == falling[0].id.replica }!
        falling[late].lamport = 1
        for (name, set, layout) in [("ordered", events, 1000), ("ordered-small", events.reversed(), 3), ("falling", falling, 4)] {
            let journal = try Self.journal(at: temp.path + "/" + name, set, perSegment: layout)
            let history = History.load(journal)
            let segments = SegmentSet.load(journal)
            for count in 0...(set.count + 1) {
                let then = Replay.drawing(ofFirst: count, segments)
                #expect(then.events == min(count, set.count), "\(name) at \(count)")
                #expect(then.drawing.digest == history.drawing(ofFirst: count).digest, "\(name) at \(count)")
            }
            let times = set.map(\.wallTime).sorted()
            for moment in [Moment.wallTime(times[0] - 1), .wallTime(times[7]), .wallTime(times[times.count / 2]), .beforeEnd(milliseconds: 60_000), .end] {
                let then = Replay.drawing(at: moment, in: journal)
                #expect(then.events == history.count(at: moment), "\(name) at \(moment)")
                #expect(then.drawing.digest == history.drawing(at: moment).digest, "\(name) at \(moment)")
            }
        }
        events = falling.sorted { $0.orderKey < $1.orderKey }
        #expect(events[0].lamport == 1, "the falling event sorts first and so is in every prefix")
    }

    @Test func theSessionIsCutIntoSpansAtPauses() throws {
        let temp = TemporaryDirectory("history-spans")
        defer { temp.remove() }
        let history = History.load(try Self.journal(at: temp.path + "/j", Self.events(), perSegment: 7))
        let spans = history.spans(idleGap: 300_000)
        #expect(spans.count == 2, "\(spans)")
        guard spans.count == 2 else { return }
        #expect(spans[0].firstEvent == 1 && spans[1].lastEvent == history.events.count)
        #expect(spans[0].lastEvent + 1 == spans[1].firstEvent)
        #expect(spans[0].clears.count == 1 && spans[1].clears.isEmpty)
        #expect(spans[0].replicas.map(\.strokes) == [3, 3])
        #expect(spans[0].replicas.reduce(0) { $0 + $1.points } == 30)
        #expect(spans[1].replicas.reduce(0) { $0 + $1.points } == 8)
        #expect(history.spans(idleGap: 100_000_000).count == 1)
    }

    /// Restoring appends events after which the drawing shows what it showed at the moment:
    /// strokes since erased, hidden ones brought back, strokes that grew since copied as they were.
    @Test func aRestoreMakesNowLookAsTheMomentDidAndIsUndoneByRestoringAgain() throws {
        let temp = TemporaryDirectory("history-restore")
        defer { temp.remove() }
        let events = Self.events()
        let journal = try Self.journal(at: temp.path + "/j", events, perSegment: 5)
        let history = History.load(journal)
        let clear = history.events.firstIndex { $0.payload == .clear }! + 1
        for (index, moment) in [Moment.events(clear - 1), .events(3), .events(0), .events(clear + 2), .end].enumerated() {
            let copy = temp.path + "/restore-\(index)"
            let target = try Self.journal(at: copy, events, perSegment: 5)
            let before = History.load(target)
            let then = before.drawing(at: moment)
            let plan = RestorePlan(now: before.drawing(at: .end), then: then)
            let writer = try JournalWriter(directory: target)
            for payload in plan.payloads { _ = try writer.append(payload) }
            try writer.close()
            let after = History.load(target)
            #expect(after.drawing(at: .end).visibleMarks == then.visibleMarks, "restore to \(moment)")
            #expect(after.events.count == events.count + plan.payloads.count)
            // Nothing of the history is lost: every moment before the restore shows as before.
            #expect(after.drawing(at: .events(events.count)) == before.drawing(at: .end))
            // And the restore is undone by restoring to the moment before it.
            let undo = RestorePlan(now: after.drawing(at: .end), then: after.drawing(at: .events(events.count)))
            #expect(undo.copied.isEmpty, "undoing a restore brings back the same strokes")
            switch moment {
            case .events(clear - 1):
                #expect(plan.shown.count == 6 && plan.hidden.count == 2 && plan.copied.isEmpty, "\(plan.shown.count) \(plan.hidden.count) \(plan.copied.count)")
            case .events(3):
                #expect(plan.copied.count == 2, "the two strokes begun by then grew since")
            case .end:
                #expect(plan.isEmpty)
            default:
                break
            }
        }
    }
}
