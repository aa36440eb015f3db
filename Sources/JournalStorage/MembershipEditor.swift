import JournalFormat
import JournalKeys
import JournalPlatform

/// Why a membership change was refused before anything was written.
public enum MembershipError: Error, Equatable, Sendable, CustomStringConvertible {
    case noMembership(path: String)
    case alreadyCreated(path: String, board: String)
    case notAdmin(key: String)
    case notAMember(key: String)
    case neverAgain(key: String)
    case lastAdmin
    case keyInUse(key: String)
    case invitation(String)
    case locked(path: String)
    case badKeyFile(path: String, reason: String)
    case io(IOError)

    public var description: String {
        switch self {
        case .noMembership(let path):
            return "\(path) has no membership yet: `journal members init -C \(path)` makes its key the board's first admin"
        case .alreadyCreated(let path, let board):
            return "\(path) already has membership (board \(board)): change it with `journal members grant`, `revoke` or `rotate`"
        case .notAdmin(let key):
            return "key \(key) is not an active admin of this board, so it cannot change who is a member (`journal members list` shows the admins)"
        case .notAMember(let key):
            return "key \(key) is not an active member of this board (`journal members list`)"
        case .neverAgain(let key):
            return "key \(key) was revoked or rotated: it can never be a member again (the holder makes a new key, and an admin grants that one)"
        case .lastAdmin:
            return "that would leave the board without an admin: grant another key admin first (only the last admin may revoke itself)"
        case .keyInUse(let key):
            return "key \(key) is already named in this board's membership: rotate to a new key"
        case .invitation(let reason):
            return reason
        case .locked(let path):
            return "\(path) is being synced, merged or compacted by another process: try again when it is done"
        case .badKeyFile(let path, let reason): return "\(path): \(reason)"
        case .io(let error): return error.description
        }
    }
}

/// Writes membership statements for one signing key into a journal, checking first what the
/// fold would refuse, so that a person gets a reason instead of a statement that never counts.
/// Statements are sealed at once (`MembershipLog`), so the next sync carries them everywhere.
public struct MembershipEditor {
    public let journal: JournalDirectory
    public let key: ReplicaKey

    public init(journal: JournalDirectory, key: ReplicaKey) {
        self.journal = journal
        self.key = key
    }

    /// The board's genesis: `key` becomes its first admin, and the journal pins it.
    /// `board` and `wallTime` (default: a random id, now) make a genesis that two writers
    /// holding one key write byte for byte alike in an empty journal (a relay cluster's nodes
    /// creating one board: `MembershipSigning.relayBoardID`).
    @discardableResult
    public func create(label: String, board: UUIDBits? = nil, wallTime: Int64? = nil) throws(MembershipError) -> Membership.Found {
        try withState { set, membership, lamport throws(MembershipError) in
            if let board = membership.board { throw .alreadyCreated(path: journal.root, board: board.compactHex) }
            let statement = MembershipStatement(
                lamport: lamport, wallTime: wallTime ?? ProcessInfoLite.wallClockMilliseconds(), action: .create, role: .admin,
                board: board ?? UUIDBits.random(), subject: key.publicKey, label: label, signer: key.publicKey)
            let found = try write(statement)
            do throws(IOError) { try journal.saveBoardPin(Membership.Pin(board: statement.board, founder: key.publicKey)) } catch { throw .io(error) }
            return found
        }
    }

    /// Gives `subject` `role` and `label` (a new member, or a changed role or label).
    @discardableResult
    public func grant(_ subject: [UInt8], role: MembershipStatement.Role, label: String) throws(MembershipError) -> Membership.Found {
        try withState { set, membership, lamport throws(MembershipError) in
            let board = try requireAdmin(membership)
            if let existing = membership.member(subject) {
                guard existing.isActive else { throw .neverAgain(key: Hex.bytes(subject)) }
                guard existing.invitation == nil else {
                    throw .invitation("key \(Hex.bytes(subject)) is an invitation's: it becomes a member's only by its redemption; revoke it to withdraw it, or grant the key that redeemed it")
                }
                if existing.role == .admin, role != .admin, membership.activeAdmins.count == 1 { throw .lastAdmin }
            }
            return try write(MembershipStatement(
                lamport: lamport, wallTime: ProcessInfoLite.wallClockMilliseconds(), action: .grant, role: role, board: board,
                subject: subject, drawCut: Self.held(set, replica: ReplicaKey.replica(forPublicKey: subject)), label: label,
                signer: key.publicKey))
        }
    }

    /// Ends `subject`'s membership for good, after the events of it this journal holds.
    @discardableResult
    public func revoke(_ subject: [UInt8]) throws(MembershipError) -> Membership.Found {
        try withState { set, membership, lamport throws(MembershipError) in
            let board = try requireAdmin(membership)
            guard let existing = membership.member(subject), existing.isActive else { throw .notAMember(key: Hex.bytes(subject)) }
            if existing.role == .admin, membership.activeAdmins.count == 1, subject != key.publicKey { throw .lastAdmin }
            let memberReplica = MembershipSigning.membershipReplica(forPublicKey: subject, board: board)
            return try write(MembershipStatement(
                lamport: lamport, wallTime: ProcessInfoLite.wallClockMilliseconds(), action: .revoke, role: .none, board: board,
                subject: subject, drawCut: Self.held(set, replica: ReplicaKey.replica(forPublicKey: subject)),
                memberCut: set.statements.filter { $0.id.replica == memberReplica }.map(\.id.seq).max() ?? 0,
                signer: key.publicKey))
        }
    }

