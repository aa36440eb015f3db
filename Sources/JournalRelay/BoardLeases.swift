/// One owner per board in a cluster (`journal serve --lease`, docs/DEPLOY.md "One owner per
/// board"): a node serves a board only while it holds the board's lease from a coordination
/// service, and acknowledges nothing of it once its own clock says the lease may have lapsed.
///
/// The lease is what makes "acknowledged" mean one thing in a cluster: two nodes that both
/// acknowledged a board's strokes (a client reaching a node directly, a node frozen, marked
/// down and thawed) could each lose what only its disk held. The store needs no fence: its
/// segments are immutable and named by their bytes, so what a node that lost its lease still
/// publishes is events it recorded, deduplicated by id; acks are the one thing that must come
/// from one node, and they are checked against the lease before each one.
public protocol BoardLeases: Sendable {
    /// Claims `board` for this node, waiting up to `wait` seconds for another node's claim to
    /// lapse.
    func claim(_ board: BoardName, wait: Double) async -> LeaseClaim
    /// Gives up the claim (the board closed here); nothing if it is not held.
    func release(_ board: BoardName) async
    /// Whether this node still holds `board`, by its own monotonic clock: renewed recently
    /// enough that the service cannot have let it lapse yet. Checked before every ack and
    /// every frame taken, so it must be cheap (no call to the service).
    func holds(_ board: BoardName) -> Bool
    /// Whether this node can take boards at all now (its renewals reach the service): what
    /// `/healthz` says, so a balancer stops sending clients to a node that cannot acknowledge.
    var isLive: Bool { get }
    /// How long `Relay` waits for another node's claim to lapse when a client asks for a board.
    var claimWait: Double { get }
    /// Boards this node holds that another node wants, each with a number that grows every
    /// time that node says so again: its clients keep reaching it (a balancer sends the board
    /// there, after this node took the board over while that node was down), and are refused
    /// there for as long as this node keeps the board. `Relay` hands such a board over.
    func wantedElsewhere() async -> [BoardName: UInt64]
}

extension BoardLeases {
    public func wantedElsewhere() async -> [BoardName: UInt64] { [:] }
}

/// The outcome of `BoardLeases.claim`.
public enum LeaseClaim: Sendable, Equatable {
    /// Held by this node; `fence` grows with every new claim of the board by any node (the
    /// service's revision of the claim), so a later owner's fence is always larger.
    case held(fence: UInt64)
    /// Another node holds it (its name), and did not let it lapse within the wait.
    case heldElsewhere(String)
    /// The service could not be asked (why).
    case unavailable(String)
}
