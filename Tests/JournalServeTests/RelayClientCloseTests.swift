import JournalClient
import JournalTestSupport
import JournalWire
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Testing

/// A relay that never answers a client's close frame (one was seen with its server stopped and
/// a connection left open, unread): `close()` still ends the client's `run()`.
@Suite struct RelayClientCloseTests {
    @Test func aRelayThatNeverAnswersTheCloseDoesNotHoldRunForEver() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await MutedRelay.start(on: group)
        let client = RelayClient(port: server.port, board: "mute")
        let updates = client.updates
        let run = Task { await client.run() }
        let bound = client.closing(after: 60)
        var caughtUp = false
        for await update in updates {
            if case .caughtUp = update { caughtUp = true; break }
        }
        bound.cancel()
        #expect(caughtUp, "the fake relay's catch-up never arrived")
        client.close()
        #expect(await within(30) { await run.value }, "run() still waits for the relay to answer its close")
        run.cancel()
        try await server.channel.close()
        try await group.shutdownGracefully()
    }
}

/// A client that waits for nothing (caught up, nothing to send) on a relay that went silent
/// with its socket open: its unanswered ping ends the connection, and it connects again.
/// (Without pings it sits there for good: most likely how a viewer, twice on a loaded
/// machine, missed a whole stroke drawn after its relay's restart.)
@Suite struct RelayClientPingTests {
    @Test func aViewerLeavesARelayThatNoLongerAnswersItsPings() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await MutedRelay.start(on: group)
        var options = RelayClient.Options()
        options.pingSeconds = 0.5
        let client = RelayClient(port: server.port, board: "mute", options: options)
        let updates = client.updates
        let run = Task { await client.run() }
        let bound = client.closing(after: 60)
        var caughtUp = false, left: String?
        for await update in updates {
            if case .caughtUp = update { caughtUp = true }
            if case .disconnected(let reason, _) = update, caughtUp {
                left = reason
                break
            }
        }
        bound.cancel()
        #expect(caughtUp, "the fake relay's catch-up never arrived")
        #expect(left != nil, "the client stayed on a relay that answers no ping")
        client.close()
        #expect(await within(30) { await run.value })
        try await server.channel.close()
        try await group.shutdownGracefully()
    }
}

/// A WebSocket server that upgrades, says the board is caught up, and then reads nothing and
/// answers nothing: not a ping, not a close.
struct MutedRelay {
    let channel: any Channel
    let port: Int

    static func start(on group: MultiThreadedEventLoopGroup) async throws -> MutedRelay {
        let upgrader = NIOWebSocketServerUpgrader(
            shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
            upgradePipelineHandler: { channel, _ in channel.pipeline.addHandler(Mute()) })
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return MutedRelay(channel: channel, port: channel.localAddress?.port ?? 0)
    }

    final class Mute: ChannelInboundHandler, Sendable {
        typealias InboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame

        func handlerAdded(context: ChannelHandlerContext) {
            var buffer = context.channel.allocator.buffer(capacity: 64)
            buffer.writeString(ServerMessage.caughtUp(events: 0).text)
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer)), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }
}
