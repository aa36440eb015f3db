import JournalCommit
import JournalFormat
import JournalLive
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalWire

/// One board of the relay: its live `Board` and the connections drawing on it.
public final class RelayBoard: Sendable {
    public let name: BoardName
    public let board: Board
    let connections = Locked<[Int: RelayConnection]>([:])
    private let nextConnection = Locked(0)
    /// Catch-up reads whole journals: on a thread of its own, never on the concurrency pool.
    let reader = WorkerThread()
    /// Native clients' replicas, stored under their own ids.
    let host: NativeHost
    /// The relay's bound on catch-ups at once (every board's connections share it).
    let catchUps: CatchUpGate

    /// Acks waiting for the cluster's store (`AckMode.shared`); nil: acked once fsynced here.
    let sharedAcks: SharedAcks?
    /// With shared acks, what the store holds of the board: all a catch-up sends.
    let storeCoverage: StoreCoverage
    /// The relay's counters (`RelayMetrics`).
    let metrics: RelayMetrics

    /// An ack went out for a frame that arrived at `arrival` (monotonic seconds): its latency,
    /// under this board's ack mode.
    func recordAckLatency(since arrival: Double) {
        metrics.acknowledged(after: ProcessInfoLite.monotonicSeconds() - arrival, mode: sharedAcks == nil ? .local : .shared)
    }
    /// The key this board's journal signs with: its text-mode clients' events are this key's.
    let ownKey: [UInt8]?
    /// The relay's host key, which founded the boards it administers (`BoardFounding`); nil: none.
    let founding: BoardFounding?
    /// How many keys a board's membership may name before the relay stops admitting by token.
    let maxAdmitted: Int
    /// Whether this node still holds the board's lease (`BoardLeases.holds`); nil: no leases.
    let leaseHeld: (@Sendable () -> Bool)?
    /// Set once the lease was found lapsed: every connection was closed with `notOwner`, and
    /// nothing more is taken or acknowledged here.
    let leaseLost = Locked(false)
    /// Who hears that the lease lapsed (the relay, which closes the board).
    let onLeaseLost = SharedHandler<BoardName>()
    /// A membership write of each kind is running (`writeMembership`).
    let healingOwnKey = Locked(false)
    let revokingTokenKeys = Locked(false)

    /// What a connection may send, by its token (`RelayLimits.maxEventsPerSecond`); nil: no bound.
    let eventBudgets: EventBudgets?

    init(name: BoardName, board: Board, catchUps: CatchUpGate, maxNativeReplicas: Int = RelayLimits().maxNativeReplicasPerBoard,
         eventBudgets: EventBudgets? = nil,
         sharedAcks: SharedAcks? = nil, storeCoverage: StoreCoverage = StoreCoverage(), founding: BoardFounding? = nil,
         metrics: RelayMetrics = RelayMetrics(), leaseHeld: (@Sendable () -> Bool)? = nil) {
        self.storeCoverage = storeCoverage
        self.leaseHeld = leaseHeld
        self.eventBudgets = eventBudgets
        self.metrics = metrics
        self.name = name
        self.board = board
        self.catchUps = catchUps
        self.sharedAcks = sharedAcks
        self.founding = founding
        maxAdmitted = maxNativeReplicas
        host = NativeHost(board: board, maxNewReplicas: maxNativeReplicas)
        ownKey = board.identity.key?.publicKey
    }

