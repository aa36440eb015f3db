/// What one relay serves at most at once (`journal serve --max-boards`, `--max-connections`).
public struct RelayLimits: Sendable, Equatable {
    /// Boards open at once. A board costs about five threads and 100 KB while open, and a
    /// closed board none: past this, the board idle the longest is closed to make room.
    public var maxOpenBoards: Int
    /// Connections at once, over all boards (about 43 KB each when idle, and a catch-up's
    /// batch while joining).
    public var maxConnections: Int
    /// Catch-ups reading journals at once, over all boards (`CatchUpGate`): each holds its
    /// board's files until it is sent.
    public var maxConcurrentCatchUps: Int

    /// Connections at once that present one token, over all boards: one leaked token cannot
    /// take every connection of the relay.
    public var maxConnectionsPerToken: Int
    /// Replicas a board may hold (over its life, hosted or synced in) and still take on a new
    /// native one (each costs a segment file, a writer and sealed files every reader then
    /// lists): 1,700 clients naming a fresh replica each held a relay at 95% CPU for minutes.
    /// Each drawing page is a replica (per browser, per tab open at once).
    public var maxNativeReplicasPerBoard: Int
    /// Under `--ack shared`: how long a board's rounds may fail before `/healthz` says 503, so
    /// that a balancer sends clients to a node whose store works.
    public var storeFailureSeconds: Double
    /// Events a token's connections may send per second, together (a connection without a
    /// token: alone), after a burst of ten seconds' worth (nil: no bound). A pen at 240 Hz
    /// sends 240; past the bound the relay reads those connections' frames only as the budget
    /// allows (`EventBudgets`), so one drawer, or one token's 64 connections, cannot flood the
    /// board's other clients.
    public var maxEventsPerSecond: Int?
    /// Seconds a socket has, from its opening, to send its request's head (the request line and
    /// headers); past them it is closed. Before its head nothing is known of a socket, not even
    /// which board it wants, yet it holds one of the `maxConnections + extraSockets` places:
    /// 4,300 sockets that never finished a request made every honest join wait out its
    /// timeout.
    public var requestHeadSeconds: Double
    /// Sockets from one address whose request head has not arrived yet; past them a new one is
    /// answered 503 and closed at once. Behind a proxy that forwards only whole requests
    /// (HAProxy, docs/DEPLOY.md) the proxy's address never has many.
    public var maxUnfinishedRequestsPerAddress: Int

    public init(
        maxOpenBoards: Int = 256, maxConnections: Int = 4096, maxConcurrentCatchUps: Int = 8, maxConnectionsPerToken: Int = 64,
        maxNativeReplicasPerBoard: Int = 1024, storeFailureSeconds: Double = 10, maxEventsPerSecond: Int? = 5_000,
        requestHeadSeconds: Double = 10, maxUnfinishedRequestsPerAddress: Int = 32
    ) {
        self.requestHeadSeconds = requestHeadSeconds.isFinite ? min(3600, max(0.05, requestHeadSeconds)) : 10
        self.maxUnfinishedRequestsPerAddress = max(1, maxUnfinishedRequestsPerAddress)
        self.maxEventsPerSecond = maxEventsPerSecond.map { max(1, $0) }
        self.storeFailureSeconds = max(0, storeFailureSeconds)
        self.maxOpenBoards = max(1, maxOpenBoards)
        self.maxConnections = max(1, maxConnections)
        self.maxConcurrentCatchUps = max(1, maxConcurrentCatchUps)
        self.maxConnectionsPerToken = max(1, maxConnectionsPerToken)
        self.maxNativeReplicasPerBoard = max(1, maxNativeReplicasPerBoard)
    }

    /// Descriptors an open board holds (its lock, open segment, folder watches and their
    /// wake-ups; measured: 6) and a connection (its socket).
    public static let descriptorsPerBoard = 6
    public static let descriptorsPerConnection = 1
    /// Sockets accepted beyond `maxConnections`: requests for the drawing page, and sockets
    /// that are told the relay is full. Past them the relay stops accepting (the system queues
    /// further ones), so that sockets that never finish their request cannot take every
    /// descriptor.
    public static let extraSockets = 64
    /// Descriptors kept for everything else: standard streams, the listening socket, the files
    /// a catch-up or a seal opens, a hosted replica's open segment.
    public static let reservedDescriptors = 256

    /// Descriptors these limits can take at once.
    public var descriptorsNeeded: Int {
        maxOpenBoards * Self.descriptorsPerBoard + (maxConnections + Self.extraSockets) * Self.descriptorsPerConnection
            + Self.reservedDescriptors
    }

    /// These limits, or, when they need more descriptors than `descriptorLimit` allows, boards
    /// and connections lowered in proportion until they fit. A relay out of descriptors fails
    /// to open journals and to accept, and the failures look like damage.
    public func fitting(descriptorLimit: Int) -> RelayLimits {
        guard descriptorsNeeded > descriptorLimit else { return self }
        let available = descriptorLimit - Self.reservedDescriptors - Self.extraSockets * Self.descriptorsPerConnection
        let wanted = maxOpenBoards * Self.descriptorsPerBoard + maxConnections * Self.descriptorsPerConnection
        let share = max(0, Double(available) / Double(wanted))
        var fitted = self
        fitted.maxOpenBoards = max(1, Int(Double(maxOpenBoards) * share))
        fitted.maxConnections = max(1, Int(Double(maxConnections) * share))
        return fitted
    }
}
