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

    /// A body shorter than this is deflated as one block: each block's codes and end cost a
    /// few bytes, which a short body does not win back.
    public static let minimumSectionedCount = 4_096

    /// How to deflate the body, `level` being what the caller asked for.
    ///
    /// Measured on 300,000-point sessions of each device precision and on Hershey handwriting
    /// (docs/PERFORMANCE.md, "Deflate by part"): runs of one byte (kinds, references, flags,
    /// and pressures, which a mouse gives as one value) lose nothing by matching at distance
    /// 1 only and take no match search; the clocks' small gaps gain nothing from a deep
    /// search; the coordinates, times and tables keep the caller's level. Against the body as
    /// one stream at that level: 0.5–4.5% fewer bytes in 0.5–0.75 of the time.
    public func deflateSections(level: Int32) -> [DeflateSection] {
        guard level > 0, bytes.count >= Self.minimumSectionedCount, partEnds.count == Part.allCases.count else {
            return [DeflateSection(end: bytes.count, method: .matching(level: level))]
        }
        return zip(Part.allCases, partEnds).map { part, end in DeflateSection(end: end, method: Self.method(part, level: level)) }
    }

    static func method(_ part: Part, level: Int32) -> DeflateSection.Method {
        switch part {
        case .tables, .x, .y, .t: return .matching(level: level)
        case .lamports, .walls: return .matching(level: 1)
        case .kinds, .strokeRefs, .styleRefs, .pointFlags, .pressure: return .runs
        }
    }
}
