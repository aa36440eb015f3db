import Foundation
import JournalTestSupport
import Testing

/// Habits a newcomer brings from git, through the built binary.
@Suite(.ownThreads) struct GlobalHabitsTests {
    let cli = CLITests()


    @Test func theJournalMayBeNamedBeforeTheCommandGluedOrNot() throws {
        let temp = TemporaryDirectory("cli-global")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let expected = try cli.journal(["digest", "-C", board]).stdout
        #expect(expected.count == 65)
        for arguments in [["-C", board, "digest"], ["-C" + board, "digest"], ["--journal", board, "digest"],
                          ["--journal=" + board, "digest"], ["digest", "-C" + board]] {
            let run = try cli.journal(arguments)
            #expect(run.status == 0 && run.stdout == expected, "\(arguments): \(run.stderr)")
        }
        // After the command it wins over one before it.
        let other = temp.path + "/other"
        #expect(try cli.journal(["init", other]).status == 0)
        #expect(try cli.journal(["-C", other, "digest", "-C", board]).stdout == expected)
    }

    @Test func theJournalIsFoundUpwardAndNeverNested() throws {
        let temp = TemporaryDirectory("cli-upward")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let expected = try cli.journal(["digest", "-C", board]).stdout
        // Run from inside the journal's own folders, like git from a subdirectory.
        let inside = try cli.journal(["digest", "-C", board + "/replicas"])
        #expect(inside.status == 0 && inside.stdout == expected)
        let nested = try cli.journal(["init", board + "/replicas/nested"])
        #expect(nested.status == 64)
        #expect(nested.stderr.contains("is inside the journal"), "\(nested.stderr)")
        #expect(!FileManager.default.fileExists(atPath: board + "/replicas/nested"))
        #expect(try cli.journal(["verify", "-C", board]).status == 0)
        let nowhere = try cli.journal(["stats", "-C", temp.path + "/missing"])
        #expect(nowhere.status == 64 && nowhere.stderr.contains("no local/replica file here or in any folder above"))
    }

    @Test func versionAndSuggestions() throws {
        let version = try cli.journal(["--version"])
        #expect(version.status == 0 && version.stdout.split(separator: ".").count == 3, "\(version.stdout)")
        let typo = try cli.journal(["verfy"])
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("Did you mean 'verify'?"), "\(typo.stderr)")
        // As near "stats" as "status": the same letters in another order win.
        let swapped = try cli.journal(["stauts"])
        #expect(swapped.status == 64 && swapped.stderr.contains("Did you mean 'status'?"), "\(swapped.stderr)")
        // Every command is found again from a slip of one letter in it.
        for command in ["demo", "init", "record", "sync", "merge", "status", "log", "strokes", "render", "stats", "verify",
                        "digest", "snapshot", "compact", "serve", "join", "token", "trust"] {
            let slip = String(command.dropLast()) + "q"
            let said = try cli.journal([slip])
            #expect(said.stderr.contains("Did you mean '\(command)'?"), "\(slip): \(said.stderr)")
        }
        let unknown = try cli.journal(["xyzzy"])
        #expect(unknown.status == 64 && unknown.stderr.contains("journal --help"))
    }
}
