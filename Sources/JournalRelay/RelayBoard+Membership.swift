import JournalFormat
import JournalKeys
import JournalLive
import JournalPlatform
import JournalStorage
import JournalWire

/// Who may draw on a relay's board (invariant 16): keys admitted by token, invitations
/// redeemed, the node's own grant healed, and connections closed when their key may no longer
/// draw.
extension RelayBoard {
    /// A native client's key that came with a draw token, on a board this relay's key
    /// administers and that never named the key: granted `draw` as `token <id>`
    /// (`BoardFounding`), so the board's own files say who admitted it. The refusal, or nil
    /// (also when there is nothing to grant: the membership then decides).
    func admitByToken(_ key: [UInt8], grant: Grant) async -> Refusal? {
        guard let founding, let ownKey, let tokenID = grant.tokenID, grant.allows(.draw), let membership = board.membership,
              founding.isActiveAdmin(ownKey, in: membership), membership.member(key) == nil else { return nil }
        let (directory, own, limit) = (board.directory, board.identity.key, maxAdmitted)
        let refusal = await onReader { founding.admit(key, label: BoardFounding.tokenLabelPrefix + tokenID, into: directory, own: own, limit: limit) }
        _ = await board.refresh()
        return refusal
    }

    /// Revokes the keys this board admitted by a token now revoked (`BoardFounding`); the
    /// revocation then closes their connections here as it reaches every node.
    func revokeKeys(ofRevokedTokens revoked: Set<String>) {
        guard let founding, let ownKey, let membership = board.membership, founding.isActiveAdmin(ownKey, in: membership),
              !founding.keysOfRevokedTokens(revoked, in: membership).isEmpty else { return }
        writeMembership(unlessBusy: revokingTokenKeys) { [board] in founding.revokeKeysOfRevokedTokens(revoked, in: board.directory, own: board.identity.key) }
    }

    /// The node's own key granted again when the board's membership does not name it (its
    /// grant lost to another node's statement of the same seq), with the grants it made:
    /// `BoardFounding.heal`.
    func healOwnKey() {
        guard let founding, let ownKey, let membership = board.membership, founding.needsHealing(membership, ownKey: ownKey) else { return }
        writeMembership(unlessBusy: healingOwnKey) { [board] in (try? founding.heal(board.directory, own: board.identity.key)) == true }
    }

    /// Runs `write` on the reader thread, unless the one `busy` marks is still running (the
    /// next reload asks again), and reads the board again if it wrote a statement.
    private func writeMembership(unlessBusy busy: Locked<Bool>, _ write: @escaping @Sendable () -> Bool) {
        let start = busy.withLock { running -> Bool in
            defer { running = true }
            return !running
        }
        guard start else { return }
        reader.submit { [board] in
            let wrote = write()
            busy.withLock { $0 = false }
            if wrote { Task { _ = await board.refresh() } }
        }
    }

    // MARK: Membership (invariant 16)

    /// The board's membership when one decides who draws; nil when none does, learnt without
    /// copying the membership out (asked for every frame the relay takes).
    private var decidingMembership: Membership? {
        guard board.membershipDecides, let membership = board.membership, !membership.isOpen else { return nil }
        return membership
    }

    /// Why the board's membership does not let `key` do what `role` allows; nil when it does,
    /// or when the board has no membership (then tokens alone decide, `Grant`).
    func membershipRefusal(_ key: [UInt8], needs role: MembershipStatement.Role) -> Refusal? {
        guard let membership = decidingMembership else { return nil }
        let hex = Hex.bytes(key)
        guard let member = membership.member(key), member.isActive else {
            return Refusal(.notMember, "key \(hex) is not a member of board \(name.text), whose membership decides who draws (an admin grants it: `journal members grant \(hex) --role draw`)")
        }
        guard member.role >= role else {
            return Refusal(member.role == .view ? .viewOnly : .notMember,
                           "key \(hex) may only \(member.role) board \(name.text); an admin grants it \(role) (`journal members grant \(hex) --role \(role)`)")
        }
        return nil
    }

    /// Why text-mode events (stored as this board's own replica) would not count under the
    /// board's membership; nil when they would.
    var textModeRefusal: Refusal? {
        guard let membership = decidingMembership else { return nil }
        guard let ownKey else {
            return Refusal(.forbidden, "board \(name.text) has membership, and this relay's journal has no key to draw with: connect in native mode with a key of your own")
        }
        return membershipRefusal(ownKey, needs: .draw).map {
            Refusal(.forbidden, "text-mode events are stored as this relay's replica, and its " + $0.message + "; or connect in native mode with a key of your own")
        }
    }

    /// Why native clients' events stored here would not count under the board's membership:
    /// this relay seals them as their host, and only a relay (or admin) member's host seals
    /// count (docs/FORMAT.md §17.4). Nil when they would.
    var hostingRefusal: Refusal? {
        guard let membership = decidingMembership else { return nil }
        let sealingKey: ReplicaKey?
        do { sealingKey = try board.identity.hostKey() } catch {
            return Refusal(.unavailable, "board \(name.text): native clients' events cannot be stored here now: \(error)")
        }
        guard let hostKey = sealingKey?.publicKey else {
            return Refusal(.notMember, "board \(name.text) has membership, and this relay's journal has no key to seal native clients' events with")
        }
        guard membership.mayHost(hostKey) else {
            let hex = Hex.bytes(hostKey)
            return Refusal(.notMember, "this relay's key \(hex) is no relay member of board \(name.text), so what it stores for native clients would count nowhere (an admin grants it: `journal members grant \(hex) --role relay`)")
        }
        return nil
    }

