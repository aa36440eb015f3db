import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalRender
import JournalReplay

extension JournalCommand {
    struct TimelapseCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "timelapse",
            abstract: "Write the session as an animated SVG: strokes appear as drawn, and go when undone or cleared.",
            discussion: """
                The animation plays the events from --from to --to in --duration seconds, each
                event taking the same share (pauses take no time). Strokes are drawn point by
                point, and hidden and shown again as undo, erase, clear and redo did. Any
                browser plays it; nothing else is needed. Video (MP4, WebM, GIF) is not built
                yet. docs/HISTORY.md says what a moment is.

                Examples:
                  journal timelapse session.svg -C board
                  journal timelapse last-hour.svg -C board --from -1h --duration 10
                """)

        @OptionGroup var options: JournalOptions
        @Argument(help: "The file to write (.svg; '-' for standard output).") var output: String
        @Option(parsing: .unconditional, help: ArgumentHelp("Start at this moment (what was drawn before shows from the start).", valueName: "moment"))
        var from: String?
        @Option(parsing: .unconditional, help: ArgumentHelp("End at this moment.", valueName: "moment"))
        var to: String?
        @Option(help: "Seconds the animation lasts.") var duration: Double = 20
        @Option(help: "Picture width in pixels.") var width: Double = 1000

        func validate() throws {
            let lowered = output.lowercased()
            if output != "-" && !lowered.hasSuffix(".svg") {
                throw ValidationError("\(output.debugDescription): a time-lapse is written as .svg (video through ffmpeg is not built yet)")
            }
            if let from { _ = try MomentOption.parse(from, option: "--from") }
            if let to { _ = try MomentOption.parse(to, option: "--to") }
            guard duration > 0, duration.isFinite, duration <= 86_400 else { throw ValidationError("--duration must be more than 0 and at most 86400 seconds") }
            guard width >= 1, width <= 100_000 else { throw ValidationError("--width must be from 1 to 100000 pixels") }
        }

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let history = History.load(journal)
                reportProblems(history.report)
                let start = try from.map { history.count(at: try MomentOption.parse($0, option: "--from")) } ?? 0
                let end = try to.map { history.count(at: try MomentOption.parse($0, option: "--to")) } ?? history.events.count
                guard start < end else {
                    throw CLIError("no events between --from and --to (events \(start + 1) to \(end)): nothing to animate", code: 64)
                }
                let timelapse = Timelapse(history, start: start, end: end)
                let text = timelapse.svg(width: width, duration: duration)
                if output == "-" {
                    Terminal.write(text)
                } else {
                    try writeImage(Array(text.utf8), to: output)
                    Terminal.write("wrote \(output): events \(start + 1) to \(end) in \(duration) s, \(text.utf8.count) bytes\n")
                }
                Terminal.flush()
            }
        }
    }
}
