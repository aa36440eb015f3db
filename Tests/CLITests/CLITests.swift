import Foundation
import JournalTestSupport
import Testing

/// Runs the built `journal` binary as a person would: arguments, stdin, stdout, exit codes.
@Suite(.ownThreads) struct CLITests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var binary: String { JournalProcess.binary }

    @discardableResult
    func journal(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:], executable: String = binary) throws -> Run {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "JOURNAL_DIR")
        for (key, value) in environment { env[key] = value }
        let run = try runTool(executable, arguments, environment: env, stdin: stdin)
        return Run(status: run.status, stdout: run.stdout, stderr: run.stderr)
    }

    /// A journal `board` in `temp` holding `sample` (8 events), as a person makes one.
    func sampleBoard(_ temp: TemporaryDirectory) throws -> String {
        let board = temp.path + "/board"
        #expect(try journal(["init", board]).status == 0)
        #expect(try journal(["record", "-C", board], stdin: Self.sample).status == 0)
        return board
    }

    static let sample = """
        {"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":10.5,"y":20.25,"color":"#E53935FF","width":4,"pressure":0.5,"t":0}
        {"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":12.5,"y":22.25,"color":"#E53935FF","width":4,"pressure":0.6,"t":0.008}
        {"type":"end","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88"}
        {"id":"A0000000-0000-4000-8000-00000000000B","color":"blue","point":[100,200]}
        {"id":"B0000000-0000-4000-8000-00000000000C","points":[{"x":1,"y":2},{"x":3,"y":4}],"red":0,"green":0.5,"blue":1,"alpha":1,"lineWidth":2}
        {"type":"undo","stroke":"A0000000-0000-4000-8000-00000000000B"}

        """

    @Test func initRecordAndInspectEndToEnd() throws {
        let temp = TemporaryDirectory("cli")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try journal(["init", board]).status == 0)
        let recorded = try journal(["record", "-C", board], stdin: Self.sample)
        #expect(recorded.status == 0, "\(recorded.stderr)")
        #expect(recorded.stdout.contains("recorded 8 events (5 points, 3 strokes)"), "\(recorded.stdout)")

        let strokes = try journal(["strokes", "-C", board])
        #expect(strokes.status == 0)
        let json = try JSONSerialization.jsonObject(with: Data(strokes.stdout.utf8)) as! [String: Any]
        let visible = json["strokes"] as! [[String: Any]]
        #expect(visible.map { $0["id"] as! String } == ["6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88", "B0000000-0000-4000-8000-00000000000C"])
        let firstPoints = visible[0]["points"] as! [[String: Any]]
        #expect(firstPoints.count == 2)
        #expect(firstPoints[1]["x"] as? Double == 12.5 && firstPoints[1]["pressure"] as? Double == 0.6)
        #expect(visible[1]["color"] as? String == "#0080FFFF")
        let all = try journal(["strokes", "-C", board, "--all"])
        #expect(all.stdout.contains("\"visible\":false"))

        let digest = try journal(["digest", "-C", board])
        #expect(digest.status == 0)
        #expect(digest.stdout == (json["digest"] as! String) + "\n")

        let log = try journal(["log", "-C", board])
        let lines = log.stdout.split(separator: "\n")
        #expect(lines.count == 8)
        #expect(lines[0].contains("\"seq\":1") && lines[0].contains("\"lamport\":1"))
        let limited = try journal(["log", "-C", board, "--stroke", "A0000000-0000-4000-8000-00000000000B", "--limit", "1"])
        #expect(limited.stdout.split(separator: "\n").count == 1)
        #expect(limited.stdout.contains("\"color\":\"#"))

        let stats = try journal(["stats", "-C", board, "--json"])
        let statsJSON = try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as! [String: Any]
        #expect(statsJSON["points"] as? Int == 5 && statsJSON["events"] as? Int == 8 && statsJSON["replicas"] as? Int == 1)

        let verify = try journal(["verify", "-C", board])
        #expect(verify.status == 0, "\(verify.stdout)")
        #expect(verify.stdout.contains("clean"))

        let svgPath = temp.path + "/board.svg"
        let render = try journal(["render", svgPath, "-C", board])
        #expect(render.status == 0)
        let svg = try String(contentsOfFile: svgPath, encoding: .utf8)
        #expect(svg.contains("<svg") && svg.uppercased().contains("#E53935"))
    }

    @Test func aLogReRecordsIntoTheSameDrawing() throws {
        let temp = TemporaryDirectory("cli-log")
        defer { temp.remove() }
        try journal(["init", temp.path + "/a"])
        try journal(["init", temp.path + "/b"])
        try journal(["record", "-C", temp.path + "/a"], stdin: Self.sample)
        let log = try journal(["log", "-C", temp.path + "/a"])
        let rerecorded = try journal(["record", "-C", temp.path + "/b"], stdin: log.stdout)
        #expect(rerecorded.status == 0, "\(rerecorded.stderr)")
        let strokesA = try journal(["strokes", "-C", temp.path + "/a"]).stdout
        let strokesB = try journal(["strokes", "-C", temp.path + "/b"]).stdout
        #expect(strokesA == strokesB)
    }

    @Test func aMalformedLineNamesItsLineAndKeepsWhatCameBefore() throws {
        let temp = TemporaryDirectory("cli-bad")
        defer { temp.remove() }
        let board = temp.path + "/board"
        try journal(["init", board])
        let input = Self.sample + "{\"type\":\"point\",\"stroke\":\"nope\",\"x\":1,\"y\":2}\n" + Self.sample
        let file = temp.path + "/input.ndjson"
        try input.write(toFile: file, atomically: false, encoding: .utf8)
        let run = try journal(["record", "-C", board, file])
        #expect(run.status == 65)
        #expect(run.stderr.contains("input.ndjson:7:"), "\(run.stderr)")
        let stats = try journal(["stats", "-C", board, "--json"])
        #expect(stats.stdout.contains("\"events\":8,"))

        let skipping = try journal(["record", "-C", board, "--skip-invalid", file])
        #expect(skipping.status == 0)
        #expect(skipping.stdout.contains("skipped 1 invalid line"))
    }

    /// The README's exit codes: 64 usage (a bad option, or -C naming no journal), 74 I/O error.
    @Test func usageErrorsExit64AndIOErrorsExit74() throws {
        let temp = TemporaryDirectory("cli-usage")
        defer { temp.remove() }
        let missing = try journal(["strokes", "-C", temp.path + "/nothing"])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("not a journal"))
        // `--limit=-3`: with a space, "-3" would be read as an option and fail as a missing value.
        let negative = try journal(["log", "-C", temp.path, "--limit=-3"])
        #expect(negative.status == 64)
        #expect(negative.stderr.contains("must not be negative"), "\(negative.stderr)")
        let fromEnv = try journal(["digest"], environment: ["JOURNAL_DIR": temp.path + "/nothing"])
        #expect(fromEnv.status == 64 && fromEnv.stderr.contains("nothing"))

        try journal(["init", temp.path + "/board"])
        let unwritable = try journal(["render", temp.path + "/no/such/folder/board.svg", "-C", temp.path + "/board"])
        #expect(unwritable.status == 74, "\(unwritable.stderr)")
    }

    /// An empty path (an unset shell variable) names no folder: `journal init ""` made a journal
    /// in "/" (`"" + "/local"`), found by the hostile-input campaign.
    @Test func anEmptyPathIsRefusedNeverTakenForTheRoot() throws {
        let temp = TemporaryDirectory("cli-empty-path")
        defer { temp.remove() }
        for arguments in [["init", ""], ["token", "--data", "", "--board", "wall"], ["sync", "-C", temp.path, ""]] {
            let run = try journal(arguments)
            #expect(run.status == 64, "journal \(arguments): \(run.stderr)")
            #expect(run.stderr.contains("empty path") || run.stderr.contains("must name a folder"), "\(run.stderr)")
        }
        // And nothing was made where the test runs (a relative "" is this folder).
        #expect(!FileManager.default.fileExists(atPath: ".relay") && !FileManager.default.fileExists(atPath: "local/replica"))
    }

    @Test func everyCommandHasHelpWithAnExample() throws {
        for command in ["demo", "init", "record", "sync", "merge", "status", "snapshot", "log", "strokes", "render", "stats", "verify", "digest"] {
            let help = try journal([command, "--help"])
            #expect(help.status == 0, "\(command)")
            #expect(help.stdout.contains("Example"), "\(command) --help lacks an example")
            // Text the parser would have to rewrap leaves orphaned words; say things once.
            for line in help.stdout.split(separator: "\n") where !line.hasPrefix("USAGE:") {
                #expect(line.count <= 80, "\(command) --help: a line of \(line.count) columns: \(line)")
            }
            #expect(!help.stdout.contains("). (default:"), "\(command) --help repeats its default")
        }
    }

    @Test func demoRecordsMergesAndRenders() throws {
        let temp = TemporaryDirectory("cli-demo")
        defer { temp.remove() }
        let run = try journal(["demo", temp.path + "/demo"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: temp.path + "/demo/board.svg"))
        let verify = try journal(["verify", "-C", temp.path + "/demo/board"])
        #expect(verify.status == 0)
        let stats = try journal(["stats", "-C", temp.path + "/demo/board", "--json"])
        #expect(stats.stdout.contains("\"replicas\":3"))
        let again = try journal(["demo", temp.path + "/demo"])
        #expect(again.status == 64)
        #expect(again.stderr.contains("already exists"), "\(again.stderr)")
    }

    @Test func verifyReportsACorruptBlockAndExitsOne() throws {
        let temp = TemporaryDirectory("cli-verify")
        defer { temp.remove() }
        let board = temp.path + "/board"
        try journal(["init", board])
        try journal(["record", "-C", board], stdin: Self.sample)
        let folder = try FileManager.default.contentsOfDirectory(atPath: board + "/replicas").first!
        let name = try FileManager.default.contentsOfDirectory(atPath: board + "/replicas/" + folder).first { $0.hasSuffix(".sjs") }!
        let path = board + "/replicas/" + folder + "/" + name
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // In the last block's body: the last 108 bytes are the seal record (FORMAT.md §15).
        bytes[bytes.count - 108 - 3] ^= 0x40
        try bytes.write(to: URL(fileURLWithPath: path))
        let run = try journal(["verify", "-C", board])
        #expect(run.status == 1)
        #expect(run.stdout.contains(name) && run.stdout.contains("@32") && run.stdout.contains("checksum"))
        #expect(run.stdout.contains("to repair: `journal sync -C"), "\(run.stdout)")
        let json = try journal(["verify", "-C", board, "--json"])
        #expect(json.stdout.contains("\"clean\":false"))
    }
}

