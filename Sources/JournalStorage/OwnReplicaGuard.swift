import JournalFormat

/// Refuses to import segments of the importing journal's own replica beyond the seqs its
/// writer has assigned. Only this journal's writer writes its replica (invariant 2), so such
/// a file is a forgery or comes from a copy of this journal writing elsewhere; letting it in
/// would make the writer skip (or discard) its own acknowledged seqs.
/// Copies of seqs the writer did assign are let in: they are either identical (deduplicated)
/// or a fork that replay reports and resolves the same way everywhere.
public struct OwnReplicaGuard: Sendable {
    public var replica: ReplicaID
    /// The highest seq among this replica's sealed segments.
    public var highestSealedSeq: UInt64
    /// The open segment, read only when a file claims seqs beyond the sealed ones (rare), so
    /// that an ordinary sync reads no payload for this guard.
    public var openSegmentPath: String

    public init(replica: ReplicaID, highestSealedSeq: UInt64, openSegmentPath: String) {
        self.replica = replica
        self.highestSealedSeq = highestSealedSeq
        self.openSegmentPath = openSegmentPath
    }

    /// The guard for `directory` as it is on disk now. A writer running concurrently only
    /// raises the true value, so a stale reading refuses more, never less.
    public static func current(_ directory: JournalDirectory, index: LocalIndex) -> OwnReplicaGuard? {
        guard let replica = try? directory.identity() else { return nil }
        return OwnReplicaGuard(replica: replica, highestSealedSeq: index.lastSeq(of: replica),
                               openSegmentPath: directory.openSegmentPath)
    }

    /// The highest seq this journal's writer has assigned, sealed or still in the open segment.
    public func highestAssignedSeq() -> UInt64 {
        let open = SegmentScanner.scan(path: openSegmentPath, sealed: false)
        guard open.header?.replica == replica, let range = open.seqRange else { return highestSealedSeq }
        return max(highestSealedSeq, range.upperBound)
    }

    public func refusal(replica: ReplicaID, name: SegmentName, path: String) -> Problem? {
        guard replica == self.replica, name.lastSeq > highestSealedSeq else { return nil }
        let assigned = highestAssignedSeq()
        guard name.lastSeq > assigned else { return nil }
        return Problem(.quarantined, file: path, replica: replica, seqRange: name.firstSeq...name.lastSeq,
                       reason: "claims seqs of this journal's own replica that its writer never assigned (it has assigned up to \(assigned)): a forgery or a copy of this journal writing elsewhere; not imported")
    }
}
