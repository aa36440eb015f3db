import Crypto
import JournalFormat

/// Signing and checking membership statements (docs/FORMAT.md §17), and the replica a key's
/// statements are stored under.
///
/// A statement is signed with its id (replica and seq) and every byte but the signature, so a
/// copy moved to another seq, board or clock does not verify: a replayed statement is the same
/// event by id, never a new one.
public enum MembershipSigning {
    static let replicaLabel = "StrokeJournal member key v1\0"
    static let messageLabel = "StrokeJournal membership v1\0"

    /// The replica whose folder holds `publicKey`'s statements about `board`: not the replica
    /// the key draws as (`ReplicaKey.replica(forPublicKey:)`), and one per board, so that one
    /// key administering two boards numbers each board's statements on its own (two boards'
    /// statements never share an id).
    public static func membershipReplica(forPublicKey publicKey: [UInt8], board: UUIDBits) -> ReplicaID {
        let digest = Array(SHA256.hash(data: Array(replicaLabel.utf8) + board.bytes + publicKey))
        return ReplicaID(UUIDBits(bytes: Array(digest[0..<16])))
    }

    static let relayBoardLabel = "StrokeJournal relay board v1\0"

    /// The id of the board named `name` that a relay holding `founder` creates
    /// (`journal serve` without `--open`): the same on every node of a cluster that holds the
    /// same key, so that two nodes creating one board at once write one genesis, not rivals.
    public static func relayBoardID(founder: [UInt8], name: String) -> UUIDBits {
        let digest = Array(SHA256.hash(data: Array(relayBoardLabel.utf8) + founder + Array(name.utf8)))
        return UUIDBits(bytes: Array(digest[0..<16]))
    }

    static func message(_ statement: MembershipStatement, replica: ReplicaID, seq: UInt64) -> [UInt8] {
        var seqBytes: [UInt8] = []
        for index in 0..<8 { seqBytes.append(UInt8(truncatingIfNeeded: seq >> (8 * UInt64(index)))) }
        return Array(messageLabel.utf8) + replica.bits.bytes + seqBytes + statement.unsignedBytes
    }

    /// `statement` signed by `key` as the event `seq` of the key's membership replica.
    public static func sign(_ statement: MembershipStatement, seq: UInt64, key: ReplicaKey) -> MembershipStatement {
        var signed = statement
        signed.signer = key.publicKey
        signed.signature = key.signature(for: message(signed, replica: membershipReplica(forPublicKey: key.publicKey, board: signed.board), seq: seq))
        return signed
    }

    /// Whether `statement`, found as event `seq` of `replica`, is its signer's: the replica is
    /// the signer's membership replica for the statement's board and the signature verifies.
    public static func verify(_ statement: MembershipStatement, replica: ReplicaID, seq: UInt64) -> Bool {
        membershipReplica(forPublicKey: statement.signer, board: statement.board) == replica
            && ReplicaKey.isValid(signature: statement.signature, of: message(statement, replica: replica, seq: seq),
                                  publicKey: statement.signer)
    }
}
