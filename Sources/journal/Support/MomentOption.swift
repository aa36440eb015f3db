import ArgumentParser
import JournalCommandLine
import JournalReplay
import JournalStorage

/// `--at MOMENT`, shared by the commands that show the drawing: as it was then
/// (docs/HISTORY.md), else as it is.
struct MomentOption: ParsableArguments {
    // Unconditional: `--at -15m` is a moment, not an option.
    @Option(parsing: .unconditional, help: ArgumentHelp(
        "The drawing as it was at this moment: a count of events (5230), 10:05, 2026-11-26T10:05, -15m (before the last event) or now.",
        valueName: "moment"))
    var at: String?

    func validate() throws {
        if let at { _ = try Self.parse(at, option: "--at") }
    }

    static func parse(_ text: String, option: String) throws -> Moment {
        do throws(MomentError) { return try Moment(parsing: text) } catch { throw ValidationError("\(option) \(error)") }
    }

    /// The drawing at the moment asked for and how many events it holds, or nil when none
    /// was asked for.
    func atMoment(_ journal: JournalDirectory) throws -> Replay.AtMoment? {
        try answer { Replay.drawing(at: $0, in: journal) } events: { $0.events }
    }

    /// The drawing at the moment asked for in brief (digest and counts), or nil when none was
    /// asked for.
    func summaryAtMoment(_ journal: JournalDirectory) throws -> Replay.SummaryAtMoment? {
        try answer { Replay.summary(at: $0, in: journal) } events: { $0.events }
    }

    private func answer<Then>(_ find: (Moment) -> Then, events: (Then) -> Int) throws -> Then? {
        guard let at else { return nil }
        let moment = try Self.parse(at, option: "--at")
        let then = find(moment)
        if events(then) == 0, moment.isWallClock {
            // A session recorded in seconds has no "15 minutes ago": an empty drawing without
            // a word would look like a lost one.
            Terminal.standardError("journal: note: --at \(at) (\(moment)) comes before every event, so the drawing then is empty; `journal history` shows when the session ran\n")
        }
        return then
    }

    /// The drawing at the moment asked for, or nil when none was.
    func drawing(_ journal: JournalDirectory) throws -> (drawing: Drawing, report: ReplayReport)? {
        try atMoment(journal).map { ($0.drawing, $0.report) }
    }
}
