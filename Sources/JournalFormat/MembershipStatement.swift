/// One signed statement of a board's membership log (docs/FORMAT.md §17, invariant 16): who
/// may view, draw or administer the board. Statements are stored as the events of version 4
/// segments in the folder of their signer's *membership replica*, so every transport that moves
/// segments moves them, and they sit in the journal's one total order (lamport, wall, replica,
/// seq). This type is the statement's bytes only; signing and checking is JournalKeys'
/// `MembershipSigning`, and folding the log into members is JournalStorage's `Membership`.
public struct MembershipStatement: Equatable, Sendable {
    public enum Action: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        /// The board's genesis: the signer becomes its first admin; `board` is the new board's id.
        case create = 1
        /// `subject` gets `role` (a new member, or a role change) and `label`.
        case grant = 2
        /// `subject` is no member any more, for good: its events after `drawCut` never count.
        case revoke = 3
        /// The signer hands its role and label over to the new key `subject` and stops counting
        /// after `drawCut`.
        case rotate = 4
        /// An invitation (version 5 segments only): the key `subject`, whose secret an admin
        /// hands to someone in a link, may make one other key a member with `role` and `label`
        /// (by a `grant` it signs) until `drawCut`, which an invitation holds its expiry in
        /// (milliseconds since 1970). The invitation key itself is no member.
        case invite = 5

        public var description: String {
            switch self {
            case .create: return "create"
            case .grant: return "grant"
            case .revoke: return "revoke"
            case .rotate: return "rotate"
            case .invite: return "invite"
            }
        }

        public init?(name: some StringProtocol) {
            guard let action = Self.allCases.first(where: { $0.description == name }) else { return nil }
            self = action
        }
    }

    /// What a member may do; each role includes the ones below it.
    public enum Role: UInt8, Sendable, CaseIterable, Comparable, CustomStringConvertible {
        /// Not a member (the role of revoke and rotate statements).
        case none = 0
        case view = 1
        /// Its events count.
        case draw = 2
        /// A relay node: draws, and may seal (as host) the segments of members it stored.
        case relay = 3
        /// Grants, revokes, and everything else.
        case admin = 4

        public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String {
            switch self {
            case .none: return "none"
            case .view: return "view"
            case .draw: return "draw"
            case .relay: return "relay"
            case .admin: return "admin"
            }
        }

        public init?(name: some StringProtocol) {
            guard let role = Self.allCases.first(where: { $0.description == name && $0 != .none }) else { return nil }
            self = role
        }
    }

    public var lamport: UInt64
    public var wallTime: Int64
    public var action: Action
    public var role: Role
    /// The board this statement belongs to: the id its `create` chose.
    public var board: UUIDBits
    /// The key the statement is about (for `create`, the signer; for `rotate`, the new key).
    public var subject: [UInt8]
    /// The highest seq of the subject's drawing replica the signer held when it signed: a
    /// revocation or demotion ends the subject's counting events there, whatever clocks its
    /// later events carry; a grant after a demotion starts after it.
    public var drawCut: UInt64
    /// The highest seq of the subject's membership replica the signer held: a revoked admin's
    /// statements after it never count.
    public var memberCut: UInt64
    /// A person's name or a note, UTF-8, at most `FormatV4.maxLabelBytes` bytes.
    public var label: String
    public var signer: [UInt8]
    public var signature: [UInt8]

    public init(
        lamport: UInt64, wallTime: Int64, action: Action, role: Role, board: UUIDBits, subject: [UInt8],
        drawCut: UInt64 = 0, memberCut: UInt64 = 0, label: String = "", signer: [UInt8], signature: [UInt8] = []
    ) {
        self.lamport = lamport
        self.wallTime = wallTime
        self.action = action
        self.role = role
        self.board = board
        self.subject = subject
        self.drawCut = drawCut
        self.memberCut = memberCut
        self.label = label
        self.signer = signer
        self.signature = signature
    }

    /// Every byte of the statement but its signature: what the signer signs (after the
    /// statement's id, `MembershipSigning`).
    public var unsignedBytes: [UInt8] {
        var out = ByteWriter(capacity: 160)
        out.appendLE(lamport)
        out.appendLE(UInt64(bitPattern: wallTime))
        out.append(action.rawValue)
        out.append(role.rawValue)
        out.append(contentsOf: board.bytes)
        out.append(contentsOf: subject)
        out.appendLE(drawCut)
        out.appendLE(memberCut)
        let label = Array(label.utf8)
        out.append(UInt8(truncatingIfNeeded: label.count))
        out.append(contentsOf: label)
        out.append(contentsOf: signer)
        return out.bytes
    }

    public var encoded: [UInt8] { unsignedBytes + signature }

    /// An invitation's expiry, milliseconds since 1970 (its `drawCut` field).
    public var invitationExpiry: Int64 { Int64(clamping: drawCut) }

    /// The lowest format version whose segments may hold this statement.
    public var formatVersion: UInt16 { action == .invite ? FormatV5.version : FormatV4.version }

    /// Why a statement cannot be written; nil when it can.
    public var writeProblem: String? {
        if !(1..<FormatV1.maxLamport).contains(lamport) { return "lamport clock \(lamport) is out of range" }
        if label.utf8.count > FormatV4.maxLabelBytes { return "a label is at most \(FormatV4.maxLabelBytes) bytes of UTF-8" }
        if label.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return "a label holds no control characters" }
        if subject.count != 32 || signer.count != 32 { return "keys are 32 bytes" }
        return nil
    }
}

