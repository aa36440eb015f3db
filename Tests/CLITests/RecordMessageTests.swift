import Foundation
import JournalTestSupport
import Testing

/// What `record` says when its input is wrong, through the built binary.
@Suite(.ownThreads) struct RecordMessageTests {
    let cli = CLITests()

    func board(_ temp: TemporaryDirectory) throws -> String {
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        return board
    }

    @Test func aBadFirstLineIsReportedAloneWithWhatWasFound() throws {
        let temp = TemporaryDirectory("record-messages")
        defer { temp.remove() }
        let board = try board(temp)
        let run = try cli.journal(["record", "-C", board], stdin: #"{"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":1,"y":}"# + "\n")
        #expect(run.status == 65)
        #expect(run.stderr.contains(#"<stdin>:1: "y" must be a number, got '}' where a value belongs"#), "\(run.stderr)")
        #expect(!run.stdout.contains("recorded nothing"), "\(run.stdout)")
    }

    @Test func aByteOrderMarkIsAcceptedAndAMissingFileIsAnIOError() throws {
        let temp = TemporaryDirectory("record-bom")
        defer { temp.remove() }
        let board = try board(temp)
        let withMark = "\u{FEFF}" + #"{"type":"clear"}"# + "\n"
        let run = try cli.journal(["record", "-C", board], stdin: withMark)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("recorded 1 event (0 points, 0 strokes)"), "\(run.stdout)")
        let missing = try cli.journal(["record", "-C", board, temp.path + "/nope.ndjson"])
        #expect(missing.status == 74)
        #expect(missing.stderr.contains("nope.ndjson: cannot open: No such file or directory"))
    }
}
