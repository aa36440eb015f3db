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

                Example:
                  [ "$(journal digest -C a)" = "$(journal digest -C b)" ] && echo converged
                """)

        @OptionGroup var options: JournalOptions
        @Flag(help: "Print one JSON object (keys: digest, events, points, strokes, visibleStrokes).")
        var json = false

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
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

        private func digestJSON(_ digest: String, _ drawing: Drawing, _ report: ReplayReport) -> String {
            var object = JSONObject()
            object.add("digest", digest)
            object.add("events", report.eventCount)
            object.add("points", report.pointCount)
            object.add("strokes", drawing.strokes.count)
            object.add("visibleStrokes", drawing.strokes.reduce(0) { $0 + ($1.visible ? 1 : 0) })
            return object.text + "\n"
        }
    }
}
