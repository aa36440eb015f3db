/// Every constant of the segment format, version 1. The meaning of each is in docs/FORMAT.md;
/// keep the two in step.
public enum FormatV1 {
    /// File header: magic(8) + version(2) + headerLength(2) + replica(16) + crc32(4).
    public static let fileMagic: [UInt8] = Array("SJOURNAL".utf8)
    public static let version: UInt16 = 1
    public static let fileHeaderSize = 8 + 2 + 2 + 16 + 4

    /// Block frame header: magic(4) + compressedLength(4) + rawLength(4) + eventCount(4)
    /// + firstSeq(8) + maxLamport(8) + crc32(4).
    public static let blockMagic: [UInt8] = Array("SJBK".utf8)
    public static let blockHeaderSize = 4 + 4 + 4 + 4 + 8 + 8 + 4

    /// Bounds a reader enforces before allocating (invariant 8).
    public static let maxRawBlockSize = 8 << 20
    public static let maxCompressedBlockSize = maxRawBlockSize + (maxRawBlockSize >> 8) + 64
    public static let maxEventsPerBlock = 1 << 16
    /// Seqs and lamports stay below 2^62 so that every difference fits an Int64.
    public static let maxSeq: UInt64 = 1 << 62
    public static let maxLamport: UInt64 = 1 << 62

    /// Decimal scales a real column may use: value = integer / 10^scale.
    public static let maxDecimalScale: UInt8 = 9
    /// Integers on the decimal grid stay within ±2^53, where every Int64 is an exact Double.
    public static let gridLimit: Int64 = 1 << 53

    /// What an encoder aims for when it packs events into sealed blocks.
    public static let sealedBlockTargetEvents = 32_768
    /// Open-segment blocks at least this large are written at the sealing compression level
    /// and copied into the sealed segment unchanged; smaller ones are re-encoded together.
    public static let sealedBlockMinimumEvents = 4_096

    /// Sealed segment file extension; names are `<first>-<last>-<sha>.sjs` (see FORMAT.md).
    public static let sealedExtension = "sjs"

    /// Exact powers of ten up to the largest scale (all representable exactly as Double).
    public static let powersOfTen: [Double] = (0...Int(maxDecimalScale)).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }
}

/// The plausibility bound on clocks (docs/FORMAT.md §8.9). An honest writer gives each event
/// a Lamport clock one above the largest it has seen, so no honest clock or seq exceeds the
/// number of distinct events that exist. An event whose seq or Lamport clock exceeds
/// `limit(distinctEvents:)` of the set it is read with is quarantined: reported, never
/// applied, never observed by a writer. The slack keeps partial sets (a peer seen before the
/// events it had seen) plausible; the bound still leaves writers 2^62 − 2^33 − 2N clocks of
/// headroom, so one crafted file cannot exhaust them. It is a function of the set of events,
/// so every machine holding the same set quarantines the same events (invariant 3).
public enum ClockBound {
    public static let slack: UInt64 = 1 << 32

    public static func limit(distinctEvents: UInt64) -> UInt64 {
        let doubled = distinctEvents.multipliedReportingOverflow(by: 2)
        let sum = doubled.partialValue.addingReportingOverflow(slack)
        return doubled.overflow || sum.overflow ? FormatV1.maxLamport : min(sum.partialValue, FormatV1.maxLamport)
    }

    /// The number of distinct event ids in per-replica seq ranges (overlaps counted once).
    public static func distinctEvents<Ranges: Sequence>(_ rangesByReplica: [Ranges]) -> UInt64
    where Ranges.Element == ClosedRange<UInt64> {
        rangesByReplica.reduce(0) { total, ranges in
            let sum = total.addingReportingOverflow(SeqRanges(ranges).count)
            return sum.overflow ? .max : sum.partialValue
        }
    }
}

/// What format version 2 changes (docs/FORMAT.md §14): block bodies code stroke and style
/// references as differences and real columns with `RealColumnV2`. Files, frames, names and
/// every other constant are those of `FormatV1`.
public enum FormatV2 {
    public static let version: UInt16 = 2

