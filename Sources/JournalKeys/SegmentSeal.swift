import Crypto
import JournalFormat

/// Signing and checking the seal record of a version 3 sealed segment (docs/FORMAT.md §15).
///
/// The key signs a fixed label, the signer's role and the SHA-256 of every byte before the
/// record (header and blocks), so the signature covers the replica, every seq and every
/// event, and nothing can be cut, added or reordered without breaking it.
public enum SegmentSeal {
    static let label = "StrokeJournal sealed segment v1\0"

    /// `contents` (a version 3 header and its blocks) followed by its seal record.
    public static func seal(_ contents: [UInt8], role: SealRecord.Role, key: ReplicaKey) -> [UInt8] {
        let record = SealRecord(role: role, publicKey: key.publicKey,
                                signature: key.signature(for: message(contents[...], role: role)))
        return contents + record.encoded()
    }

    /// Whether `record`'s signature verifies over `contents` (the bytes before the record),
    /// and its key may sign for `replica` in its role: as `.replica` only a key that names
    /// the replica. Whether the key is trusted is the caller's question.
    public static func verify(_ record: SealRecord, contents: ArraySlice<UInt8>, replica: ReplicaID) -> SealCheck {
        if record.role == .replica, ReplicaKey.replica(forPublicKey: record.publicKey) != replica {
            return .keyNamesAnotherReplica(ReplicaKey.replica(forPublicKey: record.publicKey))
        }
        guard ReplicaKey.isValid(signature: record.signature, of: message(contents, role: record.role),
                                 publicKey: record.publicKey) else { return .badSignature }
        return .valid
    }

    public enum SealCheck: Equatable, Sendable {
        case valid
        case badSignature
        case keyNamesAnotherReplica(ReplicaID)
    }

    static func message(_ contents: ArraySlice<UInt8>, role: SealRecord.Role) -> [UInt8] {
        Array(label.utf8) + [role.rawValue] + Array(SHA256.hash(data: contents))
    }
}
