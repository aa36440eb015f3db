import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalIngest
import JournalReplay
import JournalStorage

extension JournalCommand {
    struct Log: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "log",
            abstract: "Print events in total order as NDJSON, with their envelope.",
            discussion: """
                Each line is the event's canonical input line plus "replica", "seq", "lamport"
                and "time" (wall-clock ms), so a filtered log can be recorded into another journal.
                --since and --until take moments (docs/HISTORY.md): the events after the first
                and up to the second, in total order; 'journal history' helps find them.

                Examples:
                  journal log -C board --stroke 6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88 --limit 5
                  journal log -C board | grep '"type":"undo"'
                  journal log -C board --since 10:00 --until 10:05
                """)

        @OptionGroup var options: JournalOptions
        @Option(help: "Only events of this replica (its 32 hex digits, or a unique prefix).")
        var replica: String?
        @Option(help: "Only events about this stroke (its UUID, or a unique prefix of it).")
        var stroke: String?
        @Option(help: "Print at most this many events.") var limit: Int?
        @Option(parsing: .unconditional, help: ArgumentHelp("Only events after this moment: a count of events, 10:05, 2026-11-26T10:05, -15m.", valueName: "moment"))
        var since: String?
        @Option(parsing: .unconditional, help: ArgumentHelp("Only events up to this moment (included).", valueName: "moment"))
        var until: String?
        @Flag(help: "Accepted for symmetry: the output is already JSON, one event per line.")
        var json = false

        func validate() throws {
            if let stroke, stroke.isEmpty || !stroke.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                throw ValidationError("--stroke must be a UUID or the start of one, got \(stroke.debugDescription)")
            }
            if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
            if let since { _ = try MomentOption.parse(since, option: "--since") }
            if let until { _ = try MomentOption.parse(until, option: "--until") }
        }

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let set = SegmentSet.load(journal)
                let replicaFilter = try replica.map { prefix -> ReplicaID in
                    let matches = set.replicas.filter { $0.hex.hasPrefix(prefix.lowercased()) }
                    guard matches.count == 1 else {
                        throw CLIError(matches.isEmpty
                            ? "no replica in this journal starts with \(prefix.debugDescription)"
                            : "\(prefix.debugDescription) matches \(matches.count) replicas; give more digits", code: 64)
                    }
                    return matches[0]
                }
                // A full UUID in any case; a prefix must name exactly one stroke of the journal.
                let strokePrefix = stroke?.uppercased()
                var matchedStrokes = Set<StrokeID>()
                var report = ReplayReport()
                report.problems = set.problems
                var events: [Event] = []
                let keep = { (event: Event) in
                    if let replicaFilter, event.id.replica != replicaFilter { return }
                    if let strokePrefix {
                        guard let id = event.payload.stroke, id.uuidString.hasPrefix(strokePrefix) else { return }
                        matchedStrokes.insert(id)
                    }
                    events.append(event)
                }
                if since != nil || until != nil {
                    // Moments count events of the whole journal, before any filter.
                    let history = History(set)
                    report = history.report
                    let from = try since.map { try MomentOption.parse($0, option: "--since") } ?? .events(0)
                    let to = try until.map { try MomentOption.parse($0, option: "--until") } ?? .end
                    for event in history.events(after: from, through: to) { keep(event) }
                } else {
                    Replay.forEachUniqueEvent(set, report: &report, keep)
                }
                if let stroke, matchedStrokes.count != 1 {
                    throw CLIError(matchedStrokes.isEmpty
                        ? "no stroke in this journal starts with \(stroke.debugDescription)"
                        : "\(stroke.debugDescription) matches \(matchedStrokes.count) strokes; give more digits", code: 64)
                }
                reportProblems(report)
                events.sort { $0.orderKey < $1.orderKey }
                for event in events.prefix(limit ?? Int.max) {
                    Terminal.write(CanonicalJSON.line(for: event))
                    Terminal.write("\n")
                }
                Terminal.flush()
            }
        }
    }
}
