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
        // `help` of a command that does not exist is as unknown (it printed the root help, 0).
        let helpSlip = try cli.journal(["help", "rendr"])
        #expect(helpSlip.status == 64 && helpSlip.stderr.contains("Did you mean 'render'?"), "\(helpSlip.stderr)")
        let help = try cli.journal(["help", "render"])
        #expect(help.status == 0 && help.stdout.contains("journal render"))
    }
}

/// `--at`, `--since`, `--until` and `journal history` through the built binary (docs/HISTORY.md).
@Suite(.ownThreads) struct HistoryCLITests {
    let cli = CLITests()

    @Test func momentsWorkOnEveryCommandThatShowsTheDrawing() throws {
        let temp = TemporaryDirectory("cli-history")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let log = try cli.journal(["log", "-C", board]).stdout.split(separator: "\n")
        #expect(log.count >= 3)
        // At the end, and at a time after every event: the journal's own digest.
        let now = try cli.journal(["digest", "-C", board]).stdout
        #expect(try cli.journal(["digest", "-C", board, "--at", "now"]).stdout == now)
        #expect(try cli.journal(["digest", "-C", board, "--at", "-0s"]).stdout == now)
        #expect(try cli.journal(["digest", "-C", board, "--at", "2999-01-01"]).stdout == now)
        // Before anything: the empty drawing, whatever the way there.
        let zero = try cli.journal(["digest", "-C", board, "--at", "0"])
        let empty = zero.stdout
        #expect(empty != now)
        #expect(!zero.stderr.contains("note"), "a count of events needs no note: \(zero.stderr)")
        // A time before every event says so: the empty drawing is not a lost one.
        let before = try cli.journal(["digest", "-C", board, "--at", "2000-01-01T00:00Z"])
        #expect(before.stdout == empty && before.status == 0)
        #expect(before.stderr.contains("comes before every event"), "\(before.stderr)")
        #expect(!(try cli.journal(["digest", "-C", board, "--at", "2999-01-01"]).stderr.contains("note")))
        #expect(try cli.journal(["strokes", "-C", board, "--at", "0"]).stdout.contains("\"strokes\":[\n]"))
        // The first event alone: one point of one stroke; its digest counts that event.
        let first = try cli.journal(["digest", "-C", board, "--at", "1", "--json"]).stdout
        #expect(first.contains("\"events\":1") && first.contains("\"points\":1"), "\(first)")
        let svg = try cli.journal(["render", "-", "-C", board, "--at", "1"]).stdout
        #expect(svg.hasPrefix("<svg") || svg.hasPrefix("<?xml"), "\(svg.prefix(80))")
        // --since/--until: the events between two moments, as numbered by the log.
        let between = try cli.journal(["log", "-C", board, "--since", "1", "--until", "2"]).stdout.split(separator: "\n")
        #expect(between == [log[1]])
        // A moment that cannot be read is refused, naming it.
        let bad = try cli.journal(["digest", "-C", board, "--at", "10:61"])
        #expect(bad.status == 64 && bad.stderr.contains("\"10:61\""), "\(bad.stderr)")
        let history = try cli.journal(["history", "-C", board, "--json"])
        #expect(history.status == 0 && history.stdout.contains("\"events\":\(log.count)") && history.stdout.contains("\"firstEvent\":1"), "\(history.stdout)")
        let text = try cli.journal(["history", "-C", board])
        #expect(text.status == 0 && text.stdout.contains("events 1–\(log.count)"), "\(text.stdout)")
    }

