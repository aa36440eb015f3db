import ArgumentParser
import JournalCommit
import JournalCommandLine
import JournalFormat
import JournalPlatform
import JournalRender
import JournalReplay
import JournalSamples
import JournalStorage
import JournalSync

extension JournalCommand {
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "demo",
            abstract: "Record a built-in session from three machines, merge it, and render it.",
            discussion: """
                Creates DIR (default: ./journal-demo, or ./journal-demo-2, … if taken) holding
                three machines' journals and a board that merges them, then renders board.svg.
                Needs nothing but this binary.

                With --live, two people draw at once instead, on two live boards that share
                only a folder, each syncing continuously; every stroke one board receives from
                the other is printed with its delay, and the two drawings are compared at the end.

                Examples:
                  journal demo
                  journal demo /tmp/try-it && journal stats -C /tmp/try-it/board
                  journal demo --live /tmp/live
                """)

        @Argument(help: "Where to put the demo (must not exist yet).")
        var directory: String?
        @Flag(help: "Two live boards drawing at once through one shared folder.")
        var live = false
        @Option(help: ArgumentHelp("With --live: how many times faster than a real pen (120 samples/s) to draw.", valueName: "factor"))
        var speed: Double = 4

        func run() async throws {
            try await reportingErrors {
                if live {
                    guard speed.isFinite, speed > 0, speed <= 1000 else { throw CLIError("--speed must be a number above 0 and at most 1000", code: 64) }
                    return try await LiveDemo(root: try chooseDirectory(), speed: speed).run()
                }
                let root = try chooseDirectory()
                try FileSystem.createDirectory(root)
                let started = ProcessInfoLite.monotonicSeconds()
                let sessions = DemoSession.replicas()
                let names = ["alice", "bob", "carol"]
                let board = try JournalDirectory.create(at: root + "/board")
                Terminal.write("Recording a drawing session from \(sessions.count) machines into \(root)/\n")
                var totalEvents = 0
                for (index, payloads) in sessions.enumerated() {
                    let name = index < names.count ? names[index] : "machine-\(index + 1)"
                    let machine = try JournalDirectory.create(at: root + "/machines/" + name)
                    let writer = try Committer.Recording(directory: machine, options: RecordingOptions())
                    for payload in payloads { try writer.append(payload) }
                    try writer.close()
                    totalEvents += payloads.count
                    Terminal.write("  \(name): recorded \(payloads.count) events as replica \(writer.replica.hex.prefix(8))…\n")
                }
                // The same merge `journal merge` runs: verified imports, nothing written to the sources.
                let machines = sessions.indices.map { index in
                    root + "/machines/" + (index < names.count ? names[index] : "machine-\(index + 1)")
                }
                let imported = try await SyncEngine(journal: board).merge(from: machines).imported.count
                let set = SegmentSet.load(board)
                let (drawing, _) = Replay.replay(set)
                let svgPath = root + "/board.svg"
                let svg = SVGRenderer().render(drawing)
                try FileSystem.writeAtomically(Array(svg.utf8), to: svgPath)
                let elapsed = ProcessInfoLite.monotonicSeconds() - started
                Terminal.write("""
                  merged \(imported) segments into \(board.root): \(totalEvents) events, \(drawing.pointCount) points, \
                \(drawing.strokes.count) strokes (\(drawing.visibleStrokes.count) visible after undo/erase)
                  \(set.totalBytes) bytes on disk (\(bytesPerPoint(set.totalBytes, drawing.pointCount)) bytes/point)
                  digest \(drawing.digest)
                  rendered \(svgPath)
                Done in \(formatSeconds(elapsed)). Try next:
                  journal strokes -C \(board.root) | head -c 300
                  journal log -C \(board.root) --limit 3
                  journal stats -C \(board.root)
                  journal verify -C \(board.root)

                """)
                if !Self.journalIsOnPath {
                    Terminal.write("""
                    (`journal` is not on your PATH yet: install it with `Tools/install.sh`, or run these
                     as `swift run journal …` from the package folder.)

                    """)
                }
                Terminal.flush()
            }
        }

        /// Whether the hints above work as printed.
        static var journalIsOnPath: Bool {
            ProcessInfoLite.onPath("journal") != nil
        }

        private func chooseDirectory() throws -> String {
            if let directory {
                guard !FileSystem.exists(directory) else {
                    throw CLIError("\(directory) already exists; give a new directory for the demo", code: 64)
                }
                return directory
            }
            var candidate = "journal-demo"
            var counter = 2
            while FileSystem.exists(candidate) {
                candidate = "journal-demo-\(counter)"
                counter += 1
            }
            return candidate
        }

        private func bytesPerPoint(_ bytes: Int64, _ points: Int) -> String {
            guard points > 0 else { return "-" }
            let hundredths = Int((Double(bytes) / Double(points) * 100).rounded())
            return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
        }
    }
}
