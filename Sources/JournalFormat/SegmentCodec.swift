import JournalCompression

/// The file header every segment starts with (docs/FORMAT.md, "File header").
public struct SegmentHeader: Equatable, Sendable {
    public var version: UInt16
    public var replica: ReplicaID

    public init(replica: ReplicaID, version: UInt16 = FormatVersion.current) {
        self.version = version
        self.replica = replica
    }

    public func encoded() -> [UInt8] {
        var out = ByteWriter(capacity: FormatV1.fileHeaderSize)
        out.append(contentsOf: FormatV1.fileMagic)
        out.appendLE(version)
        out.appendLE(UInt16(FormatV1.fileHeaderSize))
        out.append(contentsOf: replica.bits.bytes)
        out.appendLE(CRC32.checksum(out.bytes))
        return out.bytes
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SegmentFormatError) -> SegmentHeader {
        guard bytes.count >= FormatV1.fileHeaderSize else {
            throw .truncatedHeader(available: bytes.count)
        }
        guard Array(bytes[0..<8]) == FormatV1.fileMagic else { throw .badMagic }
        // The length check above guarantees every fixed-offset read below.
        let version = littleEndian(bytes, at: 8, as: UInt16.self)
        let headerLength = littleEndian(bytes, at: 10, as: UInt16.self)
        let storedCRC = littleEndian(bytes, at: 28, as: UInt32.self)
        let computed = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<28]))
        guard storedCRC == computed else { throw .headerChecksum }
        guard FormatVersion.readable.contains(version) else { throw .unsupportedVersion(version) }
        guard headerLength == UInt16(FormatV1.fileHeaderSize) else { throw .badHeaderLength(headerLength) }
        return SegmentHeader(replica: ReplicaID(UUIDBits(bytes: bytes[12..<28])), version: version)
    }
}

/// The fixed-size frame before every block's compressed body (docs/FORMAT.md, "Block frame").
public struct BlockFrame: Equatable, Sendable {
    public var compressedLength: Int
    public var rawLength: Int
    public var eventCount: Int
    public var firstSeq: UInt64
    public var maxLamport: UInt64
    public var checksum: UInt32
    /// The format version of the segment the frame is in (its file header's): how its body
    /// is coded. Not stored in the frame.
    public var version: UInt16 = FormatVersion.current

    public var lastSeq: UInt64 { firstSeq + UInt64(eventCount) - 1 }
    public var totalLength: Int { FormatV1.blockHeaderSize + compressedLength }

    /// Reads and bounds-checks a frame header; the checksum is verified separately, once
    /// the body is in hand.
    public static func decodeHeader(
        _ bytes: UnsafeRawBufferPointer, version: UInt16 = FormatVersion.current
    ) throws(SegmentFormatError) -> BlockFrame {
        guard bytes.count >= FormatV1.blockHeaderSize else { throw .truncatedBlock }
        guard Array(bytes[0..<4]) == FormatV1.blockMagic else { throw .badBlockMagic }
        let compressed = Int(littleEndian(bytes, at: 4, as: UInt32.self))
        let raw = Int(littleEndian(bytes, at: 8, as: UInt32.self))
        let count = Int(littleEndian(bytes, at: 12, as: UInt32.self))
        let firstSeq = littleEndian(bytes, at: 16, as: UInt64.self)
        let maxLamport = littleEndian(bytes, at: 24, as: UInt64.self)
        let checksum = littleEndian(bytes, at: 32, as: UInt32.self)
        guard raw <= FormatV1.maxRawBlockSize else { throw .outOfBounds(.rawLength, UInt64(raw)) }
        guard compressed <= FormatV1.maxCompressedBlockSize else { throw .outOfBounds(.compressedLength, UInt64(compressed)) }
        guard count >= 1, count <= FormatV1.maxEventsPerBlock, count <= raw else {
            throw .outOfBounds(.eventCount, UInt64(count))
        }
        guard firstSeq >= 1, firstSeq < FormatV1.maxSeq - UInt64(count) else { throw .outOfBounds(.firstSeq, firstSeq) }
        return BlockFrame(
            compressedLength: compressed, rawLength: raw, eventCount: count, firstSeq: firstSeq,
            maxLamport: maxLamport, checksum: checksum, version: version)
    }

