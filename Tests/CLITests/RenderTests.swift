import Foundation
import JournalTestSupport
import Testing

/// `render` fits the drawing, says what an area cuts, takes a background, and writes PNG.
/// Through the built binary.
@Suite(.ownThreads) struct RenderTests {
    let cli = CLITests()

    /// One stroke near the origin and one far outside any default canvas.
    func board(_ temp: TemporaryDirectory) throws -> String {
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        let lines = """
            {"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":10,"y":20,"color":"#E53935FF","width":4}
            {"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":60,"y":40,"color":"#E53935FF","width":4}
            {"type":"point","stroke":"A0000000-0000-4000-8000-00000000000B","x":4000,"y":3000,"color":"#1E88E5FF","width":6}
            {"type":"point","stroke":"A0000000-0000-4000-8000-00000000000B","x":4100,"y":3050,"color":"#1E88E5FF","width":6}

            """
        #expect(try cli.journal(["record", "-C", board], stdin: lines).status == 0)
        return board
    }

    func viewBox(_ svg: String) -> [Double] {
        guard let range = svg.range(of: #"viewBox=""#) else { return [] }
        return svg[range.upperBound...].prefix { $0 != "\"" }.split(separator: " ").compactMap { Double($0) }
    }

    @Test func theWholeDrawingIsShownUnlessAnAreaIsGiven() throws {
        let temp = TemporaryDirectory("render-fit")
        defer { temp.remove() }
        let board = try board(temp)
        let fitted = try cli.journal(["render", "-", "-C", board])
        #expect(fitted.status == 0)
        let box = viewBox(fitted.stdout)
        #expect(box.count == 4 && box[0] < 10 && box[1] < 20 && box[0] + box[2] > 4100 && box[1] + box[3] > 3050, "\(box)")
        #expect(fitted.stdout.contains(#"width="1000""#))
        // The height follows the drawing's shape.
        let expected = Int((1000 * box[3] / box[2]).rounded())
        #expect(fitted.stdout.contains(#"height="\#(expected)""#))

        let file = temp.path + "/part.svg"
        let part = try cli.journal(["render", file, "-C", board, "--area", "0,0,800,600", "--background", "none"])
        #expect(part.status == 0)
        #expect(part.stdout.contains("2 strokes") && part.stdout.contains("1 stroke reach"), "\(part.stdout)")
        let svg = try String(contentsOfFile: file, encoding: .utf8)
        #expect(viewBox(svg) == [0, 0, 800, 600])
        #expect(!svg.contains("<rect"))
        let bad = try cli.journal(["render", file, "-C", board, "--area", "0,0,-1,5"])
        #expect(bad.status == 64)
    }

    /// Sizes no picture can have, and formats render does not write, are refused with the
    /// reason and exit 64, before anything is written (a huge width trapped; a PNG was drawn
    /// in gigabytes of memory; a .jpg got SVG in it).
    @Test func sizesAndFormatsPastWhatAPictureCanBeAreRefused() throws {
        let temp = TemporaryDirectory("render-bounds")
        defer { temp.remove() }
        let board = try board(temp)
        let cases: [([String], String)] = [
            (["render", temp.path + "/a.svg", "--width", "1e300"], "at most 100000"),
            (["render", temp.path + "/a.svg", "--height", "1e300"], "at most 100000"),
            (["render", temp.path + "/a.png", "--width", "30000"], "at most 16384"),
            (["render", temp.path + "/a.png", "--width", "12000"], "in all"),
            (["render", temp.path + "/a.svg", "--width", "99999", "--area", "0,0,1,1000"], "taller than 100000"),
            (["render", temp.path + "/a.jpg"], ".svg, .png or .pdf"),
        ]
        for (arguments, reason) in cases {
            let run = try cli.journal(arguments + ["-C", board])
            #expect(run.status == 64, "\(arguments): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains(reason), "\(arguments): \(run.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: temp.path).filter { $0.hasPrefix("a.") }.isEmpty)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/rsvg-convert"), "needs rsvg-convert (librsvg2-bin)"))
    func aPNGIsWrittenForPeopleToShare() throws {
        let temp = TemporaryDirectory("render-png")
        defer { temp.remove() }
        let board = try board(temp)
        let file = temp.path + "/board.png"
        let run = try cli.journal(["render", file, "-C", board, "--width", "400", "--background", "yellow"])
        #expect(run.status == 0, "\(run.stderr)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        // IHDR: width and height, big-endian, at bytes 16 and 20.
        let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
        #expect(width == 400 && height > 250 && height < 330, "\(width)×\(height)")
    }
}
