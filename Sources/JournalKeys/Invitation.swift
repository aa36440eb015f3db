import JournalFormat

/// An invitation as the invited person receives it (docs/FORMAT.md §17.6, docs/PROTOCOL.md
/// "Invitations"): the secret of the invitation's key, and what a redemption must name. Its
/// code, 178 lowercase hex digits, is what follows `#invite=` in a board page's link:
///
///     secret (32) ‖ public key (32) ‖ board id (16) ‖ lamport (u64le) ‖ role (1)
///
/// `lamport` is the invitation statement's clock (a redemption orders after it), `role` what
/// it admits. The code is a secret: whoever holds it can redeem the invitation once.
public struct Invitation: Sendable {
    public let key: ReplicaKey
    public let board: UUIDBits
    public let lamport: UInt64
    public let role: MembershipStatement.Role

    public static let codeBytes = 32 + 32 + 16 + 8 + 1

    public init(key: ReplicaKey, board: UUIDBits, lamport: UInt64, role: MembershipStatement.Role) {
        self.key = key
        self.board = board
        self.lamport = lamport
        self.role = role
    }

    /// Reads a code; nil when it is not one (wrong length, not hex, a public key that is not
    /// the secret's, an unknown role).
    public init?(code: some StringProtocol) {
        guard code.utf8.count == 2 * Self.codeBytes, code.utf8.allSatisfy(Hex.isLowercaseHexDigit),
              let bytes = Hex.decode(code),
              let key = try? ReplicaKey(rawRepresentation: Array(bytes[0..<32])), key.publicKey == Array(bytes[32..<64]),
              let role = MembershipStatement.Role(rawValue: bytes[88]), role != .none
        else { return nil }
        var lamport: UInt64 = 0
        for index in 0..<8 { lamport |= UInt64(bytes[80 + index]) << (8 * UInt64(index)) }
        self.init(key: key, board: UUIDBits(bytes: Array(bytes[64..<80])), lamport: lamport, role: role)
    }

    public var code: String {
        var bytes = key.rawRepresentation + key.publicKey + board.bytes
        for index in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: lamport >> (8 * UInt64(index)))) }
        bytes.append(role.rawValue)
        return Hex.bytes(bytes)
    }

    /// The membership replica the redemption is stored under, as its seq 1.
    public var replica: ReplicaID { MembershipSigning.membershipReplica(forPublicKey: key.publicKey, board: board) }

    /// The redemption that makes `member` a member: a `grant` of the invitation's role, signed
    /// by the invitation's key as seq 1 of its membership replica, ordered after the invitation.
    public func redemption(for member: [UInt8], wallTime: Int64) -> MembershipStatement {
        MembershipSigning.sign(MembershipStatement(
            lamport: lamport + 1, wallTime: wallTime, action: .grant, role: role, board: board, subject: member,
            signer: key.publicKey), seq: 1, key: key)
    }
}
