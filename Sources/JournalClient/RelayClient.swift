import HummingbirdWSClient
import JournalFormat
import JournalIngest
import JournalPlatform
import JournalReplay
import JournalWire
import Logging
import NIOCore
import NIOWebSocket

/// What a `RelayClient` reports, in order.
public enum RelayClientUpdate: Sendable, Equatable {
    /// A socket opened (the first, or a reconnection); the catch-up follows.
    case connected(attempt: Int)
    /// The catch-up is done: the client holds every event the relay held when it joined.
    case caughtUp(events: UInt64)
    /// Events were folded into `drawing` (from the catch-up or live), changing this.
    case changed([DrawingChange])
    /// The relay made frames durable; `pending` are still waiting.
    case acknowledged(pending: Int)
    /// The relay refused a frame (it is not resent): the line and why.
    case refused(line: String, reason: String)
    /// The socket closed or could not open; the client tries again after `retryIn` seconds.
    case disconnected(reason: String, retryIn: Double)
    /// The relay refused this client for good (an address that has never been a board's socket
    /// for it, a name that can be no board, a token it does not accept): trying again would
    /// change nothing, so `run` returns and `updates` ends.
    case stopped(reason: String)
}

/// A client of a board on a `journal serve` relay (docs/PROTOCOL.md, text mode) that stays
/// connected: it reconnects with backoff, says what it holds (`hello`: exact catch-up, in
/// blocks), and resends every frame the relay had not acknowledged.
///
/// `drawing` is the board as the relay recorded it: its events, ids and clocks, folded
/// (`LiveDrawing`), the client's own included once durable (they come back before their ack,
/// `"echo"`). What was sent and not yet acknowledged is `pending`, for the app to draw over it.
///
/// In text mode the relay names the events, so a frame whose ack a crash swallowed after it
/// was durable could be recorded twice if resent. The client therefore resends only after the
/// reconnection's catch-up, and settles instead every unacknowledged frame whose events the
/// catch-up brought back (matched by content: a point carries the client's own random stroke
/// id and its samples). Native mode (`Options.replicaKey`: client-named events) settles them
/// exactly, by id.
public final class RelayClient: Sendable {
    public struct Options: Sendable {
        /// The first wait before reconnecting, doubled after each failed attempt up to `maxBackoff`.
        public var minBackoff: Double = 0.1
        public var maxBackoff: Double = 5
        /// Catch-up as binary blocks (about 2 bytes per point) rather than a line per event.
        public var blocks = true
        /// A socket not open this long after the attempt began is given up and tried again:
        /// a connect that reaches a relay as it dies can otherwise wait for ever.
        public var connectTimeout: Double = 10
        /// A ping every this many seconds; one not answered by the next ends the connection,
        /// which is then tried again. The way a client that waits for nothing (a viewer: no
        /// ack is due, so signs of life say nothing) learns that its relay went away and left
        /// the socket open (a relay stopped in-process was seen to), or froze.
        public var pingSeconds: Double = 10
        /// Native mode: the client names its events as the replica of this key (id, seq,
        /// Lamport clock), signs its frames with it, and the relay stores them under that
        /// replica, acknowledging by seq; a resend after a lost ack is then recognised by id,
        /// exactly. The key must be this client's alone (invariant 2): a fresh `ReplicaKey()`,
        /// or one kept from before whose events the relay holds all of (its seqs go on after
        /// the highest the relay holds).
        public var replicaKey: ReplicaKey?
        /// The replica native mode writes as (`replicaKey`'s), nil in text mode.
        public var replica: ReplicaID? { replicaKey?.replica }
        /// The token a relay that is not open asks for (`journal token`), sent in every hello.
        public var token: String?
        public init() {}
    }

    public let url: String
    public let options: Options
    let state = Locked(State())

    struct Outgoing {
        var line: String
        /// Its number on the current connection, once written there.
        var frame: UInt64?
        /// Written on some connection: the relay may have recorded it without acknowledging.
        var written = false
    }

