import JournalFormat
import JournalStorage
import JournalWire

/// Why the relay refused a board or a connection.
public enum RelayError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not `[A-Za-z0-9_-]{1,64}` (a URL can carry anything; a board name is never a path).
    case invalidBoardName(String)
    /// The board's journal could not be opened or created, or failed while in use.
    case journal(board: String, JournalError)
    /// The relay is shutting down.
    case closed
    /// The board is being opened or closed: connect again.
    case disconnected(String)
    /// The relay is at one of its limits (`RelayLimits`): which, and what to do.
    case atCapacity(String)
    /// A native frame the relay does not store (the reason); the connection is closed.
    case refusedFrame(String)
    /// A refusal with a code of its own (a hello that breaks the protocol, an event that
    /// differs from the one stored under its id, a board's limit of native replicas).
    case refused(Refusal)
    /// The client may not do this (no token, a bad one, too small a scope: invariant 12).
    case forbidden(AccessError)
    /// The cluster's store could not be synced before the board opened (`BoardSharing`).
    case sharedStore(board: String, String)
    /// The membership of a board this relay founds could not be written (why).
    case membership(board: String, String)

    /// What a client decides on (docs/PROTOCOL.md, "Error codes").
    public var code: RefusalCode {
        switch self {
        case .invalidBoardName: return .invalidBoardName
        case .journal, .closed, .disconnected, .sharedStore, .membership: return .unavailable
        case .atCapacity: return .atCapacity
        case .refusedFrame: return .refusedFrame
        case .refused(let refusal): return refusal.code
        case .forbidden(let error): return error.code
        }
    }

    /// The connection's last error as the client gets it: the code, and `toClient`.
    public var refusal: Refusal { Refusal(code, toClient) }

    /// What a client is told: the description, less what only the relay's operator may read
    /// (its folders, its store's commands, the operating system's error), which the relay
    /// logs.
    public var toClient: String {
        switch self {
        case .journal(let board, _):
            return "board \(board) could not be read or written on this relay (its operator's log says why); connect again later"
        case .sharedStore(let board, _):
            return "board \(board) is not served until it is read from the cluster's store, which failed (its operator's log says why); connect again"
        case .membership(let board, _):
            return "board \(board) is not served until its membership is written, which failed (its operator's log says why); connect again"
        default:
            return description
        }
    }

    public var description: String {
        switch self {
        case .invalidBoardName(let name):
            return "invalid board name \(JSONText.quoted(name, limit: 80)): use 1 to \(BoardName.maxLength) of A-Z a-z 0-9 _ -"
        case .journal(let board, let error):
            return "board \(board): \(error)"
        case .closed:
            return "the relay is shutting down"
        case .disconnected(let reason):
            return reason
        case .atCapacity(let reason):
            return reason
        case .refusedFrame(let reason):
            return "native frame refused: " + reason
        case .refused(let refusal):
            return refusal.message
        case .forbidden(let error):
            return error.description
        case .sharedStore(let board, let why):
            return "board \(board) is not served until it is read from the shared store, which failed (\(why)); connect again"
        case .membership(let board, let why):
            return "board \(board) is not served until its membership is written, which failed (\(why)); connect again"
        }
    }
}
