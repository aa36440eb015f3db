import JournalPlatform
import JournalTestSupport
import Testing

/// The process runner sync drives rsync with (swift-subprocess: no shell, no Foundation).
@Suite(.ownThreads) struct ChildProcessTests {
    @Test func statusAndBothOutputsComeBackApart() async throws {
        let result = try await ChildProcess.run("sh", ["-c", "echo out; echo err >&2; exit 3"])
        #expect(result.status == 3)
        #expect(result.outputText == "out\n")
        #expect(result.errorOutput == Array("err\n".utf8))
        #expect(result.messages == "err\nout\n")
        // Arguments reach the program as they are: no shell re-parses them.
        let echoed = try await ChildProcess.run("printf", ["%s|", "a b", "$HOME", "*"])
        #expect(echoed.status == 0 && echoed.outputText == "a b|$HOME|*|")
    }

    @Test func aMissingProgramIs127AndASignalIs128PlusIt() async throws {
        #expect(try await ChildProcess.run("no-such-program-strokejournal", []).status == 127)
        #expect(try await ChildProcess.run("sh", ["-c", "kill -9 $$"]).status == 128 + 9)
        // Without input, standard input is empty: a program reading it ends at once.
        #expect(try await ChildProcess.run("cat", []).output.isEmpty)
    }

    @Test func inputReachesTheChildAndLargeOutputIsReadWhileItRuns() async throws {
        let input = (0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let echoed = try await ChildProcess.run("cat", [], input: input)
        #expect(echoed.status == 0 && echoed.output == input)
        let result = try await ChildProcess.run("sh", ["-c", "head -c 3000000 /dev/zero"])
        #expect(result.status == 0 && result.output.count == 3_000_000)
    }
}