    /// Runs `job` on the board's reader thread (membership writes wait for the files' lock:
    /// never on the concurrency pool).
    func onReader<T: Sendable>(_ job: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            reader.submit { continuation.resume(returning: job()) }
        }
    }

    /// Starts following the board's journal (`Board.observe`): hosted rounds are acknowledged
    /// and broadcast, and events sync brings are forwarded, as the board's committer and
    /// integrator publish them. What a previous run left of hosted replicas is sealed first.
    func start() {
        // Observed before `covered` is read: an integration in between is forwarded, not lost.
        observation.withLock { $0 = board.observe { [weak self] activity in self?.follow(activity) } }
        host.recoverLeftovers()
        var start = Have(board.covered)
        start.remove(board.replica)
        forwarded.withLock { $0.formUnion(start) }
    }

    private let observation = Locked<Int?>(nil)

    private func follow(_ activity: JournalActivity) {
        switch activity {
        case .hosted(let round):
            host.settle(round)
            hostedDurable(round)
            // Events of a failed replica that sync brought while they waited for the round were
            // passed over as the host's (`forwardIntegrated`); they are not any more.
            if !round.failed.isEmpty { forwardLacking() }
        case .integrated(let events):
            forwardIntegrated(events)
        case .reloaded:
            // The board read the files afresh: what arrived is not named; read what is lacking.
            // A membership statement may have arrived: keys that lost their right go now.
            enforceMembership()
            healOwnKey()
            forwardLacking()
        case .membershipChanged:
            enforceMembership()
            healOwnKey()
        case .durable, .sealed, .compacted:
            break
        }
    }

    /// A new connection, registered at once, so that nothing broadcast from now on passes it
    /// by; it holds live events back until its catch-up is sent (`RelayConnection.catchUp`).
    /// `helloPromised`: the client said its first frame is a hello (`WireLimits.helloQuery`).
    public func connect(grant: Grant = .open, helloPromised: Bool = false, challenge: [UInt8]? = nil) -> RelayConnection {
        let id = nextConnection.withLock { next -> Int in
            next += 1
            return next
        }
        let connection = RelayConnection(id: id, board: self, grant: grant, helloPromised: helloPromised, challenge: challenge)
        metrics.connectionOpened()
        connections.withLock { connections in
            connections[id] = connection
            idle.withLock { $0 = nil }
        }
        return connection
    }

    func remove(_ id: Int) {
        connections.withLock { connections in
            connections.removeValue(forKey: id)
            if connections.isEmpty { idle.withLock { $0 = $0 ?? ProcessInfoLite.monotonicSeconds() } }
        }
        // Called with the leaving connection's lock held, which sharing presence takes: the
        // others hear it left a moment later, on a task of its own.
        Task { [weak self] in self?.presenceLeft(id) }
    }

    // MARK: Presence

    /// Each connection's latest presence message (`Presence.message(from:)`), while it is
    /// connected. Its lock also orders every presence message a client gets: a newcomer's
    /// snapshot of who is there and the updates around it, so a "gone" is never overtaken by
    /// an older snapshot that still holds its connection.
    private let presences = Locked<[Int: String]>([:])

    /// Tells every other connection that asked for presence where connection `id` is now.
    func sharePresence(_ message: String, from id: Int) {
        presences.withLock { table in
            let (present, others) = connections.withLock { ($0[id] != nil, $0.filter { $0.key != id }.map(\.value)) }
            guard present else { return }
            table[id] = message
            for connection in others { connection.deliverPresence(message) }
        }
    }

    /// Sends `connection` everyone else's presence, once it is live.
    func sendPresences(to connection: RelayConnection) {
        presences.withLock { table in
            for (id, message) in table where id != connection.id { connection.deliverPresence(message) }
        }
    }

    private func presenceLeft(_ id: Int) {
        presences.withLock { table in
            guard table.removeValue(forKey: id) != nil else { return }
            let others = connections.withLock { Array($0.values) }
            let gone = Presence.goneMessage(from: id)
            for connection in others { connection.deliverPresence(gone) }
        }
    }

    /// Connections whose presence is held (for tests and the memory bound).
    var presenceCount: Int { presences.withLock { $0.count } }

    /// When it opened (monotonic seconds): a board handed to this node is not handed on at once.
    let openedAt = ProcessInfoLite.monotonicSeconds()

    /// Since when the board has had no connection (nil: it has one).
    private let idle = Locked<Double?>(ProcessInfoLite.monotonicSeconds())
    public var idleSince: Double? { idle.withLock { $0 } }

    public var connectionCount: Int { connections.withLock { $0.count } }

    /// Connections holding a token with this id.
    func connectionCount(tokenID: String) -> Int { connections.withLock { $0.values.count { $0.grant.tokenID == tokenID } } }

    /// Closes every connection whose grant no longer holds (`why` says why), telling its client.
    func closeConnections(whose why: (Grant) -> AccessError?) {
        let all = connections.withLock { Array($0.values) }
        for connection in all {
            if let error = why(connection.grant) { connection.close(Refusal(error.code, error.description)) }
        }
    }

    /// Sends durable events to every connection but their sender's (nil: to every one).
    func broadcast(_ events: [Event], from sender: Int?) {
        guard !events.isEmpty else { return }
        let others = connections.withLock { connections in connections.filter { $0.key != sender }.map(\.value) }
        Self.deliver(events, to: others)
    }

    private static func deliver(_ events: [Event], to recipients: [RelayConnection]) {
        guard !recipients.isEmpty, !events.isEmpty else { return }
        // Encoded once, not once per connection.
        let texts = events.map { ServerMessage.event($0).text }
        for connection in recipients { connection.deliver(events, texts: texts) }
    }

    // MARK: Native clients

    /// A native client's hello: one connection per replica (one writer). An older connection of
    /// the same replica is closed: its client reconnected, or another claims its id.
    /// `connection` (whose hello `proven` its key, or not) becomes its replica's one writer: the
    /// others are closed. Unless one of them proved the key and this one did not: then this one
    /// is refused (the reason), so a stranger who knows a public key cannot push its holder off.
    func claim(_ replica: ReplicaID, by connection: Int, proven: Bool) -> Refusal? {
        let all = connections.withLock { Array($0.values) }
        let others = all.filter { $0.id != connection && $0.nativeReplica == replica }
        if !proven, others.contains(where: \.provedKey) {
            return Refusal(.badRequest, "replica \(replica.hex) is open on a connection that proved its key: prove yours (open the socket with ?\(HelloProof.query)) to take over")
        }
        all.first { $0.id == connection }?.markProven(proven)
        for other in others {
            other.close(.replaced, "a newer connection of replica \(replica.hex) opened: this one is closed (one writer per replica)")
        }
        return nil
    }

    /// A round of native events is durable: every connection but those of the events' own
    /// replica gets them, and those get an ack by seq. Connections of a replica whose events
    /// could not be stored are closed (nothing of the round is acknowledged; they resend).
    private func hostedDurable(_ round: HostedRound) {
        let all = connections.withLock { Array($0.values) }
        for connection in all {
            if let frames = round.batches[connection.id] { connection.nativeFramesSettled(frames) }
        }
        for (replica, reason) in round.failed {
            let error = RelayError.journal(board: name.text, .io(IOError("store the events of replica \(replica.hex)", path: board.directory.root, code: 0, reason: reason)))
            for connection in all where connection.nativeReplica == replica { connection.close(error: error) }
        }
        for (replica, events) in round.stored {
            let upTo = host.durablePrefix(of: replica)
            let owners = all.filter { $0.nativeReplica == replica }
            // With shared acks, others see the events once the store holds them too, as their
            // owner's ack says: never a stroke that a node lost with its disk takes back.
            guard sharedAcks != nil else {
                guard holdsLease() else { continue }
                Self.deliver(events, to: all.filter { $0.nativeReplica != replica })
                for connection in owners { connection.acknowledge(replica: replica, upTo: upTo) }
                metrics.acknowledged(events: events.count)
                continue
            }
            whenAcknowledgeable { [self] in
                // What the membership stopped counting meanwhile (a revocation that arrived
                // during the round) is shown to nobody.
                let counted = board.membership?.admitted(replica).map { admitted in events.filter { admitted.contains($0.id.seq) } } ?? events
                Self.deliver(counted, to: connections.withLock { Array($0.values) }.filter { $0.nativeReplica != replica })
                for connection in owners { connection.acknowledge(replica: replica, upTo: upTo) }
                metrics.acknowledged(events: events.count)
            }
        }
    }

    /// Runs `acknowledge` once what is durable now may be acknowledged: at once, or, with
    /// shared acks, once a seal and a publish that began after this call put it in the store.
    /// In a cluster with leases, only while this node holds the board's lease: an ack that
    /// finds it lapsed is never sent (the client sends its frames again to the node that holds
    /// it), and every connection is closed with `notOwner`.
    func whenAcknowledgeable(_ acknowledge: @escaping @Sendable () -> Void) {
        guard let sharedAcks else { return acknowledgeIfOwner(acknowledge) }
        sharedAcks.hold { [self] in acknowledgeIfOwner(acknowledge) }
    }

    /// `Board.whenDurable`, then `whenAcknowledgeable`: what a text client's acks wait for.
    func whenAcknowledgeable(afterDurable notify: @escaping Board.DurableNotice) {
        // Local acks without leases: durable is acknowledgeable, with no hop in between.
        guard sharedAcks != nil || leaseHeld != nil else { return board.whenDurable(notify) }
        board.whenDurable { [self] outcome in
            guard case .success = outcome else { return notify(outcome) }
            whenAcknowledgeable { notify(outcome) }
        }
    }

    private func acknowledgeIfOwner(_ acknowledge: @Sendable () -> Void) {
        guard holdsLease() else { return }
        acknowledge()
    }

    // MARK: Reading the journal

    /// The events of the board's journal that a holder of `have` lacks, read a batch at a
    /// time (`EventFeed.next`). With `ownDurable`, exact for the board's own events: every one
    /// acknowledged (so maybe broadcast) before the call is in the feed or in `have`, and none
    /// that is not durable yet is (the board writes before it fsyncs, so the open segment may
    /// hold events a crash could still lose; they are broadcast once durable, and a feed that
    /// sent them too would send them twice).
    func feed(lacking have: Have, ownDurable: Bool = true) async throws(RelayError) -> EventFeed {
        // With shared acks a catch-up sends only what the store holds. When the board holds
        // more, it waits for a round that begins now (which seals and publishes what the board
        // holds), and sends what that round covered; what comes later reaches the client live,
        // after its own round.
        var inStore: Have?
        if ownDurable, let sharedAcks {
            if !storeCoverage.current.containsAll(Self.held(by: board)) { try await awaitRound(sharedAcks) }
            inStore = storeCoverage.current
        }
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<(MissingEvents, EventFeed.Withheld?), RelayError>, Never>) in
            reader.submit { [board, host, inStore] in
                continuation.resume(returning: Self.open(board, host: host, have: have, ownDurable: ownDurable, inStore: inStore))
            }
        }
        let (missing, withheld) = try result.get()
        return EventFeed(missing, withholding: withheld, reader: reader)
    }

    /// Every event `board` holds: folded, or durable in a hosted file.
    static func held(by board: Board) -> Have {
        var held = Have(board.covered)
        held.formUnion(Have(board.hostedStored))
        return held
    }

    /// Returns once a round that begins now has put the board in the store.
    private func awaitRound(_ sharedAcks: SharedAcks) async throws(RelayError) {
        let completed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            sharedAcks.hold({ continuation.resume(returning: true) }, abandoned: { continuation.resume(returning: false) })
        }
        guard completed else { throw .closed }
    }

    private static func open(
        _ board: Board, host: NativeHost, have: Have, ownDurable: Bool, inStore: Have? = nil
    ) -> Result<(MissingEvents, EventFeed.Withheld?), RelayError> {
        guard ownDurable else {
            // Forwarding: native events go out as they are stored, never from here. Every
            // hosted event the files hold was accepted before it was written: `accepted`,
            // taken after the files were read, holds them all.
            let set = SegmentSet.load(board.directory, hosted: host.scan())
            var skip = have
            skip.formUnion(host.accepted)
            return .success((MissingEvents(set: set, have: skip.ranges), nil))
        }
        // Read before the files: every own event up to it is in them (the open segment is read
        // before the sealed ones, so a seal meanwhile cannot hide one).
        let durable = board.durableSeq
        // Hosted open segments are read with their writer excluded: all of them is durable.
        let set = SegmentSet.load(board.directory, hosted: host.scan())
        // Own events past `durable` are passed over as if held, and taken out of what the feed
        // says it covered, so they reach the client live, once, when they are durable.
        let withheld = EventFeed.Withheld(replica: board.replica, seqs: (durable + 1)...UInt64.max, onlyIn: inStore)
        var skip = have
        skip.insert(withheld.replica, withheld.seqs)
        if let inStore {
            // Passed over as if held, and not said to be covered: what the store lacks.
            for replica in set.replicas {
                let stored = inStore[replica]
                for gap in stored.gaps() { skip.insert(replica, gap) }
                skip.insert(replica, (stored.highest.map { $0 + 1 } ?? 1)...UInt64.max)
            }
        }
        return .success((MissingEvents(set: set, have: skip.ranges), withheld))
    }

    /// The seq of the first of `events` (of one replica) that the journal holds differently,
    /// or that it cannot read; nil when it holds each of them as it is.
    func firstDiffering(_ events: [Event]) async -> UInt64? {
        guard let replica = events.first?.id.replica else { return nil }
        var wanted = SeqRanges()
        for event in events { wanted.insert(event.id.seq...event.id.seq) }
        // Everything but the wanted events counts as held: the feed reads only those.
        var have = Have(board.covered)
        have.replace(replica, with: SeqRanges(wanted.gaps(through: .max)))
        guard let feed = try? await feed(lacking: have, ownDurable: false) else { return events[0].id.seq }
        var stored: [UInt64: Event] = [:]
        while let batch = await feed.next() {
            for event in batch where event.id.replica == replica { stored[event.id.seq] = event }
        }
        return events.first { stored[$0.id.seq] != $0 }?.id.seq
    }

    // MARK: Segments other machines bring

    // Events that sync brings into the board's journal (`journal sync --watch` into the
    // relay's data folder: federation) reach every connection from the board's one decode of
    // them (`JournalActivity.integrated`), on the board's integrator thread, so one forwarder
    // runs at a time and no event is forwarded twice. Not forwarded from here: the board's own
    // events (they go out as they are acknowledged) and native clients' events (as they are
    // stored).

    private let closed = Locked(false)

    /// Other replicas' events that were forwarded, or held by the journal when the board
    /// opened (every connection's catch-up reads those).
    private let forwarded = Locked(Have())

    /// Held while events are forwarded: the integrator forwards what it applied, the committer
    /// (after a failed hosted round) what the files hold; one at a time, so none goes twice.
    private let forwarding = Locked(())

    private func forwardIntegrated(_ events: [Event]) {
        guard !closed.withLock({ $0 }) else { return }
        forwarding.withLock { _ in
            let hosted = host.accepted
            let fresh = forwarded.withLock { forwarded -> [Event] in
                events.filter { event in
                    guard event.id.replica != board.replica, !hosted.contains(event.id), !forwarded.contains(event.id) else { return false }
                    forwarded.insert(event.id)
                    return true
                }
            }
            forward(fresh)
        }
    }

    /// After a reload or a failed hosted round: reads from the files what the connections
    /// lack, once.
    private func forwardLacking() {
        guard !closed.withLock({ $0 }) else { return }
        forwarding.withLock { _ in forwardLackingNow() }
    }

    private func forwardLackingNow() {
        var target = Have(board.covered)
        target.remove(board.replica)
        var have = forwarded.withLock { $0 }
        // Native clients' events go out as they are stored.
        have.formUnion(host.accepted)
        guard !have.containsAll(target) else { return }
        // The board's own events go out as they are acknowledged, never from here.
        have.insertAll(of: board.replica)
        guard case .success(let (missing, _)) = Self.open(board, host: host, have: have, ownDurable: false) else { return }
        var feed = missing
        while let batch = feed.next(maxEvents: WireLimits.catchUpBatchEvents) {
            forward(batch)
        }
        var read = Have(feed.covered)
        read.remove(board.replica)
        forwarded.withLock { $0.formUnion(read) }
    }

    /// Sends what sync brought to every connection, but a native client none of its own
    /// replica's events: they are its own, or a fork of them it must not take for its own.
    private func forward(_ events: [Event]) {
        guard !events.isEmpty else { return }
        let all = connections.withLock { Array($0.values) }
        let replicas = Set(events.map(\.id.replica))
        Self.deliver(events, to: all.filter { $0.nativeReplica.map { !replicas.contains($0) } ?? true })
        for connection in all {
            guard let own = connection.nativeReplica, replicas.contains(own) else { continue }
            Self.deliver(events.filter { $0.id.replica != own }, to: [connection])
        }
    }

    /// Closes the board; its connections are told `reason`.
    func close(reason: Refusal = RelayError.closed.refusal) async {
        closed.withLock { $0 = true }
        let all = connections.withLock { connections -> [RelayConnection] in
            let all = Array(connections.values)
            connections.removeAll()
            return all
        }
        for connection in all { connection.close(reason) }
        sharedAcks?.close()
        host.close()
        // Stores what was accepted and seals the hosted segments, then the board's own. What was
        // acknowledged is durable already; a seal that fails here leaves the events in the open
        // segment, which the next open recovers.
        try? await board.close()
        if let token = observation.withLock({ $0 }) { board.stopObserving(token) }
        reader.close()
    }
}
