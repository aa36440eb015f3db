/// When a journal's committer makes events durable, seals its open segments and compacts: the
/// one policy every writer of a live journal follows (`Committer`, docs/LIVE.md "The committer
/// and its stream"). A live board takes it from `BoardOptions.commit`.
public struct CommitPolicy: Sendable {
    /// Group commit: pending events are made durable this long after the first of them
    /// was appended (one fsync for every event of the window).
    public var commitDelayMilliseconds: Int
    /// Seal the open segment after this long without an append, so that `journal sync`
    /// (which cannot seal while the board holds the writer lock) can publish the strokes.
    /// Nil: seal only when the segment is full or the board closes.
    public var sealAfterIdleMilliseconds: Int?
    /// Seal at the latest this long after the first unsealed event, even while drawing goes
    /// on without a pause: the bound on how late other machines see a stroke. Each seal is a
    /// small file; sealing less often means fewer, larger ones.
    public var sealAfterMilliseconds: Int
    /// Each seal's `sealAfterMilliseconds` deadline is drawn at random between (1 - spread)
    /// and 1 times it. Boards that start together (a relay's, after a restart) would otherwise
    /// seal together every period, and their summed seals stall every board's acks at once.
    public var sealSpread: Double
    /// Seal the open segment once it holds this many events.
    public var sealEveryEvents: Int
    /// Compact the sealed segments in the background after each seal (the committer's
    /// `CompactionScheduler`, docs/FORMAT.md §16.5): a board seals a small file at every pause.
    public var automaticCompaction: Bool

    public init(commitDelayMilliseconds: Int = 5, sealAfterIdleMilliseconds: Int? = 300, sealAfterMilliseconds: Int = 500,
                sealSpread: Double = 0, sealEveryEvents: Int = 262_144, automaticCompaction: Bool = true) {
        self.commitDelayMilliseconds = max(0, commitDelayMilliseconds)
        self.sealAfterIdleMilliseconds = sealAfterIdleMilliseconds
        self.sealAfterMilliseconds = max(0, sealAfterMilliseconds)
        self.sealSpread = sealSpread.isFinite ? min(1, max(0, sealSpread)) : 0
        self.sealEveryEvents = max(1, sealEveryEvents)
        self.automaticCompaction = automaticCompaction
    }

    /// One seal's `sealAfterMilliseconds`, in seconds, drawn within `sealSpread`.
    public func drawSealAge() -> Double {
        let age = Double(sealAfterMilliseconds) / 1000
        return sealSpread > 0 ? age * Double.random(in: (1 - sealSpread)...1) : age
    }
}
