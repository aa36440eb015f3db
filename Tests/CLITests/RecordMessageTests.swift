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

    @Test func afterABadLineTheCommandItPrintsGoesOnWithoutRecordingAnythingTwice() throws {
        let temp = TemporaryDirectory("record-resume")
        defer { temp.remove() }
        let board = try board(temp)
        let first = temp.path + "/first.ndjson", second = temp.path + "/second.ndjson"
        let point = #"{"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":1,"y":2}"#
        try (point + "\n" + point + "\n").write(toFile: first, atomically: false, encoding: .utf8)
        try (point + "\n\nnot json\n" + point + "\n").write(toFile: second, atomically: false, encoding: .utf8)
        let run = try cli.journal(["record", "-C", board, first, second])
        #expect(run.status == 65)
        let hint = "journal record -C \(board) --from-line 3 \(second)"
        #expect(run.stderr.contains("second.ndjson:3: ") && run.stderr.contains(hint), "\(run.stderr)")
        // The line fixed, the printed command records the rest: 5 points in all, none twice.
        try (point + "\n\n" + point + "\n" + point + "\n").write(toFile: second, atomically: false, encoding: .utf8)
        let resumed = try cli.journal(["record", "-C", board, "--from-line", "3", second])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.hasPrefix("recorded 2 events"), "\(resumed.stdout)")
        let log = try cli.journal(["log", "-C", board])
        #expect(log.stdout.split(separator: "\n").count == 5)
        #expect(try cli.journal(["record", "-C", board, "--from-line", "0", second]).status == 64)
    }
}
