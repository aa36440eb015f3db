import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalStorage
import JournalSync

extension JournalCommand {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show what this journal holds and whether anything is wrong.",
            discussion: """
                Per replica (this journal's own marked): segments, seq ranges held, seqs
                known to be missing, forks. Then damaged or quarantined data, events not
                sealed yet, and the last sync that moved segments. Decodes every segment.
                Exits 1 when something needs attention (damage, forks, missing seqs).

                Example:
                  journal status -C board
                  journal status -C board --json | jq '.replicas[] | select(.gaps != [])'
                """)

        @OptionGroup var options: JournalOptions
        @Flag(help: "Print one JSON object (keys documented in docs/SYNC.md).") var json = false

        func run() throws {
            try reportingErrors {
                let status = try JournalStatus.of(try options.open())
                Terminal.write(json ? Self.json(status) : Self.text(status))
                Terminal.flush()
                if !status.isHealthy { throw ExitCode(CLIError.problemsFound) }
            }
        }

        static func text(_ status: JournalStatus) -> String {
            var lines = ["journal \(status.journal): \(Wording.counted(status.replicas.count, "replica"))"]
            for replica in status.replicas {
                var line = "  \(replica.replica.hex.prefix(12))…" + (replica.isThisJournal ? " (this journal)" : "")
                line += "  \(Wording.counted(replica.segments, "segment")), \(Wording.counted(replica.events, "event")), seq \(SeqRanges.text(replica.ranges))"
                if !replica.gaps.isEmpty { line += "; MISSING seq \(SeqRanges.text(replica.gaps))" }
                if !replica.forks.isEmpty { line += "; FORKED seq \(replica.forks.prefix(5).map(String.init).joined(separator: ","))" + (replica.forks.count > 5 ? "…" : "") }
                lines.append(line)
            }
            if !status.replicas.contains(where: \.isThisJournal) {
                lines.append("  \(status.replica.hex.prefix(12))… (this journal)  nothing sealed yet")
            }
            if status.unsealedEvents > 0 {
                lines.append("unsealed: \(Wording.counted(status.unsealedEvents, "event")) in the open segment (sealed by the next record, sync or snapshot)")
            }
            if let last = status.lastSync {
                lines.append("last sync that moved segments: \(UTCTime.text(millisecondsSince1970: last.millisecondsSince1970)) with \(last.target) (imported \(last.imported), published \(last.published))")
            } else {
                lines.append("last sync that moved segments: never")
            }
            lines.append("who counts: " + status.access.text)
            for problem in status.problems { lines.append("problem: \(problem)") }
            for problem in status.ignored { lines.append("ignored: \(problem.file): \(problem.reason)") }
            lines.append(status.isHealthy ? "ok" : "needs attention: run `journal verify` for details")
            return lines.joined(separator: "\n") + "\n"
        }

        static func json(_ status: JournalStatus) -> String {
            var object = JSONObject()
            object.add("journal", status.journal)
            object.add("replica", status.replica.hex)
            object.add("ok", status.isHealthy)
            object.add("unsealedEvents", status.unsealedEvents)
            object.add("replicas", objects: status.replicas.map { replica in
                var entry = JSONObject()
                entry.add("replica", replica.replica.hex)
                entry.add("thisJournal", replica.isThisJournal)
                entry.add("segments", replica.segments)
                entry.add("events", replica.events)
                entry.add("ranges", raw: SeqRanges.json(replica.ranges))
                entry.add("gaps", raw: SeqRanges.json(replica.gaps))
                entry.add("forks", raw: JSONText.array(replica.forks.map(String.init)))
                return entry
            })
            if let last = status.lastSync {
                var entry = JSONObject()
                entry.add("target", last.target)
                entry.add("time", last.millisecondsSince1970)
                entry.add("imported", last.imported)
                entry.add("published", last.published)
                object.add("lastSync", raw: entry.text)
            } else {
                object.add("lastSync", raw: "null")
            }
            object.add("problems", objects: status.problems.map(\.json))
            object.add("ignored", objects: status.ignored.map(\.json))
            var access = JSONObject()
            switch status.access {
            case .open: access.add("mode", "open")
            case .localTrustList: access.add("mode", "trust-list")
            case .membership(let board, let members, let ignored):
                access.add("mode", "membership")
                access.add("board", board)
                access.add("activeMembers", members)
                access.add("trustListIgnored", ignored)
            }
            object.add("access", raw: access.text)
            return object.text + "\n"
        }
    }
}

/// Milliseconds since 1970 as `YYYY-MM-DD HH:MM UTC` (days to civil date: H. Hinnant's algorithm).
enum UTCTime {
    static func text(millisecondsSince1970 ms: Int64) -> String {
        let seconds = ms / 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day)) \(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)) UTC"
    }
}
