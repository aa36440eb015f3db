import CZlib

/// Why zlib refused a buffer. Mapped once, here, from zlib's integer return codes.
public enum ZlibError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input is not a valid raw DEFLATE stream (`Z_DATA_ERROR`).
    case corruptStream(String)
    /// The stream inflates to more bytes than the caller allowed: refused, not allocated.
    case outputTooLarge(limit: Int)
    /// The stream ended early, or had bytes left after its final block.
    case lengthMismatch(expected: Int, actual: Int)
    /// zlib could not allocate its state (`Z_MEM_ERROR`) or any other internal failure.
    case internalFailure(code: Int32)

    public var description: String {
        switch self {
        case .corruptStream(let message): return "corrupt DEFLATE stream (\(message))"
        case .outputTooLarge(let limit): return "inflates to more than \(limit) bytes"
        case .lengthMismatch(let expected, let actual):
            return "inflated to \(actual) bytes, header says \(expected)"
        case .internalFailure(let code): return "zlib internal error \(code)"
        }
    }
}

/// Raw DEFLATE (RFC 1951, no zlib or gzip wrapper) of whole buffers.
///
/// Each call owns its `z_stream` for the duration of the call only: zlib requires the stream
/// to stay at one address while in use, so it lives in a heap box that never moves.
public enum RawDeflate {
    /// Compresses `input` as one raw DEFLATE stream (`deflateInit2` with windowBits -15).
    public static func compress(_ input: [UInt8], level: Int32 = 6) throws(ZlibError) -> [UInt8] {
        try compress(input, sections: [DeflateSection(end: input.count, method: .matching(level: level))])
    }

    /// Compresses `input[range]` as one piece of a raw DEFLATE stream of all of `input`, so
    /// that pieces can be compressed at the same time and concatenated in order (what pigz
    /// does): the piece is primed with the 32 KiB before it, the window a single stream
    /// would have there, and every piece but the last ends in a sync flush (an empty stored
    /// block: byte-aligned and not final). The concatenation is an ordinary raw DEFLATE
    /// stream that any inflater reads; only the few bytes around each seam differ from a
    /// single call's output.
    public static func compressPiece(
        _ input: UnsafeRawBufferPointer, range: Range<Int>, level: Int32 = 6
    ) throws(ZlibError) -> [UInt8] {
        try compressPiece(input, range: range, sections: [DeflateSection(end: input.count, method: .matching(level: level))])
    }

    /// Inflates a raw DEFLATE stream that must produce exactly `expectedCount` bytes.
    ///
    /// The output buffer is allocated once at `expectedCount`, which the caller has already
    /// bounded; a stream that wants to write more is refused before any further allocation,
    /// so a decompression bomb costs at most `expectedCount` bytes.
    public static func decompress(
        _ input: UnsafeRawBufferPointer, expectedCount: Int
    ) throws(ZlibError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: expectedCount)
        var failure: ZlibError?
        output.withUnsafeMutableBytes { outBuf in
            do throws(ZlibError) { try decompress(input, into: outBuf) } catch { failure = error }
        }
        if let failure { throw failure }
        return output
    }

    /// Inflates into a caller-provided buffer whose size is exactly the expected output size.
    public static func decompress(
        _ input: UnsafeRawBufferPointer, into outBuf: UnsafeMutableRawBufferPointer
    ) throws(ZlibError) {
        let box = StreamBox()
        let initCode = czlib_inflate_init_raw(box.stream)
        guard initCode == Z_OK else { throw .internalFailure(code: initCode) }
        defer { inflateEnd(box.stream) }

        let expectedCount = outBuf.count
        // zlib counts in 32 bits.
        guard expectedCount <= Int(UInt32.max) else { throw .outputTooLarge(limit: Int(UInt32.max)) }
        // One spare byte lets us notice a stream that would run past the expected size.
        var spare: UInt8 = 0
        box.stream.pointee.next_in = UnsafeMutablePointer(
            mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        box.stream.pointee.avail_in = uInt(input.count)
        box.stream.pointee.next_out = outBuf.baseAddress?.assumingMemoryBound(to: Bytef.self)
        box.stream.pointee.avail_out = uInt(expectedCount)
        var code = inflate(box.stream, Z_FINISH)
        if code == Z_BUF_ERROR && box.stream.pointee.avail_out == 0 {
            // Output is full but the stream has not ended: probe with one more byte.
            code = withUnsafeMutablePointer(to: &spare) { sparePointer in
                box.stream.pointee.next_out = sparePointer
                box.stream.pointee.avail_out = 1
                return inflate(box.stream, Z_FINISH)
            }
            if box.stream.pointee.avail_out == 0 {
                throw .outputTooLarge(limit: expectedCount)
            }
        }
        let produced = Int(box.stream.pointee.total_out)
        switch code {
        case Z_STREAM_END:
            guard produced == expectedCount, box.stream.pointee.avail_in == 0 else {
                throw .lengthMismatch(expected: expectedCount, actual: produced)
            }
        case Z_DATA_ERROR:
            let message = box.stream.pointee.msg.map { String(cString: $0) } ?? "invalid data"
            throw .corruptStream(message)
        case Z_BUF_ERROR:
            throw .lengthMismatch(expected: expectedCount, actual: produced)
        default:
            throw .internalFailure(code: code)
        }
    }
}

