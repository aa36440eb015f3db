import JournalFormat
import JournalLive
import JournalPlatform
import JournalWire

/// A text-mode client's acks: frames staged as appended, acknowledged round after round once
/// durable (and, under `--ack shared`, in the store), and the reader held while too many wait.
extension RelayConnection {
    /// Queues events for the acker and makes sure one runs.
    func stage(_ events: [Event], through frame: UInt64) {
        let start = state.withLock { state -> Bool in
            if state.pendingSince == nil { state.pendingSince = ProcessInfoLite.monotonicSeconds() }
            state.pending.append(contentsOf: events)
            state.textEventsInFlight += events.count
            state.appendedThrough = max(state.appendedThrough, frame)
            guard !state.ackerRunning, state.appendedThrough > state.acknowledged else { return false }
            state.ackerRunning = true
            return true
        }
        if start { acknowledgeNextRound() }
    }

    /// Whether a frame's `receive` waits for acks (the client is at a limit of what it may
    /// have unacknowledged).
    var isThrottled: Bool { state.withLock { $0.throttled != nil } }

    func waitWhileThrottled() async {
        // Checked again after each wake-up: an ack may cover only part of what is in flight.
        while state.withLock({ Self.mustWait($0) }) {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let wait = state.withLock { state -> Bool in
                    guard Self.mustWait(state) else { return false }
                    state.throttled = continuation
                    return true
                }
                if !wait { continuation.resume() }
            }
        }
    }

    /// Whether a client at a limit of what it may have unacknowledged waits (an open
    /// connection; refused frames were answered at once, so only frames waiting for an ack
    /// count).
    private static func mustWait(_ state: State) -> Bool {
        if case .closed = state.phase { return false }
        let frames = state.appendedThrough - state.acknowledged + UInt64(state.nativeInFlight)
        let events = state.textEventsInFlight + state.nativeEventsInFlight
        return frames >= UInt64(WireLimits.maxUnacknowledgedFrames) || events >= WireLimits.maxUnacknowledgedEvents
    }

    /// Events this client sent that are not acknowledged yet.
    var unacknowledgedEvents: Int { state.withLock { $0.textEventsInFlight + $0.nativeEventsInFlight } }

    /// The acker: one round at a time, each covering every frame appended before it, acked
    /// right after the board's fsync, on its committer thread (no task hop per commit: at a
    /// pen's 240 Hz a relay acknowledges hundreds of commits a second per board).
    func acknowledgeNextRound() {
        let round = state.withLock { state -> (events: [Event], through: UInt64, since: Double?)? in
            guard state.appendedThrough > state.acknowledged else {
                state.ackerRunning = false
                return nil
            }
            let events = state.pending
            state.pending.removeAll()
            defer { state.pendingSince = nil }
            return (events, state.appendedThrough, state.pendingSince)
        }
        guard let round else { return }
        relayBoard.whenAcknowledgeable(afterDurable: { [self] outcome in
            if case .failure(let error) = outcome {
                // Nothing of this round is acknowledged: the client resends it to a relay
                // whose journal works.
                close(.unavailable, "board \(relayBoard.name): the journal failed, nothing after frame \(state.withLock { $0.acknowledged }) is acknowledged: \(error)")
                state.withLock { $0.ackerRunning = false }
                return
            }
            let throttled = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.acknowledged = round.through
                state.textEventsInFlight -= round.events.count
                // An echoing client gets its events before the ack that covers them: once a
                // frame is acknowledged, its events are in the client's copy of the board.
                // Both go ahead of the board's traffic queued before them (`OutboundMessages`).
                if state.hello??.echo == true {
                    deliverLocked(round.events, texts: nil, answer: true, &state)
                    // Held events wait for the catch-up to end; so does the ack that covers them.
                    if case .catchingUp = state.phase {
                        state.heldAck = round.through
                    } else {
                        send(.ack(upTo: round.through), answer: true, &state)
                    }
                } else {
                    send(.ack(upTo: round.through), answer: true, &state)
                }
                let throttled = state.throttled
                state.throttled = nil
                return throttled
            }
            throttled?.resume()
            relayBoard.metrics.acknowledged(events: round.events.count)
            if let since = round.since { relayBoard.recordAckLatency(since: since) }
            // Even when this client is gone: its events are durable and the others want them.
            relayBoard.broadcast(round.events, from: id)
            acknowledgeNextRound()
        })
    }
}