    struct State {
        var drawing = LiveDrawing()
        var have = Have()
        var outgoing: [Outgoing] = []
        var framesWritten: UInt64 = 0
        /// Frames are written only once the connection's catch-up is done: it shows which
        /// unacknowledged ones the relay recorded.
        var caughtUp = false
        /// The last catch-up said this connection may only view (`viewOnly`).
        var viewOnly = false
        /// Some connection of this client was caught up: its address was a board's socket
        /// then, so a refused upgrade later (a proxy between relays, a restart) is retried.
        var everCaughtUp = false
        /// The canonical lines of the events received while some written frame was not
        /// acknowledged (less those of frames acknowledged since), counted: the events an
        /// unacknowledged frame may have become, live (its echo came, its ack did not) or in
        /// a catch-up.
        var unsettledLines: [String: Int] = [:]
        /// Wakes the current connection's writer when a frame is queued.
        var wake: AsyncStream<Void>.Continuation?
        /// When `close()` was called (monotonic seconds): the relay has `silentRelaySeconds`
        /// from then to answer the close frame.
        var closedAt: Double?
        var closed: Bool { closedAt != nil }
        /// Why the last connection ended or was refused: what a wait that gives up says.
        var lastProblem: String?
        var acknowledgedWaiters: [CheckedContinuation<Void, Never>] = []
        /// The reader of `updates`, once there is one: nothing is buffered for nobody.
        var updates: AsyncStream<RelayClientUpdate>.Continuation?
        var bytesReceived = 0
        /// When the current connection last received a message (monotonic seconds).
        var heardAt = 0.0
        /// The connection attempt under way: a socket that opens for an attempt given up
        /// (`Options.connectTimeout`) is closed at once and touches nothing.
        var attempt = 0
        /// Native mode: payloads waiting for a name (named once a connection is caught up,
        /// after what the relay holds of the replica), and named events not acknowledged.
        var unnamed: [Payload] = []
        var named: [Event] = []
        /// The highest seq named, and the highest seq written on the current connection.
        var lastNamedSeq: UInt64 = 0
        var writtenThrough: UInt64 = 0
        /// The highest Lamport clock seen or given: a named event follows all of them.
        var clock: UInt64 = 0

        var isSettled: Bool { outgoing.isEmpty && named.isEmpty && unnamed.isEmpty }
        var pendingCount: Int { outgoing.count + named.count + unnamed.count }
    }

    /// `url`: `ws://HOST:PORT/boards/<board>/ws`.
    public init(url: String, options: Options = Options()) {
        self.url = url
        self.options = options
    }

    public convenience init(host: String = "127.0.0.1", port: Int, board: String, options: Options = Options()) {
        self.init(url: "ws://\(host):\(port)/boards/\(board)/ws", options: options)
    }

    /// The board's name, as its socket's address says it (`/boards/<board>/ws`): native frames
    /// are signed for it.
    var board: String {
        guard let start = url.firstRange(of: "/boards/")?.upperBound else { return "" }
        let rest = url[start...]
        return String(rest[..<(rest.firstIndex(of: "/") ?? rest.endIndex)])
    }

    /// What happens from now on, in order: one reader (a second call ends the first stream).
    public var updates: AsyncStream<RelayClientUpdate> {
        let (stream, continuation) = AsyncStream<RelayClientUpdate>.makeStream()
        let previous = state.withLock { state in
            defer { state.updates = state.closed ? nil : continuation }
            return state.updates
        }
        previous?.finish()
        if state.withLock({ $0.closed }) { continuation.finish() }
        return stream
    }

    func report(_ update: RelayClientUpdate) {
        _ = state.withLock { $0.updates }?.yield(update)
    }

    /// The board as the relay recorded it, as far as received.
    public var drawing: Drawing { state.withLock { $0.drawing.drawing } }

    /// Whether the relay said, at this client's last catch-up, that it may only view (its
    /// token's scope is `view`): every frame it sends is refused with `view-only`, so an app
    /// turns its drawing tools off at once instead of after the first refusal.
    public var mayOnlyView: Bool { state.withLock { $0.viewOnly } }

    /// The ids of the events received (catch-up and live).
    public var have: Have { state.withLock { $0.have } }

    /// The payload bytes of every message received so far (text and binary, WebSocket framing
    /// not counted): what a catch-up cost on the wire.
    public var bytesReceived: Int { state.withLock { $0.bytesReceived } }

