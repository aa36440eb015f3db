import JournalPlatform

/// Why `journal snapshot` could not take one.
public enum SnapshotError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A replica's clocks do not rise with its seqs, so the ordered fold a snapshot keeps
    /// cannot be built; the journal still replays (with the order-free fold).
    case clocksOutOfOrder(path: String)
    case quarantinedEvents(path: String, count: Int)
    case io(IOError)

    public var description: String {
        switch self {
        case .clocksOutOfOrder(let path):
            return "\(path): a replica's clocks do not rise with its seqs (a forged or damaged segment); no snapshot taken, replay still works without one"
        case .quarantinedEvents(let path, let count):
            return "\(path): \(count) event(s) are quarantined (implausible clocks, see `journal verify`); no snapshot taken"
        case .io(let error): return error.description
        }
    }
}
