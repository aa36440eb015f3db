/// Why bytes could not be decoded. Offsets are relative to the buffer being decoded;
/// the storage layer adds the file and the block's file offset.
public enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(offset: Int, needed: String)
    case malformed(offset: Int, reason: String)

    public var description: String {
        switch self {
        case .truncated(let offset, let needed): return "ends early at byte \(offset) (expected \(needed))"
        case .malformed(let offset, let reason): return "\(reason) at byte \(offset)"
        }
    }
}

/// Appends little-endian integers and LEB128 varints to a growing byte array.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    @inline(__always)
    public mutating func append(_ byte: UInt8) { bytes.append(byte) }

    public mutating func append(contentsOf other: [UInt8]) { bytes.append(contentsOf: other) }

    public mutating func append(contentsOf raw: UnsafeRawBufferPointer) { bytes.append(contentsOf: raw) }

    @inline(__always)
    public mutating func appendVarint(_ value: UInt64) {
        var remaining = value
        while remaining >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: remaining) | 0x80)
            remaining >>= 7
        }
        bytes.append(UInt8(remaining))
    }

    /// ZigZag: small magnitudes of either sign become small varints.
    @inline(__always)
    public mutating func appendZigZag(_ value: Int64) {
        appendVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func appendLE<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func overwriteLE<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for (index, byte) in raw.enumerated() { bytes[offset + index] = byte }
        }
    }
}

/// Reads what `ByteWriter` wrote; every read is bounds-checked and throws, never traps.
public struct ByteReader {
    public let buffer: UnsafeRawBufferPointer
    public private(set) var offset: Int

    public init(_ buffer: UnsafeRawBufferPointer, offset: Int = 0) {
        self.buffer = buffer
        self.offset = offset
    }

    public var remaining: Int { buffer.count - offset }
    public var isAtEnd: Bool { offset >= buffer.count }

    @inline(__always)
    public mutating func readByte() throws(DecodeError) -> UInt8 {
        guard offset < buffer.count else { throw .truncated(offset: offset, needed: "1 byte") }
        let byte = buffer[offset]
        offset += 1
        return byte
    }

    @inline(__always)
    public mutating func readVarint() throws(DecodeError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        let start = offset
        while true {
            guard offset < buffer.count else { throw .truncated(offset: offset, needed: "varint") }
            let byte = buffer[offset]
            offset += 1
            if shift == 63 && byte > 1 { throw .malformed(offset: start, reason: "varint overflows 64 bits") }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
            if shift > 63 { throw .malformed(offset: start, reason: "varint longer than 10 bytes") }
        }
    }

    /// Moves past `count` bytes a caller has read through `buffer` itself.
    public mutating func skip(_ count: Int) throws(DecodeError) {
        guard count >= 0, count <= remaining else { throw .truncated(offset: offset, needed: "\(count) bytes") }
        offset += count
    }

    /// `readVarint` with the one- and two-byte varints (most of a column's) read without its
    /// loop; the same values, checks and errors.
    @inline(__always)
    public mutating func readShortVarint() throws(DecodeError) -> UInt64 {
        if offset + 1 < buffer.count {
            let first = buffer[offset]
            if first < 0x80 {
                offset += 1
                return UInt64(first)
            }
            let second = buffer[offset + 1]
            if second < 0x80 {
                offset += 2
                return UInt64(first & 0x7F) | UInt64(second) << 7
            }
        }
        return try readVarint()
    }

    /// `readVarint` into each entry of `values`.
    public mutating func readVarints(into values: UnsafeMutableBufferPointer<UInt64>) throws(DecodeError) {
        for index in values.indices { values[index] = try readShortVarint() }
    }

    @inline(__always)
    public mutating func readZigZag() throws(DecodeError) -> Int64 {
        let raw = try readVarint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    public mutating func readLE<T: FixedWidthInteger>(_ type: T.Type) throws(DecodeError) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw .truncated(offset: offset, needed: "\(size)-byte integer") }
        var value: T = 0
        for index in 0..<size { value |= T(buffer[offset + index]) << (8 * index) }
        offset += size
        return value
    }

    public mutating func readBytes(_ count: Int) throws(DecodeError) -> UnsafeRawBufferPointer {
        guard count >= 0, remaining >= count else { throw .truncated(offset: offset, needed: "\(count) bytes") }
        let slice = UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
        offset += count
        return slice
    }

    /// A count that must fit in what is left, each item taking at least `minimumItemSize` bytes:
    /// stops a crafted count from making the decoder allocate without bound.
    public mutating func readCount(minimumItemSize: Int, what: String) throws(DecodeError) -> Int {
        let start = offset
        let value = try readVarint()
        guard value <= UInt64(remaining / max(minimumItemSize, 1)) else {
            throw .malformed(offset: start, reason: "\(what) count \(value) exceeds the bytes left")
        }
        return Int(value)
    }
}
