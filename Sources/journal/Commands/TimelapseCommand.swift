import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalPlatform
import JournalRender
import JournalReplay

extension JournalCommand {
    struct TimelapseCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "timelapse",
            abstract: "Write the session as a time-lapse: an animated SVG, or a video (MP4, WebM, GIF) through ffmpeg.",
            discussion: """
                The time-lapse plays the events from --from to --to in --duration seconds, each
                event taking the same share (pauses take no time). With --speed it plays them
                as they were drawn, by their wall times, that many times faster, with every
                pause longer than --max-idle seconds shortened to it. Strokes are drawn point
                by point, and hidden and shown again as undo, erase, clear and redo did.

                An .svg is animated with SMIL: any browser plays it and nothing else is needed.
                An .mp4, .webm or .gif is encoded by ffmpeg (apt-get install ffmpeg), which
                this command runs: --fps frames a second, drawn here and handed to it raw. The
                video is written under a temporary name and renamed when ffmpeg succeeds. A
                progress line shows on a terminal. docs/HISTORY.md says what a moment is.

                Examples:
                  journal timelapse session.svg -C board
                  journal timelapse last-hour.svg -C board --from -1h --duration 10
                  journal timelapse session.mp4 -C board --duration 30 --fps 30 --width 1280
                  journal timelapse lesson.webm -C board --speed 4 --size 1920x1080
                """)

        @OptionGroup var options: JournalOptions
        @Argument(help: "The file to write: .svg ('-' for standard output), .mp4, .webm or .gif.") var output: String
        @Option(parsing: .unconditional, help: ArgumentHelp("Start at this moment (what was drawn before shows from the start).", valueName: "moment"))
        var from: String?
        @Option(parsing: .unconditional, help: ArgumentHelp("End at this moment.", valueName: "moment"))
        var to: String?
        @Option(help: "Seconds the time-lapse lasts, each event the same share (default: 20).") var duration: Double?
        @Option(help: "Play as drawn, by the events' wall times, this many times faster (instead of --duration).")
        var speed: Double?
        @Option(name: .customLong("max-idle"), help: "With --speed: seconds of drawing a pause is shortened to.")
        var maxIdle: Double = 2
        @Option(help: "Picture width in pixels (default: 1000 for an SVG, 1280 for a video; a video's is made even).") var width: Double?
        @Option(help: ArgumentHelp("The picture fits in this box, proportions kept (instead of --width).", valueName: "WxH"))
        var size: String?
        @Option(help: "Video only: frames a second.") var fps: Int = 30

        var isVideo: Bool { FFmpeg.container(of: output) != nil }

        func validate() throws {
            let lowered = output.lowercased()
            if output != "-" && !lowered.hasSuffix(".svg") && !isVideo {
                throw ValidationError("\(output.debugDescription): a time-lapse is written as .svg, .mp4, .webm or .gif")
            }
            if let from { _ = try MomentOption.parse(from, option: "--from") }
            if let to { _ = try MomentOption.parse(to, option: "--to") }
            if let duration { try Self.checkDuration(duration, fps: isVideo ? fps : nil) }
            if let speed {
                guard duration == nil else { throw ValidationError("give --duration or --speed, not both") }
                guard speed > 0, speed.isFinite, speed <= 1_000_000 else { throw ValidationError("--speed must be more than 0 and at most 1000000") }
            }
            guard maxIdle > 0, maxIdle.isFinite, maxIdle <= 86_400 else { throw ValidationError("--max-idle must be more than 0 and at most 86400 seconds") }
            if let width { try Self.checkWidth(width, video: isVideo, option: "--width") }
            if let size {
                guard width == nil else { throw ValidationError("give --width or --size, not both") }
                let box = try Self.parseSize(size)
                try Self.checkWidth(box.width, video: isVideo, option: "--size")
                try Self.checkWidth(box.height, video: isVideo, option: "--size")
            }
            guard (1...240).contains(fps) else { throw ValidationError("--fps must be from 1 to 240") }
        }

        static func checkDuration(_ duration: Double, fps: Int?) throws {
            guard duration > 0, duration.isFinite, duration <= 86_400 else { throw ValidationError("--duration must be more than 0 and at most 86400 seconds") }
            if let fps, duration * Double(fps) > 1_000_000 { throw ValidationError("--duration × --fps must be at most 1000000 frames") }
        }

        static func checkWidth(_ pixels: Double, video: Bool, option: String) throws {
            guard pixels >= 1, pixels <= 100_000 else { throw ValidationError("\(option) must be from 1 to 100000 pixels a side") }
            if video, pixels > 7680 { throw ValidationError("\(option) of a video must be at most 7680 pixels a side") }
        }

        /// `1280x720` (or `1280×720`): a box in pixels.
        static func parseSize(_ text: String) throws -> (width: Double, height: Double) {
            let parts = text.lowercased().split(whereSeparator: { $0 == "x" || $0 == "×" })
            guard parts.count == 2, let width = Double(parts[0]), let height = Double(parts[1]) else {
                throw ValidationError("--size \(text.debugDescription): write the box as WIDTHxHEIGHT, as in 1280x720")
            }
            return (width, height)
        }

        func run() async throws {
            try await reportingErrors {
                let journal = try options.open()
                let history = History.load(journal)
                reportProblems(history.report)
                let start = try from.map { history.count(at: try MomentOption.parse($0, option: "--from")) } ?? 0
                let end = try to.map { history.count(at: try MomentOption.parse($0, option: "--to")) } ?? history.events.count
                guard start < end else {
                    throw CLIError("no events between --from and --to (events \(start + 1) to \(end)): nothing to animate", code: 64)
                }
                let timelapse = Timelapse(history, start: start, end: end)
                var clock: TimelapseClock?
                var duration = self.duration ?? 20
                if let speed {
                    let drawn = TimelapseClock.drawn(wallTimes: Timelapse.wallTimes(history, start: start, end: end),
                                                     maxIdle: Int64((maxIdle * 1000).rounded()))
                    guard drawn.milliseconds > 0 else {
                        throw CLIError("events \(start + 1) to \(end) all bear one wall time: nothing to play --speed times faster (give --duration)", code: 64)
                    }
                    clock = drawn.clock
                    duration = Double(drawn.milliseconds) / 1000 / speed
                    do { try Self.checkDuration(duration, fps: isVideo ? fps : nil) } catch {
                        throw CLIError("--speed \(speed) makes \(formatSeconds(duration)) of time-lapse: \(error) (raise --speed or lower --max-idle)", code: 64)
                    }
                }
                var width = self.width
                if let size {
                    let box = try Self.parseSize(size)
                    width = timelapse.width(fitting: box.width, box.height)
                }
                if isVideo {
                    let count = max(1, Int((duration * Double(fps)).rounded()))
                    let (frameWidth, frameHeight) = TimelapseFrames.frameSize(timelapse, width: Int(width ?? 1280))
                    guard frameWidth * frameHeight <= TimelapseFrames.pixelBudget else {
                        let megapixels = (Double(frameWidth * frameHeight) / 1e6 * 10).rounded() / 10
                        throw CLIError("""
                            a video frame of \(frameWidth)×\(frameHeight) pixels (\(megapixels) M) is past the budget of \(TimelapseFrames.pixelBudget) \
                            pixels a frame (3840×2160), which keeps this command and ffmpeg near 1 GB of memory: lower --width or --size, \
                            or write an animated .svg (any size)
                            """, code: 64)
                    }
                    var frames = TimelapseFrames(timelapse, frames: count, width: Int(width ?? 1280), clock: clock)
                    let timing = try await FFmpeg.encode(&frames, fps: fps, to: output)
                    let size = FileSystem.linkStatus(output)?.size ?? 0
                    Terminal.write("wrote \(output): events \(start + 1) to \(end), \(count) frames of \(frames.width)×\(frames.height) at \(fps) fps, \(size) bytes in \(formatSeconds(timing.total)) (drawing the frames \(formatSeconds(timing.drawing)), ffmpeg and the hand-over the rest)\n")
                    Terminal.flush()
                    return
                }
                let text = timelapse.svg(width: width ?? 1000, duration: duration, clock: clock)
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
