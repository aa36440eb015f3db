import JournalPlatform

/// Why `journal snapshot` could not take one.
public enum SnapshotError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A replica's clocks do not rise with its seqs, so the ordered fold a snapshot keeps
    /// cannot be built; the journal still replays (with the order-free fold).
    case clocksOutOfOrder(path: String)
    case quarantinedEvents(path: String, count: Int)
    /// Membership decides what counts, and a snapshot does not yet record the membership it
    /// was folded under: one could show a revoked member's events after the revocation arrived.
    case membershipBoard(path: String)
    case io(IOError)

    public var description: String {
        switch self {
        case .clocksOutOfOrder(let path):
            return "\(path): a replica's clocks do not rise with its seqs (a forged or damaged segment); no snapshot taken, replay still works without one"
        case .quarantinedEvents(let path, let count):
            return "\(path): \(count) event(s) are quarantined (implausible clocks, see `journal verify`); no snapshot taken"
        case .membershipBoard(let path):
            return "\(path): this board has membership (`journal members list`), and snapshots are not kept for such boards yet; replay works without one"
        case .io(let error): return error.description
        }
    }
}
