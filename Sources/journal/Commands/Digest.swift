import ArgumentParser
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
                let (drawing, report) = Replay.load(try options.open())
                reportProblems(report)
                Terminal.write(json
                    ? digestJSON(drawing, report)
                    : drawing.digest + "\n")
                Terminal.flush()
            }
        }

        private func digestJSON(_ drawing: Drawing, _ report: ReplayReport) -> String {
            var object = JSONObject()
            object.add("digest", drawing.digest)
            object.add("events", report.eventCount)
            object.add("points", report.pointCount)
            object.add("strokes", drawing.strokes.count)
            object.add("visibleStrokes", drawing.visibleStrokes.count)
            return object.text + "\n"
        }
    }
}
