import JournalFormat
import JournalPlatform
import JournalStorage

/// What replay saw besides the drawing: per-replica coverage, duplicates, forks, problems.
public struct ReplayReport: Sendable {
    public struct ReplicaSummary: Sendable, Equatable {
        public var replica: ReplicaID
        public var segments = 0
        public var events = 0
        /// Seq ranges held, merged and sorted.
        public var ranges: [ClosedRange<UInt64>] = []
        /// Holes between 1 and the highest seq held: known to be missing.
        public var gaps: [ClosedRange<UInt64>] { SeqRanges(ranges).gaps() }
    }

    public var replicas: [ReplicaSummary] = []
    public var problems: [Problem] = []
    /// Events that arrived more than once with identical content, counted once.
    public var duplicateEvents = 0
    /// Event ids seen with different contents; the lesser content (docs/FORMAT.md) was kept.
    public var forks: [EventID] = []
    public var eventCount = 0
    public var pointCount = 0
    public var maxLamport: UInt64 = 0
    /// Events taken from a snapshot instead of being replayed (0: a full replay).
    public var eventsFromSnapshot = 0
    /// The drawing's digest (`Drawing.digest`) when it is already known: the snapshot this
    /// load started from held it and nothing was applied on top, or this load computed it to
    /// write a snapshot. Nil means "compute it if you need it".
    public var digest: String?
    /// The snapshot this load wrote automatically, if it wrote one (callers say so).
    public var snapshotWritten: SnapshotStore.Info?
    /// Why a snapshot this load meant to write could not be (a read-only journal, a full
    /// disk): the drawing is the same; the next load replays as much again.
    public var snapshotNotWritten: IOError?
    /// Events left out because their seq or clock exceeds the plausibility bound
    /// (`ClockBound`, docs/FORMAT.md §8.9): reported as problems, never applied.
    public var quarantinedEvents = 0
    /// The smallest plausibility limit at which a quarantined event would be applied (the
    /// larger of its seq and clock): the set must grow until `ClockBound` reaches it.
    public var lowestQuarantinedClock: UInt64?
    /// Events left out because the board's membership does not count them (invariant 16):
    /// reported as problems, never applied.
    public var notMemberEvents = 0
    /// `forks` as a set, for constant-time checks while merging overlap groups.
    var forkSet = Set<EventID>()

    public init() {}
}

extension ReplayReport {
    mutating func count(_ lamport: UInt64, isPoint: Bool) {
        eventCount += 1
        if isPoint { pointCount += 1 }
        if lamport > maxLamport { maxLamport = lamport }
    }
}