/// What format version 4 adds (docs/FORMAT.md §17): segments whose blocks hold membership
/// statements instead of drawing events. Header, frames, names and checks are version 1's.
public enum FormatV4 {
    public static let version: UInt16 = 4
    public static let maxLabelBytes = 64
    /// The fixed bytes of a statement around its label.
    public static let statementFixedSize = 8 + 8 + 1 + 1 + 16 + 32 + 8 + 8 + 1 + 32 + 64

    /// A block body of statements (one per seq from the frame's `firstSeq`).
    public static func encodeBody(_ statements: some Collection<MembershipStatement>) -> [UInt8] {
        var out: [UInt8] = []
        for statement in statements { out += statement.encoded }
        return out
    }

    /// Decodes and checks a body of `count` statements of a segment of `version` (4 or 5:
    /// invitations only in 5). Signatures are not checked here.
    public static func decodeBody(_ raw: UnsafeRawBufferPointer, count: Int, version: UInt16 = FormatV4.version) throws(DecodeError) -> [MembershipStatement] {
        var reader = ByteReader(raw)
        var statements: [MembershipStatement] = []
        for _ in 0..<count {
            let start = reader.offset
            guard reader.remaining >= statementFixedSize else { throw .truncated(offset: reader.offset, needed: "a membership statement") }
            let lamport = try reader.readLE(UInt64.self)
            guard (1..<FormatV1.maxLamport).contains(lamport) else { throw .malformed(offset: start, reason: "lamport clock out of range") }
            let wall = Int64(bitPattern: try reader.readLE(UInt64.self))
            let actionByte = try reader.readByte()
            guard let action = MembershipStatement.Action(rawValue: actionByte), action != .invite || version >= FormatV5.version else {
                throw .malformed(offset: start + 16, reason: "unknown membership action \(actionByte)")
            }
            let roleByte = try reader.readByte()
            guard let role = MembershipStatement.Role(rawValue: roleByte) else {
                throw .malformed(offset: start + 17, reason: "unknown membership role \(roleByte)")
            }
            let board = UUIDBits(bytes: try reader.readBytes(16))
            let subject = Array(try reader.readBytes(32))
            let drawCut = try reader.readLE(UInt64.self)
            let memberCut = try reader.readLE(UInt64.self)
            let labelLength = Int(try reader.readByte())
            guard labelLength <= maxLabelBytes else {
                throw .malformed(offset: reader.offset - 1, reason: "label of \(labelLength) bytes exceeds \(maxLabelBytes)")
            }
            let labelBytes = Array(try reader.readBytes(labelLength))
            guard let label = String(validating: labelBytes, as: UTF8.self) else {
                throw .malformed(offset: reader.offset - labelLength, reason: "label is not UTF-8")
            }
            let signer = Array(try reader.readBytes(32))
            let signature = Array(try reader.readBytes(64))
            statements.append(MembershipStatement(
                lamport: lamport, wallTime: wall, action: action, role: role, board: board, subject: subject,
                drawCut: drawCut, memberCut: memberCut, label: label, signer: signer, signature: signature))
        }
        guard reader.isAtEnd else { throw .malformed(offset: reader.offset, reason: "\(reader.remaining) bytes after the last statement") }
        return statements
    }
}

/// What format version 5 adds (docs/FORMAT.md §17.6): membership segments that may hold
/// invitations. Everything else is version 4's.
public enum FormatV5 {
    public static let version: UInt16 = 5
}

extension SegmentEncoder {
    /// A whole membership segment (version 5 if it holds an invitation, else 4): the header and
    /// one block of `statements`, numbered from `firstSeq`. A membership log is small, so one
    /// block always suffices.
    public static func membershipSegment(replica: ReplicaID, firstSeq: UInt64, statements: [MembershipStatement]) -> [UInt8] {
        precondition(!statements.isEmpty, "a block holds at least one statement")
        return SegmentHeader(replica: replica, version: statements.map(\.formatVersion).max()!).encoded()
            + frame(body: FormatV4.encodeBody(statements), eventCount: statements.count, firstSeq: firstSeq,
                    maxLamport: statements.map(\.lamport).max()!)
    }
}
