import JournalFormat
import JournalLive
import JournalPlatform
import JournalStorage
import JournalWire

/// One client on one board, without the network: the server feeds it the client's frames
/// (`receive`) and writes what `outbound` yields, in order.
///
/// A frame's events are appended to the board at once (the board commits every few
/// milliseconds, one fsync for every connection's events); the acker hears from the board's
/// `whenDurable` right after the fsync, then acks the frames it covered and broadcasts their
/// events to the board's other clients. So what anyone is told about is durable (DESIGN.md,
/// invariant 10).
public final class RelayConnection: Sendable {
    public let id: Int
    public let relayBoard: RelayBoard
    /// What this client may do (invariant 12): checked before any of its frames is read.
    public let grant: Grant
    /// The text frames to send: answers to the client's own frames first, then the board's
    /// traffic, each in order (`OutboundMessages`). Ends when the connection is closed; then
    /// `closeReason` tells whether the client should get a last error.
    /// The client promised that its first frame is a hello (`WireLimits.helloQuery`).
    public let helloPromised: Bool
    public let outbound: OutboundMessages
    let state = Locked(State())

    enum Phase {
        /// Registered; live events wait here until the catch-up is sent.
        case catchingUp(held: [Event])
        case live
        case closed
    }

    struct State {
        var phase = Phase.catchingUp(held: [])
        /// What the catch-up sent or covered and what the client said it held: live events
        /// among them are not sent again. A round's events are durable, so a catch-up reads
        /// them, before their broadcast reaches the connections; a catch-up that ends in
        /// between would otherwise be followed by the same events live.
        var caughtUpWith = Have()
        /// Events of this connection's own frames recorded before it went live. A client
        /// without echo is never sent them, though a catch-up may read them from the journal
        /// (it draws while its catch-up runs).
        var ownBeforeLive = Have()
        /// Text frames whose events are being recorded and are not yet in `ownBeforeLive`: a
        /// catch-up waits for them before it trusts it (one of their events may be durable
        /// and read already).
        var framesRecording = 0
        var framesReceived: UInt64 = 0
        /// The newest frame whose events are appended (refused frames never count here).
        var appendedThrough: UInt64 = 0
        var acknowledged: UInt64 = 0
        var pending: [Event] = []
        /// When the oldest frame of `pending` arrived (monotonic seconds): its ack's latency.
        var pendingSince: Double?
        var ackerRunning = false
        /// The reader waits here while too many frames are unacknowledged.
        var throttled: CheckedContinuation<Void, Never>?
        var closeRefusal: Refusal?
        /// Seconds the connection's reading was held back by its event budget.
        var secondsHeldBack = 0.0
        /// What the operator's log says of the close, when it says more than the client is told
        /// (server paths, the operating system's error).
        var closeDetail: String?
        /// Whether the client said what it has: nil until decided (its first frame, or
        /// `WireLimits.helloWaitMilliseconds` without one); `.some(nil)`: no hello.
        var hello: Hello??
        var helloWaiter: CheckedContinuation<Hello?, Never>?
        var sawFirstFrame = false
        /// When this connection's catch-up took its place among the relay's catch-ups.
        var catchUpSince: Double?
        /// An echoing client's latest ack while its events are held during the catch-up.
        var heldAck: UInt64?
        /// Native frames accepted and not yet durable.
        var nativeInFlight = 0
        /// Events of the frames above, oldest first (a frame whose events were all held counts
        /// none), and their sum; each frame's last seq and arrival, for the ack latency.
        var nativeFrameEvents: [Int] = []
        var nativeEventsInFlight = 0
        var nativeArrivals: [(lastSeq: UInt64, at: Double)] = []
        /// Events of text frames appended and not yet acknowledged.
        var textEventsInFlight = 0
        /// The last ack by seq sent (they only grow), and one held during the catch-up.
        var replicaAcked: UInt64 = 0
        var heldReplicaAck: UInt64?
        /// Presence frames this client may still send now (a token bucket:
        /// `WireLimits.presenceBurst`, refilled at `presencePerSecond`), and when it was refilled.
        var presenceAllowance = WireLimits.presenceBurst
        var presenceRefilled = ProcessInfoLite.monotonicSeconds()
        var provedKey = false
        /// The native hello passed every check (a refusal meanwhile closes the connection).
        var nativeAdmitted = false
    }

