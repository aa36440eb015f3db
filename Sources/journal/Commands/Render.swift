import ArgumentParser
import JournalPlatform
import JournalReplay

extension JournalCommand {
    struct Render: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Draw the visible strokes into an SVG file.",
            discussion: """
                Example:
                  journal render board.svg -C board --width 1000 --height 800
                """)

        @OptionGroup var options: JournalOptions
        @Argument(help: "The SVG file to write ('-' for standard output).")
        var output: String
        @Option(help: "Canvas width in drawing units.") var width: Double = 1000
        @Option(help: "Canvas height in drawing units.") var height: Double = 800

        func validate() throws {
            guard width > 0, height > 0, width.isFinite, height.isFinite else {
                throw ValidationError("--width and --height must be positive numbers")
            }
        }

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let (drawing, report) = Replay.load(journal)
                reportProblems(report)
                let svg = SVGRenderer(width: width, height: height).render(drawing)
                if output == "-" {
                    Terminal.write(svg)
                    Terminal.flush()
                    return
                }
                try writeImage(Array(svg.utf8), to: output)
                Terminal.write("wrote \(output): \(drawing.visibleStrokes.count) strokes\n")
                Terminal.flush()
            }
        }

        /// A regular file (or a new one) is replaced atomically, so a reader never sees half a
        /// picture; anything else (a device, a FIFO, `/dev/stdout`) is written into, never
        /// replaced. Errors name the file asked for, not a temporary.
        private func writeImage(_ bytes: [UInt8], to path: String) throws {
            do throws(IOError) {
                if FileSystem.isSpecialFile(path) {
                    let descriptor = try FileDescriptor.openForStreaming(path)
                    defer { descriptor.close() }
                    try descriptor.writeAll(bytes)
                } else {
                    try FileSystem.writeAtomically(bytes, to: path)
                }
            } catch {
                throw CLIError("cannot write \(path): \(error.message)", code: CLIError.ioError)
            }
        }
    }
}
