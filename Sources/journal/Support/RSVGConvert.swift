import JournalCommandLine
import JournalPlatform

/// SVG to PNG and PDF through `rsvg-convert` (librsvg, GNOME's SVG renderer, packaged
/// everywhere): a kept renderer rather than one of our own. A PNG's SVG goes in on stdin and
/// comes out on stdout; a PDF's pages are files (rsvg-convert makes a page of each input file,
/// each page the size of its picture), written in a scratch folder removed afterwards.
enum RSVGConvert {
    static func png(fromSVG svg: [UInt8]) async throws -> [UInt8] {
        try await run(["--format=png"], input: svg, expecting: [0x89, 0x50, 0x4E, 0x47], what: "PNG")
    }

    /// One page per SVG, in order. `scratch`: a folder to create, use and remove.
    static func pdf(pages: [[UInt8]], scratch: String) async throws -> [UInt8] {
        do throws(IOError) { try FileSystem.createDirectory(scratch) } catch {
            throw CLIError("cannot make the scratch folder \(scratch): \(error.message)", code: CLIError.ioError)
        }
        var files: [String] = []
        defer {
            for file in files { try? FileSystem.remove(file) }
            try? FileSystem.removeDirectory(scratch)
        }
        for (index, page) in pages.enumerated() {
            let file = scratch + "/page-\(index + 1).svg"
            do throws(IOError) { try FileSystem.writeAtomically(page, to: file) } catch {
                throw CLIError("cannot write \(file): \(error.message)", code: CLIError.ioError)
            }
            files.append(file)
        }
        return try await run(["--format=pdf"] + files, input: nil, expecting: Array("%PDF".utf8), what: "PDF")
    }

    private static func run(_ arguments: [String], input: [UInt8]?, expecting magic: [UInt8], what: String) async throws -> [UInt8] {
        let result: ChildProcess.Result
        do {
            result = try await ChildProcess.run("rsvg-convert", arguments, input: input)
        } catch {
            throw CLIError("cannot start rsvg-convert: \(error.message)", code: CLIError.ioError)
        }
        if result.status == 127 {
            throw CLIError("\(what) output needs rsvg-convert, which is not installed (apt-get install librsvg2-bin; brew install librsvg)", code: CLIError.ioError)
        }
        guard result.status == 0, result.output.starts(with: magic) else {
            let firstLine = String(decoding: result.errorOutput, as: UTF8.self).split(separator: "\n").first.map(String.init)
            throw CLIError("rsvg-convert could not make the \(what): \(firstLine ?? "exit status \(result.status)")", code: CLIError.ioError)
        }
        return result.output
    }
}
