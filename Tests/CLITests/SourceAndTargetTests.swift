import Foundation
import JournalTestSupport
import Testing

/// Merge sources and sync targets must be journals or shared boards: a
/// mistyped path is refused, never silently read as empty or made into a new board.
@Suite(.ownThreads) struct SourceAndTargetTests {
    let cli = CLITests()


    @Test func mergeRefusesWhatIsNotAJournalOrABoard() throws {
        let temp = TemporaryDirectory("merge-sources")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let notABoard = temp.path + "/documents"
        try FileManager.default.createDirectory(atPath: notABoard, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: notABoard + "/letter.txt", contents: Data("hi".utf8))
        let refused = try cli.journal(["merge", "-C", board, notABoard])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("neither a journal nor a shared board folder"), "\(refused.stderr)")
        let missing = try cli.journal(["merge", "-C", board, temp.path + "/nowhere"])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("does not exist (a merge source"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("mkdir"))
        #expect(!FileManager.default.fileExists(atPath: temp.path + "/nowhere"))
    }

    @Test func syncStartsANewBoardOnlyWhenAsked() throws {
        let temp = TemporaryDirectory("sync-targets")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let typo = temp.path + "/shraed"
        let missing = try cli.journal(["sync", "-C", board, typo])
        #expect(missing.status == 64 && missing.stderr.contains("--create"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: typo))
        let created = try cli.journal(["sync", "-C", board, typo, "--create"])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(FileManager.default.fileExists(atPath: typo + "/replicas"))
        // An empty folder is a board nobody has written to yet.
        let empty = temp.path + "/empty"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        #expect(try cli.journal(["sync", "-C", board, empty]).status == 0)
        // A folder holding other things is refused.
        let home = temp.path + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: home + "/notes.txt", contents: Data("x".utf8))
        let other = try cli.journal(["sync", "-C", board, home])
        #expect(other.status == 64 && other.stderr.contains("not a shared board folder"), "\(other.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home + "/replicas"))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/rsync"), "needs rsync"))
    func rsyncToAMistypedPathIsRefused() throws {
        let temp = TemporaryDirectory("sync-rsync-targets")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let typo = temp.path + "/remote-typo"
        let refused = try cli.journal(["sync", "-C", board, "--via", "rsync", typo])
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(refused.stderr.contains("does not exist") && refused.stderr.contains("--create"))
        #expect(!FileManager.default.fileExists(atPath: typo))
        let created = try cli.journal(["sync", "-C", board, "--via", "rsync", typo, "--create"])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(FileManager.default.fileExists(atPath: typo + "/replicas"))
    }
}
