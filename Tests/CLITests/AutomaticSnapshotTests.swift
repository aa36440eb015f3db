import Foundation
import JournalTestSupport
import Testing

/// Automatic snapshots stay within twice the journal's size and are announced, through the
/// built binary.
@Suite(.ownThreads) struct AutomaticSnapshotTests {
    let cli = CLITests()

    func snapshotSize(_ board: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: board + "/local/snapshots/latest.sjsnap"))?[.size] as? Int
    }

    func journalSize(_ board: String) throws -> Int {
        var total = 0
        let replicas = board + "/replicas"
        for folder in try FileManager.default.contentsOfDirectory(atPath: replicas) {
            for file in try FileManager.default.contentsOfDirectory(atPath: replicas + "/" + folder) {
                total += (try FileManager.default.attributesOfItem(atPath: replicas + "/" + folder + "/" + file)[.size] as? Int) ?? 0
            }
        }
        return total
    }

    @Test func noSnapshotLargerThanTwiceTheJournalIsWrittenUnasked() throws {
        let temp = TemporaryDirectory("auto-snapshot")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        var lines = ""
        for stroke in 0..<600 {
            let id = String(format: "6F1C2B9A-0B6D-4D9A-9E41-%012X", stroke)
            for point in 0..<200 {
                lines += ##"{"type":"point","stroke":"\##(id)","x":\##(Double(point) * 1.25),"y":\##(Double(stroke) * 0.5),"color":"#E53935FF","width":4}"## + "\n"
            }
        }
        #expect(try cli.journal(["record", "-C", board], stdin: lines).status == 0)
        let digest = try cli.journal(["digest", "-C", board])
        #expect(digest.status == 0)
        if let size = snapshotSize(board) {
            #expect(size <= 2 * (try journalSize(board)), "an automatic snapshot of \(size) bytes")
            #expect(digest.stderr.contains("wrote a snapshot"))
        } else {
            #expect(!digest.stderr.contains("wrote a snapshot"))
        }
    }

    @Test func aSmallAutomaticSnapshotIsAnnounced() throws {
        let temp = TemporaryDirectory("auto-snapshot-small")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        // 110,000 clears: many events, a tiny folded state.
        let lines = String(repeating: #"{"type":"clear"}"# + "\n", count: 110_000)
        #expect(try cli.journal(["record", "-C", board], stdin: lines).status == 0)
        let digest = try cli.journal(["digest", "-C", board])
        #expect(digest.status == 0)
        #expect(digest.stderr.contains("wrote a snapshot of 110000 events"), "\(digest.stderr)")
        let size = try #require(snapshotSize(board))
        #expect(size <= 2 * (try journalSize(board)))
        let again = try cli.journal(["digest", "-C", board])
        #expect(again.stdout == digest.stdout && !again.stderr.contains("wrote a snapshot"))

        // A journal where no snapshot can be written (read-only media, played here by a file
        // where the snapshots' folder belongs, which root cannot write through either): the
        // same answer, and a note naming where and why, not a failure.
        try FileManager.default.removeItem(atPath: board + "/local/snapshots")
        #expect(FileManager.default.createFile(atPath: board + "/local/snapshots", contents: Data("not a folder".utf8)))
        let readOnly = try cli.journal(["digest", "-C", board])
        #expect(readOnly.status == 0 && readOnly.stdout == digest.stdout, "\(readOnly.stderr)")
        #expect(readOnly.stderr.contains("no snapshot written (") && readOnly.stderr.contains("local/snapshots"), "\(readOnly.stderr)")
        let stats = try cli.journal(["stats", "-C", board])
        #expect(stats.status == 0, "\(stats.stderr)")
    }
}
