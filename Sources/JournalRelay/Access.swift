import JournalPlatform
import JournalWire

/// What a holder of a capability may do on a board (invariant 12). Each scope includes the
/// ones below it.
public enum Scope: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible {
    /// Catch up and receive the board's events.
    case view = 1
    /// Also send events.
    case draw = 2
    /// Also create the board (a board that does not exist is created only for an admin).
    case admin = 3

    public init?(name: some StringProtocol) {
        guard let scope = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = scope
    }

    public var description: String {
        switch self {
        case .view: return "view"
        case .draw: return "draw"
        case .admin: return "admin"
        }
    }

    public static func < (lhs: Scope, rhs: Scope) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The boards a capability covers: one board, every board whose name starts with a prefix
/// (`team-*`), or every board (`*`). Written in a token as it is here.
public struct BoardPattern: Equatable, Sendable, CustomStringConvertible {
    /// The exact name, or the prefix (without its `*`).
    public let text: String
    public let isPrefix: Bool

    /// `name`, `prefix*` or `*`: the characters of a board name, with one `*` at the end.
    public init(_ pattern: some StringProtocol) throws(AccessError) {
        var text = String(pattern)
        isPrefix = text.hasSuffix("*")
        if isPrefix { text.removeLast() }
        let allowed = text.utf8.allSatisfy { BoardName.isAllowed($0) }
        guard allowed, text.utf8.count <= BoardName.maxLength, isPrefix || !text.isEmpty else {
            throw .malformed("board pattern \"\(pattern)\" is not a board name, a prefix ending in *, or *")
        }
        self.text = text
    }

    public func matches(_ board: BoardName) -> Bool { isPrefix ? board.text.hasPrefix(text) : board.text == text }

    public var description: String { isPrefix ? text + "*" : text }
}

/// What a connection was granted: the capability its token carried, checked.
public struct Grant: Equatable, Sendable {
    /// The token's id (what revocation and the per-token limits name); nil on an open relay.
    public var tokenID: String?
    public var scope: Scope
    /// When the token expires (milliseconds since 1970); nil: never (an open relay).
    public var expiresAtMilliseconds: Int64?
    /// The one board the token names, when it names exactly one (not a prefix, not `*`): an
    /// admin issued it for that board, which may then be created again for it (`Relay.connect`).
    public var board: BoardName?

    /// Everything, on a relay started open on purpose (`journal serve --open`).
    public static let open = Grant(tokenID: nil, scope: .admin, expiresAtMilliseconds: nil)

    public init(tokenID: String?, scope: Scope, expiresAtMilliseconds: Int64?, board: BoardName? = nil) {
        self.tokenID = tokenID
        self.scope = scope
        self.expiresAtMilliseconds = expiresAtMilliseconds
        self.board = board
    }

    public func allows(_ wanted: Scope) -> Bool { scope >= wanted }
}

/// Why a client was refused (sent to it as the connection's last error). Messages never
/// repeat the token: a token is a secret, and errors end up in logs.
public enum AccessError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No token where one is needed.
    case missing
    /// Not a token of this format (why).
    case malformed(String)
    /// The signature does not verify with the relay's key (forged, or minted before the key
    /// was rotated).
    case badSignature
    case expired(tokenID: String)
    case revoked(tokenID: String)
    /// A valid token for other boards, or with too small a scope for what was asked.
    case notAllowed(String)
    /// The relay's key or revocation list cannot be read (the operator must look).
    case keyUnavailable(String)

    /// What a client decides on: a token refused, or one not good for this, is refused again;
    /// the relay's own key trouble passes.
    public var code: RefusalCode {
        switch self {
        case .missing, .malformed, .badSignature, .expired, .revoked: return .unauthorized
        case .notAllowed: return .forbidden
        case .keyUnavailable: return .unavailable
        }
    }

    public var description: String {
        switch self {
        case .missing:
            return "this relay needs a token: send {\"type\":\"hello\",\"token\":\"…\"} as the first frame, or an Authorization: Bearer header (the page takes it from #token= in its address); ask the relay's operator for one (journal token)"
        case .malformed(let why):
            return "token refused: \(why)"
        case .badSignature:
            return "token refused: its signature does not verify with this relay's key (forged, or minted before the key was rotated)"
        case .expired(let id):
            return "token \(id) has expired: ask for a new one"
        case .revoked(let id):
            return "token \(id) has been revoked"
        case .notAllowed(let why):
            return why
        case .keyUnavailable(let why):
            return "the relay cannot check tokens: \(why)"
        }
    }
}

/// Who may connect to a relay's boards.
public enum RelayAccess: Sendable {
    /// Anyone who reaches the port may create, view and draw on any board (`--open`: the
    /// demo, a quick start, local tests).
    case open
    /// A token signed by the relay's key (`RelayKeys`), checked on every connection.
    case tokens(RelayKeys)

    /// The grant of a connection to `board` that presented `token` (nil: none).
    public func authorize(_ token: String?, board: BoardName, nowMilliseconds: Int64) throws(AccessError) -> Grant {
        switch self {
        case .open:
            return .open
        case .tokens(let keys):
            guard let token, !token.isEmpty else { throw .missing }
            let capability = try keys.verify(token, nowMilliseconds: nowMilliseconds)
            guard capability.boards.matches(board) else {
                throw .notAllowed("token \(capability.id) is for board \(capability.boards), not \(board.text)")
            }
            return Grant(tokenID: capability.id, scope: capability.scope, expiresAtMilliseconds: capability.expiresAtMilliseconds,
                         board: capability.boards.isPrefix ? nil : board)
        }
    }

    /// Whether a grant still holds (not expired, not revoked since): the relay closes the
    /// connections of one that does not.
    public func stillHolds(_ grant: Grant, nowMilliseconds: Int64) -> AccessError? {
        guard case .tokens(let keys) = self, let id = grant.tokenID else { return nil }
        if let expires = grant.expiresAtMilliseconds, nowMilliseconds >= expires { return .expired(tokenID: id) }
        if (try? keys.isRevoked(id)) == true { return .revoked(tokenID: id) }
        return nil
    }

    /// The ids of the tokens revoked on this relay (none on an open relay, or when the list
    /// cannot be read: connections are then checked one by one, `stillHolds`).
    public func revokedTokenIDs() -> Set<String> {
        guard case .tokens(let keys) = self else { return [] }
        return (try? keys.revokedIDs()) ?? []
    }

    public var isOpen: Bool {
        if case .open = self { return true }
        return false
    }
}
