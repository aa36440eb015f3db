import HummingbirdCore
import JournalPlatform
import JournalRelay
import Logging
import NIOCore

/// What a socket may cost before its request is known. Until its request head (request line and
/// headers) has arrived nothing says which board it wants or whether it has a token, yet it
/// holds a place among the sockets the relay accepts; Hummingbird's idle timeout starts only
/// after the first head. So every socket gets `RelayLimits.requestHeadSeconds` to send it, and
/// one address may have at most `maxUnfinishedRequestsPerAddress` sockets still sending one.
/// After the head, the token wait (`RelayServer.tokenWait`) and the per-token limits bound the
/// rest.
struct AdmittingChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    let unfinished: UnfinishedRequests
    let headDeadline: TimeAmount
    let metrics: RelayMetrics

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let address = Self.hostPart(of: channel.remoteAddress)
        let admitted = unfinished.admit(address)
        let unfinished = self.unfinished
        let metrics = self.metrics
        // A socket turned away still goes through the HTTP pipeline (its setup failing would be
        // reported on the listening socket): its first handler answers 503 and closes it.
        return channel.eventLoop.makeCompletedFuture {
            if admitted {
                do {
                    try channel.pipeline.syncOperations.addHandler(
                        RequestHeadDeadline(deadline: headDeadline) { outcome in
                            unfinished.release(address)
                            if outcome == .timedOut {
                                metrics.turnedAway(.requestHeadTimeout)
                                logger.info("socket closed", metadata: ["peer": "\(address)", "why": "no whole request head within the timeout"])
                            }
                        },
                        position: .first)
                } catch {
                    // Never counted down otherwise.
                    unfinished.release(address)
                    throw error
                }
            } else {
                metrics.turnedAway(.tooManyUnfinishedFromAddress)
                logger.info("socket turned away", metadata: ["peer": "\(address)", "why": "too many unfinished requests from this address"])
                try channel.pipeline.syncOperations.addHandler(TurnAway(), position: .first)
            }
        }.flatMap { inner.setup(channel: channel, logger: logger) }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }

    /// The address without its port: one host's sockets share a count.
    static func hostPart(of address: SocketAddress?) -> String {
        address?.ipAddress ?? "unknown"
    }
}

/// Answers 503 as soon as the socket is open, reads nothing, and closes it: a client that then
/// sends its request reads why, one that does not sees it closed.
final class TurnAway: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    static let reason = "too many unfinished requests from this address; try again\n"
    static let reply = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
        + "Content-Length: \(reason.utf8.count)\r\n\r\n\(reason)"

    private var answered = false

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { answer(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func answer(_ context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        var buffer = context.channel.allocator.buffer(capacity: Self.reply.utf8.count)
        buffer.writeString(Self.reply)
        context.writeAndFlush(NIOAny(buffer)).assumeIsolated().whenComplete { _ in RequestHeadDeadline.end(context) }
    }
}

/// Sockets whose request head has not arrived yet, by address.
final class UnfinishedRequests: Sendable {
    private let counts = Locked([String: Int]())
    let limitPerAddress: Int

    init(limitPerAddress: Int) {
        self.limitPerAddress = limitPerAddress
    }

    /// Counts one more socket of `address`, unless it already has `limitPerAddress`.
    func admit(_ address: String) -> Bool {
        counts.withLock { counts in
            let now = counts[address, default: 0]
            guard now < limitPerAddress else { return false }
            counts[address] = now + 1
            return true
        }
    }

    func release(_ address: String) {
        counts.withLock { counts in
            let left = counts[address, default: 0] - 1
            counts[address] = left > 0 ? left : nil
        }
    }

    /// Unfinished sockets of `address` now.
    func count(of address: String) -> Int {
        counts.withLock { $0[address, default: 0] }
    }
}

/// First in a socket's pipeline: passes its bytes on unchanged and closes the socket if no
/// whole request head (up to its blank line) arrives within `deadline`; once one has, it
/// leaves the pipeline.
final class RequestHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    enum Outcome: Equatable {
        case arrived, timedOut, closed
    }

    private let deadline: TimeAmount
    /// Called once, with how the wait for the head ended.
    private let ended: (Outcome) -> Void
    private var timer: Scheduled<Void>?
    private var finished = false
    /// How much of "\r\n\r\n" the bytes so far end with.
    private var matched = 0

    init(deadline: TimeAmount, ended: @escaping (Outcome) -> Void) {
        self.deadline = deadline
        self.ended = ended
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startTimer(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startTimer(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        let headEnded = !finished && endsHead(bytes)
        context.fireChannelRead(data)
        if headEnded {
            finish(.arrived)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.closed)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.closed)
    }

    private func startTimer(_ context: ChannelHandlerContext) {
        guard timer == nil, !finished else { return }
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: deadline) { [self] in
            guard !finished else { return }
            finish(.timedOut)
            Self.end(context)
        }
    }

    /// Closes the socket as if its client had: the HTTP layers behind see their input end before
    /// any request, which they take as a client gone (an outright close, as a failure).
    static func end(_ context: ChannelHandlerContext) {
        context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        context.close(promise: nil)
    }

    private func finish(_ outcome: Outcome) {
        guard !finished else { return }
        finished = true
        timer?.cancel()
        timer = nil
        ended(outcome)
    }

    /// Whether these bytes complete the blank line that ends a request head (across reads).
    private func endsHead(_ bytes: ByteBuffer) -> Bool {
        let pattern: [UInt8] = [13, 10, 13, 10]
        for byte in bytes.readableBytesView {
            if byte == pattern[matched] {
                matched += 1
                if matched == pattern.count { return true }
            } else {
                matched = byte == 13 ? 1 : 0
            }
        }
        return false
    }
}
