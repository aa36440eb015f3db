import NIOCore
import NIOWebSocket

/// The last look at the board's lease before an ack reaches the socket: a channel handler just
/// before the WebSocket frame encoder, on the event loop that writes the socket.
///
/// `OutboundMessages` asks the lease as the connection's writer takes an ack, but between that
/// and the socket are a task hop and the event loop's queue. A node frozen (SIGSTOP, a paused
/// VM) in that gap wrote the ack on waking, seconds after another node had taken the board
/// (`Tools/ci/cluster/owners.py`, once: "acknowledged 2 times by node0 after it thawed"). On
/// waking, the event loop writes what it had queued before any other thread can notice the
/// lapse, so the check must be on that thread, in the write itself. What is left is the write
/// call's own few instructions to the syscall, and bytes the kernel would not take yet
/// (a client not reading) that NIO writes later.
final class AckGate: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// Whether an ack may go out now (`RelayBoard.acknowledgeGate`).
    private let mayAcknowledge: @Sendable () -> Bool

    init(mayAcknowledge: @escaping @Sendable () -> Bool) {
        self.mayAcknowledge = mayAcknowledge
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        if frame.opcode == .text, Self.isAck(frame.unmaskedData), !mayAcknowledge() {
            // Dropped as `OutboundMessages` drops one: the client resends what was never
            // acknowledged, to the board's new owner.
            promise?.succeed(())
            return
        }
        context.write(data, promise: promise)
    }

    /// The start every ack message has (`ServerMessage.ack`, both forms).
    private static let ackPrefix = Array(#"{"type":"ack","#.utf8)

    static func isAck(_ payload: ByteBuffer) -> Bool {
        guard payload.readableBytes >= ackPrefix.count else { return false }
        return payload.withUnsafeReadableBytes { bytes in
            bytes.prefix(ackPrefix.count).elementsEqual(ackPrefix)
        }
    }
}

extension Channel {
    /// Puts `AckGate` just before the WebSocket frame encoder (outbound frames pass it last
    /// before being encoded); the channel must have been upgraded to a WebSocket.
    func installAckGate(_ mayAcknowledge: @escaping @Sendable () -> Bool) async throws {
        try await eventLoop.submit { [self] in
            let operations = pipeline.syncOperations
            let encoder = try operations.handler(type: WebSocketFrameEncoder.self)
            try operations.addHandler(AckGate(mayAcknowledge: mayAcknowledge), position: .after(encoder))
        }.get()
    }
}
