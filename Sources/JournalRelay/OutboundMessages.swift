import JournalPlatform
import JournalWire

/// A connection's messages to its client, in two queues: what answers the client's own frames
/// (acks, the errors of refused frames, the echo of its events) goes out before the board's
/// traffic queued earlier (other clients' events, what sync brought, the catch-up's end).
///
/// In one ordered stream an honest client waits for its ack behind every event broadcast
/// before it: 16.8 s behind a 140,000-point flood (docs/history/PERFORMANCE-RUNS.md, "Trust on the live
/// path"). Only what is still queued here can be overtaken, not what the socket already
/// carries (docs/history/PERFORMANCE-RUNS.md, "An honest ack right after a flood"). Others' events carry
/// their own place in the drawing, so their order against this client's acks tells the
/// client nothing. What does order is kept: a barrier in the traffic (`caughtUp`, and the
/// acks held through a catch-up) keeps every answer behind it until it is out, so no ack
/// comes before `caughtUp` and acks only grow (one a later ack overtook anyway is dropped).
///
/// One reader (the connection's socket writer); any number of writers. `@unchecked Sendable`:
/// all state is behind `state`'s lock.
public final class OutboundMessages: AsyncSequence, @unchecked Sendable {
    public typealias Element = String
    public typealias Failure = Never

    /// What an ack message says, for dropping one that a later ack overtook.
    enum Ack: Equatable {
        case frames(UInt64)
        case replica(UInt64)
    }

    private struct Entry {
        var text: String
        var ack: Ack?
        var barrier: Bool
        /// A sign of life (`WireLimits.signOfLifeSeconds`): the last ack again, sent even
        /// though it does not grow, unless a larger one went out meanwhile.
        var repeated = false
    }

    private struct State {
        var answers = Queue()
        var traffic = Queue()
        /// Barriers waiting in `traffic`: answers wait behind them.
        var barriersInTraffic = 0
        var lastFramesAck: UInt64 = 0
        var lastReplicaAck: UInt64 = 0
        var finished = false
        var waiter: CheckedContinuation<String?, Never>?
        /// When a message was last queued (monotonic seconds).
        var lastPushed = ProcessInfoLite.monotonicSeconds()
    }

    /// A FIFO without `removeFirst`'s O(n).
    private struct Queue {
        var items: [Entry] = []
        var head = 0
        var count: Int { items.count - head }
        mutating func append(_ entry: Entry) { items.append(entry) }
        mutating func popFirst() -> Entry? {
            guard head < items.count else { return nil }
            let entry = items[head]
            head += 1
            if head >= 1024 && head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
            return entry
        }
    }

    private let state = Locked(State())
    /// Messages each queue may hold before a push is refused (the connection then closes).
    let limit: Int
    /// Asked as an ack is taken for the socket: false drops it. A node's lease is checked when
    /// the ack is decided, but a node frozen (SIGSTOP, a VM paused) between that check and the
    /// socket write sent the ack on waking, seconds after another node took the board (seen
    /// once by `Tools/ci/cluster/owners.py`); checked again here, and once more on the event
    /// loop as the socket is written (`AckGate` in JournalServe). Called under this queue's
    /// lock: it must not call back into the connection.
    private let mayAcknowledge: (@Sendable () -> Bool)?

    init(limit: Int, mayAcknowledge: (@Sendable () -> Bool)? = nil) {
        self.limit = limit
        self.mayAcknowledge = mayAcknowledge
    }

    /// Queues `text`; `answer`: it answers the client's own frames; `barrier` (traffic only):
    /// answers queued after it wait for it. False when that queue is full (the client stopped
    /// reading) or the messages ended.
    func push(_ text: String, answer: Bool, ack: Ack? = nil, barrier: Bool = false, repeated: Bool = false) -> Bool {
        let (queued, wake) = state.withLock { state -> (Bool, (CheckedContinuation<String?, Never>, String)?) in
            guard !state.finished else { return (false, nil) }
            state.lastPushed = ProcessInfoLite.monotonicSeconds()
            let entry = Entry(text: text, ack: ack, barrier: !answer && barrier, repeated: repeated)
            if answer {
                guard state.answers.count < limit else { return (false, nil) }
                state.answers.append(entry)
            } else {
                guard state.traffic.count < limit else { return (false, nil) }
                state.traffic.append(entry)
                if entry.barrier { state.barriersInTraffic += 1 }
            }
            guard let waiter = state.waiter, let next = take(&state) else { return (true, nil) }
            state.waiter = nil
            return (true, (waiter, next))
        }
        if let (waiter, next) = wake { waiter.resume(returning: next) }
        return queued
    }

    /// Queues an ephemeral `text` (presence) as traffic unless `room` messages are waiting
    /// already: it is dropped then, and never closes the connection.
    func pushEphemeral(_ text: String, room: Int) {
        let wake = state.withLock { state -> (CheckedContinuation<String?, Never>, String)? in
            guard !state.finished, state.answers.count + state.traffic.count < Swift.min(room, limit) else { return nil }
            state.lastPushed = ProcessInfoLite.monotonicSeconds()
            state.traffic.append(Entry(text: text, ack: nil, barrier: false))
            guard let waiter = state.waiter, let next = take(&state) else { return nil }
            state.waiter = nil
            return (waiter, next)
        }
        if let (waiter, next) = wake { waiter.resume(returning: next) }
    }

    /// No more messages: the reader gets what is queued, then nil.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<String?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.answers.count + state.traffic.count == 0 ? state.waiter : nil
        }
        waiter?.resume(returning: nil)
    }

    /// Messages queued and not yet taken.
    var count: Int { state.withLock { $0.answers.count + $0.traffic.count } }

    /// When a message was last queued for the client (monotonic seconds).
    var lastPushed: Double { state.withLock { $0.lastPushed } }

    /// The next message to send, answers first (see the type's comment); nil once finished and
    /// empty, or when the reading task is cancelled.
    func next() async -> String? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
                let ready = state.withLock { state -> String?? in
                    if let text = take(&state) { return .some(text) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if case .some(let text) = ready { continuation.resume(returning: text) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<String?, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    private func take(_ state: inout State) -> String? {
        while true {
            let entry: Entry
            if state.barriersInTraffic == 0, let answer = state.answers.popFirst() {
                entry = answer
            } else if let queued = state.traffic.popFirst() {
                if queued.barrier { state.barriersInTraffic -= 1 }
                entry = queued
            } else {
                return nil
            }
            if entry.ack != nil, let mayAcknowledge, !mayAcknowledge() { continue }
            switch entry.ack {
            case .frames(let upTo)?:
                guard upTo > state.lastFramesAck || (entry.repeated && upTo == state.lastFramesAck) else { continue }
                state.lastFramesAck = upTo
            case .replica(let upTo)?:
                guard upTo > state.lastReplicaAck || (entry.repeated && upTo == state.lastReplicaAck) else { continue }
                state.lastReplicaAck = upTo
            case nil:
                break
            }
            return entry.text
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let messages: OutboundMessages
        public mutating func next() async -> String? { await messages.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(messages: self) }
}
