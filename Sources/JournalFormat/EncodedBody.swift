import JournalCompression

/// A block body as encoded, with where each of its parts ends (docs/FORMAT.md §6.1, §14.1),
/// so that each part can be deflated in its own deflate block by the method that suits it.
/// The stream stays one raw DEFLATE stream: what a reader sees does not change.
public struct EncodedBody: Sendable {
    public enum Part: Int, CaseIterable, Sendable {
        case tables, kinds, lamports, walls, strokeRefs, styleRefs, pointFlags, x, y, pressure, t
    }

    public let bytes: [UInt8]
    /// The end of each part, in `Part` order (the last is `bytes.count`).
    public let partEnds: [Int]
    /// Where the real columns' streams keep their raw low bytes (§14.1), in order.
    public let lowBytes: [Range<Int>]

    public init(bytes: [UInt8], partEnds: [Int], lowBytes: [Range<Int>] = []) {
        self.bytes = bytes
        self.partEnds = partEnds
        self.lowBytes = lowBytes
    }

    /// Low bytes shorter than this stay in their column's block.
    public static let minimumLowBytes = 1_024

    /// A body shorter than this is deflated as one block: each block's codes and end cost a
    /// few bytes, which a short body does not win back.
    public static let minimumSectionedCount = 4_096

    /// How to deflate the body, `level` being what the caller asked for.
    ///
    /// Measured on 300,000-point sessions of each device precision, on Hershey handwriting and
    /// on four drawers through one relay (docs/PERFORMANCE.md, "Deflate by part"): the kind,
    /// Lamport and point-flag columns are runs of one byte, and pressures (a mouse gives one
    /// value) lose nothing to matching at distance 1 only, which takes no match search; the
    /// wall clock and the references keep the caller's level, since drawers interleaved in
    /// one replica make them periodic rather than runs (by runs they took 1.6–2.6× the bytes,
    /// 0.4 B/pt more, and a relay's 120 Hz wall column 0.12 B/pt at level 1 against 0.077 at
    /// 6); so do the coordinates, times and tables. Against the body as one stream at that
    /// level: 0.5–4.5% fewer bytes in 0.5–0.75 of the time.
    public func deflateSections(level: Int32) -> [DeflateSection] {
        guard level > 0, bytes.count >= Self.minimumSectionedCount, partEnds.count == Part.allCases.count else {
            return [DeflateSection(end: bytes.count, method: .matching(level: level))]
        }
        let parts = zip(Part.allCases, partEnds).map { part, end in DeflateSection(end: end, method: Self.method(part, level: level)) }
        // A stream's low bytes are the noise of its integers (§14.1).
        return DeflateSection.carving(literals: lowBytes.filter { $0.count >= Self.minimumLowBytes }, from: parts)
    }

    static func method(_ part: Part, level: Int32) -> DeflateSection.Method {
        switch part {
        case .tables, .walls, .strokeRefs, .styleRefs, .x, .y, .t: return .matching(level: level)
        case .kinds, .lamports, .pointFlags, .pressure: return .runs
        }
    }
}
