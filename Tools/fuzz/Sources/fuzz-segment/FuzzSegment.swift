// libFuzzer harness: arbitrary bytes as a segment file, a block frame and a raw block body.
//
// Property: nothing here may crash, trap or allocate without bound (docs/FORMAT.md §12), and
// what the reader hands on must hold what §6.5 promises (finite values, widths >= 0, seqs
// inside the block's range, a body that re-encodes to the same events).
//
// Four ways in, so that the fuzzer does not stall on the CRC-32s:
//   1. the bytes as they are, through `SegmentScanner.scan(bytes:path:sealed:)` (open and
//      sealed) and `allEvents()`;
//   2. the same bytes with the file header's and every declared frame's CRC fixed up, so
//      that mutated frame fields and compressed bodies reach the inflater and the decoder;
//   3. `BlockCodec.decodeColumns` (every format version) on the bytes after the first as a raw block body, with an
//      event count derived from the first byte; a body that decodes and validates is then
//      deflated into a well-formed segment and must come back identical through the scanner;
//   4. `SegmentHeader.decode` and `BlockFrame.decodeHeader` on the bytes (and the frame at 32).
import JournalFormat
import JournalCompression
import JournalPlatform
import JournalStorage

private let fuzzReplica = ReplicaID(UUIDBits(high: 0x0011_2233_4455_6677, low: 0x8899_AABB_CCDD_EEFF))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let bytes = [UInt8](input)

    // 1. As they are.
    scanAndCheck(bytes)

    // 2. With checksums made right.
    var fixed = bytes
    if fixChecksums(&fixed) { scanAndCheck(fixed) }

    // 3. As a raw block body.
    if size >= 1 {
        let eventCount = eventCount(fromTag: data[0])
        let body = UnsafeRawBufferPointer(rebasing: input[1...])
        // Under every version's decoder: v1 and v2 bodies share their first columns, so one
        // input explores both.
        for version in FormatVersion.readable { checkBody(body, eventCount: eventCount, version: version) }
    }

    // 4. Headers.
    checkHeaders(input)
    if size > FormatV1.fileHeaderSize {
        checkHeaders(UnsafeRawBufferPointer(rebasing: input[FormatV1.fileHeaderSize...]))
    }
    return 0
}

/// 0…200 as is; 201…216 powers of two up to 2^16 (the frame bound); above, just over it.
private func eventCount(fromTag tag: UInt8) -> Int {
    switch tag {
    case 0...200: return Int(tag)
    case 201...216: return 1 << Int(tag - 200)
    default: return FormatV1.maxEventsPerBlock + Int(tag - 216)
    }
}

// MARK: - Scanner

private func scanAndCheck(_ bytes: [UInt8]) {
    for sealed in [false, true] {
        let segment = SegmentScanner.scan(bytes: bytes, path: "fuzz.sjs", sealed: sealed)
        checkScan(segment, count: bytes.count)
        let (events, problems) = segment.allEvents()
        checkEvents(events, of: segment, problems: problems)
    }
}

private func checkScan(_ segment: ScannedSegment, count: Int) {
    precondition(segment.validPrefixLength >= 0 && segment.validPrefixLength <= count, "valid prefix beyond the file")
    if segment.header == nil {
        precondition(segment.blocks.isEmpty, "blocks without a header")
        precondition(!segment.problems.isEmpty, "no header and no problem")
        return
    }
    var end = FormatV1.fileHeaderSize
    var previousLast: UInt64 = 0
    for block in segment.blocks {
        precondition(block.offset >= end, "blocks overlap or precede the header")
        precondition(block.offset + block.frame.totalLength <= count, "block beyond the file")
        precondition(block.frame.eventCount >= 1 && block.frame.eventCount <= FormatV1.maxEventsPerBlock, "event count out of bounds")
        precondition(block.frame.rawLength <= FormatV1.maxRawBlockSize, "raw length out of bounds")
        precondition(block.frame.firstSeq >= 1 && block.frame.lastSeq < FormatV1.maxSeq, "seqs out of bounds")
        precondition(block.frame.firstSeq > previousLast, "blocks out of seq order")
        previousLast = block.frame.lastSeq
        end = block.offset + block.frame.totalLength
    }
    if segment.problems.isEmpty {
        precondition(segment.validPrefixLength == count, "a clean scan must cover the whole file")
    }
}

private func checkEvents(_ events: [Event], of segment: ScannedSegment, problems: [Problem]) {
    precondition(events.count <= segment.eventCount, "more events than the frames claim")
    precondition(problems.count <= segment.blocks.count, "more decode problems than blocks")
    for event in events {
        precondition(event.id.replica == segment.replica, "event of another replica")
        precondition(event.lamport >= 1 && event.lamport < FormatV1.maxLamport, "lamport out of bounds")
        precondition(segment.blocks.contains { $0.seqRange.contains(event.id.seq) }, "event outside every block")
        do throws(EventValidationError) {
            try event.payload.validate()
        } catch {
            preconditionFailure("the reader handed on an invalid payload: \(error)")
        }
    }
}