    /// Grid codes of a v2 real column: 0...9 decimal (`n / 10^code`), `thirds` (`n / 3`),
    /// `binaryBase + k` for k in 1...30 (`n / 2^k`), and the two ordered bit-pattern grids.
    public static let thirds: UInt8 = 16
    public static let binaryBase: UInt8 = 32
    public static let maxBinaryExponent: UInt8 = 30
    /// Grid codes whose integers are order-preserving float32 / binary64 bit patterns.
    public static let ordered32: UInt8 = 64
    public static let ordered64: UInt8 = 65

    /// Bounds on a stroke's fine exponent (value = m * 2^e): from the smallest subnormal's
    /// exponent up to where 2^62 * 2^e is still finite.
    public static let minFineExponent = -1074
    public static let maxFineExponent = 960
    /// Fine multipliers and scaled bases stay below 2^62 in magnitude.
    public static let fineLimit: Int64 = 1 << 62

    public static func divisor(grid code: UInt8) -> Double? {
        switch code {
        case 0...FormatV1.maxDecimalScale: return FormatV1.powersOfTen[Int(code)]
        case thirds: return 3
        case (binaryBase + 1)...(binaryBase + maxBinaryExponent): return Double(1 << Int(code - binaryBase))
        default: return nil
        }
    }
}

/// What format version 3 changes (docs/FORMAT.md §15): a sealed segment ends in a seal
/// record, the Ed25519 signature of a replica key over the bytes before it. Block bodies are
/// coded as in version 2. Only sealed segments are written in version 3; open segments, and
/// the seals of journals without a key, stay version 2.
public enum FormatV3 {
    public static let version: UInt16 = 3
    public static let sealMagic: [UInt8] = Array("SJSG".utf8)
    /// magic(4) + role(1) + reserved(3) + publicKey(32) + signature(64) + crc32(4).
    public static let sealRecordSize = 4 + 1 + 3 + 32 + 64 + 4
}

/// What versions 6 and 7 change (docs/FORMAT.md §18): a stream of a real column may be range
/// coded (`RangeCodedStream`). Version 6 files are otherwise version 2's, version 7 files
/// version 3's (signed); a version 2 body is a version 6 body.
public enum FormatV6 {
    public static let version: UInt16 = 6
}

public enum FormatV7 {
    public static let version: UInt16 = 7
}

/// The versions this build reads, and the one it writes into new open segments and unsigned
/// seals (signed seals are `signed(bodyCoding:)` of it).
public enum FormatVersion {
    public static let readable: ClosedRange<UInt16> = FormatV1.version...FormatV7.version
    /// The versions whose blocks hold drawing events (version 4's and 5's hold membership
    /// statements).
    public static let drawing: Set<UInt16> = [FormatV1.version, FormatV2.version, FormatV3.version,
                                              FormatV6.version, FormatV7.version]
    /// The versions whose files end in a seal record (§15).
    public static let signedDrawing: Set<UInt16> = [FormatV3.version, FormatV7.version]
    /// The versions whose blocks hold membership statements: 4, and 5 (which may also hold
    /// invitations).
    public static let membership: ClosedRange<UInt16> = FormatV4.version...FormatV5.version
    public static let current: UInt16 = FormatV6.version

    /// The version whose block bodies a file of `version` holds: version 3 bodies are
    /// version 2's and version 7 bodies version 6's, so a block copied out of a signed segment
    /// (the relay's catch-up in blocks) goes out as an unsigned version's block, unchanged.
    public static func bodyCoding(_ version: UInt16) -> UInt16 {
        switch version {
        case FormatV3.version: return FormatV2.version
        case FormatV7.version: return FormatV6.version
        default: return version
        }
    }

    /// The signed version of files whose bodies are coded as `bodyVersion` (2 → 3, 6 → 7);
    /// nil for version 1 bodies, which are never signed.
    public static func signed(bodyCoding bodyVersion: UInt16) -> UInt16? {
        switch bodyVersion {
        case FormatV2.version, FormatV3.version: return FormatV3.version
        case FormatV6.version, FormatV7.version: return FormatV7.version
        default: return nil
        }
    }

    /// Whether a body of `version` may hold range-coded streams (§18).
    public static func rangeCoded(_ version: UInt16) -> Bool { bodyCoding(version) == FormatV6.version }
}
