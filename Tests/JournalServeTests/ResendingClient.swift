import HummingbirdWSClient
import JournalFormat
import JournalPlatform
import JournalTestSupport
import JournalWire
import Logging
import NIOWebSocket

/// A drawing client that outlives its relay, as docs/PROTOCOL.md asks of one: it numbers its
/// frames, remembers which ones were acknowledged, and when the connection is lost it
/// reconnects with a hello naming the events it holds and sends again every frame not
/// acknowledged. It also keeps every event message it receives, by id, so a test can compare
/// what it holds with the board's journal.
final class ResendingClient: Sendable {
    let name: String
    /// Every frame this client draws, in order (one event line each).
    let frames: [String]
    private let state = Locked(State())

    struct State {
        /// Frames `0..<acknowledged` are acknowledged. Acks are cumulative and resent frames
        /// keep their order, so the unacknowledged frames are always `acknowledged..<sent`.
        var acknowledged = 0
        var sent = 0
        /// The frame that is frame 1 of the current connection.
        var base = 0
        /// Per frame: how many connections were lost while it was sent and unacknowledged
        /// (each such loss may have left it recorded, to be recorded again when resent).
        var unacknowledgedAtLoss: [Int: Int] = [:]
        /// Event messages received, by id: their lines exactly as the relay sent them.
        var events: [EventID: String] = [:]
        var have = Have()
        /// An event id received a second time (exact catch-up promises none).
        var receivedTwice: [EventID] = []
        /// Connections opened, and lost without this client closing them.
        var connections = 0
        var lost = 0
        /// The last `caughtUp` of the current connection, nil before it.
        var caughtUp: Have?
        /// Error messages and anything else a test should fail on.
        var problems: [String] = []
        /// Set by `finish()`: once everything is acknowledged, close and stop.
        var finishing = false
        /// The connection attempt that may touch this state (0: none): one given up on
        /// (`connectTimeout`) closes at once if its socket ever opens.
        var attempt = 0
    }

    /// A socket that has not opened by then is given up on and tried again. The WebSocket
    /// library's connect can wait for ever on a relay killed mid-handshake (RelayClient's
    /// `Options.connectTimeout` exists for the same reason).
    static let connectTimeout: Duration = .seconds(10)

    /// Whether its hellos ask for its own events back (`"echo":true`).
    let echo: Bool

    init(name: String, frames: [String], echo: Bool = false) {
        self.name = name
        self.frames = frames
        self.echo = echo
    }

    var snapshot: State { state.withLock { $0 } }
    var allAcknowledged: Bool { state.withLock { $0.acknowledged == frames.count } }

    /// Asks `draw` to end once every frame is acknowledged.
    func finish() { state.withLock { $0.finishing = true } }

    /// Draws every frame, `pace` deciding how many to send before each pause, reconnecting
    /// (every `retry`) whenever the connection is lost or cannot be made, until `finish()`
    /// was called and every frame is acknowledged, or the task is cancelled (a test past its
    /// time limit then ends with what the client holds, instead of retrying for ever).
    func draw(port: Int, board: String, pace: @escaping @Sendable () -> (frames: Int, pause: Duration),
              retry: Duration = .milliseconds(20)) async {
        while !Task.isCancelled, !state.withLock({ $0.finishing && $0.acknowledged == frames.count }) {
            await connectOnce(port: port, board: board, pace: pace)
            if !state.withLock({ $0.finishing && $0.acknowledged == frames.count }) { try? await Task.sleep(for: retry) }
        }
    }

    /// One connection with nothing to draw: hello, the events this client lacks, `caughtUp`,
    /// then close. Returns the relay's `have` from `caughtUp`, or nil if none came within `seconds`.
    func catchUp(port: Int, board: String, seconds: Double = 60) async -> Have? {
        let done = Locked(false)
        // The drawing connections' last `caughtUp` is not this one's.
        state.withLock { $0.caughtUp = nil }
        let connection = Task {
            await connectOnce(port: port, board: board, pace: { (0, .milliseconds(5)) }, until: { [state] in
                // Closes once caught up (or once the test gave up waiting).
                done.withLock { $0 } || state.withLock { $0.caughtUp != nil }
            })
        }
        _ = await eventually(within: seconds, every: 10) { state.withLock { $0.caughtUp != nil } }
        done.withLock { $0 = true }
        await connection.value
        return state.withLock { $0.caughtUp }
    }

