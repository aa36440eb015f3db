import JournalFormat

/// The final, immutable name of a sealed segment: `<first>-<last>-<crc>.sjs`, with the seq
/// range as 20 zero-padded decimal digits (so names sort by seq) and the CRC-32 of the whole
/// file as 8 lowercase hex digits (so two different files never share a name).
/// See docs/FORMAT.md, "Files and names".
public struct SegmentName: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var firstSeq: UInt64
    public var lastSeq: UInt64
    public var fileCRC: UInt32

    public init(firstSeq: UInt64, lastSeq: UInt64, fileCRC: UInt32) {
        self.firstSeq = firstSeq
        self.lastSeq = lastSeq
        self.fileCRC = fileCRC
    }

    public var fileName: String {
        pad(String(firstSeq), 20) + "-" + pad(String(lastSeq), 20) + "-"
            + pad(String(fileCRC, radix: 16), 8) + "." + FormatV1.sealedExtension
    }
    public var description: String { fileName }

    /// Parses a canonical name; anything else (temporaries, conflict copies) gives nil.
    public init?(fileName: String) {
        let utf8 = Array(fileName.utf8)
        guard utf8.count == 20 + 1 + 20 + 1 + 8 + 4,
              utf8[20] == UInt8(ascii: "-"), utf8[41] == UInt8(ascii: "-"),
              // Digits only: `UInt64("+1")` would let two names denote one segment.
              utf8[0..<20].allSatisfy({ (48...57).contains($0) }), utf8[21..<41].allSatisfy({ (48...57).contains($0) }),
              String(decoding: utf8[50...], as: UTF8.self) == "." + FormatV1.sealedExtension,
              let first = UInt64(String(decoding: utf8[0..<20], as: UTF8.self)),
              let last = UInt64(String(decoding: utf8[21..<41], as: UTF8.self)),
              utf8[42..<50].allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }),
              let crc = UInt32(String(decoding: utf8[42..<50], as: UTF8.self), radix: 16),
              first >= 1, first <= last, last < FormatV1.maxSeq
        else { return nil }
        self.init(firstSeq: first, lastSeq: last, fileCRC: crc)
    }

    public static func < (lhs: SegmentName, rhs: SegmentName) -> Bool {
        (lhs.firstSeq, lhs.lastSeq, lhs.fileCRC) < (rhs.firstSeq, rhs.lastSeq, rhs.fileCRC)
    }
}

private func pad(_ text: String, _ width: Int) -> String {
    String(repeating: "0", count: max(0, width - text.count)) + text
}