    /// Lines sent and not yet acknowledged, oldest first.
    public var pending: [String] {
        state.withLock { state in
            state.outgoing.map(\.line) + state.named.map { ClientFrame.text(for: $0.payload) }
                + state.unnamed.map { ClientFrame.text(for: $0) }
        }
    }

    /// Queues `payload` to be recorded; it is sent now if connected, else on reconnection,
    /// and again after every reconnection until acknowledged.
    public func send(_ payload: Payload) {
        let native = options.replica != nil
        let wake = state.withLock { state -> AsyncStream<Void>.Continuation? in
            if native {
                state.unnamed.append(payload)
            } else {
                state.outgoing.append(Outgoing(line: ClientFrame.text(for: payload)))
            }
            return state.wake
        }
        wake?.yield()
    }

    /// Returns once every payload sent before is acknowledged (durable at the relay) or
    /// refused, or the client is closed.
    public func waitUntilAcknowledged() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                guard !state.isSettled, !state.closed else { return true }
                state.acknowledgedWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// `waitUntilAcknowledged()`, giving up after `seconds`: throws what is still pending and
    /// why (the last reason a connection ended or was refused), so that an app or a script can
    /// tell a person rather than wait for ever on a relay that is not there.
    public func waitUntilAcknowledged(within seconds: Double) async throws(RelayClientWaitError) {
        let settledInTime = await Self.finishes(within: seconds) { await self.waitUntilAcknowledged() }
        let (pending, problem, closed) = state.withLock { ($0.pendingCount, $0.lastProblem, $0.closed) }
        guard pending > 0 else { return }
        throw RelayClientWaitError(pending: pending, seconds: settledInTime || closed ? nil : seconds, problem: problem)
    }

    /// Stops `run` (what is pending stays unsent) and ends `updates`.
    public func close() {
        let (wake, waiters, updates) = state.withLock { state in
            state.closedAt = state.closedAt ?? ProcessInfoLite.monotonicSeconds()
            defer {
                state.acknowledgedWaiters = []
                state.updates = nil
            }
            return (state.wake, state.acknowledgedWaiters, state.updates)
        }
        wake?.finish()
        for waiter in waiters { waiter.resume() }
        updates?.finish()
    }

    /// Connects and stays connected until `close()`.
    public func run() async {
        var backoff = options.minBackoff
        var attempt = 0
        while !state.withLock({ $0.closed }) {
            attempt += 1
            let (reason, caughtUp, permanent) = await connectOnce(attempt: attempt)
            if state.withLock({ $0.closed }) || Task.isCancelled { break }
            state.withLock { $0.lastProblem = reason }
            if permanent {
                report(.stopped(reason: reason))
                close()
                break
            }
            // A connection that got as far as its catch-up was a success: start over short.
            if caughtUp { backoff = options.minBackoff }
            report(.disconnected(reason: reason, retryIn: backoff))
            try? await Task.sleep(for: .milliseconds(Int(backoff * 1000)))
            backoff = min(backoff * 2, options.maxBackoff)
        }
    }

    private struct Progress {
        var reason = "the relay closed the connection"
        var caughtUp = false
        var opened = false
        /// The relay's answer cannot change by trying again.
        var permanent = false
        /// The code of the relay's last error, once one came.
        var code: RefusalCode?
    }

    /// Whether a connection that ended with `code` is refused for good: by its code alone
    /// (docs/PROTOCOL.md, "Error codes"), never its words. This client neither falls back to
    /// viewing nor to text mode, so a refusal that asks for either stops it too.
    static func isPermanent(_ code: RefusalCode) -> Bool {
        code.retry != .later
    }

    /// A sentence for a failure of the socket itself, where the network library's own words
    /// would say less; and whether it is for good.
    static func describe(_ error: any Error) -> (reason: String, permanent: Bool) {
        let said = "\(error)"
        if said.contains("upgrade failed") {
            return ("the server there answered, but this is no board's socket (a relay's is ws://HOST:PORT/boards/<board>/ws)", true)
        }
        if said.contains("Connection refused") {
            return ("nothing accepts connections there (is `journal serve` running?)", false)
        }
        return (said, false)
    }

