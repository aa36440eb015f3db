import JournalFormat
import JournalStorage

/// A journal's events in total order (invariant 4), to answer "what did the drawing look like
/// then": the drawing at any `Moment`, the events between two moments, and the session's
/// activity (docs/HISTORY.md).
///
/// It holds every distinct event (dedup and fork resolution as replay does them, so the
/// drawing at `.end` is `Replay.load`'s, digest and all).
public struct History: Sendable {
    /// Every distinct event, in total order.
    public let events: [Event]
    /// What replay reported on the way (problems, counts).
    public let report: ReplayReport
    public let replicas: [ReplicaID]
    /// Who draws as each replica, by the label the board's membership gives its key (empty
    /// for an open board or an unlabelled key).
    public private(set) var people: [ReplicaID: String] = [:]
    /// The events' wall times: how many events a wall-clock moment stands for.
    private let wallTimes: WallTimes

    public init(_ set: SegmentSet) {
        var report = ReplayReport()
        report.problems = set.problems
        var events: [Event] = []
        Replay.forEachUniqueEvent(set, report: &report) { events.append($0) }
        events.sort { $0.orderKey < $1.orderKey }
        self.events = events
        self.report = report
        replicas = set.replicas
        wallTimes = WallTimes(events.map(\.wallTime))
        for member in (set.membership?.members).map({ Array($0.values) }) ?? [] where !member.label.isEmpty {
            people[member.replica] = member.label
        }
    }

    public static func load(_ directory: JournalDirectory) -> History { History(SegmentSet.load(directory)) }

    /// The history of events an app holds in memory: distinct by id (the first of a repeated
    /// id is kept; a journal's replay also resolves forks, which this does not).
    public init(events: some Sequence<Event>) {
        var seen = Set<EventID>()
        var distinct = events.filter { seen.insert($0.id).inserted }
        distinct.sort { $0.orderKey < $1.orderKey }
        self.events = distinct
        var report = ReplayReport()
        for event in distinct { report.count(event.lamport, isPoint: event.payload.kind == .point) }
        self.report = report
        replicas = Array(Set(distinct.map(\.id.replica))).sorted()
        wallTimes = WallTimes(distinct.map(\.wallTime))
    }

    /// The newest event's wall time (nil: no event).
    public var lastWallTime: Int64? { wallTimes.last }

    /// How many events, from the first in total order, the drawing at `moment` holds.
    public func count(at moment: Moment) -> Int {
        if case .events(let count) = moment { return min(max(count, 0), events.count) }
        return wallTimes.count(at: moment)
    }

    /// The drawing at `moment`.
    public func drawing(at moment: Moment) -> Drawing { drawing(ofFirst: count(at: moment)) }

    /// The drawing of the first `count` events of the total order.
    public func drawing(ofFirst count: Int) -> Drawing {
        var fold = Fold(replicas: replicas)
        for event in events.prefix(count) { fold.apply(event) }
        return fold.finish()
    }

    /// The events after `since` up to and including `until`: positions (count(since), count(until)].
    public func events(after since: Moment, through until: Moment) -> ArraySlice<Event> {
        let first = count(at: since), last = count(at: until)
        return first < last ? events[first..<last] : []
    }
}

// MARK: Activity

extension History {
    /// A stretch of drawing without a pause of the idle gap or more.
    public struct Span: Sendable, Equatable {
        /// Positions of its first and last events (1-based, as `journal log` numbers them).
        public var firstEvent: Int
        public var lastEvent: Int
        /// The earliest and latest wall times of its events.
        public var from: Int64
        public var to: Int64
        /// Per replica, in replica order: strokes begun (first point in this span) and points.
        public var replicas: [ReplicaActivity]
        /// Clears, each with its position and wall time.
        public var clears: [Mark]
        /// Undo and erase events (strokes taken back), redo events.
        public var hidden: Int
        public var shown: Int
    }

    public struct ReplicaActivity: Sendable, Equatable {
        public var replica: ReplicaID
        public var strokes: Int
        public var points: Int
    }

    public struct Mark: Sendable, Equatable {
        public var event: Int
        public var wallTime: Int64
        public var replica: ReplicaID
    }

    /// The session as spans of activity separated by pauses of at least `idleGap`
    /// milliseconds, in total order. A pause is measured from the latest wall time seen so far,
    /// so a machine whose clock is behind does not split a span; one whose clock is behind by
    /// more than `idleGap` shows a pause where the others' events first follow its own.
    public func spans(idleGap: Int64) -> [Span] {
        var spans: [Span] = []
        var current: Span?
        var perReplica: [ReplicaID: ReplicaActivity] = [:]
        var begun = Set<StrokeID>()
        func close() {
            guard var span = current else { return }
            span.replicas = perReplica.values.sorted { $0.replica < $1.replica }
            spans.append(span)
            current = nil
            perReplica = [:]
        }
        for (index, event) in events.enumerated() {
            if let span = current, event.wallTime - span.to >= idleGap { close() }
            if current == nil {
                current = Span(firstEvent: index + 1, lastEvent: index + 1, from: event.wallTime, to: event.wallTime,
                               replicas: [], clears: [], hidden: 0, shown: 0)
            }
            current!.lastEvent = index + 1
            current!.from = min(current!.from, event.wallTime)
            current!.to = max(current!.to, event.wallTime)
            var activity = perReplica[event.id.replica] ?? ReplicaActivity(replica: event.id.replica, strokes: 0, points: 0)
            switch event.payload {
            case .point(let sample):
                activity.points += 1
                if begun.insert(sample.stroke).inserted { activity.strokes += 1 }
            case .clear:
                current!.clears.append(Mark(event: index + 1, wallTime: event.wallTime, replica: event.id.replica))
            case .undo, .erase:
                current!.hidden += 1
            case .redo:
                current!.shown += 1
            case .end:
                break
            }
            perReplica[event.id.replica] = activity
        }
        close()
        return spans
    }
}
