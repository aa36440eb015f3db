import JournalFormat
import JournalKeys
import JournalPlatform
import JournalStorage
import JournalWire

/// Membership by default (invariant 16): the boards a relay that needs tokens creates are
/// founded by the relay's host key, so what counts on them is decided by their own signed
/// files, never by a node's folders.
///
/// The host key writes as little as it can, because every node of a cluster holds it: two
/// nodes signing with one key at once give two statements one seq (an equivocation: the fold
/// keeps one, FORMAT.md §17.2). So it writes the genesis, the same bytes on every node
/// (`MembershipSigning.relayBoardID`, clock 1, wall time 0), and one grant per node: the
/// node's own journal key becomes an admin. Everything else a node signs with its own key,
/// which no other node holds:
///
/// * its own key draws (text-mode clients write as it);
/// * a native client's key that came with a draw token this relay minted is granted `draw`
///   under the label `token <id>`, so history tells one token's strokes from another's.
///
/// Two nodes first opening one board at once, before either published, can still give their
/// own grants one seq of the host key's; the node whose grant lost grants its key again, and
/// re-signs the grants it made that lost with it (`heal`). A late grant admits the key's
/// earlier events too (FORMAT.md §17.3, `setRole`).
struct BoardFounding: Sendable {
    let founder: ReplicaKey

    static let founderLabel = "relay"

    /// Before board `name` opens here: a journal nothing was written to yet gets its genesis;
    /// then `heal`. A board someone else founded, or one created open before (a journal with
    /// files and no membership), is left as it is.
    func prepare(_ directory: JournalDirectory, name: BoardName) throws(MembershipError) {
        if directory.boardPin() == nil, Self.nothingWritten(directory) {
            try MembershipEditor(journal: directory, key: founder).create(
                label: Self.founderLabel, board: MembershipSigning.relayBoardID(founder: founder.publicKey, name: name.text), wallTime: 0)
        }
        // Before the board's writer opens: read here (the writer then refuses a key that is
        // there and cannot be read).
        try heal(directory, own: directory.replicaKey())
    }

    /// Whether this node has something to write on a board whose membership is `membership`:
    /// its own key unnamed on a board the founder administers, or grants of its own key that
    /// did not count.
    func needsHealing(_ membership: Membership, ownKey: [UInt8]) -> Bool {
        guard isActiveAdmin(founder.publicKey, in: membership) else { return false }
        return membership.member(ownKey) == nil
    }

    /// Makes this node's own key an admin if the founder administers the board and the key was
    /// never named (a key an admin revoked stays revoked); then grants again each key this
    /// node granted that the membership does not name (a grant made while this node's own
    /// grant had lost an equivocation, which counts nowhere). Whether it wrote anything.
    @discardableResult
    func heal(_ directory: JournalDirectory, own: ReplicaKey?) throws(MembershipError) -> Bool {
        guard let own else { return false }
        let found = MembershipLog.found(replicasPath: directory.replicasPath)
        var membership = Membership.fold(found, pin: directory.boardPin())
        var wrote = false
        if isActiveAdmin(founder.publicKey, in: membership), membership.member(own.publicKey) == nil {
            try MembershipEditor(journal: directory, key: founder).grant(
                own.publicKey, role: .admin, label: "relay node " + Hex.bytes(Array(own.publicKey.prefix(4))))
            membership = Self.membership(directory)
            wrote = true
        }
        guard isActiveAdmin(own.publicKey, in: membership) else { return wrote }
        var regranted: Set<[UInt8]> = []
        for statement in found.map(\.statement) where statement.signer == own.publicKey && statement.action == .grant
            && membership.member(statement.subject) == nil && !regranted.contains(statement.subject) {
            try MembershipEditor(journal: directory, key: own).grant(statement.subject, role: statement.role, label: statement.label)
            regranted.insert(statement.subject)
            wrote = true
        }
        return wrote
    }

    /// Grants `key` `draw` as `label`, signed by this node's own key, if that key administers
    /// the board, `key` was never named, and the board names fewer than `limit` keys (a
    /// token's holder could otherwise make keys without end, each a statement every reader
    /// folds). The refusal, or nil.
    func admit(_ key: [UInt8], label: String, into directory: JournalDirectory, own: ReplicaKey?, limit: Int) -> Refusal? {
        guard let own else { return nil }
        let membership = Self.membership(directory)
        guard isActiveAdmin(own.publicKey, in: membership), membership.member(key) == nil else { return nil }
        guard membership.members.count < limit else {
            return Refusal(.nativeLimit, "board has \(membership.members.count) keys in its membership, the most this relay admits by token (--max-native-replicas); an admin grants keys: `journal members grant`")
        }
        do throws(MembershipError) {
            try MembershipEditor(journal: directory, key: own).grant(key, role: .draw, label: label)
        } catch {
            return Refusal(.unavailable, "the key could not be admitted: \(error)")
        }
        return nil
    }

    static let tokenLabelPrefix = "token "

    /// The active keys this board admitted by a token now in `revoked` (their label names it).
    func keysOfRevokedTokens(_ revoked: Set<String>, in membership: Membership) -> [[UInt8]] {
        guard !revoked.isEmpty else { return [] }
        return membership.members.values.filter { member in
            member.isActive && member.label.hasPrefix(Self.tokenLabelPrefix)
                && revoked.contains(String(member.label.dropFirst(Self.tokenLabelPrefix.count)))
        }.map(\.key)
    }

    /// Revokes, signed by this node's own key, the keys admitted by a token in `revoked`: the
    /// revocation travels with the board, so the token's keys stop drawing on every node, not
    /// only on those whose revocation list names it. Whether it wrote anything.
    @discardableResult
    func revokeKeysOfRevokedTokens(_ revoked: Set<String>, in directory: JournalDirectory, own: ReplicaKey?) -> Bool {
        guard let own else { return false }
        let membership = Self.membership(directory)
        guard isActiveAdmin(own.publicKey, in: membership) else { return false }
        var wrote = false
        for key in keysOfRevokedTokens(revoked, in: membership) {
            if (try? MembershipEditor(journal: directory, key: own).revoke(key)) != nil { wrote = true }
        }
        return wrote
    }

    func isActiveAdmin(_ key: [UInt8], in membership: Membership) -> Bool {
        guard !membership.isOpen, let member = membership.member(key) else { return false }
        return member.isActive && member.role == .admin
    }

    /// The board's membership from its statements alone (drawing segments are not read).
    static func membership(_ directory: JournalDirectory) -> Membership {
        Membership.fold(MembershipLog.found(replicasPath: directory.replicasPath), pin: directory.boardPin())
    }

    /// No sealed file, no open segment, no hosted replica: a board just made, or a store's
    /// empty one.
    static func nothingWritten(_ directory: JournalDirectory) -> Bool {
        guard JournalDirectory.listSealed(replicasPath: directory.replicasPath).sealed.isEmpty,
              FileSystem.linkStatus(directory.openSegmentPath) == nil else { return false }
        guard let hosted = try? FileSystem.list(directory.hostedPath) else { return FileSystem.linkStatus(directory.hostedPath) == nil }
        return hosted.isEmpty
    }
}