    /// Opens a connection, says what it holds, resends what is unacknowledged, draws at `pace`,
    /// and returns when the connection ends: lost (the relay died), closed by this client once
    /// `until` holds (by default: finishing and everything acknowledged), or given up on when
    /// its socket has not opened within `connectTimeout`.
    private func connectOnce(port: Int, board: String, pace: @escaping @Sendable () -> (frames: Int, pause: Duration),
                             until: (@Sendable () -> Bool)? = nil) async {
        let attempt = state.withLock { state -> Int in
            state.attempt += 1
            return state.attempt
        }
        let opened = Locked(false)
        let ended = Locked(false)
        let connection = Task {
            await self.connect(attempt: attempt, opened: opened, port: port, board: board, pace: pace, until: until)
            ended.withLock { $0 = true }
        }
        let deadline = ContinuousClock.now + Self.connectTimeout
        while !ended.withLock({ $0 }), !opened.withLock({ $0 }), ContinuousClock.now < deadline {
            // Cancelled (the test is over): a sleep that throws would make this loop spin.
            do { try await Task.sleep(for: .milliseconds(20)) } catch { break }
        }
        // Given up on unless it opened (decided under the lock its socket opens under): it runs
        // on unheeded, and closes at once if it ever opens.
        let givenUp = !ended.withLock({ $0 }) && state.withLock { state -> Bool in
            guard !opened.withLock({ $0 }) else { return false }
            state.attempt = 0
            return true
        }
        if givenUp {
            connection.cancel()
            return
        }
        await connection.value
    }

    /// `connectOnce`'s connection; touches the state only while it is the current `attempt`.
    private func connect(attempt: Int, opened: Locked<Bool>, port: Int, board: String,
                         pace: @escaping @Sendable () -> (frames: Int, pause: Duration),
                         until: (@Sendable () -> Bool)?) async {
        let closedByUs = Locked(false)
        let done: @Sendable () -> Bool = until ?? { [state, frames] in
            state.withLock { $0.finishing && $0.acknowledged == frames.count }
        }
        do {
            _ = try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(port)/boards/\(board)/ws?hello", configuration: .init(maxFrameSize: 1 << 20),
                logger: Logger(label: "resending-client")
            ) { inbound, outbound, _ in
                let admitted = self.state.withLock { state -> Bool in
                    guard state.attempt == attempt else { return false }
                    opened.withLock { $0 = true }
                    return true
                }
                guard admitted else {
                    try await outbound.close(.goingAway, reason: nil)
                    return
                }
                let hello = self.state.withLock { state -> String in
                    state.connections += 1
                    state.caughtUp = nil
                    // Resend from the first unacknowledged frame: it is this connection's frame 1.
                    state.base = state.acknowledged
                    state.sent = state.acknowledged
                    return ClientFrame.helloText(Hello(have: state.have, echo: self.echo))
                }
                try await outbound.write(.text(hello))
                let ended = Locked(false)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        defer { ended.withLock { $0 = true } }
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            guard case .text(let text) = message else { continue }
                            self.handle(text)
                        }
                    }
                    // The pen: frames at `pace`, until the connection ends or the work is done.
                    while !ended.withLock({ $0 }) {
                        if done() {
                            closedByUs.withLock { $0 = true }
                            try await outbound.close(.normalClosure, reason: nil)
                            break
                        }
                        let (count, pause) = pace()
                        for _ in 0..<count {
                            guard let frame = self.nextFrame() else { break }
                            try await outbound.write(.text(frame))
                        }
                        try await Task.sleep(for: pause)
                    }
                    try await group.waitForAll()
                }
            }
        } catch {
            // A refused connection (the relay is down) or a lost one: the frames are counted below.
        }
        state.withLock { state in
            guard opened.withLock({ $0 }), state.attempt == attempt else { return }
            if !closedByUs.withLock({ $0 }) { state.lost += 1 }
            for frame in state.acknowledged..<state.sent { state.unacknowledgedAtLoss[frame, default: 0] += 1 }
            state.sent = state.acknowledged
        }
    }

    /// The next frame never sent on this connection, or nil when all are.
    private func nextFrame() -> String? {
        state.withLock { state in
            guard state.sent < frames.count else { return nil }
            defer { state.sent += 1 }
            return frames[state.sent]
        }
    }

    private func handle(_ text: String) {
        let message: ServerMessage
        do throws(WireError) { message = try ServerMessage(parsing: text) } catch {
            state.withLock { $0.problems.append("\(name): unreadable message \(text): \(error.reason)") }
            return
        }
        state.withLock { state in
            switch message {
            case .ack(let upTo):
                let through = state.base + Int(upTo)
                guard through <= state.sent else {
                    state.problems.append("\(name): ack \(upTo) for frames never sent on this connection")
                    return
                }
                state.acknowledged = max(state.acknowledged, through)
            case .replicaAck:
                state.problems.append("\(name): an ack by seq, on a text-mode connection")
            case .error(let frame, _, let text):
                state.problems.append("\(name): error (frame \(frame.map(String.init) ?? "none")): \(text)")
            case .caughtUp(_, let have, _):
                state.caughtUp = have
            case .event(let line):
                guard let id = message.eventID else {
                    state.problems.append("\(name): an event without an envelope: \(line)")
                    return
                }
                if let earlier = state.events[id] {
                    state.receivedTwice.append(id)
                    if earlier != line { state.problems.append("\(name): event \(id) came twice, different: \(earlier) / \(line)") }
                }
                state.events[id] = line
                state.have.insert(id)
            }
        }
    }
}
