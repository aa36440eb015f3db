import Foundation
import JournalPlatform
import JournalTestSupport
import Testing

/// A test run killed halfway left `journal serve` children running with no parent, one on port
/// 8080 (issue 41). Started with `JOURNAL_EXIT_WITH_PARENT=1`, as every test's child is, a relay
/// stops once its parent is gone.
@Suite struct ParentWatchTests {
    /// Whether `pid` has ended (gone, or a zombie nobody reaps: a container's first process may not).
    static func hasEnded(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 else { return true }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    @Test func aRelayWhoseParentDiesStopsGracefully() async throws {
        let temp = TemporaryDirectory("parent-watch")
        defer { temp.remove() }
        // The parent: a shell that starts the relay, waits until it listens, says its pid, and
        // ends (as a killed test process would, without a word to its children).
        let script = """
            JOURNAL_EXIT_WITH_PARENT=1 "$0" serve --port 0 --open --data "$1/boards" --log-level info >"$1/out" 2>"$1/err" &
            child=$!
            while ! grep -q 'journal: serving ' "$1/out" 2>/dev/null; do
                kill -0 $child 2>/dev/null || exit 3
                sleep 0.05
            done
            echo $child
            """
        let parent = Process()
        parent.executableURL = URL(fileURLWithPath: "/bin/sh")
        parent.arguments = ["-c", script, JournalProcess.binary, temp.path]
        let said = Pipe()
        parent.standardOutput = said
        try parent.run()
        try parent.waitForExit()
        #expect(parent.terminationStatus == 0, "the relay did not start: \((try? String(contentsOfFile: temp.path + "/err", encoding: .utf8)) ?? "")")
        let text = String(decoding: said.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let pid = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        // Its parent gone, the relay stops on its own (a bound, not a timing: 120 s).
        let ended = await eventually(within: 120, every: 20) { Self.hasEnded(pid) }
        if !ended { kill(pid, SIGKILL) }
        #expect(ended, "the relay still runs with its parent gone")
        // It stopped as SIGTERM stops it: boards sealed and closed, not killed.
        let log = (try? String(contentsOfFile: temp.path + "/err", encoding: .utf8)) ?? ""
        #expect(log.contains("stopping: sealing and closing every open board"), "\(log)")
    }
}
