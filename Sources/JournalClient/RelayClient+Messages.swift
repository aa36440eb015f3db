import JournalFormat
import JournalPlatform
import JournalReplay
import JournalWire

/// What the relay sends, folded: acks settle what was sent, the catch-up's `have` settles a
/// native client's events by id, events fold into the drawing.
extension RelayClient {
    func handle(_ message: ServerMessage) throws(WireError) {
        switch message {
        case .replicaAck(let replica, let upTo):
            guard replica == options.replica else { break }
            let pending = settle { state in state.named.removeAll { $0.id.seq <= upTo } }
            report(.acknowledged(pending: pending))
        case .ack(let upTo):
            let pending = settle { state in
                for entry in state.outgoing where (entry.frame ?? .max) <= upTo {
                    // Its echo came before this ack and was counted.
                    if let count = state.unsettledLines[entry.line] { state.unsettledLines[entry.line] = count > 1 ? count - 1 : nil }
                }
                state.outgoing.removeAll { ($0.frame ?? .max) <= upTo }
                if !state.outgoing.contains(where: \.written) { state.unsettledLines = [:] }
            }
            report(.acknowledged(pending: pending))
        case .error(let frame?, _, let reason):
            var line: String?
            _ = settle { state in
                guard let index = state.outgoing.firstIndex(where: { $0.frame == frame }) else { return }
                line = state.outgoing.remove(at: index).line
            }
            if let line { report(.refused(line: line, reason: reason)) }
        case .error(nil, _, _):
            break  // the relay closes the socket next; `connectOnce` reports the reason
        case .caughtUp(let events, let have, let viewOnly):
            state.withLock { $0.viewOnly = viewOnly }
            if let replica = options.replica {
                // Exact by id: what the relay holds of this client's events is durable there.
                let held = have[replica]
                _ = settle { state in
                    state.named.removeAll { held.contains($0.id.seq) }
                    // Seqs the relay holds that this client never named (it restarted with its
                    // id, or something else wrote as it): new names follow them.
                    state.lastNamedSeq = max(state.lastNamedSeq, held.highest ?? 0)
                }
            }
            recordedWithoutAck()
            report(.caughtUp(events: events))
        case .event:
            if let event = try message.event() { fold([event]) }
        }
    }

    /// At the end of a catch-up: a frame written before whose events came back (in this
    /// catch-up, or live before its ack was lost with the connection) was recorded: it is
    /// settled, not sent again. Its events are matched by content: a point's stroke id is
    /// this client's random 128 bits, so an identical line with the same samples is that frame.
    /// Then the writer goes on with the rest.
    private func recordedWithoutAck() {
        let wake = state.withLock { state -> AsyncStream<Void>.Continuation? in
            state.caughtUp = true
            return state.wake
        }
        _ = settle { state in
            var lines = state.unsettledLines
            state.outgoing.removeAll { entry in
                guard entry.written, let count = lines[entry.line], count > 0 else { return false }
                lines[entry.line] = count - 1
                return true
            }
            state.unsettledLines = [:]
        }
        wake?.yield()
    }

    /// Folds the events not held yet (a catch-up and live events may both bring one).
    func fold(_ events: [Event]) {
        let changes = state.withLock { state -> [DrawingChange] in
            var changes: [DrawingChange] = []
            let collecting = state.outgoing.contains(where: \.written)
            for event in events where !state.have.contains(event.id) {
                state.have.insert(event.id)
                state.clock = max(state.clock, event.lamport)
                if collecting { state.unsettledLines[ClientFrame.text(for: event.payload), default: 0] += 1 }
                // A drawing folded only here, from no replay, always has every point's key.
                _ = state.drawing.apply(event, changes: &changes)
            }
            return changes
        }
        if !changes.isEmpty { report(.changed(changes)) }
    }

    /// Folds a catch-up message: a block is counted into `have` as one range, and its events
    /// are checked one by one only when some of them are held already.
    func fold(_ message: SegmentMessage) {
        let changes = state.withLock { state -> [DrawingChange] in
            var changes: [DrawingChange] = []
            let collecting = state.outgoing.contains(where: \.written)
            for block in message.blocks where block.count > 0 {
                let seqs = block.firstSeq...block.firstSeq + UInt64(block.count - 1)
                let fresh = !state.have[message.replica].intersects(seqs)
                for event in block.events(replica: message.replica) where fresh || !state.have.contains(event.id) {
                    state.clock = max(state.clock, event.lamport)
                    _ = state.drawing.apply(event, changes: &changes)
                    if collecting { state.unsettledLines[ClientFrame.text(for: event.payload), default: 0] += 1 }
                }
                state.have.insert(message.replica, seqs)
            }
            return changes
        }
        if !changes.isEmpty { report(.changed(changes)) }
    }

    /// Removes settled frames (acknowledged or refused); wakes `waitUntilAcknowledged` when
    /// none is left. Returns how many are pending.
    private func settle(_ remove: (inout State) -> Void) -> Int {
        let (pending, waiters) = state.withLock { state in
            remove(&state)
            guard state.isSettled else { return (state.pendingCount, [CheckedContinuation<Void, Never>]()) }
            defer { state.acknowledgedWaiters = [] }
            return (0, state.acknowledgedWaiters)
        }
        for waiter in waiters { waiter.resume() }
        return pending
    }
}

/// What `RelayClient.waitUntilAcknowledged(within:)` throws: payloads not acknowledged, and why.
public struct RelayClientWaitError: Error, Sendable, CustomStringConvertible {
    /// Payloads sent and not acknowledged (nor refused).
    public let pending: Int
    /// The time given up after; nil when the client stopped first (closed, or refused for good).
    public let seconds: Double?
    /// The last reason a connection ended or was refused, if any did.
    public let problem: String?

    public var description: String {
        let when = seconds.map { "within \($0) s" } ?? "before the client stopped"
        return "\(pending) payload(s) not acknowledged \(when)" + (problem.map { ": \($0)" } ?? " (no connection got as far as an answer)")
    }
}
