import ArgumentParser
import JournalCommit
import JournalCommandLine
import JournalFormat
import JournalReplay
import JournalStorage

extension JournalCommand {
    struct Restore: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "restore",
            abstract: "Make the drawing look as it did at a moment again, by appending ordinary events.",
            discussion: """
                Strokes drawn since the moment are erased; strokes shown then and hidden now
                (undone, erased, cleared) are brought back with a redo; a stroke that grew or
                changed since is erased and drawn again as it was then, under a new id, on top.
                Nothing is removed: the restore is events like any edit, it syncs, and the
                drawing before it is itself a moment (the command prints it) to restore to.
                docs/HISTORY.md says what a moment is.

                Examples:
                  journal restore -C board --to 10:05 --dry-run
                  journal restore -C board --to 5099        # the board just before the clear at 5100
                """)

        @OptionGroup var options: JournalOptions
        @Option(parsing: .unconditional, help: ArgumentHelp(
            "The moment to go back to: a count of events (5230), 10:05, 2026-11-26T10:05, -15m.", valueName: "moment"))
        var to: String
        @Flag(help: "Say what the restore would change, and append nothing.") var dryRun = false
        @Flag(help: "Print one JSON object: hidden, shown, copied, events, and the moment before the restore.") var json = false

        func validate() throws { _ = try MomentOption.parse(to, option: "--to") }

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let moment = try MomentOption.parse(to, option: "--to")
                let history = History.load(journal)
                reportProblems(history.report)
                let before = history.events.count
                let plan = RestorePlan(now: history.drawing(at: .end), then: history.drawing(at: moment))
                if !dryRun && !plan.isEmpty {
                    let writer = try Committer.Recording(directory: journal, options: RecordingOptions())
                    for payload in plan.payloads { try writer.append(payload) }
                    try writer.close()
                }
                if json {
                    var object = JSONObject()
                    object.add("hidden", plan.hidden.count)
                    object.add("shown", plan.shown.count)
                    object.add("copied", plan.copied.count)
                    object.add("events", plan.payloads.count)
                    object.add("appended", !dryRun && !plan.isEmpty)
                    object.add("before", before)
                    Terminal.write(object.text + "\n")
                } else if plan.isEmpty {
                    Terminal.write("nothing to do: the drawing now is the drawing at \(moment) (its first \(history.count(at: moment)) events)\n")
                } else {
                    Terminal.write("""
                        \(dryRun ? "would erase" : "erased") \(Wording.counted(plan.hidden.count, "stroke")) drawn or changed since, \
                        \(dryRun ? "bring back" : "brought back") \(plan.shown.count) hidden since, \
                        \(dryRun ? "draw" : "drew") \(plan.copied.count) again as they were (new ids): \(Wording.counted(plan.payloads.count, "event"))

                        """)
                    if !dryRun {
                        Terminal.write("to undo it: journal restore -C \(Terminal.shellQuoted(journal.root)) --to \(before)\n")
                    }
                }
                Terminal.flush()
            }
        }
    }
}