    /// The visible strokes of `strokes` output without their ids: [[x, y, …]] per stroke.
    func visibleMarks(_ json: String) throws -> [[Double]] {
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        let strokes = object?["strokes"] as? [[String: Any]] ?? []
        return strokes.map { stroke in
            (stroke["points"] as? [[String: Any]] ?? []).flatMap { [$0["x"] as? Double ?? .nan, $0["y"] as? Double ?? .nan] }
        }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    @Test func restoreMakesTheDrawingOfAMomentAgainAndIsUndoneTheSameWay() throws {
        let temp = TemporaryDirectory("cli-restore")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let events = try cli.journal(["log", "-C", board]).stdout.split(separator: "\n").count
        let original = try cli.journal(["strokes", "-C", board]).stdout
        let then = try cli.journal(["strokes", "-C", board, "--at", "1"]).stdout
        let dry = try cli.journal(["restore", "-C", board, "--to", "1", "--dry-run", "--json"])
        #expect(dry.status == 0 && dry.stdout.contains("\"appended\":false"), "\(dry.stdout)\(dry.stderr)")
        #expect(try cli.journal(["log", "-C", board]).stdout.split(separator: "\n").count == events)
        let restored = try cli.journal(["restore", "-C", board, "--to", "1"])
        #expect(restored.status == 0 && restored.stdout.contains("--to \(events)"), "\(restored.stdout)\(restored.stderr)")
        #expect(try visibleMarks(cli.journal(["strokes", "-C", board]).stdout) == visibleMarks(then))
        #expect(try cli.journal(["verify", "-C", board]).status == 0)
        let undone = try cli.journal(["restore", "-C", board, "--to", String(events)])
        #expect(undone.status == 0, "\(undone.stderr)")
        #expect(try visibleMarks(cli.journal(["strokes", "-C", board]).stdout) == visibleMarks(original))
        let bad = try cli.journal(["restore", "-C", board, "--to", "yesterday"])
        #expect(bad.status == 64 && bad.stderr.contains("yesterday"))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/rsvg-convert"), "needs rsvg-convert (librsvg2-bin)"))
    func aPDFHasAPagePerMoment() throws {
        let temp = TemporaryDirectory("cli-pdf")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        #expect(try cli.journal(["record", "-C", board], stdin: #"{"type":"clear"}"# + "\n").status == 0)
        let pages = { (path: String) throws -> Int in
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(bytes.starts(with: Array("%PDF".utf8)))
            let text = String(decoding: bytes, as: UTF8.self)
            return text.matches(of: try Regex(#"/Type\s*/Page[^s]"#)).count
        }
        let three = temp.path + "/three.pdf"
        let run = try cli.journal(["render", three, "-C", board, "--pages", "1,2,now"])
        #expect(run.status == 0 && run.stdout.contains("3 pages"), "\(run.stdout)\(run.stderr)")
        #expect(try pages(three) == 3)
        // A page before each clear, and now: the board before its clear, and the cleared one.
        let clears = temp.path + "/clears.pdf"
        #expect(try cli.journal(["render", clears, "-C", board, "--pages", "clears"]).status == 0)
        #expect(try pages(clears) == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: temp.path).allSatisfy { !$0.hasPrefix(".journal-render") })
        #expect(try cli.journal(["render", temp.path + "/x.svg", "-C", board, "--pages", "clears"]).status == 64)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg") && FileManager.default.isExecutableFile(atPath: "/usr/bin/ffprobe"),
                   "needs ffmpeg and ffprobe (apt-get install ffmpeg)"))
    func aTimelapseVideoHasTheFramesAndSizeAsked() throws {
        let temp = TemporaryDirectory("cli-video")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        for (name, frames) in [("lapse.mp4", 12), ("lapse.webm", 6), ("lapse.gif", 4)] {
            let path = temp.path + "/" + name
            let fps = frames / 2
            let run = try cli.journal(["timelapse", path, "-C", board, "--duration", "2", "--fps", String(fps), "--width", "321"])
            #expect(run.status == 0 && run.stdout.contains("\(frames) frames of 322×"), "\(name): \(run.stdout)\(run.stderr)")
            let probe = Process()
            probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
            probe.arguments = ["-v", "error", "-count_frames", "-select_streams", "v:0",
                               "-show_entries", "stream=width,nb_read_frames", "-of", "csv=p=0", path]
            let output = Pipe()
            probe.standardOutput = output
            try probe.run()
            let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            try probe.waitForExit()
            #expect(said.trimmingCharacters(in: .whitespacesAndNewlines) == "322,\(frames)", "\(name): ffprobe says \(said)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: temp.path).allSatisfy { !$0.contains(".partial-") })
        // ffmpeg refusing (a folder that does not exist): its message, and nothing left behind.
        let refused = try cli.journal(["timelapse", temp.path + "/missing/x.mp4", "-C", board, "--duration", "1", "--fps", "2"])
        #expect(refused.status == 74 && refused.stderr.contains("ffmpeg could not make") && refused.stderr.contains("nothing written"), "\(refused.stderr)")
    }

    /// A video frame past the pixel budget (3840×2160: ffmpeg's encoder alone took 4.6 GB at
    /// 7680×6128) is refused before anything is drawn or started, with the sizes and what to
    /// do; an animated SVG has no such bound (issue 41).
    @Test func aVideoFramePastThePixelBudgetIsRefusedBeforeAnythingRuns() throws {
        let temp = TemporaryDirectory("cli-video-budget")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try cli.journal(["init", board]).status == 0)
        // A square drawing: at 7680 wide, 7680 high.
        let square = [##"{"type":"point","stroke":"00000000-0000-4000-8000-000000000001","x":0,"y":0,"color":"#000000FF","width":2}"##,
                      ##"{"type":"point","stroke":"00000000-0000-4000-8000-000000000001","x":100,"y":100,"color":"#000000FF","width":2}"##]
        #expect(try cli.journal(["record", "-C", board], stdin: square.joined(separator: "\n") + "\n").status == 0)
        let refused = try cli.journal(["timelapse", temp.path + "/big.mp4", "-C", board, "--duration", "1", "--width", "7680"])
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(refused.stderr.contains("7680×7680 pixels") && refused.stderr.contains("past the budget of 8294400"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: temp.path + "/big.mp4"))
        let svg = try cli.journal(["timelapse", temp.path + "/big.svg", "-C", board, "--duration", "1", "--width", "7680"])
        #expect(svg.status == 0, "\(svg.stderr)")
    }

    /// A time-lapse stopped with SIGTERM while ffmpeg encodes leaves neither the video nor its
    /// temporary, and ends as killed by the signal (issue 41).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "needs ffmpeg (apt-get install ffmpeg)"))
    func aTimelapseStoppedWithSIGTERMLeavesNothing() async throws {
        let temp = TemporaryDirectory("cli-video-stopped")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        // Long enough to be stopped while it encodes: 2,400 frames of 1,280 px.
        let child = try JournalProcess.Child(["timelapse", temp.path + "/long.mp4", "-C", board, "--duration", "80", "--fps", "30",
                                              "--width", "1280"], label: "timelapse-stopped")
        let encoding = await eventually(within: 120) {
            (try? FileManager.default.contentsOfDirectory(atPath: temp.path))?.contains { $0.hasPrefix(".long.mp4.partial-") } ?? false
        }
        #expect(encoding, "the encode never started: \(child.stderr)")
        let status = await child.stop(with: SIGTERM, seconds: 60)
        // Ended by the signal, or with the status a shell gives that (128 + 15).
        #expect(!child.process.isRunning && (status == nil || status == 128 + SIGTERM), "it exited with \(String(describing: status))")
        #expect(child.stderr.contains("not written"), "\(child.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: temp.path).filter { $0.contains("long.mp4") }
        #expect(left.isEmpty, "left behind: \(left)")
    }

    /// `--speed` plays the session as drawn: the animation lasts the drawing's time (pauses
    /// cut to --max-idle) over the speed. `--size` fits the picture in a box.
    @Test func aTimelapseAtASpeedLastsTheDrawingsTimeOverIt() throws {
        let temp = TemporaryDirectory("cli-timelapse-speed")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        // `record` stamps events with the time they are recorded: a second take 0.3 s later
        // gives the session a pause to play.
        usleep(300_000)
        #expect(try cli.journal(["record", "-C", board], stdin: CLITests.sample).status == 0)
        func seconds(_ arguments: [String]) throws -> Double? {
            let run = try cli.journal(["timelapse", "-", "-C", board] + arguments)
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
            guard let match = run.stdout.firstMatch(of: try Regex(#" in ([0-9.]+) s: "#)) else { return nil }
            return Double(String(match.output[1].substring ?? ""))
        }
        let once = try #require(try seconds(["--speed", "1"]))
        let faster = try #require(try seconds(["--speed", "4"]))
        // The comment gives seconds to two decimals.
        #expect(once > 0 && abs(faster * 4 - once) < 0.03, "--speed 1: \(once) s, --speed 4: \(faster) s")
        let shortPauses = try #require(try seconds(["--speed", "1", "--max-idle", "0.001"]))
        #expect(shortPauses < once, "pauses cut to 1 ms: \(shortPauses) s against \(once) s")
        #expect(try seconds(["--duration", "7"]) == 7)

        let boxed = try cli.journal(["timelapse", "-", "-C", board, "--size", "300x90"])
        let sizes = try #require(boxed.stdout.firstMatch(of: try Regex(#"width="([0-9.]+)" height="([0-9.]+)""#)))
        let (width, height) = (Double(String(sizes.output[1].substring ?? "")) ?? 0, Double(String(sizes.output[2].substring ?? "")) ?? 0)
        #expect(width <= 300 && height <= 90 && (width == 300 || height >= 89), "\(width)×\(height) in 300×90")

        for bad in [["--speed", "2", "--duration", "5"], ["--speed", "0"], ["--size", "300"], ["--size", "300x90", "--width", "100"],
                    ["--max-idle", "-1"]] {
            let run = try cli.journal(["timelapse", "-", "-C", board] + bad)
            #expect(run.status == 64 && !run.stderr.isEmpty, "\(bad): \(run.status) \(run.stderr)")
        }
    }

    @Test func aTimelapseVideoWithoutFFmpegSaysHowToGetIt() throws {
        let temp = TemporaryDirectory("cli-video-missing")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let run = try cli.journal(["timelapse", temp.path + "/x.mp4", "-C", board], environment: ["PATH": temp.path])
        #expect(run.status == 74 && run.stderr.contains("apt-get install ffmpeg"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temp.path).allSatisfy { !$0.hasPrefix("x.mp4") && !$0.contains(".partial-") })
        #expect(try cli.journal(["timelapse", temp.path + "/x.avi", "-C", board]).status == 64)
        #expect(try cli.journal(["timelapse", temp.path + "/x.mp4", "-C", board, "--fps", "0"]).status == 64)
    }
}
