import Foundation
import JournalTestSupport
import Testing

/// `journal compact` as a person uses it: a board recorded in many small pieces (what a live
/// board leaves) is rewritten into one file; `--dry-run` changes nothing; `--json` keeps its keys;
/// the drawing never changes.
@Suite(.ownThreads) struct CompactCLITests {
    let cli = CLITests()

    func sealedFiles(_ journal: String) -> [String] {
        let replicas = journal + "/replicas"
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: replicas)) ?? []
        return folders.flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: replicas + "/" + folder)) ?? []).filter { $0.hasSuffix(".sjs") }
        }.sorted()
    }

    @Test func aBoardRecordedInPiecesBecomesOneFileWithTheSameDrawing() throws {
        let temp = TemporaryDirectory("cli-compact")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        let lines = CLITests.sample.split(separator: "\n")
        for line in lines {
            #expect(try cli.journal(["record", "-C", board, "--no-compact"], stdin: String(line) + "\n").status == 0)
        }
        let before = sealedFiles(board)
        #expect(before.count == lines.count)
        let digest = try cli.journal(["digest", "-C", board]).stdout

        let dry = try cli.journal(["compact", "-C", board, "--dry-run"])
        #expect(dry.status == 0 && dry.stdout.contains("would rewrite \(lines.count) segments"), "\(dry.stdout)")
        #expect(sealedFiles(board) == before)

        let run = try cli.journal(["compact", "-C", board, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["dryRun", "covers", "retired", "replicas", "bytesBefore", "bytesAfter", "problems", "milliseconds"])
        #expect(object["retired"] as? Int == lines.count)
        let covers = try #require(object["covers"] as? [[String: Any]])
        #expect(covers.count == 1 && (covers[0]["inputs"] as? [String])?.count == lines.count)
        #expect(sealedFiles(board).count == 1)
        #expect(try cli.journal(["digest", "-C", board]).stdout == digest)
        #expect(try cli.journal(["verify", "-C", board]).status == 0)

        let again = try cli.journal(["compact", "-C", board])
        #expect(again.status == 0 && again.stdout.contains("nothing to compact"), "\(again.stdout)")
    }

    @Test func helpHasAnExampleAndABusyJournalExits75() throws {
        let help = try cli.journal(["compact", "--help"])
        #expect(help.status == 0 && help.stdout.contains("journal compact -C board"))
        let temp = TemporaryDirectory("cli-compact-busy")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let lock = open(board + "/local/sync.lock", O_RDWR | O_CREAT, 0o644)
        defer { close(lock) }
        #expect(flock(lock, LOCK_EX | LOCK_NB) == 0)
        let busy = try cli.journal(["compact", "-C", board])
        #expect(busy.status == 75 && busy.stderr.contains("sync.lock"), "\(busy.stderr)")
    }
}
