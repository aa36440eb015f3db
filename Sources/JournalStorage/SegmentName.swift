import Crypto
import JournalFormat
import JournalPlatform
import JournalCompression

/// The final, immutable name of a sealed segment: `<first>-<last>-<hash>.sjs`, with the seq
/// range as 20 zero-padded decimal digits (so names sort by seq) and what identifies the
/// file's bytes. See docs/FORMAT.md §2.1.
///
/// Names version 2 (the only names writers write) carry the first 128 bits of the SHA-256 of the
/// whole file, 32 hex digits: two different files cannot share a name, even if one of them
/// was forged to collide. Version 1 names carry a CRC-32 (8 hex digits), which anyone can
/// force with four free bytes: they are still read, but only as a claim (`identifiesContents`
/// is false), and a journal stores what it imports under a version 2 name.
public struct SegmentName: Hashable, Comparable, Sendable, CustomStringConvertible {
    public enum ContentCheck: Hashable, Comparable, Sendable {
        /// Version 1: CRC-32 of the whole file.
        case crc32(UInt32)
        /// Version 2: the first 16 bytes of SHA-256 of the whole file, big-endian halves.
        case sha256Prefix(UInt64, UInt64)
    }

    public var firstSeq: UInt64
    public var lastSeq: UInt64
    public var check: ContentCheck

    public init(firstSeq: UInt64, lastSeq: UInt64, check: ContentCheck) {
        self.firstSeq = firstSeq
        self.lastSeq = lastSeq
        self.check = check
    }

    /// A version 1 name (kept for reading old journals and for tests of them).
    public init(firstSeq: UInt64, lastSeq: UInt64, fileCRC: UInt32) {
        self.init(firstSeq: firstSeq, lastSeq: lastSeq, check: .crc32(fileCRC))
    }

    /// The version 2 name of a complete segment file.
    public init(firstSeq: UInt64, lastSeq: UInt64, contents: [UInt8]) {
        self.init(firstSeq: firstSeq, lastSeq: lastSeq, check: Self.contentHash(contents))
    }

    public static func contentHash(_ bytes: [UInt8]) -> ContentCheck {
        let digest = Array(SHA256.hash(data: bytes))
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 { high = high << 8 | UInt64(digest[index]) }
        for index in 8..<16 { low = low << 8 | UInt64(digest[index]) }
        return .sha256Prefix(high, low)
    }

    /// Whether the name proves which bytes the file holds (a cryptographic hash).
    public var identifiesContents: Bool {
        if case .sha256Prefix = check { return true }
        return false
    }

    /// Whether `bytes` are the bytes this name stands for.
    public func matches(_ bytes: [UInt8]) -> Bool {
        switch check {
        case .crc32(let crc): return CRC32.checksum(bytes) == crc
        case .sha256Prefix: return Self.contentHash(bytes) == check
        }
    }

    /// The same seq range under the name version 2 gives these bytes.
    public func renamed(for bytes: [UInt8]) -> SegmentName {
        SegmentName(firstSeq: firstSeq, lastSeq: lastSeq, contents: bytes)
    }

    public var checkText: String {
        switch check {
        case .crc32(let crc): return Hex.string(UInt64(crc), digits: 8)
        case .sha256Prefix(let high, let low): return Hex.string(high, digits: 16) + Hex.string(low, digits: 16)
        }
    }

    public var fileName: String {
        decimal20(firstSeq) + "-" + decimal20(lastSeq) + "-" + checkText + "." + FormatV1.sealedExtension
    }
    public var description: String { fileName }

    /// Parses a canonical name of either version; anything else (temporaries, conflict
    /// copies) gives nil.
    public init?(fileName: String) {
        let utf8 = Array(fileName.utf8)
        let suffix = "." + FormatV1.sealedExtension
        let checkLength = utf8.count - (20 + 1 + 20 + 1) - suffix.utf8.count
        guard checkLength == 8 || checkLength == 32,
              utf8[20] == UInt8(ascii: "-"), utf8[41] == UInt8(ascii: "-"),
              // Digits only: `UInt64("+1")` would let two names denote one segment.
              utf8[0..<20].allSatisfy(Hex.isDecimalDigit), utf8[21..<41].allSatisfy(Hex.isDecimalDigit),
              String(decoding: utf8[(42 + checkLength)...], as: UTF8.self) == suffix,
              let first = UInt64(String(decoding: utf8[0..<20], as: UTF8.self)),
              let last = UInt64(String(decoding: utf8[21..<41], as: UTF8.self)),
              utf8[42..<(42 + checkLength)].allSatisfy(Hex.isLowercaseHexDigit),
              first >= 1, first <= last, last < FormatV1.maxSeq
        else { return nil }
        let digits = String(decoding: utf8[42..<(42 + checkLength)], as: UTF8.self)
        if checkLength == 8 {
            guard let crc = UInt32(digits, radix: 16) else { return nil }
            self.init(firstSeq: first, lastSeq: last, check: .crc32(crc))
        } else {
            guard let high = UInt64(digits.prefix(16), radix: 16), let low = UInt64(digits.suffix(16), radix: 16) else { return nil }
            self.init(firstSeq: first, lastSeq: last, check: .sha256Prefix(high, low))
        }
    }

    /// `<replica>/<file name>`: where the file sits below `replicas/` in every journal and
    /// shared folder, and its key in the index, caches and reports ("/" whatever the system).
    public func relativePath(in replica: ReplicaID) -> String { replica.hex + "/" + fileName }

    public static func < (lhs: SegmentName, rhs: SegmentName) -> Bool {
        (lhs.firstSeq, lhs.lastSeq) != (rhs.firstSeq, rhs.lastSeq)
            ? (lhs.firstSeq, lhs.lastSeq) < (rhs.firstSeq, rhs.lastSeq)
            : lhs.check < rhs.check
    }
}

/// Seqs in names are zero-padded to 20 decimal digits (UInt64's widest), so names sort by seq.
private func decimal20(_ value: UInt64) -> String {
    let digits = String(value)
    return String(repeating: "0", count: 20 - digits.count) + digits
}
