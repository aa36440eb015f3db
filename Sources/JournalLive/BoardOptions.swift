import JournalCommit
import JournalReplay

/// How a live board commits, seals and looks for new segments.
public struct BoardOptions: Sendable {
    /// When the board's committer makes events durable, seals and compacts.
    public var commit: CommitPolicy
    /// Look for new segments at least this often, notification or not (a shared folder on
    /// NFS notifies nobody; where inotify works this is only a safety net).
    public var rescanIntervalSeconds: Double
    /// Watch the journal for segments that sync brings in (off: only `refresh()` does).
    public var watchForSegments: Bool
    /// Fold events into a drawing (`drawing`, `stroke(_:)`, the changes in updates). Off, the
    /// board tracks only which events it holds (`covered`): its memory does not grow with the
    /// journal, its drawing reads empty, and an update from sync carries no changes. A relay's
    /// boards, which send events and never read a drawing, keep none (invariant 13).
    public var keepsDrawing: Bool

    /// The commit parameters are `CommitPolicy`'s (see there).
    public init(commitDelayMilliseconds: Int = 5, sealAfterIdleMilliseconds: Int? = 300, sealAfterMilliseconds: Int = 500,
                sealSpread: Double = 0, sealEveryEvents: Int = 262_144,
                rescanIntervalSeconds: Double = 2, watchForSegments: Bool = true, keepsDrawing: Bool = true,
                automaticCompaction: Bool = true) {
        commit = CommitPolicy(
            commitDelayMilliseconds: commitDelayMilliseconds, sealAfterIdleMilliseconds: sealAfterIdleMilliseconds,
            sealAfterMilliseconds: sealAfterMilliseconds, sealSpread: sealSpread, sealEveryEvents: sealEveryEvents,
            automaticCompaction: automaticCompaction)
        self.rescanIntervalSeconds = max(0.05, rescanIntervalSeconds)
        self.watchForSegments = watchForSegments
        self.keepsDrawing = keepsDrawing
    }
}

extension BoardOptions {
    /// A relay's boards (`journal serve`): sealed 1 s after a pause and at the latest 5 s after
    /// the first unsealed event, not 0.3 s and 0.5 s. Many clients draw there without a common
    /// pause, and each seal is a file that every reader lists from then on: at 0.5 s, 20 boards
    /// under 240 Hz pens spend a fifth of the relay's CPU sealing (docs/history/PERFORMANCE-RUNS.md, "Third run").
    /// Other machines see a board's strokes that much later through sync; its clients, at once.
    /// Deadlines spread over 3.5–5 s: 50 boards sealing in step every 5 s stall every ack for
    /// up to 0.4 s (docs/history/PERFORMANCE-RUNS.md, "Fifth run").
    public static var relay: BoardOptions {
        BoardOptions(sealAfterIdleMilliseconds: 1000, sealAfterMilliseconds: 5000, sealSpread: 0.3, keepsDrawing: false)
    }
}

/// What changed on a board, as one batch an app redraws from.
public struct BoardUpdate: Sendable, Equatable {
    public enum Origin: Sendable, Equatable {
        /// Events appended on this board.
        case local
        /// Segments that arrived from other machines (through sync).
        case remote
        /// The drawing was rebuilt from the journal (`changes` is `[.reset]`).
        case reload
        /// The drawing as it was when `updates()` was called (`changes` is `[.reset]`): the
        /// first update of every stream. A reader draws the whole board, then applies what
        /// follows, so it misses nothing whichever runs first, `updates()` or an `append`.
        case current
    }
    public var origin: Origin
    public var changes: [DrawingChange]

    public init(origin: Origin, changes: [DrawingChange]) {
        self.origin = origin
        self.changes = changes
    }
}