/// Crashes in the middle of syncs: after any number of `kill -9`, one clean sync converges and
/// leaves no temporary behind.
@Suite(.ownThreads) struct SyncCrashTests {
    let cli = CLITests()

    func session(_ seed: Int, strokes: Int) -> String {
        var lines = ""
        for stroke in 0..<strokes {
            let id = String(format: "%08X-0000-4000-8000-%012X", seed, stroke)
            for point in 0..<60 {
                lines += "{\"type\":\"point\",\"stroke\":\"\(id)\",\"x\":\(Double(point * 3 + seed) / 4),\"y\":\(Double(stroke * 7 + point) / 8),\"color\":\"#112233FF\",\"width\":3,\"pressure\":0.5,\"t\":\(Double(point) / 100)}\n"
            }
            lines += "{\"type\":\"end\",\"stroke\":\"\(id)\"}\n"
        }
        return lines
    }

    @Test func killDashNineDuringSyncThenSyncAgainConverges() throws {
        let temp = TemporaryDirectory("sync-crash")
        defer { temp.remove() }
        let shared = temp.path + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        let machines = (0..<3).map { temp.path + "/m\($0)" }
        for (index, machine) in machines.enumerated() {
            try cli.journal(["init", machine])
            for part in 0..<4 {
                let run = try cli.journal(["record", "-C", machine], stdin: session(index * 10 + part, strokes: 40))
                #expect(run.status == 0)
            }
        }
        var random = SeededGenerator(seed: 42)
        var killed = 0
        for round in 0..<24 {
            let machine = machines[round % machines.count]
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLITests.binary)
            process.arguments = ["sync", "-C", machine, shared]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(UInt32.random(in: 0...25_000, using: &random))
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                killed += 1
            }
            try process.waitForExit()
        }
        #expect(killed > 0)
        for _ in 0..<2 {
            for machine in machines {
                let run = try cli.journal(["sync", "-C", machine, shared])
                #expect(run.status == 0, "\(run.stderr)")
            }
        }
        let digests = try Set(machines.map { try cli.journal(["digest", "-C", $0]).stdout })
        #expect(digests.count == 1)
        for machine in machines {
            #expect(try cli.journal(["verify", "-C", machine]).status == 0)
        }
        let leftovers = FileManager.default.enumerator(atPath: shared)?.compactMap { $0 as? String }.filter { $0.contains(".tmp-") } ?? []
        #expect(leftovers.isEmpty, "\(leftovers)")
        let status = try cli.journal(["status", "-C", machines[0], "--json"])
        #expect(status.stdout.contains("\"gaps\":[]") && !status.stdout.contains("\"forks\":[1"))
    }
}

