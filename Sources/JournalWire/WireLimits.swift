/// Bounds both sides of a relay connection rely on (docs/PROTOCOL.md, "Limits").
public enum WireLimits {
    /// The largest frame either side sends, in bytes. A pen point's line is about 200 bytes;
    /// CollabSketch's whole-stroke lines are the long ones (about 300 points fit).
    public static let maxFrameBytes = 64 * 1024
    /// Frames a client may have sent that are not acknowledged yet. Past this the relay stops
    /// reading its socket until the acks catch up, so a flooding client waits on TCP instead
    /// of filling the relay's memory.
    public static let maxUnacknowledgedFrames = 4096
    /// Events a client may have sent that are not acknowledged yet (text and native frames
    /// alike). Frames alone do not bound the work queued ahead of other clients: 4096
    /// CollabSketch frames can hold 14 million points, and every client of the board would wait
    /// behind them for its acks.
    public static let maxUnacknowledgedEvents = 16_384
    /// Messages queued for one client that it has not read. A client that falls this far
    /// behind is disconnected with an error (it reconnects and catches up) rather than
    /// holding the relay's memory.
    public static let maxQueuedMessages = 65_536
}

extension WireLimits {
    /// How long the relay waits, after a socket opens, for a first frame that may be a
    /// `hello`. A client that wants exact catch-up sends it at once; a client that sends
    /// nothing (a viewer) is caught up with the whole board once this passes, and a client
    /// whose first frame is an event line at once.
    public static let helloWaitMilliseconds = 2000
    /// A relay that stopped (a frozen process, a paused machine, a partition) keeps a client's
    /// socket open and says nothing, so a client cannot tell it from a slow round (a shared
    /// ack through an object store takes seconds). While a client's frames wait for their ack
    /// and nothing else was sent to it for this long, the relay repeats its last ack: a sign
    /// of life (docs/PROTOCOL.md, "Signs of life").
    public static let signOfLifeSeconds = 0.5
    /// How long a client whose frames wait for their ack hears nothing at all before it takes
    /// the relay for stopped, drops the socket and resends to whichever node takes it: four
    /// signs of life missed.
    public static let silentRelaySeconds = 2.0
    /// How long the relay waits for the hello of a client whose socket address promised one
    /// (`helloQuery`). Such a client is never sent the whole board for a hello read late (a
    /// starved relay, a slow network); past this it is disconnected instead, so that a client
    /// that promised and stays silent does not keep the board's live events held for it.
    public static let promisedHelloWaitMilliseconds = 60_000
    /// The query of a socket address (`/boards/<board>/ws?hello`) by which a client promises
    /// that its first frame is a hello.
    public static let helloQuery = "hello"

    /// `url`, a socket address, with the promise of a hello (`helloQuery`) added to its query.
    public static func promisingHello(_ url: String) -> String {
        url + (url.contains("?") ? "&" : "?") + helloQuery
    }
    /// Events per batch the relay reads from a journal for a catch-up or a forward: memory
    /// for one batch, never for the board.
    public static let catchUpBatchEvents = 1024
    /// The size the relay aims at for one binary catch-up message (`SegmentMessage`).
    public static let segmentMessageTargetBytes = 1 << 20
    /// The largest binary message the relay sends: a client's WebSocket must accept frames
    /// this long (the relay's own text frames stay within `maxFrameBytes`).
    public static let maxSegmentMessageBytes = 4 << 20
    /// What one native frame may hold, checked before it is inflated: at most 4096 events and
    /// 1 MiB of block bodies (`RelayClient` sends at most 1024 events per frame).
    public static let nativeFrame = SegmentMessage.Limits(maxEvents: 4096, maxRawBytes: 1 << 20)
    /// Ranges of one replica in a hello that the catch-up honours: the longest this many
    /// (`Have.keepingLongest`). Every gap of a client's holding splits a stored block the relay
    /// then decodes and encodes again: honoured whole, a 64 KiB hello of 4,000 single-seq ranges
    /// costs 7 times the CPU of the whole board's catch-up. A client that holds a replica in
    /// more pieces gets the events of its shorter pieces again, and drops them by id.
    public static let helloRangesPerReplica = 64
}

extension WireLimits {
    /// A presence's name, in UTF-8 bytes.
    public static let maxPresenceNameBytes = 64
    /// Presence frames a connection may send in a burst, and per second after it: what a
    /// pointer moving continuously sends (the page sends at most 20 a second). More are dropped.
    public static let presenceBurst = 20.0
    public static let presencePerSecond = 30.0
    /// A presence is not queued for a client that has this many messages waiting: it is
    /// ephemeral, and a client behind on the board's events needs those first.
    public static let presenceQueueRoom = 1024
}
