import JournalFormat
import JournalPlatform

/// A block whose frame and checksum are valid, at `offset` in its file.
public struct ScannedBlock: Sendable, Equatable {
    public var offset: Int
    public var frame: BlockFrame
    public var seqRange: ClosedRange<UInt64> { frame.firstSeq...frame.lastSeq }
}

/// What a scan of one segment file found: its header, its valid blocks, and every problem.
/// Scanning checks frames and checksums only; inflating is left to whoever needs events.
public struct ScannedSegment: Sendable {
    public var path: String
    public var bytes: [UInt8]
    public var header: SegmentHeader?
    public var blocks: [ScannedBlock]
    public var problems: [Problem]
    /// Bytes from the start up to the end of the last valid block before the first problem.
    public var validPrefixLength: Int
    /// The first problem is at the end with no valid block after it: what a crash leaves.
    public var problemsAreOnlyAtTail: Bool
    /// A version 3 segment's seal record (docs/FORMAT.md §15), and where it starts: the
    /// signature covers the bytes before it. Read, not verified (`SegmentSeal.verify`).
    public var seal: SealRecord? = nil
    public var sealOffset: Int? = nil

    /// The bytes a version 3 seal signs.
    public var sealedContents: ArraySlice<UInt8>? { sealOffset.map { bytes[..<$0] } }

    public var replica: ReplicaID? { header?.replica }
    public var eventCount: Int { blocks.reduce(0) { $0 + $1.frame.eventCount } }
    public var seqRange: ClosedRange<UInt64>? {
        guard let first = blocks.first, let last = blocks.last else { return nil }
        return first.frame.firstSeq...last.frame.lastSeq
    }
    public var maxLamport: UInt64 { blocks.map(\.frame.maxLamport).max() ?? 0 }

    /// Decodes every valid block, reporting blocks whose bodies do not decode.
    public func events(_ body: (Event) -> Void) -> [Problem] {
        guard let replica else { return [] }
        var problems: [Problem] = []
        bytes.withUnsafeBytes { buffer in
            for block in blocks {
                let frameBytes = UnsafeRawBufferPointer(rebasing: buffer[block.offset..<block.offset + block.frame.totalLength])
                do throws(SegmentFormatError) {
                    // Decode into a buffer first: a block is applied whole or not at all.
                    let decoded = try BlockDecoder.events(frame: block.frame, frameBytes: frameBytes, replica: replica)
                    decoded.forEach(body)
                } catch {
                    problems.append(Problem(
                        .corrupt, file: path, offset: Int64(block.offset), replica: replica,
                        seqRange: block.seqRange, reason: error.description))
                }
            }
        }
        return problems
    }

    /// Decodes every valid block into columns only (no per-event values), for verification:
    /// the problems of the blocks whose bodies do not inflate, parse or validate.
    public func verifyBodies() -> [Problem] {
        var problems: [Problem] = []
        bytes.withUnsafeBytes { buffer in
            for block in blocks {
                let frameBytes = UnsafeRawBufferPointer(rebasing: buffer[block.offset..<block.offset + block.frame.totalLength])
                do throws(SegmentFormatError) {
                    if let version = header?.version, FormatVersion.membership.contains(version) {
                        _ = try BlockDecoder.statements(frame: block.frame, frameBytes: frameBytes, version: version)
                    } else {
                        _ = try BlockDecoder.columns(frame: block.frame, frameBytes: frameBytes)
                    }
                } catch {
                    problems.append(Problem(
                        .corrupt, file: path, offset: Int64(block.offset), replica: replica,
                        seqRange: block.seqRange, reason: error.description))
                }
            }
        }
        return problems
    }

    public func allEvents() -> (events: [Event], problems: [Problem]) {
        var events: [Event] = []
        events.reserveCapacity(eventCount)
        let problems = self.events { events.append($0) }
        return (events, problems)
    }
}

public enum SegmentScanner {
    /// A file bigger than this is refused before it is read (invariant 8; docs/FORMAT.md).
    public static let maxSegmentFileSize: Int64 = 1 << 30

    /// Reads and scans a file. `sealed` decides how a short end is named: a torn tail for an
    /// open segment, an incomplete copy for a sealed one.
    public static func scan(path: String, sealed: Bool) -> ScannedSegment {
        let bytes: [UInt8]
        do {
            let descriptor = try FileDescriptor.open(path, .readOnly)
            defer { descriptor.close() }
            let size = try descriptor.size()
            guard size <= maxSegmentFileSize else {
                return failed(path, Problem(.ignored, file: path, reason: "file of \(size) bytes exceeds the \(maxSegmentFileSize)-byte segment bound"))
            }
            bytes = try descriptor.read(count: Int(size), at: 0)
        } catch {
            return failed(path, Problem(.unreadable, file: path, reason: error.description))
        }
        return scan(bytes: bytes, path: path, sealed: sealed)
    }

