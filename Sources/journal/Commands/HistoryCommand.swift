import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage

extension JournalCommand {
    struct HistoryCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "history",
            abstract: "List the session's activity, to find a moment: who drew when, pauses, clears.",
            discussion: """
                The journal's events in total order, cut into spans wherever nobody drew for
                --gap or longer. Each span gives its times and event numbers, the strokes and
                points each replica drew, its clears (with the moment just before each) and
                how many strokes were taken back or brought back. Any time or event number it
                prints is a moment for --at, --since and --until (docs/HISTORY.md).

                Examples:
                  journal history -C board
                  journal history -C board --gap 30s --json | jq '.spans[].clears'
                  journal render before-clear.svg -C board --at 5099
                """)

        @OptionGroup var options: JournalOptions
        @Option(parsing: .unconditional, help: ArgumentHelp("A pause at least this long starts a new span: 90s, 5m, 1h.", valueName: "duration"))
        var gap = "5m"
        @Flag(help: "Print one JSON object: events, and spans with times in ms since 1970.") var json = false

        func validate() throws { _ = try gapMilliseconds() }

        private func gapMilliseconds() throws -> Int64 {
            guard case .beforeEnd(let milliseconds) = try MomentOption.parse("-" + gap, option: "--gap"), milliseconds > 0 else {
                throw ValidationError("--gap must be a positive duration: 90s, 5m, 1h")
            }
            return milliseconds
        }

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let history = History.load(journal)
                reportProblems(history.report)
                let gap = try gapMilliseconds()
                let spans = history.spans(idleGap: gap)
                Terminal.write(json ? Self.json(spans, events: history.events.count, people: history.people)
                                    : Self.text(spans, events: history.events.count, gap: gap, people: history.people))
                Terminal.flush()
            }
        }

        static func json(_ spans: [History.Span], events: Int, people: [ReplicaID: String] = [:]) -> String {
            var object = JSONObject()
            object.add("events", events)
            object.add("spans", objects: spans.map { span in
                var item = JSONObject()
                item.add("firstEvent", span.firstEvent)
                item.add("lastEvent", span.lastEvent)
                item.add("from", span.from)
                item.add("to", span.to)
                item.add("replicas", objects: span.replicas.map { activity in
                    var entry = JSONObject()
                    entry.add("replica", activity.replica.hex)
                    if let person = people[activity.replica] { entry.add("label", person) }
                    entry.add("strokes", activity.strokes)
                    entry.add("points", activity.points)
                    return entry
                })
                item.add("clears", objects: span.clears.map { mark in
                    var entry = JSONObject()
                    entry.add("event", mark.event)
                    entry.add("time", mark.wallTime)
                    entry.add("replica", mark.replica.hex)
                    if let person = people[mark.replica] { entry.add("label", person) }
                    return entry
                })
                item.add("hidden", span.hidden)
                item.add("shown", span.shown)
                return item
            })
            return object.text + "\n"
        }

        static func text(_ spans: [History.Span], events: Int, gap: Int64, people: [ReplicaID: String] = [:]) -> String {
            // A member's label (the board's membership) names the person; the replica's id otherwise.
            func who(_ replica: ReplicaID) -> String { people[replica].map { "\($0) (\(replica.hex.prefix(8)))" } ?? String(replica.hex.prefix(8)) }
            guard !spans.isEmpty else { return "no events yet\n" }
            var lines = ["\(Wording.counted(events, "event")) in \(Wording.counted(spans.count, "span")) of drawing (a pause of \(duration(gap)) or more starts a new one)", ""]
            for (index, span) in spans.enumerated() {
                if index > 0 { lines.append("    … \(duration(span.from - spans[index - 1].to)) without a new event") }
                let from = WallClock.localDescription(span.from), to = WallClock.localDescription(span.to)
                let sameDay = from.prefix(10) == to.prefix(10)
                lines.append("\(index + 1). \(from) → \(sameDay ? String(to.dropFirst(11)) : to) (\(duration(span.to - span.from)))  events \(span.firstEvent)–\(span.lastEvent)")
                for activity in span.replicas where activity.points > 0 || activity.strokes > 0 {
                    lines.append("     \(who(activity.replica))  \(Wording.counted(activity.strokes, "stroke")) begun, \(Wording.counted(activity.points, "point"))")
                }
                for mark in span.clears {
                    lines.append("     clear: event \(mark.event) at \(WallClock.localDescription(mark.wallTime).dropFirst(11)) by \(who(mark.replica)); the board before it: --at \(mark.event - 1)")
                }
                if span.hidden > 0 || span.shown > 0 {
                    lines.append("     \(span.hidden) taken back (undo, erase), \(span.shown) brought back (redo)")
                }
            }
            return lines.joined(separator: "\n") + "\n"
        }

        static func duration(_ milliseconds: Int64) -> String {
            let seconds = milliseconds / 1000
            if seconds < 60 { return "\(seconds) s" }
            if seconds < 3600 { return "\(seconds / 60) min" + (seconds % 60 == 0 ? "" : " \(seconds % 60) s") }
            return "\(seconds / 3600) h \((seconds % 3600) / 60) min"
        }
    }
}
