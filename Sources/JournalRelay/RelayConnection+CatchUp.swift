import JournalFormat
import JournalPlatform
import JournalWire

/// A joining client's catch-up: exactly the events it lacks, then `caughtUp`, then live ones,
/// none of them twice and, without echo, none of its own frames.
extension RelayConnection {
    /// Sends, through `write`, exactly the events of the board the client lacks (`have`: what
    /// its hello said it holds; empty: the whole board; without echo, not those of its own
    /// frames sent meanwhile), a batch at a time, then `caughtUp` with what the board held,
    /// then the live events broadcast meanwhile that neither side held. Each replica's events
    /// come in seq order, replicas one after the other (not in total order: the drawing does
    /// not depend on the order events arrive in).
    ///
    /// With `writeSegment`, the events go as binary `SegmentMessage`s instead (the client's
    /// hello asked for blocks): blocks it lacks wholly as the journal stores them, the rest
    /// encoded the same way.
    ///
    /// Waits first for a place among the relay's catch-ups (`RelayLimits.maxConcurrentCatchUps`);
    /// live events are held for the client meanwhile, as during the catch-up itself.
    public func catchUp(
        lacking hello: Have, write: (ServerMessage) async throws -> Void,
        writeSegment: (([UInt8]) async throws -> Void)? = nil
    ) async throws {
        if case .closed = state.withLock({ $0.phase }) { return }
        let have = hello.keepingLongest(WireLimits.helloRangesPerReplica)
        let caughtUp: (feed: EventFeed, sent: UInt64)? = try await relayBoard.catchUps.run {
            state.withLock { $0.catchUpSince = ProcessInfoLite.monotonicSeconds() }
            defer { state.withLock { $0.catchUpSince = nil } }
            if case .closed = state.withLock({ $0.phase }) { return nil }
            let feed = try await relayBoard.feed(lacking: have)
            if let writeSegment {
                while let message = await feed.nextSegmentMessage() {
                    if case .closed = state.withLock({ $0.phase }) { return nil }
                    try await writeSegment(message)
                }
                return (feed, feed.count)
            }
            var sent: UInt64 = 0
            while let batch = await feed.next() {
                guard let own = try await ownEventsSoFar() else { return nil }
                for event in batch where !own.contains(event.id) {
                    try await write(.event(event))
                    sent += 1
                }
            }
            return (feed, sent)
        }
        guard let caughtUp else { return }
        goLive(caughtUp: caughtUp.sent, have: caughtUp.feed.covered, clientHad: have)
    }

    /// Sends `caughtUp` and the events held during catch-up that neither the catch-up
    /// (`have`: what the board held) nor the client (`clientHad`) covered, then live ones as
    /// they come, those two still left out.
    public func goLive(caughtUp count: UInt64, have: Have = Have(), clientHad: Have = Have()) {
        let wantsPresence = state.withLock { state -> Bool in
            guard case .catchingUp(let held) = state.phase else { return false }
            state.phase = .live
            state.caughtUpWith = have
            state.caughtUpWith.formUnion(clientHad)
            state.ownBeforeLive = Have()
            send(.caughtUp(events: count, have: have, viewOnly: !grant.allows(.draw)), &state)
            deliverLocked(held, texts: nil, &state)
            if let ack = state.heldAck {
                state.heldAck = nil
                send(.ack(upTo: ack), &state)
            }
            if let upTo = state.heldReplicaAck, let replica = state.hello??.replica {
                state.heldReplicaAck = nil
                send(.replicaAck(replica: replica, upTo: upTo), &state)
            }
            return state.hello??.presence == true
        }
        // Outside this connection's lock: presence takes the board's presence lock first.
        if wantsPresence { relayBoard.sendPresences(to: self) }
    }

    /// `ownBeforeLive` once no text frame is between being recorded and being counted in it;
    /// nil once the connection is closed. Recording a frame takes microseconds, unless its
    /// thread was descheduled: the wait is bounded (about a second), so that no catch-up ever
    /// waits on a client; past it the catch-up goes on with what is counted.
    private func ownEventsSoFar() async throws -> Have? {
        for _ in 0..<5_000 {
            let (own, recording) = state.withLock { state -> (Have?, Bool) in
                if case .closed = state.phase { return (nil, false) }
                // An echoing client is sent its own events: nothing to wait for.
                return (state.ownBeforeLive, state.framesRecording > 0 && state.hello??.echo != true)
            }
            guard recording else { return own }
            try await Task.sleep(for: .microseconds(200))
        }
        return state.withLock { state -> Have? in
            if case .closed = state.phase { return nil }
            return state.ownBeforeLive
        }
    }

    /// A text frame's events are recorded (all of them, `own`; or some, then it was refused):
    /// a client without echo is not caught up with the events of its own frames.
    func finishedRecording(_ events: [Event], own: Bool) {
        state.withLock { state in
            state.framesRecording -= 1
            guard own, case .catchingUp = state.phase, state.hello??.echo != true else { return }
            for event in events { state.ownBeforeLive.insert(event.id) }
        }
    }
}
