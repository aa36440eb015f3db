import JournalCommandLine
import JournalPlatform
import JournalRender

/// Video through `ffmpeg` (packaged everywhere; run as a child like rsync, never linked):
/// raw RGB frames go in on its standard input, it encodes and writes the file. The file is
/// written under a temporary name beside the destination and renamed when ffmpeg succeeds,
/// so a failed or interrupted encode never leaves half a video under the name asked for.
enum FFmpeg {
    /// The containers `journal timelapse` writes, by file extension.
    static let extensions = ["mp4", "webm", "gif"]

    static func container(of path: String) -> String? {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        let ext = path[path.index(after: dot)...].lowercased()
        return extensions.contains(ext) ? ext : nil
    }

    /// What ffmpeg is told to make of the frames, per container.
    static func encoding(_ container: String) -> [String] {
        switch container {
        case "webm": ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "0", "-crf", "40", "-pix_fmt", "yuv420p", "-f", "webm"]
        case "gif": ["-filter_complex", "split[a][b];[a]palettegen[p];[b][p]paletteuse", "-f", "gif"]
        default: ["-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p", "-movflags", "+faststart", "-f", "mp4"]
        }
    }

    struct Timing {
        /// Seconds spent drawing frames, and in all (drawing, handing frames to ffmpeg, its finish).
        var drawing = 0.0
        var total = 0.0
    }

    /// Encodes every frame of `frames` at `fps` into `path`.
    static func encode(_ frames: inout TimelapseFrames, fps: Int, to path: String) async throws -> Timing {
        guard let container = container(of: path) else {
            throw CLIError("\(path): a video is written as .\(extensions.joined(separator: ", ."))", code: 64)
        }
        let folder = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let name = path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
        let partial = (folder == "." && !path.hasPrefix("./") ? "" : folder + "/") + ".\(name).partial-\(ProcessInfoLite.processID)"
        let arguments = ["-hide_banner", "-loglevel", "error", "-y",
                         "-f", "rawvideo", "-pix_fmt", "rgb24", "-video_size", "\(frames.width)x\(frames.height)",
                         "-framerate", "\(fps)", "-i", "pipe:0", "-an"] + encoding(container) + [partial]
        // Stopped (Ctrl-C, SIGTERM) while encoding: the temporary goes too, and the command
        // ends as the signal would have ended it (ffmpeg, its input closed, ends after it).
        let trap = SignalTrap { number in
            try? FileSystem.remove(partial)
            Terminal.standardError("\njournal: stopped by signal \(number); \(path) not written\n")
            ProcessInfoLite.exitAsKilled(by: number)
        }
        defer { trap.cancel() }
        let started = ProcessInfoLite.monotonicSeconds()
        var timing = Timing()
        var progress = Progress("time-lapse")
        let total = frames.count
        var source = frames
        defer { progress.finish() }
        let outcome: (result: ChildProcess.Result, feedError: (any Error)?)
        do {
            outcome = try await ChildProcess.run("ffmpeg", arguments) { input in
                var index = 0
                while true {
                    let drawStart = ProcessInfoLite.monotonicSeconds()
                    guard let frame = source.next() else { break }
                    timing.drawing += ProcessInfoLite.monotonicSeconds() - drawStart
                    try await input.write(frame.pixels)
                    index += 1
                    progress.update("frame \(index) of \(total)")
                }
            }
        } catch {
            try? FileSystem.remove(partial)
            throw CLIError("cannot start ffmpeg: \(error.message)", code: CLIError.ioError)
        }
        frames = source
        if outcome.result.status == 127 {
            throw CLIError("video needs ffmpeg, which is not installed (apt-get install ffmpeg; brew install ffmpeg); an animated .svg needs nothing", code: CLIError.ioError)
        }
        guard outcome.result.status == 0, outcome.feedError == nil else {
            try? FileSystem.remove(partial)
            let said = String(decoding: outcome.result.errorOutput, as: UTF8.self).split(separator: "\n").prefix(3).joined(separator: " / ")
            let why = said.isEmpty ? outcome.feedError.map { "\($0)" } ?? "exit status \(outcome.result.status)" : said
            throw CLIError("ffmpeg could not make \(path) (exit status \(outcome.result.status)): \(why); nothing written", code: CLIError.ioError)
        }
        do throws(IOError) { try FileSystem.rename(partial, to: path) } catch {
            try? FileSystem.remove(partial)
            throw CLIError("cannot write \(path): \(error.message)", code: CLIError.ioError)
        }
        timing.total = ProcessInfoLite.monotonicSeconds() - started
        return timing
    }
}