    public static func scan(bytes: [UInt8], path: String, sealed: Bool) -> ScannedSegment {
        var result = ScannedSegment(
            path: path, bytes: bytes, header: nil, blocks: [], problems: [], validPrefixLength: 0,
            problemsAreOnlyAtTail: true)
        let shortKind: Problem.Kind = sealed ? .incomplete : .tornTail
        bytes.withUnsafeBytes { buffer in
            do throws(SegmentFormatError) {
                result.header = try SegmentHeader.decode(buffer)
            } catch {
                let kind: Problem.Kind
                if case .truncatedHeader = error { kind = shortKind } else { kind = .corrupt }
                result.problems.append(Problem(kind, file: path, offset: 0, reason: error.description))
                return
            }
            let replica = result.header?.replica
            var offset = FormatV1.fileHeaderSize
            result.validPrefixLength = offset
            var expectedSeq: UInt64? = nil
            // After a damaged block its events are unknown: the next one may start later.
            var gapAllowed = false
            var sawProblem = false

            func report(_ kind: Problem.Kind, _ reason: String, at position: Int, seqs: ClosedRange<UInt64>? = nil) {
                result.problems.append(Problem(
                    kind, file: path, offset: Int64(position), replica: replica, seqRange: seqs, reason: reason))
                sawProblem = true
            }

            let signed = result.header.map { FormatVersion.signedDrawing.contains($0.version) } ?? false
            while offset < buffer.count {
                if signed, SealRecord.startsAt(buffer, offset: offset) {
                    // The record is the file's last bytes, after the last block (§15).
                    let rest = UnsafeRawBufferPointer(rebasing: buffer[offset...])
                    do throws(SealRecordError) {
                        result.seal = try SealRecord.decode(rest)
                        result.sealOffset = offset
                        if !sawProblem { result.validPrefixLength = buffer.count }
                    } catch {
                        let short = rest.count < FormatV3.sealRecordSize
                        let reason = error == .wrongLength(rest.count) && !short ? SealRecordError.notAtEnd.description : error.description
                        report(short ? shortKind : .corrupt, reason, at: offset)
                    }
                    return
                }
                let outcome = checkFrame(buffer, at: offset, version: result.header?.version ?? FormatVersion.current)
                switch outcome {
                case .valid(let frame):
                    if let expected = expectedSeq, gapAllowed ? frame.firstSeq < expected : frame.firstSeq != expected {
                        report(.corrupt, SegmentFormatError.seqOutOfOrder(expected: expected, found: frame.firstSeq).description,
                               at: offset, seqs: frame.firstSeq...frame.lastSeq)
                    } else {
                        if sawProblem { result.problemsAreOnlyAtTail = false }
                        result.blocks.append(ScannedBlock(offset: offset, frame: frame))
                        expectedSeq = frame.lastSeq + 1
                        gapAllowed = false
                        if !sawProblem { result.validPrefixLength = offset + frame.totalLength }
                    }
                    offset += frame.totalLength
                case .invalid(let error, let claimed):
                    let next = resynchronize(buffer, from: offset + 1, version: result.header?.version ?? FormatVersion.current)
                    let truncated = next == nil && isShortness(error)
                    report(truncated ? shortKind : .corrupt, error.description, at: offset, seqs: claimed)
                    gapAllowed = true
                    guard let next else { return }
                    offset = next
                }
            }
            if signed && sealed && !result.blocks.isEmpty {
                report(shortKind, SealRecordError.missing.description, at: buffer.count)
            }
        }
        return result
    }

    private enum FrameCheck {
        case valid(BlockFrame)
        case invalid(SegmentFormatError, claimed: ClosedRange<UInt64>?)
    }

    private static func checkFrame(_ buffer: UnsafeRawBufferPointer, at offset: Int, version: UInt16) -> FrameCheck {
        let remaining = UnsafeRawBufferPointer(rebasing: buffer[offset...])
        let frame: BlockFrame
        do throws(SegmentFormatError) {
            frame = try BlockFrame.decodeHeader(remaining, version: version)
        } catch {
            return .invalid(error, claimed: nil)
        }
        let claimed = frame.firstSeq...frame.lastSeq
        guard frame.totalLength <= remaining.count else { return .invalid(.truncatedBlock, claimed: claimed) }
        let frameBytes = UnsafeRawBufferPointer(rebasing: remaining[0..<frame.totalLength])
        do throws(SegmentFormatError) {
            try BlockDecoder.verifyChecksum(frame: frame, frameBytes: frameBytes)
        } catch {
            return .invalid(error, claimed: claimed)
        }
        return .valid(frame)
    }

    private static func isShortness(_ error: SegmentFormatError) -> Bool {
        switch error {
        case .truncatedBlock, .truncatedHeader: return true
        default: return false
        }
    }

    /// The offset of the next frame that is whole and whose checksum matches, if any: lets a
    /// reader keep the blocks after a damaged one.
    private static func resynchronize(_ buffer: UnsafeRawBufferPointer, from start: Int, version: UInt16) -> Int? {
        let magic = FormatV1.blockMagic
        var offset = start
        while offset + FormatV1.blockHeaderSize <= buffer.count {
            if buffer[offset] == magic[0] && buffer[offset + 1] == magic[1]
                && buffer[offset + 2] == magic[2] && buffer[offset + 3] == magic[3],
               case .valid = checkFrame(buffer, at: offset, version: version) {
                return offset
            }
            offset += 1
        }
        return nil
    }

    private static func failed(_ path: String, _ problem: Problem) -> ScannedSegment {
        ScannedSegment(path: path, bytes: [], header: nil, blocks: [], problems: [problem],
                       validPrefixLength: 0, problemsAreOnlyAtTail: true)
    }
}
