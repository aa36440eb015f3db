import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalIngest
import JournalReplay
import JournalStorage
import JournalSync

extension JournalCommand {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Check every segment: headers, checksums, block bodies, forks.",
            discussion: """
                Prints each problem with file, byte offset, replica, seq range and reason, and
                exits 0 only if the journal is clean (exit 1 otherwise). A torn tail of the open
                segment (left by a crash, cut on the next write) is noted but is not a problem.

                Example:
                  journal verify -C board && echo clean
                """)

        @OptionGroup var options: JournalOptions
        @Flag(help: "Print one JSON object: {\"clean\":…,\"segments\":…,\"events\":…,\"problems\":[…]}.")
        var json = false

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let set = SegmentSet.load(journal)
                let report = Replay.check(set)
                let problems = report.problems.filter { $0.kind != .tornTail }
                let notes = report.problems.filter { $0.kind == .tornTail }
                // Counted as `stats` counts them: sealed files, and the open segment if it holds events.
                let sealed = set.members.filter(\.isSealed).count
                let open = set.members.filter { !$0.isSealed && $0.scan.eventCount > 0 }.count
                let segments = "\(sealed) sealed" + (open > 0 ? " + \(open) open" : "") + (sealed + open == 1 ? " segment" : " segments")
                if json {
                    var object = JSONObject()
                    object.add("clean", problems.isEmpty)
                    object.add("segments", sealed + open)
                    object.add("sealedSegments", sealed)
                    object.add("openSegments", open)
                    object.add("events", report.eventCount)
                    object.add("problems", objects: problems.map(\.json))
                    Terminal.write(object.text + "\n")
                } else {
                    for problem in problems { Terminal.write("\(problem)\n") }
                    // Whose events count is not always the same on every machine: say so.
                    if set.trustListOverridden {
                        Terminal.write("note: this board's membership decides what counts; local/trust is ignored\n")
                    } else if set.trust != nil, set.membership?.isOpen ?? true {
                        Terminal.write("note: this machine's local/trust decides what counts (not synced: `journal members import` moves it into the board)\n")
                    }
                    for note in notes { Terminal.write("note: \(note) (cut on next open)\n") }
                    // What to do next: a machine or store that holds the segment whole has it under
                    // the same name, and a sync puts its verified copy in place of this one.
                    if problems.contains(where: { $0.kind == .corrupt || $0.kind == .incomplete }) {
                        let root = Terminal.shellQuoted(journal.root)
                        Terminal.write("to repair: `journal sync -C \(root) TARGET` (or `journal merge SOURCE --into \(root)`) puts the verified copy of a shared folder, store or machine that holds a damaged segment in its place\n")
                    }
                    Terminal.write(problems.isEmpty
                        ? "clean: \(segments), \(Wording.counted(report.eventCount, "event"))\n"
                        : "\(Wording.counted(problems.count, "problem")) in \(segments)\n")
                }
                Terminal.flush()
                if !problems.isEmpty { throw ExitCode(CLIError.problemsFound) }
            }
        }
    }
}
