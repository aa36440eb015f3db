import JournalPlatform
import Testing

/// The process runner sync drives rsync with (no shell, no Foundation).
@Suite struct ChildProcessTests {
    @Test func statusAndMergedOutputComeBack() throws {
        let result = try ChildProcess.run("sh", ["-c", "echo out; echo err >&2; exit 3"])
        #expect(result.status == 3)
        #expect(result.outputText == "out\nerr\n")
        // Arguments reach the program as they are: no shell re-parses them.
        let echoed = try ChildProcess.run("printf", ["%s|", "a b", "$HOME", "*"])
        #expect(echoed.status == 0 && echoed.outputText == "a b|$HOME|*|")
    }

    @Test func aMissingProgramIs127AndASignalIs128PlusIt() throws {
        #expect(try ChildProcess.run("no-such-program-strokejournal", []).status == 127)
        #expect(try ChildProcess.run("sh", ["-c", "kill -9 $$"]).status == 128 + 9)
        // Standard input is /dev/null: a program reading it ends at once.
        #expect(try ChildProcess.run("cat", []).output.isEmpty)
    }

    @Test func largeOutputIsReadWhileTheChildRuns() throws {
        let result = try ChildProcess.run("sh", ["-c", "head -c 3000000 /dev/zero"])
        #expect(result.status == 0 && result.output.count == 3_000_000)
    }
}
