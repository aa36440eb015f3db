import Foundation

/// SVG to PNG through `rsvg-convert` (librsvg, GNOME's SVG renderer, packaged everywhere):
/// a kept rasteriser rather than one of our own. SVG goes in on stdin, PNG comes out on
/// stdout; nothing touches the disk but the final file.
enum PNGRasteriser {
    static func png(fromSVG svg: [UInt8]) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["rsvg-convert", "--format=png"]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch {
            throw CLIError("cannot start rsvg-convert: \(error.localizedDescription)", code: CLIError.ioError)
        }
        // Feed stdin from another thread: rsvg-convert may fill its stdout pipe before it has
        // read all of its input, and both pipes must be drained at once.
        let writer = Thread {
            input.fileHandleForWriting.write(Data(svg))
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let png = output.fileHandleForReading.readDataToEndOfFile()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if process.terminationStatus == 127 {
            throw CLIError("PNG output needs rsvg-convert, which is not installed (apt-get install librsvg2-bin; brew install librsvg)", code: CLIError.ioError)
        }
        guard process.terminationStatus == 0, png.starts(with: [0x89, 0x50, 0x4E, 0x47]) else {
            let reason = String(decoding: message, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? "exit status \(process.terminationStatus)"
            throw CLIError("rsvg-convert could not rasterise the picture: \(reason)", code: CLIError.ioError)
        }
        return [UInt8](png)
    }
}
