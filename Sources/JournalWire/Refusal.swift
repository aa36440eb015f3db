/// What a refusal or a closed connection means to a client, as a stable word: the relay's
/// `error` messages carry it as `"code"`, and the WebSocket close that follows a connection's
/// last error carries its `closeCode` (docs/PROTOCOL.md, "Error codes"). A client decides
/// whether to try again on the code alone; the message is for the person (its words change,
/// and a board may be named `token`).
public enum RefusalCode: String, Sendable, CaseIterable {
    /// The frame or hello breaks the protocol (malformed, in the wrong place): a client that
    /// sends it again is refused again.
    case badRequest = "bad-request"
    /// Not a board name a board can have.
    case invalidBoardName = "invalid-board-name"
    /// No token, or one the relay does not take (malformed, forged, expired, revoked).
    case unauthorized
    /// The token is good but not for this: another board, or a board it may not create.
    case forbidden
    /// The token, or the key's membership, lets this client view the board, not draw on it.
    case viewOnly = "view-only"
    /// The hello's key is not a member that may draw on a board whose membership decides.
    case notMember = "not-a-member"
    /// An invitation that will never be redeemed here (used, expired, revoked, another board's).
    case invitationRefused = "invitation-refused"
    /// An invitation this relay has not seen yet (its node syncs every few seconds).
    case invitationPending = "invitation-pending"
    /// An event of this replica that differs from the one the relay holds or is storing under
    /// its id; a catch-up brings the relay's.
    case replicaConflict = "replica-conflict"
    /// A newer connection of the same replica took over (one writer per replica).
    case replaced
    /// A native frame the relay does not store (its signature, its replica, its clocks).
    case refusedFrame = "refused-frame"
    /// One of the relay's limits (connections, boards, a token's connections).
    case atCapacity = "at-capacity"
    /// The board holds as many native replicas (or token-admitted keys) as the relay takes on:
    /// a native client connects again in text mode (the relay stores its events as its own).
    case nativeLimit = "native-limit"
    /// The connection fell behind what the relay would queue for it.
    case tooSlow = "too-slow"
    /// The relay cannot serve the board now (shutting down, its journal or store failed, the
    /// board being opened or closed): the same request succeeds later.
    case unavailable
    /// Another node of the cluster holds the board's lease (or this node lost it): this node
    /// acknowledges nothing of the board. Connecting again (through the cluster's balancer)
    /// reaches the node that holds it.
    case notOwner = "not-owner"
    /// An error of a relay older than these codes: no code said.
    case unspecified

    /// What a client does after a connection ended with this code.
    public enum Retry: Sendable, Equatable {
        /// Give up: the same request is refused again (a person must change something).
        case never
        /// Connect again, after a backoff.
        case later
        /// Connect again as a viewer (without the key, the token's drawing or the invitation).
        case asViewer
        /// Connect again in text mode, or later in native mode.
        case inTextMode
    }

    public var retry: Retry {
        switch self {
        case .badRequest, .invalidBoardName, .unauthorized, .forbidden, .refusedFrame: return .never
        case .viewOnly, .notMember, .invitationRefused: return .asViewer
        case .nativeLimit: return .inTextMode
        case .invitationPending, .replicaConflict, .replaced, .atCapacity, .tooSlow, .unavailable, .notOwner, .unspecified: return .later
        }
    }

    /// The WebSocket close code (RFC 6455 leaves 4000–4999 to applications): 4000 plus the
    /// nearest HTTP status, so a log reader guesses it.
    public var closeCode: UInt16 {
        switch self {
        case .badRequest: return 4400
        case .unauthorized: return 4401
        case .forbidden: return 4403
        case .invalidBoardName: return 4404
        case .viewOnly: return 4405
        case .notMember: return 4406
        case .invitationRefused: return 4410
        case .replicaConflict: return 4409
        case .replaced: return 4412
        case .nativeLimit: return 4413
        case .tooSlow: return 4408
        case .refusedFrame: return 4422
        case .invitationPending: return 4425
        case .atCapacity: return 4429
        case .notOwner: return 4421
        case .unavailable: return 4503
        case .unspecified: return 1000
        }
    }

    /// The code a close code stands for (nil: not one of the relay's, such as 1000 or 1006).
    public init?(closeCode: UInt16) {
        guard closeCode >= 4000, let code = Self.allCases.first(where: { $0.closeCode == closeCode }) else { return nil }
        self = code
    }

    /// A code read from a message: one this client does not know (a newer relay's) counts as
    /// `unspecified`, which is tried again, never as a reason to give up.
    public init(wire: String?) {
        self = wire.flatMap(RefusalCode.init(rawValue:)) ?? .unspecified
    }
}

/// A refusal the relay sends: its code decides, its message explains.
public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: RefusalCode
    public var message: String

    public init(_ code: RefusalCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
