import JournalFormat

/// Refuses to import segments of the importing journal's own replica beyond the seqs its
/// writer has assigned. Only this journal's writer writes its replica (invariant 2), so such
/// a file is a forgery or comes from a copy of this journal writing elsewhere; letting it in
/// would make the writer skip (or, before this guard, discard) its own acknowledged seqs.
/// Copies of seqs the writer did assign are let in: they are either identical (deduplicated)
/// or a fork that replay reports and resolves the same way everywhere.
public struct OwnReplicaGuard: Sendable {
    public var replica: ReplicaID
    /// The highest seq this journal's writer has assigned (sealed or in the open segment).
    public var highestAssignedSeq: UInt64

    public init(replica: ReplicaID, highestAssignedSeq: UInt64) {
        self.replica = replica
        self.highestAssignedSeq = highestAssignedSeq
    }

    /// The guard for `directory` as it is on disk now. A writer running concurrently only
    /// raises the true value, so a stale reading refuses more, never less.
    public static func current(_ directory: JournalDirectory, index: LocalIndex) -> OwnReplicaGuard? {
        guard let replica = try? directory.identity() else { return nil }
        var highest = index.lastSeq(of: replica)
        let open = SegmentScanner.scan(path: directory.openSegmentPath, sealed: false)
        if open.header?.replica == replica, let range = open.seqRange { highest = max(highest, range.upperBound) }
        return OwnReplicaGuard(replica: replica, highestAssignedSeq: highest)
    }

    public func refusal(replica: ReplicaID, name: SegmentName, path: String) -> Problem? {
        guard replica == self.replica, name.lastSeq > highestAssignedSeq else { return nil }
        return Problem(.quarantined, file: path, replica: replica, seqRange: name.firstSeq...name.lastSeq,
                       reason: "claims seqs of this journal's own replica that its writer never assigned (it has assigned up to \(highestAssignedSeq)): a forgery or a copy of this journal writing elsewhere; not imported")
    }
}
