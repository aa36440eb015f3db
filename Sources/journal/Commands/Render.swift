import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalIngest
import JournalPlatform
import JournalRender
import JournalReplay
import JournalStorage

extension JournalCommand {
    struct Render: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "render",
            abstract: "Draw the visible strokes as a picture: SVG, or PNG to share.",
            discussion: """
                The picture shows the whole drawing, scaled to fit, unless --area picks a
                part of it (strokes reaching outside are cut, and the command says how many).
                The format follows the file name: .png is rasterised with rsvg-convert
                (librsvg; apt-get install librsvg2-bin), anything else is SVG.

                Examples:
                  journal render board.svg -C board
                  journal render board.png -C board --width 1600 --background none
                  journal render - -C board --area 0,0,800,600 > part.svg
                  journal render before.svg -C board --at 10:05     # as it was at 10:05 today
                  journal render session.pdf -C board --pages clears  # a page before each clear, and now
                """)

        @OptionGroup var options: JournalOptions
        @OptionGroup var moment: MomentOption
        @Argument(help: "The file to write: .svg, .png or .pdf ('-' for SVG on standard output).")
        var output: String
        @Option(help: "Picture width in pixels.") var width: Double = 1000
        @Option(help: "Picture height in pixels (default: from the width and the area's shape).")
        var height: Double?
        @Option(help: ArgumentHelp("The part of the drawing to show, in drawing units (default: all of it).", valueName: "x,y,w,h"))
        var area: String?
        @Option(help: ArgumentHelp("Canvas colour: #RRGGBB, #RRGGBBAA, a colour name (white, yellow, …) or none.", valueName: "colour"))
        var background: String = "#FFFFFF"
        @Option(parsing: .unconditional, help: ArgumentHelp(
            "PDF only: a page per moment, comma-separated (5099,10:05,now), or 'clears': the board before each clear, and now.",
            valueName: "moments"))
        var pages: String?

        /// Pixels a side of any picture: an SVG or PDF page past it is no picture anyone can
        /// open, and numbers past it lose the precision the renderer writes them with.
        static let maxSide: Double = 100_000
        /// A PNG is rasterised in memory (4 bytes a pixel, and rsvg-convert's own copies).
        static let maxPNGSide: Double = 16_384
        static let maxPNGPixels: Double = 64 * 1024 * 1024

        /// svg, png or pdf, from the name's extension; a name without one (a device such as
        /// /dev/stdout, '-') gets SVG; nil for another extension (x.jpg got SVG in it).
        var format: String? {
            let name = FileSystem.lastComponent(of: output).lowercased()
            guard let dot = name.lastIndex(of: "."), name.index(after: dot) < name.endIndex, dot > name.startIndex else { return "svg" }
            let ext = String(name[name.index(after: dot)...])
            return ["svg", "png", "pdf"].contains(ext) ? ext : nil
        }

        func validate() throws {
            guard width > 0, width.isFinite, height.map({ $0 > 0 && $0.isFinite }) ?? true else {
                throw ValidationError("--width and --height must be positive numbers")
            }
            guard width <= Self.maxSide, (height ?? 1) <= Self.maxSide else {
                throw ValidationError("--width and --height must be at most \(Int(Self.maxSide)) pixels")
            }
            guard let format else {
                throw ValidationError("\(output.debugDescription): a picture is written as .svg, .png or .pdf ('-', or a name without an extension: SVG)")
            }
            if format == "png", width > Self.maxPNGSide || (height ?? 1) > Self.maxPNGSide {
                throw ValidationError("a PNG is at most \(Int(Self.maxPNGSide)) pixels a side (it is drawn in memory): write .svg or .pdf for a larger picture")
            }
            if let area, Self.parseArea(area) == nil {
                throw ValidationError("--area must be x,y,width,height with a positive width and height, got \(area.debugDescription)")
            }
            if let pages {
                guard format == "pdf" else { throw ValidationError("--pages makes the pages of a PDF: name a .pdf file") }
                guard moment.at == nil else { throw ValidationError("--pages and --at both choose moments: give one") }
                if pages != "clears" {
                    for part in pages.split(separator: ",", omittingEmptySubsequences: false) {
                        _ = try MomentOption.parse(String(part), option: "--pages")
                    }
                }
            }
            if Self.parseColour(background) == nil {
                throw ValidationError("--background must be #RRGGBB, #RRGGBBAA, a colour name (white, yellow, …) or none, got \(background.debugDescription)")
            }
        }

        func run() async throws {
            try await reportingErrors {
                let journal = try options.open()
                if format == "pdf" {
                    try await writePDF(journal)
                    return
                }
                let (drawing, report) = try moment.drawing(journal) ?? Replay.load(journal)
                reportProblems(report)
                let shown = area.flatMap(Self.parseArea) ?? SVGRenderer.contentBounds(drawing)
                let pixelHeight = try self.pixelHeight(showing: shown)
                let renderer = SVGRenderer(width: width, height: pixelHeight, background: Self.parseColour(background) ?? nil, area: shown)
                let text = renderer.render(drawing)
                if output == "-" {
                    Terminal.write(text)
                    Terminal.flush()
                    return
                }
                let svg = Array(text.utf8)
                let isPNG = format == "png"
                try writeImage(isPNG ? try await RSVGConvert.png(fromSVG: svg) : svg, to: output)
                var message = "wrote \(output): \(Wording.counted(drawing.visibleStrokes.count, "stroke")), \(Int(width))×\(Int(pixelHeight)) px"
                if area != nil {
                    let cut = SVGRenderer.strokesOutside(shown, of: drawing)
                    if cut > 0 { message += "; \(Wording.counted(cut, "stroke")) reach outside --area and are cut" }
                }
                Terminal.write(message + "\n")
                Terminal.flush()
            }
        }

        /// A vector PDF through rsvg-convert: a page per moment of --pages (else one, of --at or
        /// now), each sized to its drawing (or --area).
        private func writePDF(_ journal: JournalDirectory) async throws {
            let history = History.load(journal)
            reportProblems(history.report)
            var counts: [Int]
            if pages == "clears" {
                counts = history.events.enumerated().compactMap { $0.element.payload == .clear ? $0.offset : nil } + [history.events.count]
            } else if let pages {
                counts = try pages.split(separator: ",").map { history.count(at: try MomentOption.parse(String($0), option: "--pages")) }
            } else {
                counts = [history.count(at: try moment.at.map { try MomentOption.parse($0, option: "--at") } ?? .end)]
            }
            counts = counts.filter { $0 > 0 }
            guard !counts.isEmpty else { throw CLIError("no page to make: every moment asked for comes before the first event", code: 64) }
            let svgs = try counts.map { count throws -> [UInt8] in
                let drawing = history.drawing(ofFirst: count)
                let shown = area.flatMap(Self.parseArea) ?? SVGRenderer.contentBounds(drawing)
                let pixelHeight = try self.pixelHeight(showing: shown)
                return Array(SVGRenderer(width: width, height: pixelHeight, background: Self.parseColour(background) ?? nil, area: shown)
                    .render(drawing).utf8)
            }
            let scratch = FileSystem.parent(of: output) + "/.journal-render-\(ProcessInfoLite.processID)"
            try writeImage(try await RSVGConvert.pdf(pages: svgs, scratch: scratch), to: output)
            Terminal.write("wrote \(output): \(Wording.counted(counts.count, "page")), at events \(counts.map(String.init).joined(separator: ", "))\n")
            Terminal.flush()
        }

        /// --height, or the height that keeps the shown area's shape at --width; refused when
        /// that is past what a picture may be (a thin drawing at a wide width).
        func pixelHeight(showing shown: SVGRenderer.Area) throws -> Double {
            let pixelHeight = height ?? max(1, (width * shown.height / shown.width).rounded())
            guard pixelHeight.isFinite, pixelHeight <= Self.maxSide else {
                throw CLIError("the drawing's shape at --width \(Int(width)) makes a picture taller than \(Int(Self.maxSide)) pixels: give --height, or --area", code: 64)
            }
            if format == "png", pixelHeight > Self.maxPNGSide || width * pixelHeight > Self.maxPNGPixels {
                throw CLIError("a PNG of \(Int(width))×\(Int(pixelHeight)) pixels is past \(Int(Self.maxPNGSide)) a side or \(Int(Self.maxPNGPixels)) in all (it is drawn in memory): lower --width or --height, or write .svg or .pdf", code: 64)
            }
            return pixelHeight
        }

        static func parseArea(_ text: String) -> SVGRenderer.Area? {
            let numbers = text.split(separator: ",").map { part in
                Double(String(part.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()))
            }
            guard numbers.count == 4, let x = numbers[0], let y = numbers[1], let w = numbers[2], let h = numbers[3],
                  [x, y, w, h].allSatisfy(\.isFinite), w > 0, h > 0 else { return nil }
            return SVGRenderer.Area(x: x, y: y, width: w, height: h)
        }

        /// `.some(nil)` for "none" (a transparent canvas); nil when the text is no colour.
        static func parseColour(_ text: String) -> RGBA?? {
            if text.lowercased() == "none" || text.lowercased() == "transparent" { return .some(nil) }
            if text.hasPrefix("#"), text.count == 7 || text.count == 9, let value = UInt32(text.dropFirst(), radix: 16) {
                return .some(RGBA(rawValue: text.count == 7 ? value << 8 | 0xFF : value))
            }
            return NamedColors.color(named: text.lowercased()).map { .some($0) }
        }

    }
}

/// A regular file (or a new one) is replaced atomically, so a reader never sees half a
/// picture; anything else (a device, a FIFO, `/dev/stdout`) is written into, never
/// replaced. Errors name the file asked for, not a temporary.
func writeImage(_ bytes: [UInt8], to path: String) throws {
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
