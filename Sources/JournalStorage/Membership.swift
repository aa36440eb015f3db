import Crypto
import JournalFormat
import JournalKeys

/// Who may view, draw and administer a board, folded from the membership statements its
/// files hold (invariant 16, docs/FORMAT.md §17). A function of those statements (and of the
/// genesis a journal pinned, when two boards' geneses meet in one folder): the same files give
/// the same members, and so the same drawing, on every machine.
///
/// A board without a genesis has no membership: it is *open*, and what counts is decided as
/// before (every segment, or a local trust list). With one, a drawing event counts only if its
/// replica is a member's and its seq lies in the member's *admitted* seqs: from its first
/// grant of `draw` or more up to the cut of the statement that ended it (a revocation, a
/// demotion, a rotation). Cuts are seqs, not clocks, so a revoked key cannot slip events in
/// before its revocation by choosing small clocks.
public struct Membership: Sendable {
    /// A statement as found: where, under which id, and whether its signature verified.
    public struct Found: Sendable {
        public var statement: MembershipStatement
        public var id: EventID
        public var file: String
        public var offset: Int64

        public init(statement: MembershipStatement, id: EventID, file: String, offset: Int64) {
            self.statement = statement
            self.id = id
            self.file = file
            self.offset = offset
        }

        var orderKey: OrderKey {
            OrderKey(lamport: statement.lamport, wallTime: statement.wallTime, replica: id.replica, seq: id.seq)
        }
    }

    public struct Member: Sendable, Equatable {
        public var key: [UInt8]
        public var role: MembershipStatement.Role
        public var label: String
        /// Revoked for good (never a member again).
        public var revoked = false
        /// The key it handed its role to (for an invitation: the key that redeemed it).
        public var rotatedTo: [UInt8]?
        /// Set for an invitation's key: no member itself, it may sign one `grant` of this role,
        /// with the label above, until the expiry (milliseconds since 1970).
        public var invitation: Invitation?
        /// The seqs of its drawing replica that count.
        public var admitted = SeqRanges()
        /// The start of the period of `draw` or more it is in now.
        var drawingSince: UInt64?
        var everStopped = false

        /// The replica this key draws as.
        public var replica: ReplicaID { ReplicaKey.replica(forPublicKey: key) }
        public var isActive: Bool { !revoked && rotatedTo == nil }

        mutating func setRole(_ new: MembershipStatement.Role, cut: UInt64) {
            if role < .draw, new >= .draw {
                // A cut at or past the last seq a writer can reach opens no period at all.
                drawingSince = !everStopped ? 1 : cut < FormatV1.maxSeq - 1 ? cut + 1 : nil
            } else if role >= .draw, new < .draw {
                stop(at: cut)
            }
            role = new
        }

        mutating func stop(at cut: UInt64) {
            if let since = drawingSince, cut >= since { admitted.insert(since...cut) }
            drawingSince = nil
            everStopped = true
        }

        /// Every seq that counts, the open period included.
        var allAdmitted: SeqRanges {
            var all = admitted
            if let since = drawingSince, since < FormatV1.maxSeq { all.insert(since...(FormatV1.maxSeq - 1)) }
            return all
        }
    }

    /// What an invitation admits, and until when.
    public struct Invitation: Sendable, Equatable {
        public var role: MembershipStatement.Role
        public var expires: Int64

        public init(role: MembershipStatement.Role, expires: Int64) {
            self.role = role
            self.expires = expires
        }
    }

    /// The genesis a journal holds to (`local/board`), when it pinned one.
    public struct Pin: Sendable, Equatable {
        public var board: UUIDBits
        public var founder: [UInt8]
        public init(board: UUIDBits, founder: [UInt8]) {
            self.board = board
            self.founder = founder
        }
    }

    /// The board's id; nil: no genesis, an open board.
    public private(set) var board: UUIDBits?
    public private(set) var founder: [UInt8]?
    /// Every key ever named, active or not, by key.
    public private(set) var members: [[UInt8]: Member] = [:]
    /// The statements that took effect, in the total order.
    public private(set) var applied: [Found] = []
    /// Statements that did not take effect, and why (never applied, and reported).
    public private(set) var problems: [Problem] = []
    /// Admitted seqs by drawing replica (active and former members).
    private var admittedByReplica: [ReplicaID: SeqRanges] = [:]

