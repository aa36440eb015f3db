import ArgumentParser
import JournalReplay
import JournalStorage
import JournalSync

extension JournalCommand {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what this journal holds per replica: seq ranges, gaps, forks, damage.",
            discussion: """
                Decodes every segment, so it also finds forks (one event id with two contents)
                and damaged blocks.

                Example:
                  journal status -C board --json | jq '.replicas[] | select(.gaps != [])'
                """)

        @OptionGroup var options: JournalOptions
        @Flag(help: "Print the report as one JSON object (same shape as sync --json).") var json = false

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let set = SegmentSet.load(journal)
                let replay = Replay.check(set)
                var report = ReconcileReport(target: journal.root)
                for summary in replay.replicas {
                    let slot = report.state(summary.replica)
                    report.replicas[slot].segments = set.members.filter { $0.replica == summary.replica && $0.scan.eventCount > 0 }.count
                    report.replicas[slot].ranges = summary.ranges
                    report.replicas[slot].gaps = summary.gaps
                    report.replicas[slot].forks = replay.forks.filter { $0.replica == summary.replica }.map(\.seq)
                }
                report.rejected = replay.problems.filter { $0.kind != .ignored && $0.kind != .tornTail && $0.kind != .fork }
                report.ignored = replay.problems.filter { $0.kind == .ignored }
                Terminal.write(json ? report.json : report.text)
                Terminal.flush()
            }
        }
    }
}