    /// CRC-32 over the 32 header bytes before the checksum field, then the compressed body.
    public static func computeChecksum(header: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer) -> UInt32 {
        let headCRC = CRC32.checksum(UnsafeRawBufferPointer(rebasing: header[0..<(FormatV1.blockHeaderSize - 4)]))
        return CRC32.checksum(body, seed: headCRC)
    }
}

/// The block header fields a reader checks against the format's bounds.
public enum BlockField: String, Sendable {
    case rawLength = "raw length"
    case compressedLength = "compressed length"
    case eventCount = "event count"
    case firstSeq = "first seq"
}

public enum SegmentFormatError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncatedHeader(available: Int)
    case badMagic
    case headerChecksum
    case unsupportedVersion(UInt16)
    case badHeaderLength(UInt16)
    case truncatedBlock
    case badBlockMagic
    /// A block header field beyond what the format allows (FORMAT.md §5.1): the field, the value.
    case outOfBounds(BlockField, UInt64)
    case blockChecksum(stored: UInt32, computed: UInt32)
    case inflate(ZlibError)
    case body(DecodeError)
    case seqOutOfOrder(expected: UInt64, found: UInt64)

    public var description: String {
        switch self {
        case .truncatedHeader(let available): return "file header is cut short (\(available) of \(FormatV1.fileHeaderSize) bytes)"
        case .badMagic: return "not a StrokeJournal segment (bad magic)"
        case .headerChecksum: return "file header checksum mismatch"
        case .unsupportedVersion(let version):
            return "unsupported format version \(version) (this build reads versions \(FormatVersion.readable.lowerBound) to \(FormatVersion.readable.upperBound))"
        case .badHeaderLength(let length): return "unexpected header length \(length)"
        case .truncatedBlock: return "block is cut short"
        case .badBlockMagic: return "no block starts here (bad block magic)"
        case .outOfBounds(let field, let value): return "\(field.rawValue) \(value) is outside the format's bounds"
        case .blockChecksum(let stored, let computed):
            return "block checksum mismatch (stored \(Hex.checksum(stored)), computed \(Hex.checksum(computed)))"
        case .inflate(let error): return "block body does not inflate: \(error)"
        case .body(let error): return "block body is malformed: \(error)"
        case .seqOutOfOrder(let expected, let found): return "block starts at seq \(found), expected \(expected)"
        }
    }
}

/// A little-endian integer at a fixed offset the caller has already bounds-checked.
func littleEndian<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, at offset: Int, as type: T.Type) -> T {
    var value: T = 0
    for index in 0..<MemoryLayout<T>.size { value |= T(bytes[offset + index]) << (8 * index) }
    return value
}


/// Builds the bytes of segments: header plus framed, compressed, checksummed blocks.
public enum SegmentEncoder {
    /// zlib level for blocks: level 6 is within a few percent of 9 and still fast to seal.
    public static let compressionLevel: Int32 = 6

    /// One complete block frame (header + raw-DEFLATE body) for a dense run of events.
    public static func block(
        _ events: ArraySlice<Event>, level: Int32 = compressionLevel, version: UInt16 = FormatVersion.current
    ) -> [UInt8] {
        precondition(!events.isEmpty, "a block holds at least one event")
        return frame(body: BlockCodec.encodeBody(events, version: version), eventCount: events.count, firstSeq: events.first!.id.seq,
                     maxLamport: events.map(\.lamport).max()!, level: level)
    }

