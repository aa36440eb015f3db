import JournalFormat
import JournalStorage

/// What happened to a board's journal, as its committer and integrator saw it: the one
/// stream a relay (or an app that mirrors a journal elsewhere) follows instead of reading the
/// files again or polling them (`Board.observe`).
public enum JournalActivity: Sendable {
    /// Every own event through this seq is durable (fsynced).
    case durable(throughSeq: UInt64)
    /// A group commit of hosted replicas' events ended (a relay's native clients).
    case hosted(HostedRound)
    /// Events that sync brought into the journal, decoded once, as the board applied them
    /// (none it held before).
    case integrated([Event])
    /// The board rebuilt what it holds from the files (docs/LIVE.md, "Segments from other
    /// machines"): events may have arrived that no `.integrated` named; a follower reads what
    /// it lacks.
    case reloaded
    /// A membership statement arrived that changes nothing the board held (a new member's
    /// grant, a revocation of a key with no events here): the board's membership is new, and a
    /// follower checks its connections against it.
    case membershipChanged
    /// Segments sealed by this board (its own or a hosted replica's).
    case sealed([SealedSegment])
    /// A background compaction of a replica of this journal ended.
    case compacted(CompactionReport)
}

/// One group commit of hosted replicas' events (`HostedReplicas`).
public struct HostedRound: Sendable {
    /// Events made durable, per replica, in seq order.
    public var stored: [ReplicaID: [Event]] = [:]
    /// Replicas whose events could not all be stored (the reason): of theirs, only what
    /// `stored` lists is durable.
    public var failed: [ReplicaID: String] = [:]
    /// Batches each submitter staged in the round (`HostedReplicas.stage(_:of:from:)`): they
    /// are settled now, stored or failed.
    public var batches: [Int: Int] = [:]

    public var isEmpty: Bool { stored.isEmpty && failed.isEmpty && batches.isEmpty }
}

/// A sealed segment file of a journal: `replicas/<replica>/<name>`.
public struct SealedSegment: Sendable, Hashable {
    public var replica: ReplicaID
    public var name: SegmentName

    public init(replica: ReplicaID, name: SegmentName) {
        self.replica = replica
        self.name = name
    }
}

/// Why `Committer.sealNow` (`Board.sealNow`) did not seal everything recorded before it.
public enum SealFailure: Error, Sendable, CustomStringConvertible {
    case journal(JournalError)
    /// Events still unsealed after the seal: the board's own, and hosted ones (or hosted
    /// files with events that this board does not write now).
    case stillUnsealed(own: Int, hosted: Int)

    public var description: String {
        switch self {
        case .journal(let error): return error.description
        case .stillUnsealed(let own, let hosted):
            return "\(own) event(s) of the board's own and \(hosted) hosted event(s) or file(s) are still unsealed (a seal was put off or failed); tried again"
        }
    }
}
