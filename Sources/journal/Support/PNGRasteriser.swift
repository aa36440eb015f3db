import JournalCommandLine
import JournalPlatform

/// SVG to PNG through `rsvg-convert` (librsvg, GNOME's SVG renderer, packaged everywhere):
/// a kept rasteriser rather than one of our own. SVG goes in on stdin, PNG comes out on
/// stdout; nothing touches the disk but the final file.
enum PNGRasteriser {
    static func png(fromSVG svg: [UInt8]) async throws -> [UInt8] {
        let result: ChildProcess.Result
        do {
            result = try await ChildProcess.run("rsvg-convert", ["--format=png"], input: svg)
        } catch {
            throw CLIError("cannot start rsvg-convert: \(error.message)", code: CLIError.ioError)
        }
        if result.status == 127 {
            throw CLIError("PNG output needs rsvg-convert, which is not installed (apt-get install librsvg2-bin; brew install librsvg)", code: CLIError.ioError)
        }
        guard result.status == 0, result.output.starts(with: [0x89, 0x50, 0x4E, 0x47]) else {
            let firstLine = String(decoding: result.errorOutput, as: UTF8.self).split(separator: "\n").first.map(String.init)
            throw CLIError("rsvg-convert could not rasterise the picture: \(firstLine ?? "exit status \(result.status)")", code: CLIError.ioError)
        }
        return result.output
    }
}