    /// Compresses an encoded body part by part (`EncodedBody.deflateSections`) and frames it.
    public static func frame(
        body: EncodedBody, eventCount: Int, firstSeq: UInt64, maxLamport: UInt64, level: Int32 = compressionLevel
    ) -> [UInt8] {
        precondition(body.bytes.count <= FormatV1.maxRawBlockSize, "block body over the format bound: split it")
        let compressed: [UInt8]
        do {
            compressed = try RawDeflate.compress(body.bytes, sections: body.deflateSections(level: level))
        } catch {
            // Deflate of an in-memory buffer fails only if zlib cannot allocate its state.
            preconditionFailure("zlib deflate failed: \(error)")
        }
        return frame(compressed: compressed, rawCount: body.bytes.count, eventCount: eventCount, firstSeq: firstSeq, maxLamport: maxLamport)
    }

    /// Compresses an encoded block body as one stream and frames it: header fields, CRC-32, body.
    public static func frame(
        body raw: [UInt8], eventCount: Int, firstSeq: UInt64, maxLamport: UInt64, level: Int32 = compressionLevel
    ) -> [UInt8] {
        frame(body: EncodedBody(bytes: raw, partEnds: []), eventCount: eventCount, firstSeq: firstSeq, maxLamport: maxLamport, level: level)
    }

    /// The raw body of a block, for a caller that compresses it itself. Called from another
    /// module, `BlockCodec.encode` runs unspecialised (generic over the collection: an
    /// iterator, 120-byte event copies and allocations per event in the profile); from here
    /// it is specialised for `ArraySlice<Event>`.
    public static func body(_ events: ArraySlice<Event>, version: UInt16 = FormatVersion.current) -> EncodedBody {
        BlockCodec.encodeBody(events, version: version)
    }

    /// Frames a body compressed by the caller (any raw DEFLATE stream of `rawCount` bytes).
    public static func frame(
        compressed: [UInt8], rawCount: Int, eventCount: Int, firstSeq: UInt64, maxLamport: UInt64
    ) -> [UInt8] {
        precondition(rawCount <= FormatV1.maxRawBlockSize, "block body over the format bound: split it")
        var out = ByteWriter(capacity: FormatV1.blockHeaderSize + compressed.count)
        out.append(contentsOf: FormatV1.blockMagic)
        out.appendLE(UInt32(compressed.count))
        out.appendLE(UInt32(rawCount))
        out.appendLE(UInt32(eventCount))
        out.appendLE(firstSeq)
        out.appendLE(maxLamport)
        out.appendLE(UInt32(0))
        let checksum = out.bytes.withUnsafeBytes { header in
            compressed.withUnsafeBytes { body in BlockFrame.computeChecksum(header: header, body: body) }
        }
        out.overwriteLE(checksum, at: FormatV1.blockHeaderSize - 4)
        out.append(contentsOf: compressed)
        return out.bytes
    }

    /// A whole sealed segment: the header, then blocks of at most `targetEvents` events each.
    public static func segment(
        replica: ReplicaID, events: [Event], targetEvents: Int = FormatV1.sealedBlockTargetEvents,
        version: UInt16 = FormatVersion.current
    ) -> [UInt8] {
        SegmentHeader(replica: replica, version: version).encoded()
            + blocks(events[...], targetEvents: targetEvents, version: version)
    }

    /// Consecutive blocks of at most `targetEvents` events each.
    public static func blocks(
        _ events: ArraySlice<Event>, targetEvents: Int = FormatV1.sealedBlockTargetEvents, level: Int32 = compressionLevel,
        version: UInt16 = FormatVersion.current
    ) -> [UInt8] {
        var out: [UInt8] = []
        var start = events.startIndex
        while start < events.endIndex {
            let end = min(start + targetEvents, events.endIndex)
            out.append(contentsOf: block(events[start..<end], level: level, version: version))
            start = end
        }
        return out
    }
}

/// Decodes one block frame already in memory: verifies the checksum, inflates within the
/// frame's bounds and decodes the body.
public enum BlockDecoder {
    public static func events(
        frame: BlockFrame, frameBytes: UnsafeRawBufferPointer, replica: ReplicaID
    ) throws(SegmentFormatError) -> [Event] {
        var events: [Event] = []
        events.reserveCapacity(frame.eventCount)
        try visit(frame: frame, frameBytes: frameBytes, replica: replica) { events.append($0) }
        return events
    }

