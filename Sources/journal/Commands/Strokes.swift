import ArgumentParser
import JournalFormat
import JournalIngest
import JournalReplay
import JournalStorage

extension JournalCommand {
    struct Strokes: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the reconstructed drawing as JSON.",
            discussion: """
                Output, one JSON object:
                  {"strokes":[{"id","color","width",
                               "points":[{"x","y","pressure"?,"t"?}]}],
                   "digest":"…"}
                Visible strokes only, in z-order; --all adds hidden ones with a
                "visible" flag.

                Example:
                  journal strokes -C board | jq '.strokes | length'
                """)

        @OptionGroup var options: JournalOptions
        @Flag(help: "Include hidden (undone, erased, cleared) strokes, with a \"visible\" flag.")
        var all = false
        @Flag(help: "Accepted for symmetry: the output is already one JSON object.")
        var json = false

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let (drawing, report) = Replay.load(journal)
                reportProblems(report)
                Terminal.write("{\"strokes\":[")
                var first = true
                for stroke in drawing.strokes where all || stroke.visible {
                    Terminal.write(first ? "\n" : ",\n")
                    first = false
                    Terminal.write(DrawingJSON.stroke(stroke, includeVisibility: all))
                }
                Terminal.write("\n],\"digest\":\"\(drawing.digest)\"}\n")
                Terminal.flush()
            }
        }
    }
}

/// JSON text of reconstructed strokes; keys in a fixed order so output is stable.
enum DrawingJSON {
    static func stroke(_ stroke: Drawing.Stroke, includeVisibility: Bool) -> String {
        var text = "{\"id\":\"\(stroke.id.uuidString)\",\"color\":\"\(stroke.style.color.hexString)\","
        text += "\"width\":\(CanonicalJSON.number(stroke.style.width))"
        if includeVisibility { text += ",\"visible\":\(stroke.visible)" }
        text += ",\"ended\":\(stroke.ended),\"points\":["
        for (index, point) in stroke.points.enumerated() {
            if index > 0 { text += "," }
            text += "{\"x\":\(CanonicalJSON.number(point.x)),\"y\":\(CanonicalJSON.number(point.y))"
            if let pressure = point.pressure { text += ",\"pressure\":\(CanonicalJSON.number(pressure))" }
            if let t = point.t { text += ",\"t\":\(CanonicalJSON.number(t))" }
            if stroke.pointStyles != nil {
                let style = stroke.style(ofPoint: index)
                text += ",\"color\":\"\(style.color.hexString)\",\"width\":\(CanonicalJSON.number(style.width))"
            }
            text += "}"
        }
        return text + "]}"
    }
}

/// Problems go to stderr so that stdout stays machine-readable.
func reportProblems(_ report: ReplayReport) {
    for problem in report.problems where problem.kind != .tornTail {
        Terminal.standardError("journal: warning: \(problem)\n")
    }
    if let snapshot = report.snapshotWritten {
        Terminal.standardError("journal: wrote a snapshot of \(counted(snapshot.events, "event")) (\(counted(snapshot.bytes, "byte"))) to \(snapshot.path), so that the next open replays less; delete it any time\n")
    }
}
