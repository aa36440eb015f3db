import Foundation
import JournalFormat
import JournalServe
import JournalTestSupport
import Testing

/// The page's reader of catch-up blocks is a file of its own (what it decodes, in a browser:
/// Tools/ci/page-test/page_test.py). Its numbers are the format's: a test runs it in node and
/// compares them with the Swift ones, so neither side can change one alone.
@Suite struct SegmentReaderScriptTests {
    let reader = DrawingPage.assets["segment-reader.js"]

    @Test func thePageLoadsTheReaderBeforeTheScriptThatUsesIt() throws {
        let html = DrawingPage.html
        let reader = try #require(html.firstRange(of: "<script src=\"/assets/segment-reader.js\"></script>"))
        // A module script runs after every classic one anyway; the order says it once more.
        let user = try #require(html.firstRange(of: "<script type=\"module\" src=\"/assets/board.mjs\"></script>"))
        #expect(reader.upperBound <= user.lowerBound)
        #expect(try #require(self.reader).text.contains("global.StrokeJournalSegments = {"))
        #expect(try #require(DrawingPage.assets["page.mjs"]).text.contains("window.StrokeJournalSegments;"))
    }

    @Test(.enabled(if: NodeScript.node != nil, "node is not installed (apt-get install nodejs)"))
    func theReadersFormatNumbersAreTheSwiftOnes() throws {
        let source = try #require(reader).text
        let printed = try NodeScript.run(source + "\nconsole.log(JSON.stringify(globalThis.StrokeJournalSegments.constants));")
        let constants = try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any], "\(printed)")
        let strings: [String: String] = [
            "fileMagic": String(decoding: FormatV1.fileMagic, as: UTF8.self),
            "blockMagic": String(decoding: FormatV1.blockMagic, as: UTF8.self),
        ]
        let integers: [String: Int] = [
            "fileHeader": FormatV1.fileHeaderSize, "blockHeader": FormatV1.blockHeaderSize,
            "maxRaw": FormatV1.maxRawBlockSize, "maxCompressed": FormatV1.maxCompressedBlockSize,
            "maxEvents": FormatV1.maxEventsPerBlock,
            "maxDecimalScale": Int(FormatV1.maxDecimalScale), "thirds": Int(FormatV2.thirds),
            "binaryBase": Int(FormatV2.binaryBase), "maxBinaryExponent": Int(FormatV2.maxBinaryExponent),
            "ordered32": Int(FormatV2.ordered32), "ordered64": Int(FormatV2.ordered64),
            "minFineExponent": FormatV2.minFineExponent, "maxFineExponent": FormatV2.maxFineExponent,
        ]
        #expect(Set(constants.keys) == Set(strings.keys).union(integers.keys).union(["kindNames", "drawingVersions"]))
        #expect((constants["drawingVersions"] as? [Int]).map(Set.init) == Set(FormatVersion.drawing.map(Int.init)))
        for (name, value) in strings { #expect(constants[name] as? String == value, "\(name)") }
        for (name, value) in integers { #expect(constants[name] as? Int == value, "\(name)") }
        #expect(constants["kindNames"] as? [String] == EventKind.allCases.map(\.description))
    }

    @Test func nothingInTheScriptsEndsAnElementEarly() {
        // The scripts are files now, but one pasted into a page must still not end its element.
        for asset in DrawingPage.assets.values where asset.name.hasSuffix(".js") {
            #expect(!asset.text.lowercased().contains("</script"), "\(asset.name)")
        }
    }
}

/// `node`, where installed, running a script given as text.
enum NodeScript {
    static let node: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        .split(separator: ":").map { $0 + "/node" }.first { FileManager.default.isExecutableFile(atPath: $0) }

    struct Failed: Error, CustomStringConvertible {
        let description: String
    }

    /// What the script printed on standard output; throws when node exits non-zero.
    static func run(_ script: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try node ?? { throw Failed(description: "no node") }())
        process.arguments = ["-e", script]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        try process.waitForExit()
        guard process.terminationStatus == 0 else {
            throw Failed(description: "node exited with \(process.terminationStatus): " + String(decoding: said, as: UTF8.self))
        }
        return String(decoding: printed, as: UTF8.self)
    }
}