    /// The nonce this connection's client was challenged with (`HelloProof`), or nil when it
    /// did not ask for one: its native hello's key is then proven only by its signed frames.
    public let challenge: [UInt8]?

    init(id: Int, board: RelayBoard, grant: Grant, helloPromised: Bool, challenge: [UInt8]? = nil) {
        self.id = id
        self.relayBoard = board
        self.grant = grant
        self.helloPromised = helloPromised
        self.challenge = challenge
        outbound = OutboundMessages(limit: WireLimits.maxQueuedMessages, mayAcknowledge: board.acknowledgeGate)
        budget = board.eventBudgets?.budget(for: grant)
    }

    /// What this connection (with the others of its token) may still send
    /// (`RelayLimits.maxEventsPerSecond`); nil: no bound.
    private let budget: Locked<EventBudget>?

    /// Seconds this connection's reading was held back by its budget, in all.
    public var secondsHeldBack: Double { state.withLock { $0.secondsHeldBack } }

    /// Spends `count` events of the connection's budget: how long the caller (the server's
    /// read loop for this connection) must hold back before reading its next frame, which then
    /// waits in TCP; 0 within the budget. Synchronous, so a frame within it costs no async call.
    func spend(events count: Int) -> Double {
        guard let budget, count > 0 else { return 0 }
        let wait = budget.withLock { $0.take(count, now: ProcessInfoLite.monotonicSeconds()) }
        if wait > 0 { state.withLock { $0.secondsHeldBack += wait } }
        return wait
    }

    static func holdBack(_ seconds: Double) async {
        try? await Task.sleep(for: .milliseconds(Int((seconds * 1000).rounded(.up))))
    }

    /// Why the relay ended the connection (a last error for the client, with its code), or nil.
    public var closeRefusal: Refusal? { state.withLock { $0.closeRefusal } }
    /// The words of `closeRefusal`.
    public var closeReason: String? { closeRefusal?.message }
    /// The close as the operator's log tells it: `closeReason` and what the client is not told.
    public var closeDetail: String? { state.withLock { $0.closeDetail ?? $0.closeRefusal?.message } }

    /// Since when this connection's catch-up holds one of the relay's places
    /// (`RelayLimits.maxConcurrentCatchUps`), while others wait for one; nil otherwise. A
    /// server ends a connection that holds a place others wait for and reads too slowly
    /// (`RelayServer`): it reconnects, says what it got, and the rest comes later.
    public var catchUpHeldWhileOthersWait: Double? {
        guard relayBoard.catchUps.counts.waiting > 0 else { return nil }
        return state.withLock { $0.catchUpSince }
    }

    // MARK: Catch-up

