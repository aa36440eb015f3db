import Hummingbird
import HummingbirdWebSocket
import JournalRelay
import JournalWire
import NIOWebSocket

/// `journal serve`: the relay on HTTP and WebSocket (Hummingbird on SwiftNIO).
///
/// `ws://HOST:PORT/boards/<board>/ws` is a board's socket (docs/PROTOCOL.md). This type only
/// moves frames between sockets and `RelayConnection`s; what a frame means, acks, broadcast
/// and catch-up are JournalRelay's.
public struct RelayServer: Sendable {
    public let relay: Relay
    public let host: String
    public let port: Int

    public init(relay: Relay, host: String = "127.0.0.1", port: Int) {
        self.relay = relay
        self.host = host
        self.port = port
    }

    /// Serves until the task is cancelled, or, with `handlingSignals`, until SIGINT or SIGTERM;
    /// then closes the relay's boards. `onListening` gets the port bound (the one asked for,
    /// or the one the system picked for port 0).
    public func run(handlingSignals: Bool = false, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let relay = self.relay
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.get("/") { _, _ in "StrokeJournal relay: ws://HOST:PORT/boards/<board>/ws, a drawing page at http://HOST:PORT/boards/<board>\n" }
        router.get("/boards/:board") { _, context in Self.drawingPage(board: context.parameters.get("board") ?? "") }

        let sockets = Router(context: BasicWebSocketRequestContext.self)
        // Every request upgrades, a bad board name too: the client then reads why in an error
        // message (a browser's WebSocket never shows the body of a refused upgrade).
        sockets.ws("/boards/:board/ws", onUpgrade: { inbound, outbound, context in
            let name = context.requestContext.parameters.get("board") ?? ""
            let connection: RelayConnection
            do throws(RelayError) {
                connection = try await relay.connect(to: BoardName(name))
            } catch {
                try await Self.close(withError: error.description, inbound: inbound, outbound: outbound)
                return
            }
            try await Self.serve(connection, inbound: inbound, outbound: outbound)
        })

        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(
                webSocketRouter: sockets,
                configuration: .init(ws: .init(maxFrameSize: WireLimits.maxFrameBytes, validateUTF8: true))),
            configuration: .init(address: .hostname(host, port: port), serverName: "journal-serve"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) }
        )
        // Boards nobody is connected to are closed after a while (their threads end, their
        // journals are sealed and unlocked for sync).
        let idleCloser = Task { await relay.closeIdleBoardsPeriodically() }
        defer { idleCloser.cancel() }
        do {
            if handlingSignals { try await app.runService() } else { try await app.run() }
        } catch {
            idleCloser.cancel()
            await relay.close()
            throw error
        }
        idleCloser.cancel()
        await relay.close()
    }

    /// The drawing page for a board; a name that could never be a board gets 400 and the
    /// reason in one line (the page's socket would only be refused).
    static func drawingPage(board: String) -> Response {
        do throws(RelayError) {
            _ = try BoardName(board)
        } catch {
            return Response(
                status: .badRequest, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: error.description + "\n")))
        }
        return Response(
            status: .ok, headers: [.contentType: DrawingPage.contentType, .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: DrawingPage.html)))
    }

    /// How long a connection the relay ends waits for the client to answer its close frame.
    static let closeLinger: Duration = .seconds(1)

    /// Ends a connection with a last error the client must be able to read. The relay waits for
    /// the client's first frame (its hello), at most `WireLimits.helloWaitMilliseconds`, then
    /// sends the message and its close frame, and reads (and drops) what the client sends until
    /// its close frame answers ours, at most `closeLinger`. Writing at once on the upgrade and
    /// returning lost the message now and then (issue 13: in about 1 of 200 connections the
    /// test client saw neither the message nor the end; with the wait, none in thousands).
    private static func close(withError message: String, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let (frames, arrived) = AsyncStream<Void>.makeStream()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // The only reader of the socket: it ends with the client's close frame.
                do { for try await _ in inbound.messages(maxSize: WireLimits.maxFrameBytes) { arrived.yield() } } catch {}
                arrived.finish()
            }
            group.addTask {
                await withTaskGroup(of: Void.self) { wait in
                    wait.addTask { _ = await frames.first { _ in true } }
                    wait.addTask { try? await Task.sleep(for: .milliseconds(WireLimits.helloWaitMilliseconds)) }
                    await wait.next()
                    wait.cancelAll()
                }
                // A socket that failed meanwhile has nobody to tell.
                try? await outbound.write(.text(ServerMessage.error(frame: nil, message: message).text))
                try? await outbound.close(.normalClosure, reason: nil)
                try? await Task.sleep(for: closeLinger)
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// One connection: a writer task waits for the client's hello (or its absence), sends the
    /// catch-up, then whatever the relay queues; a reader task reads frames one at a time (a
    /// throttled `receive` stops the reading, and TCP pushes back on the client).
    private static func serve(
        _ connection: RelayConnection, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Exact catch-up: the events the client's hello says it lacks (all of them
                // without a hello), written with the socket's own backpressure.
                let hello = await connection.awaitHello() ?? Hello()
                do {
                    try await connection.catchUp(
                        lacking: hello.have, write: { message in try await outbound.write(.text(message.text)) },
                        writeSegment: hello.blocks ? { bytes in try await outbound.write(.binary(ByteBuffer(bytes: bytes))) } : nil)
                } catch let error as RelayError {
                    connection.close(reason: error.description)
                }
                for await text in connection.outbound { try await outbound.write(.text(text)) }
                if let reason = connection.closeReason {
                    try await outbound.write(.text(ServerMessage.error(frame: nil, message: reason).text))
                    try await outbound.close(.normalClosure, reason: nil)
                    // The reader task reads on until the client's close frame answers ours.
                    try await Task.sleep(for: closeLinger)
                }
            }
            group.addTask {
                defer { connection.close() }
                for try await message in inbound.messages(maxSize: WireLimits.maxFrameBytes) {
                    switch message {
                    case .text(let text): await connection.receive(text: text)
                    case .binary(let buffer): await connection.receive(binary: Array(buffer.readableBytesView))
                    }
                }
            }
            // The first task to end ends the connection: the reader when the client closed (or
            // the socket failed), the writer when the relay ended the connection and the client
            // did not answer its close frame within `closeLinger`.
            try await group.next()
            connection.close()
            group.cancelAll()
        }
    }
}