    /// One connection; returns why it ended and whether it was caught up. Gives up when the
    /// socket has not opened within `Options.connectTimeout` (the attempt runs on, unheeded).
    private func connectOnce(attempt: Int) async -> (reason: String, caughtUp: Bool, permanent: Bool) {
        let progress = Locked(Progress())
        state.withLock { $0.attempt = attempt }
        let connection = Task { await self.connect(attempt: attempt, progress: progress) }
        let wentSilent = Locked(false)
        let watchdog = Task { if await self.untilSilent(attempt: attempt) { wentSilent.withLock { $0 = true } } }
        defer { watchdog.cancel() }
        let timeout = options.connectTimeout
        // A socket that opened in time has all the time it needs, unless the relay stops.
        let ended = await Self.finishes(within: timeout, unlessThen: { progress.withLock { $0.opened } }) {
            await Self.first({ await connection.value }, { await watchdog.value })
        }
        let silent = wentSilent.withLock { $0 }
        guard ended, !silent else {
            // Given up: the socket is closed when it can be, and touches nothing meanwhile.
            connection.cancel()
            state.withLock { if $0.attempt == attempt { $0.attempt = 0 } }
            if !ended { return ("the socket did not open within \(timeout) s", false, false) }
            return ("the relay said nothing for \(WireLimits.silentRelaySeconds) s while frames waited for their ack: taken for stopped", true, false)
        }
        let result = progress.withLock { $0 }
        return (result.reason, result.caughtUp, result.permanent && !result.caughtUp)
    }