    /// What the client holds, from its hello: waits for its first frame, at most
    /// `WireLimits.helloWaitMilliseconds`. Nil: no hello (the first frame was an event line,
    /// or none came in time, or the connection closed); the client gets the whole board.
    ///
    /// A client that promised a hello (`helloPromised`) waits for it alone: nothing else decides
    /// for it but its first frame, so however late the relay reads that hello, the catch-up is
    /// exact. Without a first frame within `WireLimits.promisedHelloWaitMilliseconds` the
    /// connection is closed with the reason.
    public func awaitHello() async -> Hello? {
        let wait = helloPromised ? WireLimits.promisedHelloWaitMilliseconds : WireLimits.helloWaitMilliseconds
        let timer = Task {
            // In ticks, not one sleep: on a starved machine (every thread of the pool busy for
            // longer than the wait) one sleep can end before the reader task, starved too, reads
            // a hello already in the socket, and a client that holds nearly all the board is
            // then sent all of it. So the wait also lasts 20 ticks of this task's own run time,
            // and the reader gets its turns between them.
            let ticks = 20
            let deadline = ContinuousClock.now + .milliseconds(wait)
            var ticked = 0
            while ticked < ticks || ContinuousClock.now < deadline {
                do { try await Task.sleep(for: .milliseconds(wait / ticks)) } catch { return }
                ticked += 1
            }
            if self.helloPromised {
                self.close(.tooSlow, "no hello within \(wait / 1000) s of opening the socket, though its address promised one (?\(WireLimits.helloQuery))")
            } else {
                self.decideHello(nil)
            }
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Hello?, Never>) in
            let decided = state.withLock { state -> Hello?? in
                if let hello = state.hello { return .some(hello) }
                state.helloWaiter = continuation
                return nil
            }
            if let decided { continuation.resume(returning: decided) }
        }
    }

    /// The first decision stands; later ones (the timer after a hello) do nothing.
    func decideHello(_ hello: Hello?) {
        let waiter = state.withLock { state -> CheckedContinuation<Hello?, Never>? in
            guard state.hello == nil else { return nil }
            state.hello = .some(hello)
            defer { state.helloWaiter = nil }
            return state.helloWaiter
        }
        waiter?.resume(returning: hello)
    }

    // MARK: Frames from the client

    /// Handles one text frame: refused (an error names it; the connection stays open) or
    /// appended to the board and acknowledged once durable. Returns after appending, once
    /// fewer than `WireLimits.maxUnacknowledgedFrames` frames (and `maxUnacknowledgedEvents`
    /// events) are unacknowledged, so a server that calls it before reading the next frame
    /// throttles a flooding client.
    public func receive(text: String) async {
        // The first frame may be a hello, never numbered: frames count from the one after it.
        // Even one read after `helloWaitMilliseconds` (a slow reader, a loaded machine): the
        // client numbers its frames from the one after its hello, and an ack or an error must
        // name the frame the client means. The catch-up then is the whole board (the client
        // dedups by id); the hello's options still hold from here on.
        let first = state.withLock { state -> Bool in
            defer { state.sawFirstFrame = true }
            return !state.sawFirstFrame
        }
        if first {
            do throws(WireError) {
                if let hello = try ClientFrame.hello(in: text) {
                    if hello.proof != nil, challenge == nil {
                        close(.badRequest, "hello: a \"proof\" answers a challenge: open the socket with ?\(HelloProof.query) to get one")
                        return
                    }
                    if hello.replica == relayBoard.board.replica {
                        close(.badRequest, "hello: replica \(relayBoard.board.replica.hex) is the relay's own (its text-mode writer): a native client names a replica of its own")
                        return
                    }
                    decideHello(hello)
                    state.withLock { state in
                        if case .some(.none) = state.hello { state.hello = .some(hello) }
                    }
                    if let replica = hello.replica { await admitNative(hello, replica: replica) }
                    return
                }
            } catch {
                close(.badRequest, error.reason)
                return
            }
            decideHello(nil)
        }
        // Presence is ephemeral: never numbered, recorded or acknowledged.
        if text.hasPrefix(Presence.framePrefix) {
            receivePresence(text)
            return
        }
        // Native mode's events in text (the drawing page): not numbered, as binary ones.
        if NativeTextFrame.isNative(text), nativeReplica != nil {
            await receiveNative { replica, key, board throws(RelayError) in
                let events: [Event]
                do throws(WireError) { events = try NativeTextFrame.open(text, board: board.text, publicKey: key, limits: WireLimits.nativeFrame) } catch {
                    throw .refusedFrame(error.reason)
                }
                return try Self.checked(events, replica: replica)
            }
            return
        }
        // After the relay closed the connection (it fell behind, the board failed), frames
        // still in the socket are not recorded: nobody would acknowledge them.
        let frame = state.withLock { state -> UInt64? in
            if case .closed = state.phase { return nil }
            state.framesReceived += 1
            return state.framesReceived
        }
        guard let frame else { return }
        // A node whose lease lapsed records nothing more (the client resends to the owner).
        guard relayBoard.holdsLease() else { return }
        guard grant.allows(.draw) else {
            // Not even parsed: a viewer's frames cost the relay nothing but this answer.
            refuse(frame: frame, .viewOnly, viewOnly("frame \(frame) not recorded"))
            return
        }
        if let refusal = relayBoard.textModeRefusal {
            refuse(frame: frame, refusal.code, "frame \(frame) not recorded: " + refusal.message)
            return
        }
        let payloads: [Payload]
        do {
            payloads = try ClientFrame.payloads(of: text)
        } catch {
            if (try? ClientFrame.hello(in: text)) != nil {
                refuse(frame: frame, .badRequest, "a hello must be the first frame, sent within \(WireLimits.helloWaitMilliseconds) ms of opening the socket; this connection was caught up with the whole board instead")
            } else {
                refuse(frame: frame, .badRequest, error.reason)
            }
            return
        }
        var events: [Event] = []
        events.reserveCapacity(payloads.count)
        state.withLock { $0.framesRecording += 1 }
        for payload in payloads {
            do {
                events.append(try relayBoard.board.record(payload))
            } catch {
                // Events of this frame recorded before the failure stay recorded (and are
                // acknowledged with the frames before it); the message says how many. The
                // client drops the frame, so they are not its own: a catch-up may send them.
                let done = events.count
                finishedRecording(events, own: false)
                stage(events, through: frame - 1)
                if case .invalidEvent = error {
                    refuse(frame: frame, .badRequest, done == 0 ? "not recorded: \(error)" : "recorded \(done) of \(payloads.count) events, then: \(error)")
                } else {
                    // The board failed (a full disk, no descriptor left), not the frame: a
                    // refusal would make the client drop a good frame for good. Closed instead,
                    // the client keeps it and resends it to the board the relay reopens.
                    close(.unavailable, "board \(relayBoard.name.text): frame \(frame) not recorded, the journal failed: \(error); reconnect and resend what was not acknowledged")
                }
                return
            }
        }
        finishedRecording(events, own: true)
        stage(events, through: frame)
        await waitWhileThrottled()
        let wait = spend(events: events.count)
        if wait > 0 { await Self.holdBack(wait) }
    }

    /// A presence goes to the board's other clients, at most `WireLimits.presencePerSecond`
    /// (after a burst): more are dropped, which costs a moving cursor a step, never anything
    /// recorded. Any client may send it, a viewer too: it says who is looking. A malformed
    /// one closes the connection with the reason, as a malformed hello does.
    private func receivePresence(_ text: String) {
        let presence: Presence
        do throws(WireError) {
            guard let parsed = try Presence.parse(text) else { return }
            presence = parsed
        } catch {
            close(.badRequest, error.reason)
            return
        }
        let allowed = state.withLock { state -> Bool in
            if case .closed = state.phase { return false }
            let now = ProcessInfoLite.monotonicSeconds()
            state.presenceAllowance = min(
                WireLimits.presenceBurst, state.presenceAllowance + (now - state.presenceRefilled) * WireLimits.presencePerSecond)
            state.presenceRefilled = now
            guard state.presenceAllowance >= 1 else { return false }
            state.presenceAllowance -= 1
            return true
        }
        if allowed { relayBoard.sharePresence(presence.message(from: id), from: id) }
    }

    /// Another client's presence, for a live client that asked for presence; dropped when
    /// this client has `WireLimits.presenceQueueRoom` messages waiting (it needs the board's
    /// events first, and the next presence says where the pointer is anyway).
    func deliverPresence(_ message: String) {
        state.withLock { state in
            guard case .live = state.phase, state.hello??.presence == true else { return }
            outbound.pushEphemeral(message, room: WireLimits.presenceQueueRoom)
        }
    }

    func viewOnly(_ what: String) -> String {
        "\(what): this connection may only view board \(relayBoard.name.text) (its token's scope is \(grant.scope)); drawing needs a token of scope draw"
    }

    func refuse(frame: UInt64, _ code: RefusalCode, _ message: String) {
        relayBoard.metrics.refused(code)
        state.withLock { send(.error(frame: frame, code: code, message: message), answer: true, &$0) }
    }

    // MARK: Events for this client

    /// `texts`: the events' `ServerMessage` texts, when a broadcast encoded them once for
    /// every connection.
    func deliver(_ events: [Event], texts: [String]? = nil) {
        state.withLock { deliverLocked(events, texts: texts, &$0) }
    }

    /// `answer`: the events are this client's own, echoed with the ack that covers them.
    func deliverLocked(_ events: [Event], texts: [String]?, answer: Bool = false, _ state: inout State) {
        switch state.phase {
        case .catchingUp(var held):
            guard held.count + events.count <= WireLimits.maxQueuedMessages else {
                closeLocked(Refusal(.tooSlow, "the board moved faster than this connection could catch up; reconnect"), &state)
                return
            }
            held.append(contentsOf: events)
            state.phase = .catchingUp(held: held)
        case .live:
            for (index, event) in events.enumerated() where !state.caughtUpWith.contains(event.id) {
                if let texts {
                    send(text: texts[index], answer: answer, &state)
                } else {
                    send(.event(event), answer: answer, &state)
                }
            }
        case .closed:
            return
        }
    }

    /// `answer`: it answers the client's own frames, and goes ahead of the board's traffic.
    func send(_ message: ServerMessage, answer: Bool = false, repeated: Bool = false, _ state: inout State) {
        let ack: OutboundMessages.Ack?
        var barrier = false
        switch message {
        case .ack(let upTo): ack = .frames(upTo)
        case .replicaAck(_, let upTo): ack = .replica(upTo)
        case .caughtUp: (ack, barrier) = (nil, true)
        default: ack = nil
        }
        send(text: message.text, answer: answer, ack: ack, barrier: barrier || ack != nil, repeated: repeated, &state)
    }

    func send(text: String, answer: Bool = false, ack: OutboundMessages.Ack? = nil, barrier: Bool = false, repeated: Bool = false,
              _ state: inout State) {
        if case .closed = state.phase { return }
        if !outbound.push(text, answer: answer, ack: ack, barrier: barrier, repeated: repeated) {
            closeLocked(Refusal(.tooSlow, "this connection fell \(WireLimits.maxQueuedMessages) messages behind; reconnect to catch up"), &state)
        }
    }

    // MARK: Closing

    /// Ends the connection: no more messages; its unacknowledged frames are still acknowledged
    /// to nobody and broadcast to the others once durable. Called by the server when the
    /// socket closes (without a refusal), and by the relay with one the client should read.
    public func close(_ refusal: Refusal? = nil) {
        state.withLock { closeLocked(refusal, &$0) }
    }

    public func close(_ code: RefusalCode, _ message: String) {
        close(Refusal(code, message))
    }

    /// Closes with `error`: the client is told `error.refusal`, the log the whole of it.
    public func close(error: RelayError) {
        state.withLock { state in
            if case .closed = state.phase { return }
            state.closeDetail = error.description
            closeLocked(error.refusal, &state)
        }
    }

    func closeLocked(_ refusal: Refusal?, _ state: inout State) {
        if case .closed = state.phase { return }
        state.phase = .closed
        if state.closeRefusal == nil { state.closeRefusal = refusal }
        if let refusal { relayBoard.metrics.refused(refusal.code) }
        relayBoard.remove(id)
        outbound.finish()
        // A writer waiting for the hello goes on (and finds the connection closed).
        if state.hello == nil { state.hello = .some(nil) }
        state.helloWaiter?.resume(returning: nil)
        state.helloWaiter = nil
        // A reader waiting for acks must not wait for a connection that is gone.
        state.throttled?.resume()
        state.throttled = nil
    }
}