extension RawDeflate {
    /// Inflates only the first `outBuf.count` bytes of a raw DEFLATE stream, which must hold
    /// at least that many: what a reader needs of a stream whose head says what follows
    /// (a snapshot chunk's stroke records before its columns) costs that head, not the stream.
    public static func decompressPrefix(
        _ input: UnsafeRawBufferPointer, into outBuf: UnsafeMutableRawBufferPointer
    ) throws(ZlibError) {
        guard outBuf.count > 0 else { return }
        // zlib counts in 32 bits.
        guard outBuf.count <= Int(UInt32.max) else { throw .outputTooLarge(limit: Int(UInt32.max)) }
        let box = StreamBox()
        let initCode = czlib_inflate_init_raw(box.stream)
        guard initCode == Z_OK else { throw .internalFailure(code: initCode) }
        defer { inflateEnd(box.stream) }
        box.stream.pointee.next_in = UnsafeMutablePointer(
            mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        box.stream.pointee.avail_in = uInt(input.count)
        box.stream.pointee.next_out = outBuf.baseAddress?.assumingMemoryBound(to: Bytef.self)
        box.stream.pointee.avail_out = uInt(outBuf.count)
        var code = Z_OK
        // Each call stops when the output is full, the input is used up or the stream ends.
        while box.stream.pointee.avail_out > 0 {
            code = inflate(box.stream, Z_NO_FLUSH)
            guard code == Z_OK else { break }
        }
        let produced = Int(box.stream.pointee.total_out)
        if produced == outBuf.count, code == Z_OK || code == Z_STREAM_END { return }
        switch code {
        case Z_DATA_ERROR:
            let message = box.stream.pointee.msg.map { String(cString: $0) } ?? "invalid data"
            throw .corruptStream(message)
        case Z_OK, Z_STREAM_END, Z_BUF_ERROR:
            throw .lengthMismatch(expected: outBuf.count, actual: produced)
        default:
            throw .internalFailure(code: code)
        }
    }
}

/// CRC-32 (ISO 3309 / zlib's `crc32`, polynomial 0xEDB88320).
public enum CRC32 {
    public static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return seed }
        var crc = uLong(seed)
        var offset = 0
        // zlib's length parameter is 32-bit: feed huge buffers in slices.
        while offset < bytes.count {
            let chunk = min(bytes.count - offset, 1 << 30)
            crc = crc32(crc, base.advanced(by: offset).assumingMemoryBound(to: Bytef.self), uInt(chunk))
            offset += chunk
        }
        return UInt32(truncatingIfNeeded: crc)
    }

    public static func checksum(_ bytes: [UInt8], seed: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, seed: seed) }
    }
}

/// Holds a `z_stream` at a stable heap address for zlib's lifetime rules.
final class StreamBox {
    let stream: UnsafeMutablePointer<z_stream>
    init() {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
    }
    deinit {
        stream.deinitialize(count: 1)
        stream.deallocate()
    }
}