    public var isOpen: Bool { board == nil }
    public var statementCount: Int { applied.count }

    /// The seqs of `replica` that count: nil for an open board (all of them).
    public func admitted(_ replica: ReplicaID) -> SeqRanges? {
        guard board != nil else { return nil }
        return admittedByReplica[replica] ?? SeqRanges()
    }

    /// Whether `key` may seal, as host, segments of the members it stored.
    public func mayHost(_ key: [UInt8]) -> Bool {
        guard let member = members[key] else { return false }
        return member.isActive && member.role >= .relay
    }

    public func member(_ key: [UInt8]) -> Member? { members[key] }

    /// What this membership decides about a replay, as 32 bytes: each replica's admitted seqs
    /// and the keys that may seal as host. Two memberships with the same fingerprint count the
    /// same events, so a snapshot folded under one holds for the other (nil: an open board).
    public var fingerprint: [UInt8]? {
        guard board != nil else { return nil }
        var hasher = SHA256()
        hasher.update(data: Array("StrokeJournal membership fingerprint v1\0".utf8))
        for (replica, admitted) in admittedByReplica.sorted(by: { $0.key < $1.key }) {
            hasher.update(data: replica.bits.bytes)
            for range in admitted.ranges {
                var bounds: [UInt8] = []
                for value in [range.lowerBound, range.upperBound] {
                    for index in 0..<8 { bounds.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
                }
                hasher.update(data: bounds)
            }
            hasher.update(data: [0xFF])
        }
        for key in members.keys.filter(mayHost).sorted(by: { $0.lexicographicallyPrecedes($1) }) { hasher.update(data: key) }
        return Array(hasher.finalize())
    }

    /// The member whose drawing replica is `replica`, if any.
    public func member(drawingAs replica: ReplicaID) -> Member? {
        members.values.first { $0.replica == replica }
    }

    public var activeAdmins: [Member] { members.values.filter { $0.isActive && $0.role == .admin } }

    /// Folds `found` (signatures already checked). Among several geneses the earliest in the
    /// total order is the board's, unless the journal pinned one (`pin`, `local/board`): a
    /// rival genesis planted in a shared folder then cannot take over a board this machine
    /// created or adopted; it is reported either way.
    public static func fold(_ found: [Found], pin: Pin? = nil) -> Membership {
        var result = Membership()
        let unique = result.deduplicate(found)
        let creates = unique.filter { $0.statement.action == .create && $0.statement.role == .admin && $0.statement.subject == $0.statement.signer }
        let genesis: Found?
        if let pin {
            genesis = creates.filter { $0.statement.board == pin.board && $0.statement.signer == pin.founder }.min { $0.orderKey < $1.orderKey }
        } else {
            genesis = creates.min { $0.orderKey < $1.orderKey }
            if Set(creates.map(\.statement.board)).count > 1, let genesis {
                var contest = problem(genesis, "one of \(Set(creates.map(\.statement.board)).count) rival geneses in these files, the earliest, taken for want of a pinned one: nothing in the files tells the real board; `journal members pin BOARD` settles it on this machine")
                contest.kind = .fork
                result.problems.append(contest)
            }
        }
        guard let genesis else {
            for create in creates {
                result.problems.append(problem(create, "a board genesis other than the one this journal pinned (local/board); ignored"))
            }
            return result
        }
        let sorted = unique.sorted { $0.orderKey < $1.orderKey }
        // Each pass refuses, whatever their clocks, the statements revoked keys signed after
        // the cuts the previous pass's standing revocations name; passes repeat until the cuts
        // no longer change (a revocation refused under a cut no longer cuts), at most
        // `maxPasses` times. The last pass is the membership.
        var last = Fold(genesis: genesis, cuts: [:]).run(sorted)
        var cuts: [[UInt8]: UInt64] = [:]
        for _ in 1..<Self.maxPasses where last.memberCuts != cuts {
            cuts = last.memberCuts
            last = Fold(genesis: genesis, cuts: cuts).run(sorted)
        }
        result.board = genesis.statement.board
        result.founder = genesis.statement.signer
        result.members = last.members
        result.applied = last.applied
        result.problems += last.problems
        for member in last.members.values {
            let admitted = member.allAdmitted
            if !admitted.isEmpty { result.admittedByReplica[member.replica, default: SeqRanges()].formUnion(admitted) }
        }
        return result
    }

    /// Nil if a sealed drawing file may be applied under this (non-open) membership; otherwise
    /// its quarantine. Which of its seqs count is then `admitted`'s.
    public func judge(_ scan: ScannedSegment, path: String, replica: ReplicaID, damaged: Bool) -> Problem? {
        func quarantine(_ reason: String) -> Problem {
            Problem(.quarantined, file: path, replica: replica, seqRange: scan.seqRange, reason: reason)
        }
        if damaged {
            return quarantine("damaged (above), so no seal can vouch for its blocks: a board with membership applies none of them")
        }
        if let failure = scan.sealFailure(
            replica: replica, unsignedRule: "a board with membership applies only segments sealed by their replica's key or by a relay member's key") {
            return quarantine(failure)
        }
        if let seal = scan.seal, seal.role == .host, !mayHost(seal.publicKey) {
            return quarantine("sealed as host by key \(Hex.bytes(seal.publicKey)), which is not an active relay or admin member of this board")
        }
        return nil
    }

    /// The distinct geneses (board and founder) that `found` holds, valid `create`s alone.
    public static func geneses(_ found: [Found]) -> [Pin] {
        var seen: [Pin] = []
        for item in found where item.statement.action == .create && item.statement.role == .admin
            && item.statement.subject == item.statement.signer {
            let pin = Pin(board: item.statement.board, founder: item.statement.signer)
            if !seen.contains(pin) { seen.append(pin) }
        }
        return seen
    }

    /// How many passes the fold makes at most (docs/FORMAT.md §17.3).
    static let maxPasses = 8

    /// One statement per id: identical copies collapse; two different statements under one id
    /// are the signer's equivocation, reported, and the canonical lesser bytes kept.
    private mutating func deduplicate(_ found: [Found]) -> [Found] {
        var byID: [EventID: Found] = [:]
        for item in found {
            guard let existing = byID[item.id] else {
                byID[item.id] = item
                continue
            }
            guard existing.statement != item.statement else { continue }
            problems.append(Problem(
                .fork, file: item.file, offset: item.offset, replica: item.id.replica, seqRange: item.id.seq...item.id.seq,
                reason: "equivocation: membership statement \(item.id) exists with different contents, both signed by key \(Hex.bytes(item.statement.signer)); the canonical lesser one is kept"))
            if item.statement.encoded.lexicographicallyPrecedes(existing.statement.encoded) { byID[item.id] = item }
        }
        return Array(byID.values)
    }

    static func problem(_ found: Found, _ reason: String) -> Problem {
        Problem(.quarantined, file: found.file, offset: found.offset, replica: found.id.replica,
                seqRange: found.id.seq...found.id.seq,
                reason: "membership statement (\(found.statement.action) by key \(Hex.bytes(found.statement.signer))): " + reason)
    }

    /// One pass over the statements in the total order.
    private struct Fold {
        let genesis: Found
        let cuts: [[UInt8]: UInt64]
        var members: [[UInt8]: Member] = [:]
        var applied: [Found] = []
        var problems: [Problem] = []
        var memberCuts: [[UInt8]: UInt64] = [:]

        init(genesis: Found, cuts: [[UInt8]: UInt64]) {
            self.genesis = genesis
            self.cuts = cuts
        }

        func run(_ sorted: [Found]) -> Fold {
            var fold = self
            for found in sorted {
                if let reason = fold.apply(found) { fold.problems.append(Membership.problem(found, reason)) }
            }
            return fold
        }

        /// Applies one statement; the reason it does not count, if it does not.
        mutating func apply(_ found: Found) -> String? {
            let statement = found.statement
            if statement.action == .create {
                guard found.id == genesis.id else {
                    return statement.board == genesis.statement.board
                        ? "a second genesis of this board; ignored"
                        : "the genesis of another board (\(statement.board.compactHex)); this folder's board is \(genesis.statement.board.compactHex)"
                }
                var founder = Member(key: statement.signer, role: .none, label: statement.label)
                founder.setRole(.admin, cut: 0)
                members[statement.signer] = founder
                applied.append(found)
                return nil
            }
            guard members[genesis.statement.signer] != nil else { return "ordered before the board's genesis" }
            guard statement.board == genesis.statement.board else {
                return "made for another board (\(statement.board.compactHex)); this folder's board is \(genesis.statement.board.compactHex)"
            }
            if let cut = cuts[statement.signer], found.id.seq > cut {
                return "signed after the statement that ended its key (its membership seq \(found.id.seq) is past the cut \(cut))"
            }
            guard var signer = members[statement.signer], signer.isActive else {
                return "its signer is not a member"
            }
            if let invitation = signer.invitation {
                // An invitation's key signs one thing: its redemption, a grant of what it admits.
                guard statement.action == .grant else { return "an invitation's key signs nothing but its redemption (a grant)" }
                guard statement.role == invitation.role else { return "it redeems an invitation to \(invitation.role) as \(statement.role)" }
                guard statement.wallTime <= invitation.expires else { return "it redeems an invitation that had expired (at \(invitation.expires) ms)" }
                guard members[statement.subject] == nil else { return "the redeeming key \(Hex.bytes(statement.subject)) was already named" }
                var redeemer = Member(key: statement.subject, role: .none, label: signer.label)
                redeemer.setRole(invitation.role, cut: 0)
                members[statement.subject] = redeemer
                signer.rotatedTo = statement.subject
                members[statement.signer] = signer
                applied.append(found)
                return nil
            }
            switch statement.action {
            case .create:
                return nil
            case .grant:
                guard signer.role == .admin else { return "its signer is not an admin" }
                guard statement.role != .none else { return "a grant names a role" }
                var subject = members[statement.subject] ?? Member(key: statement.subject, role: .none, label: statement.label)
                guard subject.isActive else { return "key \(Hex.bytes(statement.subject)) was revoked or rotated: it is never a member again" }
                guard subject.invitation == nil else { return "key \(Hex.bytes(statement.subject)) is an invitation's: it is redeemed or revoked, never granted" }
                if subject.role == .admin, statement.role != .admin, activeAdminCount == 1 {
                    return "it would leave the board without an admin"
                }
                subject.setRole(statement.role, cut: statement.drawCut)
                subject.label = statement.label
                members[statement.subject] = subject
            case .revoke:
                guard signer.role == .admin else { return "its signer is not an admin" }
                guard var subject = members[statement.subject], subject.isActive else {
                    return "key \(Hex.bytes(statement.subject)) is not an active member"
                }
                if subject.role == .admin, activeAdminCount == 1, statement.subject != statement.signer {
                    return "it would leave the board without an admin (only the last admin may revoke itself)"
                }
                subject.stop(at: statement.drawCut)
                subject.revoked = true
                members[statement.subject] = subject
                memberCuts[statement.subject] = statement.memberCut
            case .rotate:
                guard members[statement.subject] == nil else { return "the new key \(Hex.bytes(statement.subject)) was already named" }
                var old = signer
                var successor = Member(key: statement.subject, role: .none, label: statement.label.isEmpty ? old.label : statement.label)
                successor.setRole(old.role, cut: 0)
                old.stop(at: statement.drawCut)
                old.rotatedTo = statement.subject
                members[statement.signer] = old
                members[statement.subject] = successor
                memberCuts[statement.signer] = statement.memberCut
            case .invite:
                guard signer.role == .admin else { return "its signer is not an admin" }
                guard statement.role != .none else { return "an invitation names a role" }
                guard members[statement.subject] == nil else { return "the invitation key \(Hex.bytes(statement.subject)) was already named" }
                var invited = Member(key: statement.subject, role: .none, label: statement.label)
                invited.invitation = Invitation(role: statement.role, expires: statement.invitationExpiry)
                members[statement.subject] = invited
            }
            applied.append(found)
            return nil
        }

        var activeAdminCount: Int { members.values.count { $0.isActive && $0.role == .admin } }
    }
}
