import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalReplay

extension JournalCommand {
    struct DigestCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "digest",
            abstract: "Print the SHA-256 digest of the reconstructed drawing.",
            discussion: """
                Two journals holding the same events print the same digest, whatever order the
                events arrived in.

                --at: the digest of the drawing as it was at a moment (docs/HISTORY.md), the
                same on every machine holding the same events.

                Examples:
                  [ "$(journal digest -C a)" = "$(journal digest -C b)" ] && echo converged
                  journal digest -C board --at -15m
                """)

        @OptionGroup var options: JournalOptions
        @OptionGroup var moment: MomentOption
        @Flag(help: "Print one JSON object (keys: digest, events, points, strokes, visibleStrokes).")
        var json = false

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                if let then = try moment.atMoment(journal) {
                    reportProblems(then.report)
                    let drawing = then.drawing
                    // Points are counted from the drawing then, not the journal.
                    let points = drawing.strokes.reduce(0) { $0 + $1.points.count }
                    Terminal.write(json ? digestJSON(DrawingSummary(drawing), events: then.events, points: points) : drawing.digest + "\n")
                    Terminal.flush()
                    return
                }
                if let cached = Replay.cachedDigest(journal) {
                    // The snapshot covers every event: its header holds the drawing's digest
                    // and counts, so nothing is decoded or hashed.
                    var report = ReplayReport()
                    report.problems = cached.problems
                    reportProblems(report)
                    Terminal.write(json ? digestJSON(cached.summary, events: cached.events, points: cached.points) : cached.digest + "\n")
                    Terminal.flush()
                    return
                }
                let (drawing, report) = Replay.load(journal)
                reportProblems(report)
                let summary = DrawingSummary(drawing, digest: report.digest)
                Terminal.write(json
                    ? digestJSON(summary, events: report.eventCount, points: report.pointCount)
                    : summary.digest + "\n")
                Terminal.flush()
            }
        }

        private func digestJSON(_ summary: DrawingSummary, events: Int, points: Int) -> String {
            var object = JSONObject()
            object.add("digest", summary.digest)
            object.add("events", events)
            object.add("points", points)
            object.add("strokes", summary.strokes)
            object.add("visibleStrokes", summary.visibleStrokes)
            return object.text + "\n"
        }
    }
}
