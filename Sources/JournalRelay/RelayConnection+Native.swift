import JournalFormat
import JournalLive
import JournalPlatform
import JournalWire

/// Native mode (docs/PROTOCOL.md): a client that names its own replica and events, admitted
/// at its hello, its frames checked, stored under its replica and acknowledged by seq.
extension RelayConnection {
    /// A native hello: admitted (the key proven, an invitation redeemed, a token's key
    /// admitted, the membership asked, its replica claimed), or the connection closed with the
    /// refusal's code.
    func admitNative(_ hello: Hello, replica: ReplicaID) async {
        guard grant.allows(.draw) else {
            close(.viewOnly, viewOnly("native mode sends events"))
            return
        }
        // The key is proven before an invitation is spent on it.
        var proven = false
        if let nonce = challenge, let key = hello.key {
            guard let proof = hello.proof, HelloProof.verify(proof, nonce: nonce, board: relayBoard.name.text, publicKey: key) else {
                close(.badRequest, "hello: its \"proof\" is missing or does not verify: sign this socket's challenge nonce with the key of the hello (docs/PROTOCOL.md, \"Proving a key\")")
                return
            }
            proven = true
        }
        if let redemption = hello.redeem, let key = hello.key, let refusal = await relayBoard.redeem(redemption, for: key) {
            close(refusal.code, "hello: invitation not redeemed: " + refusal.message)
            return
        }
        if let key = hello.key, let refusal = await relayBoard.admitByToken(key, grant: grant) {
            close(refusal.code, "hello: " + refusal.message)
            return
        }
        if let refusal = relayBoard.hostingRefusal ?? hello.key.flatMap({ relayBoard.membershipRefusal($0, needs: .draw) }) {
            close(refusal.code, "hello: " + refusal.message)
            return
        }
        if let refusal = relayBoard.claim(replica, by: id, proven: proven) {
            close(refusal.code, "hello: " + refusal.message)
            return
        }
        state.withLock { $0.nativeAdmitted = true }
    }

    /// The replica a native client owns (its hello said so), or nil for a text-mode client.
    public var nativeReplica: ReplicaID? { state.withLock { $0.hello??.replica } }
    /// Whether this native client proved its key at the hello (`HelloProof`).
    public var provedKey: Bool { state.withLock { $0.provedKey } }
    func markProven(_ proven: Bool) { state.withLock { $0.provedKey = proven } }
    /// The key a native client's hello named (its frames are checked against it).
    public var nativeKey: [UInt8]? { state.withLock { $0.hello??.key } }
    /// The key of a native client whose hello was admitted; nil while its hello is being
    /// decided (an invitation redeemed, a key admitted by token: the membership does not name
    /// it yet, and a reload meanwhile must not close it for that).
    var admittedNativeKey: [UInt8]? { state.withLock { $0.nativeAdmitted ? $0.hello??.key : nil } }

    /// A binary frame: native mode's events (docs/PROTOCOL.md), a `SegmentMessage` of the
    /// replica the hello named, events the client named itself. They are stored under that
    /// replica and acknowledged by seq once durable; held ones are skipped (dedup by id).
    /// Anything wrong with the frame closes the connection with the reason (a native client's
    /// next events would follow the refused ones; nothing of the frame is stored). Not
    /// numbered. Waits, as `receive(text:)` does, while too many frames are in flight.
    public func receive(binary bytes: [UInt8]) async {
        let first = state.withLock { state -> Bool in
            defer { state.sawFirstFrame = true }
            return !state.sawFirstFrame
        }
        if first { decideHello(nil) }
        guard nativeReplica != nil else {
            let frame = state.withLock { state -> UInt64? in
                if case .closed = state.phase { return nil }
                state.framesReceived += 1
                return state.framesReceived
            }
            if let frame {
                refuse(frame: frame, .badRequest, "a binary frame is native mode's (events the client named itself): say \"replica\" in the hello, or send one JSON line per text frame")
            }
            return
        }
        await receiveNative { replica, key, board throws(RelayError) in
            try Self.nativeEvents(bytes, replica: replica, key: key, board: board)
        }
    }

