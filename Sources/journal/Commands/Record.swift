import ArgumentParser
import JournalCommit
import JournalCommandLine
import JournalFormat
import JournalIngest
import JournalLive
import JournalPlatform
import JournalStorage

extension JournalCommand {
    struct Record: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "record",
            abstract: "Append NDJSON events from files or standard input to the journal.",
            discussion: """
                Accepts one JSON object per line. Canonical form (one pen point):
                  {"type":"point","stroke":"<UUID>","x":1.5,"y":2.25,
                   "color":"#RRGGBBAA","width":4,"pressure":0.5,"t":0.016}
                  {"type":"end"|"undo"|"redo"|"erase","stroke":"<UUID>"}
                  {"type":"clear"}
                DrawTogether's point upserts:
                  {"id":"<UUID>","color":"red","point":[x,y]}
                CollabSketch's strokes:
                  {"id":"<UUID>","points":[{"x":…,"y":…}],"red":…,"green":…,
                   "blue":…,"alpha":…,"lineWidth":…}
                On a malformed line it stops with the file and line number;
                everything before it is durable. When it exits 0, every event
                is durable and sealed.

                Examples:
                  journal record -C board session.ndjson
                  my-drawing-app | journal record -C board --flush-ms 50
                """)

        @OptionGroup var options: JournalOptions
        @Argument(help: "NDJSON files to read in order ('-' or none: standard input).")
        var files: [String] = []
        @Option(help: "Make events durable every N events.") var flushEvery: Int = 32_768
        @Option(help: "…and whenever the oldest unflushed event is this many milliseconds old.")
        var flushMs: Int = 200
        @Option(help: ArgumentHelp(
            "Start the first input at this line (1-based): how to go on after a bad line, recording nothing twice.",
            valueName: "N"))
        var fromLine: Int = 1
        @Flag(help: "Skip malformed lines (reported on stderr) instead of stopping.")
        var skipInvalid = false
        @Flag(help: "Leave the last events in the open segment instead of sealing them.")
        var noSeal = false
        @Flag(help: "Do not compact the sealed segments after sealing (docs/FORMAT.md §16).")
        var noCompact = false
        @Flag(help: "After each flush, print 'durable SEQ' on stdout: every event up to SEQ survives a crash.")
        var printDurable = false
        @Flag(help: "Print the summary as one JSON object (keys: events, points, strokes, firstSeq, lastSeq, skipped, milliseconds).")
        var json = false

        func validate() throws {
            guard flushEvery >= 1 else { throw ValidationError("--flush-every must be at least 1") }
            guard flushMs >= 0 else { throw ValidationError("--flush-ms must not be negative") }
            guard fromLine >= 1 else { throw ValidationError("--from-line must be at least 1 (lines count from 1)") }
        }

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let started = ProcessInfoLite.monotonicSeconds()
                let writer = try Committer.Recording(directory: journal, options: RecordingOptions(
                    flushEveryEvents: flushEvery, flushIntervalMilliseconds: Int64(flushMs), sealOnClose: !noSeal, automaticCompaction: !noCompact),
                    durable: printDurable ? { seq in
                        Terminal.write("durable \(seq)\n")
                        Terminal.flush()
                    } : nil)
                if let change = writer.recovery.identityChange {
                    Terminal.standardError("journal: \(change)\n")
                }
                if writer.recovery.bytesCut > 0 {
                    Terminal.standardError("journal: recovered: cut \(writer.recovery.bytesCut) bytes of a torn tail (\(writer.recovery.tailProblem?.reason ?? "crash"))\n")
                }
                let firstSeq = writer.nextSeq
                var counts = Counts()
                var progress = Progress("recording")
                var inputError: InputError?
                /// The inputs from the one with the bad line on, and that line: what a re-run gives.
                var resumeFrom: (sources: [String], line: Int)?
                var warnedAboutSeal = false
                if files.isEmpty && ProcessInfoLite.isTerminal(0) {
                    Terminal.standardError("journal: reading NDJSON events from the terminal; type or paste lines, then Ctrl-D (or give a file: journal record FILE)\n")
                }
                let sources = files.isEmpty ? ["-"] : files
                inputs: for (index, source) in sources.enumerated() {
                    var reader = try source == "-"
                        ? NDJSONReader(fileDescriptor: 0, name: "<stdin>")
                        : NDJSONReader(path: source)
                    if index == 0 && fromLine > 1 {
                        do throws(InputError) { try reader.skipLines(fromLine - 1) } catch { inputError = error; break inputs }
                    }
                    // A quiet producer must not leave events waiting in memory.
                    reader.whenIdle = { writer.inputIsIdle() }
                    // One buffer for every line's payloads: an array per line costs an
                    // allocation per pen point.
                    var payloads: [Payload] = []
                    while true {
                        payloads.removeAll(keepingCapacity: true)
                        let line: Int?
                        do throws(InputError) {
                            line = try reader.next(appendingTo: &payloads)
                        } catch {
                            guard skipInvalid else {
                                inputError = error
                                resumeFrom = (Array(sources[index...]), error.line)
                                break inputs
                            }
                            counts.skipped += 1
                            if counts.skipped <= 10 { Terminal.standardError("journal: skipped \(error)\n") }
                            continue
                        }
                        guard line != nil else { break }
                        let arrivedAt = reader.arrivedAtMilliseconds
                        for payload in payloads {
                            try writer.append(payload, arrivedAt: arrivedAt)
                            counts.add(payload)
                        }
                        if !warnedAboutSeal, writer.sealIsFailing, let problem = writer.sealProblem {
                            Terminal.standardError("journal: warning: \(problem)\n")
                            warnedAboutSeal = true
                        }
                        progress.update(Wording.counted(counts.events, "event"))
                    }
                }
                progress.finish()
                // Whatever came before a bad line is made durable before reporting it. A seal
                // that cannot be written (a full disk) leaves every event durable in the open
                // segment: a warning, not a failure, since nothing acknowledged is at risk.
                do throws(JournalError) {
                    try writer.close()
                } catch {
                    guard case .sealFailed = error else { throw error }
                    Terminal.standardError("journal: warning: \(error)\n")
                }
                let seconds = ProcessInfoLite.monotonicSeconds() - started
                let recorded = writer.nextSeq - firstSeq
                var summary = "recorded \(Wording.counted(recorded, "event")) (\(Wording.counted(counts.points, "point")), \(Wording.counted(counts.strokes.count, "stroke")))"
                summary += " as seq \(firstSeq)...\(writer.nextSeq - 1) in \(formatSeconds(seconds))"
                if counts.skipped > 0 { summary += "; skipped \(Wording.counted(counts.skipped, "invalid line"))" }
                if recorded == 0 { summary = "recorded nothing (no events in the input)" }
                // After a bad line the error says what happened; "recorded nothing" would only
                // contradict it.
                if json {
                    var object = JSONObject()
                    object.add("events", recorded)
                    object.add("points", counts.points)
                    object.add("strokes", counts.strokes.count)
                    object.add("firstSeq", recorded > 0 ? firstSeq : nil)
                    object.add("lastSeq", recorded > 0 ? writer.nextSeq - 1 : nil)
                    object.add("skipped", counts.skipped)
                    object.add("milliseconds", Int((seconds * 1000).rounded()))
                    Terminal.write(object.text + "\n")
                    Terminal.flush()
                } else if inputError == nil || recorded > 0 {
                    Terminal.write(summary + "\n")
                    Terminal.flush()
                }
                if let inputError {
                    if let (rest, line) = resumeFrom, line > 0, !rest.contains("-") {
                        // Lines before it are recorded: a plain re-run would record them again.
                        let files = rest.map(Terminal.shellQuoted).joined(separator: " ")
                        Terminal.standardError("journal: \(inputError)\n")
                        Terminal.standardError("journal: the lines before it are recorded; fix line \(line) and go on with: journal record -C \(Terminal.shellQuoted(journal.root)) --from-line \(line) \(files)\n")
                        throw ExitCode(65)
                    }
                    throw inputError
                }
            }
        }

        private struct Counts {
            var events = 0
            var points = 0
            var skipped = 0
            var strokes = Set<StrokeID>()
            private var lastStroke: StrokeID?
            mutating func add(_ payload: Payload) {
                events += 1
                if case .point(let sample) = payload {
                    points += 1
                    // Points come in runs of one stroke: hash only when the stroke changes.
                    if sample.stroke != lastStroke {
                        strokes.insert(sample.stroke)
                        lastStroke = sample.stroke
                    }
                }
            }
        }
    }
}
