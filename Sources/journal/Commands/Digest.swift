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

                --digest-version 1: the digest releases before digest version 2 printed
                (docs/FORMAT.md §9.3), to compare with a machine that runs one; slower, as it
                hashes the whole drawing in one pass.

                Examples:
                  [ "$(journal digest -C a)" = "$(journal digest -C b)" ] && echo converged
                  journal digest -C board --at -15m
                  journal digest -C board --digest-version 1
                """)

        @OptionGroup var options: JournalOptions
        @OptionGroup var moment: MomentOption
        @Flag(help: "Print one JSON object (keys: digest, events, points, strokes, visibleStrokes).")
        var json = false
        @Option(help: "Which digest of docs/FORMAT.md §9.3 to print: 2, or 1 as earlier releases did.")
        var digestVersion = 2

        func validate() throws {
            guard digestVersion == 1 || digestVersion == 2 else {
                throw ValidationError("--digest-version \(digestVersion): there are digest versions 1 and 2")
            }
        }

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                if digestVersion == 1 {
                    let (drawing, report, events) = try moment.atMoment(journal).map { ($0.drawing, $0.report, $0.events) }
                        ?? { let (drawing, report) = Replay.load(journal); return (drawing, report, report.eventCount) }()
                    reportProblems(report)
                    let summary = DrawingSummary(drawing, digest: drawing.digestVersion1)
                    Terminal.write(json ? digestJSON(summary, events: events, points: drawing.pointCount) : summary.digest + "\n")
                    Terminal.flush()
                    return
                }
                // Now: the snapshot's header holds the drawing's digest and counts when it covers
                // every event, so nothing is decoded or hashed (`Replay.summary(at:in:)`).
                let then = try moment.summaryAtMoment(journal) ?? Replay.summary(at: .end, in: journal)
                reportProblems(then.report)
                // Points are counted from the drawing then, not the journal.
                Terminal.write(json ? digestJSON(then.summary, events: then.events, points: then.points) : then.summary.digest + "\n")
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
