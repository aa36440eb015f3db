#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import JournalTestSupport
import Testing

/// Started with standard descriptors closed (`<&- >&-`), `journal` keeps its journal clean:
/// what it prints to a closed output ("durable N" lines) never lands in its own files, which
/// the system would otherwise give descriptors 0 and 1 (the lock file, the open segment).
@Suite(.ownThreads) struct ClosedDescriptorTests {
    let cli = CLITests()

    /// Runs `journal ARGS` through /bin/sh with `redirections` (e.g. "<&- >&-") applied.
    func journalThroughShell(_ arguments: [String], redirections: String) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exec \"$0\" \"$@\" " + redirections, CLITests.binary] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try process.waitForExit()
        return process.terminationStatus
    }

    func session(points: Int) -> String {
        (0..<points).map { index in
            "{\"type\":\"point\",\"stroke\":\"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88\",\"x\":\(index),\"y\":\(index * 2),\"color\":\"#E53935FF\",\"width\":4}\n"
        }.joined()
    }

    @Test(arguments: ["<&- >&-", "<&- >&- 2>&-", ">&-"])
    func recordWithClosedStandardDescriptorsKeepsTheJournalClean(redirections: String) throws {
        let temp = TemporaryDirectory("cli-closed")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        let input = temp.path + "/f.ndjson"
        try session(points: 40).write(toFile: input, atomically: false, encoding: .utf8)

        // Flushing after every event prints 40 "durable N" lines to the closed stdout, and
        // --no-seal keeps the events in the open segment, where stray bytes would land.
        let status = try journalThroughShell(["record", "-C", board, "--print-durable", "--flush-every", "1", "--no-seal", input],
                                             redirections: redirections)
        #expect(status == 0)
        let verify = try cli.journal(["verify", "-C", board, "--json"])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        #expect(verify.stdout.hasPrefix("{\"clean\":true,"), "\(verify.stdout)")
        #expect(verify.stdout.contains("\"events\":40"), "\(verify.stdout)")
        // …and recording goes on normally afterwards (the open segment was not damaged).
        let again = try cli.journal(["record", "-C", board], stdin: session(points: 2))
        #expect(again.status == 0, "\(again.stderr)")
        let log = try cli.journal(["log", "-C", board])
        #expect(log.stdout.split(separator: "\n").count == 42)
    }

    @Test func aSyncWhileAnotherHoldsTheJournalExits75WithTheHoldersPid() throws {
        let temp = TemporaryDirectory("cli-sync-lock")
        defer { temp.remove() }
        let board = temp.path + "/board"
        let shared = temp.path + "/shared"
        #expect(try cli.journal(["init", board]).status == 0)
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        let lock = open(board + "/local/sync.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        #expect(lock >= 0)
        defer { close(lock) }
        #expect(flock(lock, LOCK_EX | LOCK_NB) == 0)
        let text = "pid \(getpid())\n"
        _ = text.withCString { write(lock, $0, strlen($0)) }
        let run = try cli.journal(["sync", "-C", board, shared])
        #expect(run.status == 75)
        #expect(run.stderr == "journal: another sync or compaction is running on this journal (pid \(getpid()))\n", "\(run.stderr)")
    }
}