    /// Stores an invitation's redemption that makes `key` a member (docs/PROTOCOL.md,
    /// "Invitations"), checked first as every reader will fold it, and against this relay's
    /// clock for the expiry; then reads it into the board. The reason it was refused, or nil
    /// once `key` is a member (also when this key redeemed the invitation before: a page that
    /// lost its connection sends the redemption again).
    func redeem(_ statement: MembershipStatement, for key: [UInt8]) async -> Refusal? {
        // An invitation whose file arrived a moment ago (the board folds new files as its
        // watcher or its next sync sees them): read the files before saying it is unknown.
        if board.membership?.member(statement.signer)?.invitation == nil { _ = await board.refresh() }
        guard let membership = board.membership, let boardID = membership.board else {
            return Refusal(.invitationRefused, "board \(name.text) has no membership, so it takes no invitation")
        }
        guard statement.action == .grant, statement.subject == key else {
            return Refusal(.badRequest, "a redemption is a grant to the hello's key, signed by the invitation's key")
        }
        guard statement.board == boardID else {
            return Refusal(.invitationRefused, "the invitation is for board id \(statement.board.compactHex); board \(name.text) is \(boardID.compactHex)")
        }
        let replica = MembershipSigning.membershipReplica(forPublicKey: statement.signer, board: boardID)
        guard MembershipSigning.verify(statement, replica: replica, seq: 1) else {
            return Refusal(.badRequest, "the redemption's signature does not verify with the invitation's key (as seq 1 of its membership replica)")
        }
        guard let invited = membership.member(statement.signer), let invitation = invited.invitation else {
            return Refusal(.invitationPending, "key \(Hex.bytes(statement.signer)) is no invitation of board \(name.text) (or its invitation has not reached this relay yet)")
        }
        if invited.rotatedTo == key { return nil }
        guard invited.isActive else {
            return Refusal(.invitationRefused, invited.revoked ? "this invitation was revoked by an admin" : "this invitation was redeemed already, by another key")
        }
        guard statement.role == invitation.role else { return Refusal(.badRequest, "this invitation admits \(invitation.role), not \(statement.role)") }
        let now = ProcessInfoLite.wallClockMilliseconds()
        guard now <= invitation.expires else {
            return Refusal(.invitationRefused, "this invitation expired at \(WallClock.localDescription(invitation.expires)): ask for a new one")
        }
        // Compared without subtracting: the wall time is the client's, any Int64.
        guard statement.wallTime >= now - 10 * 60_000, statement.wallTime <= now + 10 * 60_000, statement.wallTime <= invitation.expires else {
            return Refusal(.badRequest, "the redemption's time is more than 10 minutes from this relay's clock: the device's clock is wrong")
        }
        let invitedAt = membership.applied.first { $0.statement.action == .invite && $0.statement.subject == statement.signer }
        guard let invitedAt, statement.lamport > invitedAt.statement.lamport, statement.lamport < FormatV1.maxLamport else {
            return Refusal(.badRequest, "the redemption's clock must follow its invitation's")
        }
        guard membership.member(key) == nil else { return Refusal(.badRequest, "key \(Hex.bytes(key)) is named in this board's membership already") }
        let stored = await onReader { [board] in Self.store(statement, replica: replica, on: board) }
        _ = await board.refresh()
        if let stored {
            // Stored already, by this key (a page that reconnected before this board read its
            // own redemption back): that is a success, not a second redemption.
            if let member = board.membership?.member(key), member.isActive { return nil }
            return stored
        }
        guard let member = board.membership?.member(key), member.isActive else {
            return Refusal(.invitationRefused, "the redemption was stored but does not count (another redemption of this invitation came first)")
        }
        return nil
    }

    /// Writes the redemption as seq 1 of the invitation's membership replica, unless one is there.
    private static func store(_ statement: MembershipStatement, replica: ReplicaID, on board: Board) -> Refusal? {
        let lock: SealedFilesLock?
        do { lock = try SealedFilesLock.acquire(board.directory, waitingUpTo: 10) } catch { return Refusal(.unavailable, error.description) }
        guard let lock else { return Refusal(.unavailable, "the board's files are busy (a sync or compaction): try again") }
        defer { lock.release() }
        let folder = FileSystem.join(board.directory.replicasPath, replica.hex)
        if let taken = try? FileSystem.list(folder), !taken.isEmpty {
            return Refusal(.invitationRefused, "this invitation was redeemed already (its redemption came through the store)")
        }
        do { try MembershipLog.store(statement, replica: replica, seq: 1, replicasPath: board.directory.replicasPath) } catch {
            return Refusal(.unavailable, "the redemption could not be stored: \(error)")
        }
        return nil
    }

    /// After the membership changed (a statement arrived: the board reloaded), native clients
    /// whose key may no longer draw are disconnected, with the reason.
    func enforceMembership() {
        guard let membership = board.membership, !membership.isOpen else { return }
        for connection in connections.withLock({ Array($0.values) }) {
            guard let key = connection.admittedNativeKey, let refusal = membershipRefusal(key, needs: .draw) else { continue }
            connection.close(refusal)
        }
    }
}
