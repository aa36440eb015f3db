import ArgumentParser
import JournalFormat
import JournalIngest
import JournalReplay
import JournalStorage

extension JournalCommand {
    struct Log: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print events in total order as NDJSON, with their envelope.",
            discussion: """
                Each line is the event's canonical input line plus "replica", "seq", "lamport"
                and "time" (wall-clock ms), so a filtered log can be recorded into another journal.

                Example:
                  journal log -C board --stroke 6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88 --limit 5
                  journal log -C board | grep '"type":"undo"'
                """)

        @OptionGroup var options: JournalOptions
        @Option(help: "Only events of this replica (its 32 hex digits, or a unique prefix).")
        var replica: String?
        @Option(help: "Only events about this stroke (UUID).") var stroke: String?
        @Option(help: "Print at most this many events.") var limit: Int?

        func validate() throws {
            if let stroke, StrokeID(uuidString: stroke) == nil {
                throw ValidationError("--stroke must be a UUID, got \(stroke.debugDescription)")
            }
            if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
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
                let strokeFilter = stroke.flatMap { StrokeID(uuidString: $0) }
                var report = ReplayReport()
                report.problems = set.problems
                var events: [Event] = []
                Replay.forEachUniqueEvent(set, report: &report) { event in
                    if let replicaFilter, event.id.replica != replicaFilter { return }
                    if let strokeFilter, event.payload.stroke != strokeFilter { return }
                    events.append(event)
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
