import ArgumentParser
import JournalCommit
import JournalCommandLine
import JournalFormat
import JournalPlatform
import JournalStorage

extension JournalCommand {
    struct Compact: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "compact",
            abstract: "Rewrite runs of small sealed segments as one, and retire the small ones.",
            discussion: """
                Live boards seal a small segment every few seconds; each costs bytes, a file to
                list and a copy at every sync. `compact` rewrites every run of adjacent sealed
                segments of the replicas this journal writes (its own, and the native clients a
                relay hosts) as one segment holding exactly their events, and removes a small
                file only once that cover is on disk, read back and checked event by event.
                Writers already do this in the background as they seal (docs/FORMAT.md §16);
                the command does all of it now. The open segment is left as it is.

                Examples:
                  journal compact -C board --dry-run
                  journal compact -C board --json
                """)

        @OptionGroup var options: JournalOptions
        @Flag(help: "Say what would be rewritten; change nothing.")
        var dryRun = false
        @Flag(help: "Print one JSON object: {\"dryRun\",\"covers\":[…],\"retired\",\"replicas\":[…],\"bytesBefore\",\"bytesAfter\" (null in a dry run),\"problems\":[…],\"milliseconds\"}.")
        var json = false

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                guard let lock = try SealedFilesLock.acquire(journal, waitingUpTo: 3) else {
                    throw CLIError("a sync, merge or compaction of \(journal.root) is running (\(SealedFilesLock.path(journal)) is locked); try again when it ends",
                                   code: CLIError.locked)
                }
                defer { lock.release() }
                let report = Committer.compact(journal, policy: .everything, dryRun: dryRun)
                Terminal.write(json ? Self.json(report) : Self.text(report))
                Terminal.flush()
                if report.problems.contains(where: { $0.kind != .ignored }) { throw ExitCode(CLIError.problemsFound) }
            }
        }

        static func text(_ report: CompactionReport) -> String {
            var out = ""
            for problem in report.problems { out += "\(problem)\n" }
            let verb = report.dryRun ? "would rewrite" : "rewrote"
            for cover in report.covers {
                out += "\(verb) \(Wording.counted(cover.inputs.count, "segment")) of replica \(cover.replica.hex) "
                    + "(seq \(cover.seqRange.lowerBound)...\(cover.seqRange.upperBound), \(Wording.counted(cover.events, "event"))) as one"
                out += cover.name.map { ": \($0.fileName), \(cover.bytesBefore) → \(cover.bytesAfter) bytes\n" } ?? "\n"
            }
            let redundant = report.retired.count - report.covers.reduce(0) { $0 + ($1.name == nil ? 0 : $1.inputs.count) }
            if redundant > 0 { out += "retired \(Wording.counted(redundant, "segment")) already covered by another\n" }
            let before = report.filesBefore.values.reduce(0, +)
            let after = report.filesAfter.values.reduce(0, +)
            if report.covers.isEmpty && redundant == 0 {
                out += "nothing to compact: \(Wording.counted(before, "sealed segment")) written here\n"
            } else {
                // A dry run writes no cover, so it cannot tell the bytes after.
                out += report.dryRun
                    ? "would leave \(Wording.counted(after, "sealed segment")) written here (was \(before))\n"
                    : "now \(Wording.counted(after, "sealed segment")) written here (was \(before)), "
                        + "\(report.bytesAfter) bytes (was \(report.bytesBefore)), in \(formatSeconds(report.seconds))\n"
            }
            return out
        }

        static func json(_ report: CompactionReport) -> String {
            var object = JSONObject()
            object.add("dryRun", report.dryRun)
            object.add("covers", objects: report.covers.map { cover in
                var item = JSONObject()
                item.add("replica", cover.replica.hex)
                item.add("name", cover.name?.fileName)
                item.add("firstSeq", cover.seqRange.lowerBound)
                item.add("lastSeq", cover.seqRange.upperBound)
                item.add("inputs", strings: cover.inputs.map(\.fileName))
                item.add("events", cover.events)
                item.add("bytesBefore", cover.bytesBefore)
                item.add("bytesAfter", cover.name == nil ? nil : Optional(cover.bytesAfter))
                return item
            })
            object.add("retired", report.retired.count)
            object.add("replicas", objects: report.filesBefore.keys.sorted().map { replica in
                var item = JSONObject()
                item.add("replica", replica.hex)
                item.add("filesBefore", report.filesBefore[replica] ?? 0)
                item.add("filesAfter", report.filesAfter[replica] ?? 0)
                return item
            })
            object.add("bytesBefore", report.bytesBefore)
            object.add("bytesAfter", report.dryRun ? nil : Optional(report.bytesAfter))
            object.add("problems", objects: report.problems.map(\.json))
            object.add("milliseconds", Int((report.seconds * 1000).rounded()))
            return object.text + "\n"
        }
    }
}