    /// Hands this key's role and label to `newKey`; this key's events after those the journal
    /// holds stop counting.
    @discardableResult
    public func rotate(to newKey: [UInt8]) throws(MembershipError) -> Membership.Found {
        try withState { set, membership, lamport throws(MembershipError) in
            guard let board = membership.board else { throw .noMembership(path: journal.root) }
            guard let own = membership.member(key.publicKey), own.isActive else { throw .notAMember(key: Hex.bytes(key.publicKey)) }
            guard membership.member(newKey) == nil else { throw .keyInUse(key: Hex.bytes(newKey)) }
            return try write(MembershipStatement(
                lamport: lamport, wallTime: ProcessInfoLite.wallClockMilliseconds(), action: .rotate, role: .none, board: board,
                subject: newKey, drawCut: Self.held(set, replica: key.replica), signer: key.publicKey))
        }
    }

    /// A new invitation: a fresh key, which may make one other key a member with `role` and
    /// `label` until `expires` (milliseconds since 1970). Returns the statement and the
    /// invitation's key, whose secret goes to the invited person (`Invitation`), never into
    /// the journal.
    public func invite(role: MembershipStatement.Role, label: String, expires: Int64) throws(MembershipError) -> (found: Membership.Found, key: ReplicaKey) {
        let invitationKey = ReplicaKey()
        let found = try withState { _, membership, lamport throws(MembershipError) in
            let board = try requireAdmin(membership)
            return try write(MembershipStatement(
                lamport: lamport, wallTime: ProcessInfoLite.wallClockMilliseconds(), action: .invite, role: role, board: board,
                subject: invitationKey.publicKey, drawCut: UInt64(max(0, expires)), label: label, signer: key.publicKey))
        }
        return (found, invitationKey)
    }

    private func requireAdmin(_ membership: Membership) throws(MembershipError) -> UUIDBits {
        guard let board = membership.board else { throw .noMembership(path: journal.root) }
        guard let signer = membership.member(key.publicKey), signer.isActive, signer.role == .admin else {
            throw .notAdmin(key: Hex.bytes(key.publicKey))
        }
        return board
    }

    private func write(_ statement: MembershipStatement) throws(MembershipError) -> Membership.Found {
        if let problem = statement.writeProblem { throw .badKeyFile(path: journal.root, reason: problem) }
        do { return try MembershipLog.append(statement, key: key, replicasPath: journal.replicasPath) } catch {
            if case .io(let error) = error { throw .io(error) }
            throw .io(IOError("write", path: journal.replicasPath, code: 0, reason: error.description))
        }
    }

    /// Runs `body` under `local/sync.lock` (no other sync, merge or statement writer adds files
    /// meanwhile) with the journal as it is now and the next clock: above every event and
    /// statement the journal holds.
    private func withState<T>(
        _ body: (SegmentSet, Membership, UInt64) throws(MembershipError) -> T
    ) throws(MembershipError) -> T {
        let lock: SealedFilesLock?
        do { lock = try SealedFilesLock.acquire(journal, waitingUpTo: 30) } catch { throw .io(error) }
        guard let lock else { throw .locked(path: journal.root) }
        defer { lock.release() }
        let set = SegmentSet.load(journal)
        let membership = set.membership ?? Membership.fold(set.statements)
        let highest = max(set.members.map(\.scan.maxLamport).max() ?? 0, set.statements.map(\.statement.lamport).max() ?? 0)
        return try body(set, membership, highest + 1)
    }

    /// The last seq of `replica` this journal holds with every seq before it (0: none). A cut
    /// names it, not the highest seq held: a member that publishes a block at a far seq must
    /// not move its own revocation's cut out of reach.
    static func held(_ set: SegmentSet, replica: ReplicaID) -> UInt64 {
        var held = SeqRanges()
        for member in set.members where member.replica == replica {
            for block in member.scan.blocks { held.insert(block.seqRange) }
        }
        guard let first = held.ranges.first, first.lowerBound == 1 else { return 0 }
        return first.upperBound
    }
}

/// Key files outside a journal (an admin's key kept apart from the boards it administers):
/// the text of `local/replica.key`, mode 0600.
public enum KeyFile {
    public static func read(_ path: String) throws(MembershipError) -> ReplicaKey {
        let bytes: [UInt8]
        do { bytes = try FileSystem.readFile(path) } catch { throw .io(error) }
        let lines = String(decoding: bytes.prefix(256), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 2, lines[0] == JournalDirectory.keyFileHeader, let secret = Hex.decode(lines[1]), secret.count == 32,
              let key = try? ReplicaKey(rawRepresentation: secret) else {
            throw .badKeyFile(path: path, reason: "expected \"\(JournalDirectory.keyFileHeader)\" and 64 hex digits (a file `journal members keygen` wrote)")
        }
        return key
    }

    /// Writes a new key to `path` (never over an existing file), readable by its owner only.
    public static func create(_ path: String) throws(MembershipError) -> ReplicaKey {
        let key = ReplicaKey()
        let text = JournalDirectory.keyFileHeader + "\n" + Hex.bytes(key.rawRepresentation) + "\n"
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        do {
            try DirectoryHandle.open(folder.isEmpty ? "/" : folder).writeNewFileAtomically(name: name, bytes: Array(text.utf8), ownerOnly: true)
        } catch {
            throw .io(error)
        }
        return key
    }
}