    public static func verifyChecksum(frame: BlockFrame, frameBytes: UnsafeRawBufferPointer) throws(SegmentFormatError) {
        let header = UnsafeRawBufferPointer(rebasing: frameBytes[0..<FormatV1.blockHeaderSize])
        let body = UnsafeRawBufferPointer(rebasing: frameBytes[FormatV1.blockHeaderSize..<frame.totalLength])
        let computed = BlockFrame.computeChecksum(header: header, body: body)
        guard computed == frame.checksum else { throw .blockChecksum(stored: frame.checksum, computed: computed) }
    }

    public static func visit(
        frame: BlockFrame, frameBytes: UnsafeRawBufferPointer, replica: ReplicaID, _ body: (Event) -> Void
    ) throws(SegmentFormatError) {
        try columns(frame: frame, frameBytes: frameBytes).events(replica: replica).forEach(body)
    }

    /// Verifies, inflates and decodes one block of a version 4 (membership) segment; checks
    /// the frame's `maxLamport` against the statements. Signatures are the caller's to check.
    public static func statements(frame: BlockFrame, frameBytes: UnsafeRawBufferPointer, version: UInt16) throws(SegmentFormatError) -> [MembershipStatement] {
        try decodeBody(frame: frame, frameBytes: frameBytes) { buffer throws(DecodeError) in
            let statements = try FormatV4.decodeBody(buffer, count: frame.eventCount, version: version)
            guard statements.map(\.lamport).max() == frame.maxLamport else {
                throw DecodeError.malformed(offset: 0, reason: "frame says max lamport \(frame.maxLamport), statements hold \(statements.map(\.lamport).max() ?? 0)")
            }
            return statements
        }
    }

    /// Verifies, inflates within the frame's bounds, decodes and validates one block.
    public static func columns(frame: BlockFrame, frameBytes: UnsafeRawBufferPointer) throws(SegmentFormatError) -> BlockColumns {
        try decodeBody(frame: frame, frameBytes: frameBytes) { buffer throws(DecodeError) in
            let columns = try BlockCodec.decodeColumns(
                buffer, firstSeq: frame.firstSeq, eventCount: frame.eventCount, version: frame.version)
            // A checksum proves the bytes are what some writer wrote, not that the writer
            // was honest: refuse values no writer of ours produces.
            try columns.validate()
            guard columns.lamports.max() == frame.maxLamport else {
                throw DecodeError.malformed(offset: 0, reason: "frame says max lamport \(frame.maxLamport), events hold \(columns.lamports.max() ?? 0)")
            }
            return columns
        }
    }

    /// Checks the frame's checksum, inflates its body within the frame's bounds and decodes it.
    private static func decodeBody<Decoded>(
        frame: BlockFrame, frameBytes: UnsafeRawBufferPointer, _ decode: (UnsafeRawBufferPointer) throws(DecodeError) -> Decoded
    ) throws(SegmentFormatError) -> Decoded {
        try verifyChecksum(frame: frame, frameBytes: frameBytes)
        let compressed = UnsafeRawBufferPointer(rebasing: frameBytes[FormatV1.blockHeaderSize..<frame.totalLength])
        let raw: [UInt8]
        do {
            raw = try RawDeflate.decompress(compressed, expectedCount: frame.rawLength)
        } catch {
            throw .inflate(error)
        }
        var result: Result<Decoded, DecodeError> = .failure(.malformed(offset: 0, reason: "not decoded"))
        raw.withUnsafeBytes { buffer in
            do throws(DecodeError) {
                result = .success(try decode(buffer))
            } catch {
                result = .failure(error)
            }
        }
        switch result {
        case .success(let decoded): return decoded
        case .failure(let error): throw .body(error)
        }
    }
}
