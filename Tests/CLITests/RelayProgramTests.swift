import Foundation
import JournalTestSupport
import Testing

/// `journal serve` and `journal join` run the program journal-relay (the only one that links
/// SwiftNIO): what a person sees is journal-relay's, and a journal without it says what to do.
@Suite(.ownThreads) struct RelayProgramTests {
    let cli = CLITests()
    let relay = JournalProcess.builtExecutable("journal-relay")

    /// `binary` at `path`, alone in its folder: a hard link where the file system allows one
    /// (nothing is written, so nothing can be busy), else a copy (`runCopy` then waits out
    /// ETXTBSY).
    static func place(_ binary: String, at path: String) throws {
        do { try FileManager.default.linkItem(atPath: binary, toPath: path) } catch {
            try FileManager.default.copyItem(atPath: binary, toPath: path)
        }
    }

    /// Runs `copy`, a journal binary this test just wrote. A child another test forks while
    /// the copy is open for writing holds that descriptor until it execs, and meanwhile
    /// starting the copy fails with ETXTBSY ("text file busy"): tried again until that child
    /// has moved on.
    func runCopy(_ copy: String, _ arguments: [String], path: String) throws -> CLITests.Run {
        var attempts = 0
        while true {
            do {
                return try cli.journal(arguments, environment: ["PATH": path], executable: copy)
            } catch let error as NSError where attempts < 3000
                && (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.code == Int(ETXTBSY) {
                attempts += 1
                usleep(10_000)
            }
        }
    }

    @Test func serveAndJoinAreJournalRelaysOwnCommands() throws {
        for command in ["serve", "join"] {
            let direct = try cli.journal([command, "--help"], executable: relay)
            let handedOver = try cli.journal([command, "--help"])
            #expect(direct.status == 0 && handedOver.status == 0, "\(handedOver.stderr)")
            #expect(handedOver.stdout == direct.stdout)
            #expect(handedOver.stdout.contains("USAGE: journal \(command)"), "\(handedOver.stdout)")
            #expect(try cli.journal(["help", command]).stdout == direct.stdout)
        }
        // Options reach it unchanged, and so does its refusal and exit code.
        let refused = try cli.journal(["join", "ftp://127.0.0.1:1/boards/b/ws"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("ws://"), "\(refused.stderr)")
        // The journal named before the command does not stop the hand-over.
        let temp = TemporaryDirectory("cli-relay-c")
        defer { temp.remove() }
        #expect(try cli.journal(["-C", temp.path, "serve", "--help"]).stdout.contains("USAGE: journal serve"))
    }

    @Test func aJournalWithoutJournalRelaySaysHowToBuildIt() throws {
        let temp = TemporaryDirectory("cli-relay-missing")
        defer { temp.remove() }
        let alone = temp.path + "/journal"
        try Self.place(CLITests.binary, at: alone)
        let run = try runCopy(alone, ["serve", "--port", "0", "--data", temp.path + "/boards"], path: "/usr/bin:/bin")
        #expect(run.status == 74)
        #expect(run.stderr.contains("journal-relay") && run.stderr.contains("swift build --product journal-relay"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: temp.path + "/boards"))
        // Every other command works without it.
        #expect(try runCopy(alone, ["init", temp.path + "/board"], path: "/usr/bin:/bin").status == 0)
    }

    @Test func journalRelayIsFoundOnPathWhenNotBesideJournal() throws {
        let temp = TemporaryDirectory("cli-relay-path")
        defer { temp.remove() }
        let alone = temp.path + "/journal"
        try Self.place(CLITests.binary, at: alone)
        let folder = URL(fileURLWithPath: relay).deletingLastPathComponent().path
        let run = try runCopy(alone, ["join", "--help"], path: folder + ":/usr/bin:/bin")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("USAGE: journal join"))
    }
}
