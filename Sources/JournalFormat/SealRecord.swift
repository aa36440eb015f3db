import JournalCompression

/// The record that ends a version 3 sealed segment (docs/FORMAT.md §15): who signed the bytes
/// before it, in which role, and the signature. This type only reads and writes the record's
/// bytes; making and checking the signature is `SegmentSeal`'s (JournalKeys).
public struct SealRecord: Equatable, Sendable {
    /// Why the key may sign this replica's segment.
    public enum Role: UInt8, Sendable, CaseIterable {
        /// The key names the segment's replica (`ReplicaKey.replica(forPublicKey:)`): the
        /// replica's own writer sealed it.
        case replica = 1
        /// A relay's journal key: the relay stored a native client's events after checking
        /// each frame against that client's key, and sealed them.
        case host = 2
    }

    public var role: Role
    public var publicKey: [UInt8]
    public var signature: [UInt8]

    public init(role: Role, publicKey: [UInt8], signature: [UInt8]) {
        self.role = role
        self.publicKey = publicKey
        self.signature = signature
    }

    public func encoded() -> [UInt8] {
        var out = ByteWriter(capacity: FormatV3.sealRecordSize)
        out.append(contentsOf: FormatV3.sealMagic)
        out.append(role.rawValue)
        out.append(contentsOf: [0, 0, 0])
        out.append(contentsOf: publicKey)
        out.append(contentsOf: signature)
        out.appendLE(CRC32.checksum(out.bytes))
        return out.bytes
    }

    /// Whether a seal record starts at `offset` (its magic; not whether it is valid).
    public static func startsAt(_ bytes: UnsafeRawBufferPointer, offset: Int) -> Bool {
        offset + 4 <= bytes.count && Array(bytes[offset..<offset + 4]) == FormatV3.sealMagic
    }

    /// Reads the record that must fill `bytes` exactly.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SealRecordError) -> SealRecord {
        guard bytes.count == FormatV3.sealRecordSize else { throw .wrongLength(bytes.count) }
        guard Array(bytes[0..<4]) == FormatV3.sealMagic else { throw .badMagic }
        let stored = littleEndian(bytes, at: FormatV3.sealRecordSize - 4, as: UInt32.self)
        guard stored == CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<(FormatV3.sealRecordSize - 4)])) else {
            throw .checksum
        }
        guard let role = Role(rawValue: bytes[4]) else { throw .unknownRole(bytes[4]) }
        guard bytes[5] == 0, bytes[6] == 0, bytes[7] == 0 else { throw .reservedNotZero }
        return SealRecord(role: role, publicKey: Array(bytes[8..<40]), signature: Array(bytes[40..<104]))
    }
}

public enum SealRecordError: Error, Equatable, Sendable, CustomStringConvertible {
    case wrongLength(Int)
    case badMagic
    case checksum
    case unknownRole(UInt8)
    case reservedNotZero
    case missing
    case notAtEnd

    public var description: String {
        switch self {
        case .wrongLength(let count): return "seal record of \(count) bytes, expected \(FormatV3.sealRecordSize)"
        case .badMagic: return "no seal record starts here (bad seal magic)"
        case .checksum: return "seal record checksum mismatch"
        case .unknownRole(let role): return "seal record names unknown signer role \(role)"
        case .reservedNotZero: return "seal record's reserved bytes are not zero"
        case .missing: return "a signed segment (version 3 or 7) ends without its seal record"
        case .notAtEnd: return "a seal record that is not the last \(FormatV3.sealRecordSize) bytes of the file"
        }
    }
}