@Suite(.ownThreads) struct ConcurrencyAndInputTests {
    let cli = CLITests()

    @Test func aSecondRecorderIsRefusedWithTheHoldersPid() throws {
        let temp = TemporaryDirectory("two-recorders")
        defer { temp.remove() }
        let board = temp.path + "/board"
        try cli.journal(["init", board])
        // The first recorder waits on an open pipe, holding the lock.
        let first = Process()
        first.executableURL = URL(fileURLWithPath: CLITests.binary)
        first.arguments = ["record", "-C", board]
        let input = Pipe()
        first.standardInput = input
        first.standardOutput = FileHandle.nullDevice
        try first.run()
        defer { if first.isRunning { first.terminate() } }
        input.fileHandleForWriting.write(Data(CLITests.sample.utf8))
        // Wait until it holds the lock (it has written its pid).
        #expect(eventuallyBlocking(within: 60, every: 20) {
            (try? String(contentsOfFile: board + "/local/writer.lock", encoding: .utf8))?.contains("\(first.processIdentifier)") == true
        }, "the first recorder never took the writer lock")
        let second = try cli.journal(["record", "-C", board], stdin: CLITests.sample)
        #expect(second.status == 75)
        #expect(second.stderr.contains("pid \(first.processIdentifier)"), "\(second.stderr)")

        // Sync while the recorder runs: it publishes only what is sealed, and loses nothing.
        let shared = temp.path + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        let sync = try cli.journal(["sync", "-C", board, shared])
        #expect(sync.status == 0, "\(sync.stderr)")
        #expect(sync.stdout.contains("holds the writer lock"))
        try input.fileHandleForWriting.close()
        try first.waitForExit()
        #expect(first.terminationStatus == 0)
        #expect(try cli.journal(["sync", "-C", board, shared]).status == 0)
        try cli.journal(["init", temp.path + "/other"])
        try cli.journal(["sync", "-C", temp.path + "/other", shared])
        #expect(try cli.journal(["digest", "-C", temp.path + "/other"]).stdout == cli.journal(["digest", "-C", board]).stdout)
        #expect(try cli.journal(["stats", "-C", temp.path + "/other", "--json"]).stdout.contains("\"events\":8,"))
    }

    @Test func badInputIsRefusedWithItsLineAndEarlierEventsStay() throws {
        let temp = TemporaryDirectory("bad-input")
        defer { temp.remove() }
        let board = temp.path + "/board"
        try cli.journal(["init", board])
        let good = ##"{"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":1,"y":2,"color":"#112233","width":2}"##
        let cases: [(String, String)] = [
            (##"{"type":"point","x":1,"y":2}"##, "stroke"),
            (##"{"type":"point","stroke":"not-a-uuid","x":1,"y":2}"##, "UUID"),
            (##"{"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":1,"y":2,"color":"#GGG"}"##, "color"),
            (##"{"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":"NaN","y":2}"##, "x"),
            (##"{"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":1,"y":2,"width":-1}"##, "width"),
            (##"{"type":"point","stroke":{"a":[[[[]]]]},"x":1,"y":2}"##, "stroke"),
            ("{\"type\":\"clear\",\"pad\":\"\u{FF}\"}", "UTF-8"),
        ]
        var recorded = 0
        for (line, word) in cases {
            let file = temp.path + "/in.ndjson"
            var bytes = Data((good + "\n" + good + "\n").utf8)
            bytes.append(Data(line.utf8).map { $0 == 0xC3 ? 0xFF : $0 }.withUnsafeBufferPointer { Data(buffer: $0) })
            bytes.append(Data(("\n" + good + "\n").utf8))
            try bytes.write(to: URL(fileURLWithPath: file))
            let run = try cli.journal(["record", "-C", board, file])
            #expect(run.status == 65, "\(line)")
            #expect(run.stderr.contains("in.ndjson:3:"), "\(line): \(run.stderr)")
            #expect(run.stderr.lowercased().contains(word.lowercased()), "\(line): \(run.stderr)")
            recorded += 2
            let skipping = try cli.journal(["record", "-C", board, "--skip-invalid", file])
            #expect(skipping.status == 0 && skipping.stdout.contains("skipped 1 invalid line"))
            recorded += 3
        }
        #expect(try cli.journal(["stats", "-C", board, "--json"]).stdout.contains("\"events\":\(recorded),"))
    }

    @Test func aHundredMegabyteLineIsRefusedWithoutStoppingTheRest() throws {
        let temp = TemporaryDirectory("long-line")
        defer { temp.remove() }
        let board = temp.path + "/board"
        try cli.journal(["init", board])
        let file = temp.path + "/long.ndjson"
        _ = FileManager.default.createFile(atPath: file, contents: nil)
        let handle = FileHandle(forWritingAtPath: file)!
        handle.write(Data((CLITests.sample.split(separator: "\n")[0] + "\n{\"type\":\"clear\",\"pad\":\"").utf8))
        let chunk = Data(repeating: UInt8(ascii: "x"), count: 1 << 20)
        for _ in 0..<100 { handle.write(chunk) }
        handle.write(Data(("\"}\n" + CLITests.sample.split(separator: "\n")[1] + "\n").utf8))
        try handle.close()
        let run = try cli.journal(["record", "-C", board, "--skip-invalid", file])
        #expect(run.status == 0)
        #expect(run.stderr.contains("long.ndjson:2:"), "\(run.stderr)")
        #expect(run.stdout.contains("recorded 2 events"), "\(run.stdout)")
    }
}