/// Rewrites the header CRC and the CRC of every frame reached by walking declared lengths.
/// Returns false when nothing looked like a segment (so there is nothing new to scan).
private func fixChecksums(_ bytes: inout [UInt8]) -> Bool {
    guard bytes.count >= FormatV1.fileHeaderSize, bytes[0..<8].elementsEqual(FormatV1.fileMagic) else { return false }
    var changed = false
    bytes.withUnsafeMutableBytes { buffer in
        let header = UnsafeRawBufferPointer(rebasing: buffer[0..<28])
        changed = store(CRC32.checksum(header), in: buffer, at: 28) || changed
        var offset = FormatV1.fileHeaderSize
        while offset + FormatV1.blockHeaderSize <= buffer.count {
            let rest = UnsafeRawBufferPointer(rebasing: buffer[offset...])
            guard let frame = try? BlockFrame.decodeHeader(rest), frame.totalLength <= rest.count else { break }
            let checksum = BlockFrame.computeChecksum(
                header: UnsafeRawBufferPointer(rebasing: rest[0..<FormatV1.blockHeaderSize]),
                body: UnsafeRawBufferPointer(rebasing: rest[FormatV1.blockHeaderSize..<frame.totalLength]))
            changed = store(checksum, in: buffer, at: offset + FormatV1.blockHeaderSize - 4) || changed
            offset += frame.totalLength
        }
    }
    return changed
}

private func store(_ value: UInt32, in buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Bool {
    var changed = false
    for index in 0..<4 {
        let byte = UInt8(truncatingIfNeeded: value >> (8 * UInt32(index)))
        if buffer[offset + index] != byte {
            buffer[offset + index] = byte
            changed = true
        }
    }
    return changed
}

// MARK: - Block body

private func checkBody(_ body: UnsafeRawBufferPointer, eventCount: Int, version: UInt16) {
    let columns: BlockColumns
    do throws(DecodeError) {
        columns = try BlockCodec.decodeColumns(body, firstSeq: 1, eventCount: eventCount, version: version)
    } catch {
        return
    }
    precondition(columns.count == eventCount, "decoded a different number of events")
    precondition(columns.strokeRefs.allSatisfy { Int($0) < max(columns.strokes.count, 1) }, "stroke ref beyond the table")
    precondition(columns.styleRefs.allSatisfy { Int($0) < columns.styles.count }, "style ref beyond the table")
    do throws(DecodeError) {
        try columns.validate()
    } catch {
        return
    }
    let events = columns.events(replica: fuzzReplica)
    precondition(events.count == eventCount)
    for event in events {
        do throws(EventValidationError) {
            try event.payload.validate()
        } catch {
            preconditionFailure("validated columns gave an invalid payload: \(error)")
        }
    }

    // Lossless: the events re-encode to a body that decodes to the same events.
    guard eventCount >= 1, eventCount <= FormatV1.maxEventsPerBlock else { return }
    let reencoded = BlockCodec.encode(events, version: version)
    let decoded: Result<[Event], DecodeError> = reencoded.withUnsafeBytes { raw in
        Result { () throws(DecodeError) in
            try BlockCodec.decode(raw, replica: fuzzReplica, firstSeq: 1, eventCount: eventCount, version: version)
        }
    }
    guard case .success(let again) = decoded else {
        preconditionFailure("a re-encoded body does not decode: \(decoded)")
    }
    precondition(again == events, "a re-encoded body decodes to other events")

    // The whole pipeline: the original body, deflated into a well-formed frame, must scan
    // clean and decode to the same events.
    guard eventCount <= body.count else { return }
    checkFramed(body, eventCount: eventCount, maxLamport: columns.lamports.max()!, expected: events, version: version)
}

private func checkFramed(
    _ body: UnsafeRawBufferPointer, eventCount: Int, maxLamport: UInt64, expected: [Event], version: UInt16
) {
    let frame = SegmentEncoder.frame(body: [UInt8](body), eventCount: eventCount, firstSeq: 1, maxLamport: maxLamport, level: 1)
    let file = SegmentHeader(replica: fuzzReplica, version: version).encoded() + frame

    let segment = SegmentScanner.scan(bytes: file, path: "framed.sjs", sealed: true)
    precondition(segment.problems.isEmpty, "a well-formed segment scans with problems: \(segment.problems)")
    precondition(segment.blocks.count == 1)
    let (events, problems) = segment.allEvents()
    precondition(problems.isEmpty, "a well-formed block does not decode: \(problems)")
    precondition(events == expected, "the scanner decodes other events than the codec")
}

// MARK: - Headers

private func checkHeaders(_ bytes: UnsafeRawBufferPointer) {
    if let header = try? SegmentHeader.decode(bytes) {
        precondition(FormatVersion.readable.contains(header.version))
        precondition(header.encoded().elementsEqual(bytes[0..<FormatV1.fileHeaderSize]), "a header does not re-encode to itself")
    }
    if let frame = try? BlockFrame.decodeHeader(bytes) {
        precondition(frame.eventCount >= 1 && frame.eventCount <= FormatV1.maxEventsPerBlock)
        precondition(frame.eventCount <= frame.rawLength && frame.rawLength <= FormatV1.maxRawBlockSize)
        precondition(frame.compressedLength <= FormatV1.maxCompressedBlockSize)
        precondition(frame.firstSeq >= 1 && frame.lastSeq < FormatV1.maxSeq)
    }
}
