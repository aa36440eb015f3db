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
                    Terminal.write(json ? digestJSON(drawing.digest, drawing, then.report, eventsAtMoment: then.events) : drawing.digest + "\n")
                    Terminal.flush()
                    return
                }
                if !json, let cached = Replay.cachedDigest(journal) {
                    // The snapshot covers every event: its digest is the drawing's, unhashed.
                    var report = ReplayReport()
                    report.problems = cached.problems
                    reportProblems(report)
                    Terminal.write(cached.digest + "\n")
                    Terminal.flush()
                    return
                }
                let (drawing, report) = Replay.load(journal)
                reportProblems(report)
                let digest = report.digest ?? drawing.digest
                Terminal.write(json
                    ? digestJSON(digest, drawing, report)
                    : digest + "\n")
                Terminal.flush()
            }
        }

        /// `eventsAtMoment`: with --at, the events the drawing then holds (points are counted
        /// from the drawing then, not the journal).
        private func digestJSON(_ digest: String, _ drawing: Drawing, _ report: ReplayReport, eventsAtMoment: Int? = nil) -> String {
            var object = JSONObject()
            object.add("digest", digest)
            object.add("events", eventsAtMoment ?? report.eventCount)
            object.add("points", eventsAtMoment == nil ? report.pointCount : drawing.strokes.reduce(0) { $0 + $1.points.count })
            object.add("strokes", drawing.strokes.count)
            object.add("visibleStrokes", drawing.strokes.reduce(0) { $0 + ($1.visible ? 1 : 0) })
            return object.text + "\n"
        }
    }
}
