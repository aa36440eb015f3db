import JournalFormat

/// Something a reader found wrong with a file and left out. Carries what a person needs to
/// find it: file, byte offset, replica and seq range when known, and why.
public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// The end of an open segment, cut short by a crash: normal, cut back on next open.
        case tornTail = "torn-tail"
        /// Bytes that were once whole and are not any more: news, and never applied.
        case corrupt
        /// A sealed segment whose length or checksum shows an incomplete copy.
        case incomplete
        /// Same event id, different content (a cloned replica identity, a forged file).
        case fork
        /// A file that is not ours to read (temporaries, symlinks, unknown names).
        case ignored
        /// The file could not be read at all (permissions, I/O error).
        case unreadable
        /// Valid bytes whose claims cannot be honest: events whose seq or Lamport clock jumps
        /// past the plausibility bound (docs/FORMAT.md §8.9), or a segment of this journal's
        /// own replica that its writer never assigned. Reported, never applied.
        case quarantined
    }

    public var kind: Kind
    public var file: String
    public var offset: Int64?
    public var replica: ReplicaID?
    public var seqRange: ClosedRange<UInt64>?
    public var reason: String

    public init(
        _ kind: Kind, file: String, offset: Int64? = nil, replica: ReplicaID? = nil,
        seqRange: ClosedRange<UInt64>? = nil, reason: String
    ) {
        self.kind = kind
        self.file = file
        self.offset = offset
        self.replica = replica
        self.seqRange = seqRange
        self.reason = reason
    }

    /// Stable keys (docs/SYNC.md): kind, file, offset?, replica?, firstSeq/lastSeq?, reason.
    public var json: JSONObject {
        var object = JSONObject()
        object.add("kind", kind.rawValue)
        object.add("file", file)
        if let offset { object.add("offset", offset) }
        if let replica { object.add("replica", replica.hex) }
        if let seqRange {
            object.add("firstSeq", seqRange.lowerBound)
            object.add("lastSeq", seqRange.upperBound)
        }
        object.add("reason", reason)
        return object
    }

    public var description: String {
        var text = "\(file)"
        if let offset { text += " @\(offset)" }
        text += ": \(kind.rawValue): \(reason)"
        if let replica { text += " [replica \(replica.hex)" + (seqRange.map { " seq \($0.lowerBound)...\($0.upperBound)" } ?? "") + "]" }
        return text
    }
}