    /// Native mode's events, binary or text (`decode` opens the frame, given the hello's
    /// replica and key and the board): checked, stored under the replica and acknowledged by
    /// seq; anything wrong closes the connection.
    func receiveNative(_ decode: (ReplicaID, [UInt8], BoardName) throws(RelayError) -> [Event]) async {
        guard let replica = nativeReplica else { return }
        if case .closed = state.withLock({ $0.phase }) { return }
        guard relayBoard.holdsLease() else { return }
        guard grant.allows(.draw) else {
            close(.viewOnly, viewOnly("native frame not stored"))
            return
        }
        if let key = nativeKey, let refusal = relayBoard.membershipRefusal(key, needs: .draw) {
            close(refusal.code, "native frame not stored: " + refusal.message)
            return
        }
        // Counted before the board's committer may store it (and settle it, on its own thread).
        let arrived = ProcessInfoLite.monotonicSeconds()
        state.withLock { $0.nativeInFlight += 1 }
        do throws(RelayError) {
            let events = try decode(replica, state.withLock { $0.hello??.key } ?? [], relayBoard.name)
            let elsewhere = relayBoard.host.heldFromElsewhere(events, replica: replica)
            if !elsewhere.isEmpty, let seq = await relayBoard.firstDiffering(elsewhere) {
                // Acknowledged as held, the client's event would never be stored, and its
                // drawing would differ from the board's for good, silently.
                let reason = "seq \(seq) of replica \(replica.hex): the board's journal holds a different event under this id (from a segment that came from elsewhere, through sync): a fork of this replica; nothing more of it is stored or acknowledged on this board"
                relayBoard.host.recordFork(of: replica, reason)
                throw .refusedFrame(reason)
            }
            // Counted before the board's committer may settle the frame (it commits on its own
            // thread, possibly before `accept` returns).
            let acceptance = try relayBoard.host.accept(events, replica: replica, from: id) { staged in
                state.withLock { state in
                    state.nativeFrameEvents.append(staged)
                    state.nativeEventsInFlight += staged
                    // Bounded: a frame never acknowledged (its connection closed) is forgotten
                    // with the 4,096th after it.
                    if state.nativeArrivals.count >= 4096 { state.nativeArrivals.removeFirst() }
                    state.nativeArrivals.append((events.last?.id.seq ?? 0, arrived))
                }
            }
            if acceptance == .allHeld {
                state.withLock { $0.nativeFrameEvents.append(0) }
                nativeFramesSettled(1)
                // Held is not yet shared: a relay killed and started again holds events its
                // store may lack (`--ack shared` acknowledges those after a round too).
                let upTo = relayBoard.host.durablePrefix(of: replica)
                relayBoard.whenAcknowledgeable { [self] in acknowledge(replica: replica, upTo: upTo) }
            }
            await waitWhileThrottled()
            let wait = spend(events: events.count)
            if wait > 0 { await Self.holdBack(wait) }
        } catch {
            state.withLock { $0.nativeInFlight = max(0, $0.nativeInFlight - 1) }
            close(error: error)
            return
        }
    }

    /// The events of a native frame, signed by the replica's key for this board (`NativeFrame`:
    /// checked first, so a frame of someone else's replica costs one signature check), checked
    /// as a journal reader checks a segment (bounded before inflating, checksums, inflate, body
    /// rules: `SegmentMessage`) and as a writer checks an event (payload rules). Clocks are
    /// checked by the host, against what is new.
    static func nativeEvents(_ frame: [UInt8], replica: ReplicaID, key: [UInt8], board: BoardName) throws(RelayError) -> [Event] {
        let message: SegmentMessage
        do {
            let bytes = try NativeFrame.open(frame, board: board.text, publicKey: key)
            message = try SegmentMessage(decoding: bytes, limits: WireLimits.nativeFrame)
        } catch { throw .refusedFrame(error.reason) }
        guard message.replica == replica else {
            throw .refusedFrame("it holds events of replica \(message.replica.hex); this connection's hello named \(replica.hex)")
        }
        return try checked(message.events(), replica: replica)
    }

    /// A native frame's events, each of the hello's replica and valid as `journal record`
    /// checks a payload.
    static func checked(_ events: [Event], replica: ReplicaID) throws(RelayError) -> [Event] {
        for event in events {
            guard event.id.replica == replica else {
                throw .refusedFrame("seq \(event.id.seq): it names replica \(event.id.replica.hex); this connection's hello named \(replica.hex)")
            }
            do { try event.payload.validate() } catch { throw .refusedFrame("seq \(event.id.seq): \(error)") }
        }
        return events
    }

    /// Native frames of this connection are durable (or failed): no longer in flight.
    func nativeFramesSettled(_ count: Int) {
        let throttled = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.nativeInFlight = max(0, state.nativeInFlight - count)
            // Rounds settle a connection's frames in the order they were accepted, but a frame
            // all held settles at once: the sum may run ahead for a while, never past zero,
            // and is exact once everything is settled.
            for _ in 0..<min(count, state.nativeFrameEvents.count) {
                state.nativeEventsInFlight -= state.nativeFrameEvents.removeFirst()
            }
            defer { state.throttled = nil }
            return state.throttled
        }
        throttled?.resume()
    }

    /// Every event 1…`upTo` of the client's replica is durable: an ack by seq (after the
    /// catch-up, if one is under way; acks only grow).
    func acknowledge(replica: ReplicaID, upTo: UInt64) {
        let oldest = state.withLock { state -> Double? in
            guard upTo > state.replicaAcked else { return nil }
            state.replicaAcked = upTo
            if case .catchingUp = state.phase {
                state.heldReplicaAck = upTo
            } else {
                send(.replicaAck(replica: replica, upTo: upTo), answer: true, &state)
            }
            let covered = state.nativeArrivals.prefix { $0.lastSeq <= upTo }
            state.nativeArrivals.removeFirst(covered.count)
            return covered.first?.at
        }
        // The latency of the oldest frame this ack covers, as for a text round.
        if let oldest { relayBoard.recordAckLatency(since: oldest) }
    }
}