    private func connect(attempt: Int, progress: Locked<Progress>) async {
        do {
            let closeFrame = try await WebSocketClient.connect(
                // Its first frame is always a hello: promised, so that the relay never sends the
                // whole board for a hello it reads late.
                url: WireLimits.promisingHello(url),
                configuration: .init(maxFrameSize: WireLimits.maxSegmentMessageBytes, closeTimeout: .seconds(5),
                                     autoPing: .enabled(timePeriod: .milliseconds(Int(max(0.1, options.pingSeconds) * 1000)))),
                logger: Logger(label: "journal-relay-client")
            ) { inbound, outbound, _ in
                // Opened too late: `connectOnce` gave this attempt up and may be on another.
                let current = self.state.withLock { $0.attempt == attempt && !$0.closed }
                progress.withLock { $0.opened = true }
                guard current else {
                    try await outbound.close(.normalClosure, reason: nil)
                    return
                }
                let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                let hello = self.state.withLock { state -> Hello in
                    // Everything unacknowledged goes again, numbered from 1 on this connection.
                    state.framesWritten = 0
                    state.caughtUp = false
                    for index in state.outgoing.indices { state.outgoing[index].frame = nil }
                    state.writtenThrough = 0
                    state.wake = wake
                    var hello = Hello(have: state.have, blocks: self.options.blocks, echo: true, token: self.options.token)
                    if let key = self.options.replicaKey {
                        hello.replica = key.replica
                        hello.key = key.publicKey
                    }
                    return hello
                }
                self.report(.connected(attempt: attempt))
                try await outbound.write(.text(ClientFrame.helloText(hello)))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        var wakeups = wakes.makeAsyncIterator()
                        while true {
                            while let line = self.nextFrame() { try await outbound.write(.text(line)) }
                            while let bytes = self.nextNativeFrame() { try await outbound.write(.binary(ByteBuffer(bytes: bytes))) }
                            guard await wakeups.next() != nil else { break }
                        }
                        // Woken for good: the socket ended, or `close()` ends it (the relay
                        // answers the close, which ends the reading below).
                        if self.state.withLock({ $0.closed }) { try await outbound.close(.normalClosure, reason: nil) }
                    }
                    defer { wake.finish() }
                    for try await message in inbound.messages(maxSize: WireLimits.maxSegmentMessageBytes) {
                        // Given up (the relay fell silent): the next connection numbers the frames
                        // anew, and an ack read here would settle frames of its numbering.
                        guard self.state.withLock({ $0.attempt == attempt }) else { break }
                        switch message {
                        case .text(let text):
                            self.state.withLock { state in
                                state.bytesReceived += text.utf8.count
                                state.heardAt = ProcessInfoLite.monotonicSeconds()
                            }
                            let parsed = try ServerMessage(parsing: text)
                            if case .error(nil, let code, let reason) = parsed {
                                progress.withLock { progress in
                                    progress.reason = reason
                                    progress.code = code
                                    progress.permanent = Self.isPermanent(code)
                                }
                            }
                            if case .caughtUp = parsed {
                                progress.withLock { $0.caughtUp = true }
                                self.state.withLock { $0.everCaughtUp = true }
                            }
                            try self.handle(parsed)
                        case .binary(let buffer):
                            self.state.withLock { state in
                                state.bytesReceived += buffer.readableBytes
                                state.heardAt = ProcessInfoLite.monotonicSeconds()
                            }
                            try self.fold(SegmentMessage(decoding: Array(buffer.readableBytesView)))
                        }
                    }
                    wake.finish()
                    try await outbound.close(.normalClosure, reason: nil)
                    group.cancelAll()
                }
            }
            // The relay's close code decides when its last error was lost on the way.
            if case .unknown(let number)? = closeFrame?.closeCode, let code = RefusalCode(closeCode: number) {
                progress.withLock { progress in
                    guard progress.code == nil else { return }
                    progress.code = code
                    progress.permanent = Self.isPermanent(code)
                    if let said = closeFrame?.reason, !said.isEmpty { progress.reason = said }
                }
            }
        } catch {
            let (reason, refusedUpgrade) = Self.describe(error)
            let permanent = refusedUpgrade && !state.withLock { $0.everCaughtUp }
            progress.withLock { progress in
                // A close after the relay's own last error keeps that error as the reason.
                if !progress.permanent {
                    progress.reason = reason
                    progress.permanent = permanent
                }
            }
        }
        state.withLock { state in
            if state.attempt == attempt { state.wake = nil }
        }
    }

    /// The next frame not yet written on this connection, numbered.
    private func nextFrame() -> String? {
        state.withLock { state in
            guard state.caughtUp, let index = state.outgoing.firstIndex(where: { $0.frame == nil }) else { return nil }
            state.framesWritten += 1
            state.outgoing[index].frame = state.framesWritten
            state.outgoing[index].written = true
            return state.outgoing[index].line
        }
    }

    /// Native mode: the next binary frame of named events not yet written on this
    /// connection (naming what is queued first), at most `WireLimits.maxFrameBytes` long.
    private func nextNativeFrame() -> [UInt8]? {
        guard let key = options.replicaKey else { return nil }
        let replica = key.replica
        let (events, changes) = state.withLock { state -> ([Event], [DrawingChange]) in
            guard state.caughtUp else { return ([], []) }
            var changes: [DrawingChange] = []
            for payload in state.unnamed {
                state.lastNamedSeq += 1
                state.clock += 1
                let event = Event(id: EventID(replica: replica, seq: state.lastNamedSeq), lamport: state.clock,
                                  wallTime: Event.wallTime(at: ProcessInfoLite.wallClockMilliseconds()), payload: payload)
                state.named.append(event)
                // The client's own events are in its copy of the board at once: they are final.
                state.have.insert(event.id)
                _ = state.drawing.apply(event, changes: &changes)
            }
            state.unnamed.removeAll()
            let written = state.writtenThrough
            guard let start = state.named.firstIndex(where: { $0.id.seq > written }) else { return ([], changes) }
            return (Array(state.named[start..<min(start + Self.nativeFrameEvents, state.named.count)]), changes)
        }
        if !changes.isEmpty { report(.changed(changes)) }
        guard !events.isEmpty else { return nil }
        var count = events.count
        var bytes = SegmentMessage.encode(replica: replica, events: events[0..<count])
        while bytes.count + NativeFrame.signatureBytes > WireLimits.maxFrameBytes && count > 1 {
            count /= 2
            bytes = SegmentMessage.encode(replica: replica, events: events[0..<count])
        }
        let through = events[count - 1].id.seq
        state.withLock { $0.writtenThrough = through }
        return NativeFrame.sign(bytes, board: board, with: key)
    }

    /// Events per native frame at most (fewer when they would not fit in a frame).
    static let nativeFrameEvents = 1024
}
