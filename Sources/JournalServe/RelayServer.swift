import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import JournalPlatform
import JournalRelay
import JournalWire
import Logging
import NIOCore
import NIOWebSocket
import ServiceLifecycle
import UnixSignals

/// `journal serve`: the relay on HTTP and WebSocket (Hummingbird on SwiftNIO).
///
/// `ws://HOST:PORT/boards/<board>/ws` is a board's socket (docs/PROTOCOL.md). This type only
/// moves frames between sockets and `RelayConnection`s; what a frame means, acks, broadcast
/// and catch-up are JournalRelay's.
public struct RelayServer: Sendable {
    public let relay: Relay
    public let host: String
    public let port: Int
    /// A connection whose client has acknowledged nothing for this long while a write waited
    /// is ended (`SocketWrites`). A client that stops reading would otherwise hold its
    /// catch-up's memory, and stop the relay from shutting down (a graceful stop waits for
    /// every connection), for ever.
    public let writeStallSeconds: Double
    /// Where the relay says what it does (swift-log): connections opened and closed, boards
    /// opened and closed, the stop. Hummingbird's own messages go here too.
    public let logger: Logger

    /// `logger`: by default at `notice` (the start and the stop); `journal serve` passes one at
    /// its `--log-level`, `info` unless told otherwise.
    public init(
        relay: Relay, host: String = "127.0.0.1", port: Int, writeStallSeconds: Double = 30,
        logger: Logger = RelayServer.quietLogger
    ) {
        self.relay = relay
        self.host = host
        self.port = port
        self.writeStallSeconds = writeStallSeconds
        self.logger = logger
    }

    public static var quietLogger: Logger {
        var logger = Logger(label: "journal-serve")
        logger.logLevel = .notice
        return logger
    }

    /// Serves until the task is cancelled, or, with `handlingSignals`, until SIGINT or SIGTERM;
    /// then closes the relay's boards. `onListening` gets the port bound (the one asked for,
    /// or the one the system picked for port 0).
    public func run(handlingSignals: Bool = false, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let relay = self.relay
        let logger = self.logger
        relay.observe { activity in
            switch activity {
            case .opened(let board): logger.info("board opened", metadata: ["board": "\(board.text)"])
            case .closed(let board, let why): logger.info("board closed", metadata: ["board": "\(board.text)", "why": "\(why)"])
            case .shareFailed(let board, let why):
                logger.warning("sync with the shared store failed; trying again", metadata: ["board": "\(board.text)", "why": "\(why)"])
            case .leaseFailed(let board, let why):
                logger.warning("the lease service could not be asked; the board was not opened", metadata: ["board": "\(board.text)", "why": "\(why)"])
            case .leaseLost(let board):
                logger.warning("the board's lease lapsed: its connections were closed, the board is being closed", metadata: ["board": "\(board.text)"])
            }
        }
        let router = Router(context: RelaySocketContext.self)
        router.get("/") { _, _ in Self.serve(DrawingPage.index) }
        router.get("/boards.json") { _, _ in Self.boardList(relay) }
        router.get("/metrics") { _, _ in Self.metrics(relay) }
        router.get("/healthz") { _, _ in Self.health(relay) }
        router.get("/boards/:board") { _, context in Self.drawingPage(board: context.parameters.get("board") ?? "") }
        router.get("/assets/:file") { _, context in Self.pageAsset(named: context.parameters.get("file") ?? "") }

        let sockets = Router(context: RelaySocketContext.self)
        // Every request upgrades, a bad board name too: the client then reads why in an error
        // message (a browser's WebSocket never shows the body of a refused upgrade).
        sockets.ws("/boards/:board/ws", onUpgrade: { inbound, outbound, context in
            let messages = InboundMessages(inbound)
            let name = context.requestContext.parameters.get("board") ?? ""
            let peer = context.requestContext.channel.remoteAddress.map { "\($0)" } ?? "unknown"
            let header = Self.bearerToken(context.request.headers[.authorization])
            let connection: RelayConnection
            var first: WebSocketMessage?
            var waited = false
            // Asked for (`?challenge`): the nonce goes first, before the hello that answers it.
            var challenge: [UInt8]?
            if context.request.uri.queryParameters[Substring(HelloProof.query)] != nil {
                let nonce = ProcessInfoLite.randomBytes(HelloProof.nonceBytes)
                challenge = nonce
                try? await outbound.write(.text(HelloProof.challengeText(nonce: nonce)))
            }
            do throws(RelayError) {
                let board = try BoardName(name)
                var grant: Grant?
                if !relay.access.isOpen {
                    // The token comes before anything else is done for the client: no board is
                    // opened (let alone created) and nothing read for one who has none.
                    var token = header
                    if token == nil {
                        first = await messages.first(within: Self.tokenWait)
                        waited = true
                        if case .text(let text)? = first {
                            // A malformed hello is refused for what is wrong with it, not as a
                            // missing token.
                            do throws(WireError) { token = try ClientFrame.hello(in: text)?.token } catch {
                                throw .refused(Refusal(.badRequest, error.reason))
                            }
                        }
                    }
                    do throws(AccessError) {
                        grant = try relay.access.authorize(token, board: board, nowMilliseconds: ProcessInfoLite.wallClockMilliseconds())
                    } catch {
                        throw .forbidden(error)
                    }
                }
                let promised = context.request.uri.queryParameters[Substring(WireLimits.helloQuery)] != nil
                connection = try await relay.connect(to: board, grant: grant, helloPromised: promised, challenge: challenge)
            } catch {
                logger.info("connection refused", metadata: ["board": "\(name)", "peer": "\(peer)", "why": "\(error.description)"])
                relay.metrics.refused(error.code)
                try await Self.close(withError: error.refusal, messages: messages, outbound: outbound, waitForFirst: !waited)
                return
            }
            logger.info("connection opened", metadata: [
                "connection": "\(connection.id)", "board": "\(name)", "peer": "\(peer)", "scope": "\(connection.grant.scope)",
                "token": "\(connection.grant.tokenID ?? "none")",
            ])
            if let gate = connection.relayBoard.acknowledgeGate {
                do {
                    try await context.requestContext.channel.installAckGate(gate)
                } catch {
                    // Acks are still checked as the writer takes them (`OutboundMessages`).
                    logger.warning("the last lease check before the socket could not be installed", metadata: ["connection": "\(connection.id)", "why": "\(error)"])
                }
            }
            let writes = SocketWrites(channel: context.requestContext.channel, stallSeconds: writeStallSeconds, metrics: relay.metrics)
            defer {
                logger.info("connection closed", metadata: [
                    "connection": "\(connection.id)", "board": "\(name)", "why": "\(connection.closeDetail ?? "the client closed it")",
                ])
            }
            try await Self.serve(connection, messages: messages, first: first, outbound: outbound, writes: writes, metrics: relay.metrics)
        })

        let app = Application(
            router: router,
            server: Self.admittingServer(sockets: sockets, relay: relay),
            configuration: .init(
                address: .hostname(host, port: port), serverName: "journal-serve",
                availableConnectionsDelegate: MaximumAvailableConnections(relay.limits.maxConnections + RelayLimits.extraSockets)),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        // Before it listens, a cluster's relay publishes what it holds of every board: what it
        // acknowledged before it was killed reaches the store even if the board is served
        // elsewhere by now (the load balancer sends it nothing until it listens).
        await relay.shareClosedBoardsOnce()
        // Boards nobody is connected to are closed after a while (their threads end, their
        // journals are sealed and unlocked for sync).
        let idleCloser = Task { await relay.closeIdleBoardsPeriodically() }
        defer { idleCloser.cancel() }
        // Expired and revoked tokens lose their connections within a second.
        let accessWatch = Task { await relay.closeConnectionsWithoutAccessPeriodically() }
        defer { accessWatch.cancel() }
        // Clients waiting for an ack hear from the relay at least every half second: one that
        // hears nothing takes it for stopped (frozen, cut off) and goes elsewhere.
        let signsOfLife = Task { await relay.sendSignsOfLifePeriodically() }
        defer { signsOfLife.cancel() }
        // A cluster's relay publishes its open boards to the shared store, and takes in what
        // the others published (nothing without --share).
        let sharer = Task { await relay.shareOpenBoardsPeriodically() }
        defer { sharer.cancel() }
        // A board whose lease lapsed (this node frozen, or cut off from the lease service) is
        // closed within a quarter second even if nobody draws on it (nothing without --lease).
        let leaseWatch = Task { await relay.watchLeasesPeriodically() }
        defer { leaseWatch.cancel() }
        // Stopped gracefully, in reverse order, by SIGTERM or SIGINT (with `handlingSignals`) and
        // by cancelling the task that serves alike: the relay's connections close first (each
        // client told `unavailable`, and a client that does not answer the close frame given up
        // after `closeLinger`), then the server, which waits for its connections to end.
        // (Cancelled outright, Hummingbird reports every connection still open as an error.)
        let group = ServiceGroup(configuration: .init(
            services: [app, RelayStopper(relay: relay, logger: logger)],
            gracefulShutdownSignals: handlingSignals ? [.sigterm, .sigint] : [], logger: logger))
        let serving = Task { try await group.run() }
        do {
            try await withTaskCancellationHandler {
                try await serving.value
            } onCancel: {
                Task {
                    await group.triggerGracefulShutdown()
                    // A connection that will not end (a request never finished) holds a graceful
                    // stop for ever: given up on after this, as before, by cancelling.
                    try? await Task.sleep(for: Self.gracefulStopLimit)
                    serving.cancel()
                }
            }
        } catch {
            idleCloser.cancel()
            accessWatch.cancel()
            sharer.cancel()
            await relay.close()
            throw error
        }
        idleCloser.cancel()
        sharer.cancel()
        if relay.isServing {
            logger.notice("stopping: sealing and closing every open board", metadata: ["boards": "\(relay.openBoards.count)"])
        }
        await relay.close()
        logger.notice("stopped")
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
        return serve(DrawingPage.page)
    }

    /// The boards open now, for the front page: `{"listed":true,"boards":[…]}` on an open
    /// relay; on one that needs tokens, `{"listed":false,"boards":[]}` (names are not public).
    /// Prometheus' text format (docs/DEPLOY.md, "Metrics").
    static func metrics(_ relay: Relay) -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: relay.metricsText)))
    }

    /// 200 while the relay serves, 503 once it is shutting down: what a load balancer's health
    /// check asks (docs/DEPLOY.md, "HAProxy").
    static func health(_ relay: Relay) -> Response {
        let why = relay.unhealthyBecause
        let serving = why == nil
        return Response(
            status: serving ? .ok : .serviceUnavailable, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: (why ?? "ok") + "\n")))
    }

    static func boardList(_ relay: Relay) -> Response {
        let names = relay.access.isOpen ? relay.openBoards.map(\.text).sorted() : []
        let body = #"{"listed":"# + (relay.access.isOpen ? "true" : "false") + #","boards":["#
            + names.map { "\"" + $0 + "\"" }.joined(separator: ",") + "]}\n"
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    /// A file the drawing page loads; 404 for any other name.
    static func pageAsset(named name: String) -> Response {
        guard let asset = DrawingPage.assets[name] else {
            return Response(
                status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "no such file of the drawing page: \(name)\n")))
        }
        return serve(asset)
    }

    /// `no-cache`: a browser revalidates, so a relay upgraded in place serves its page and
    /// scripts together, never a cached script with a newer page.
    static func serve(_ asset: DrawingPage.Asset) -> Response {
        Response(
            status: .ok, headers: [.contentType: asset.contentType, .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: asset.bytes)))
    }

    /// How long a connection the relay ends waits for the client to answer its close frame.
    static let closeLinger: Duration = .seconds(1)
    /// How long a cancelled server waits for its connections to end before it cancels them.
    static let gracefulStopLimit: Duration = .seconds(10)

    /// Ends a connection with a last error the client must be able to read. The relay waits for
    /// the client's first frame (its hello), at most `WireLimits.helloWaitMilliseconds`, then
    /// sends the message and its close frame, and reads (and drops) what the client sends until
    /// its close frame answers ours, at most `closeLinger`. Written at once on the upgrade, the
    /// message is lost now and then (in about 1 of 200 connections a test client sees neither
    /// the message nor the end; with the wait, none in thousands).
    private static func close(
        withError refusal: Refusal, messages: InboundMessages, outbound: WebSocketOutboundWriter, waitForFirst: Bool
    ) async throws {
        let (frames, arrived) = AsyncStream<Void>.makeStream()
        if !waitForFirst { arrived.yield() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // The only reader of the socket: it ends with the client's close frame.
                do { while try await messages.next() != nil { arrived.yield() } } catch {}
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
                try? await outbound.write(.text(ServerMessage.error(frame: nil, refusal).text))
                try? await outbound.close(.unknown(refusal.code.closeCode), reason: nil)
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
        _ connection: RelayConnection, messages: InboundMessages, first: WebSocketMessage?, outbound: WebSocketOutboundWriter,
        writes: SocketWrites, metrics: RelayMetrics
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Exact catch-up: the events the client's hello says it lacks (all of them
                // without a hello), written with the socket's own backpressure.
                let hello = await connection.awaitHello() ?? Hello()
                do {
                    try await connection.catchUp(
                        lacking: hello.have, write: { message in try await writes.text(message.text, to: outbound) },
                        writeSegment: hello.blocks
                            ? { bytes in try await writes.write(bytes: bytes.count) { try await outbound.write(.binary(ByteBuffer(bytes: bytes))) } }
                            : nil)
                } catch let error as RelayError {
                    connection.close(error: error)
                }
                for await text in connection.outbound { try await writes.text(text, to: outbound) }
                if let refusal = connection.closeRefusal {
                    try await writes.write(bytes: 0) {
                        try await outbound.write(.text(ServerMessage.error(frame: nil, refusal).text))
                        try await outbound.close(.unknown(refusal.code.closeCode), reason: nil)
                    }
                    // The reader task reads on until the client's close frame answers ours.
                    try await Task.sleep(for: closeLinger)
                }
            }
            group.addTask {
                defer { connection.close() }
                // The first frame, when the relay read it for its token, is the connection's first.
                var message = first
                if message == nil { message = try await messages.next() }
                while let current = message {
                    switch current {
                    case .text(let text):
                        metrics.received(bytes: text.utf8.count)
                        await connection.receive(text: text)
                    case .binary(let buffer):
                        metrics.received(bytes: buffer.readableBytes)
                        await connection.receive(binary: Array(buffer.readableBytesView))
                    }
                    message = try await messages.next()
                }
            }
            group.addTask {
                // Ends the connection (by ending first, and closing the socket) once the client
                // has taken nothing for `stallSeconds` while a write waited.
                let period = min(5, max(0.05, writes.stallSeconds / 4))
                while !Task.isCancelled {
                    do { try await Task.sleep(for: .milliseconds(Int(period * 1000))) } catch { return }
                    if await writes.isStalled() {
                        writes.abandon()
                        return
                    }
                    if let since = connection.catchUpHeldWhileOthersWait, await writes.isTooSlowForACatchUp(since: since) {
                        writes.abandon()
                        return
                    }
                }
            }
            // The first task to end ends the connection: the reader when the client closed (or
            // the socket failed), the writer when the relay ended the connection and the client
            // did not answer its close frame within `closeLinger`, the watchdog when the client
            // stopped reading (cancelling the group ends the write it waits in).
            try await group.next()
            connection.close()
            group.cancelAll()
        }
    }
}

extension RelayServer {
    /// HTTP/1.1 with the WebSocket upgrade, as `.http1WebSocketUpgrade(webSocketRouter:)`
    /// builds it, behind the relay's admission (`AdmittingChildChannel`): a request head within
    /// `requestHeadSeconds`, a bounded number of unfinished sockets per address, and after a
    /// request, `keepAliveIdle` for the next one.
    static func admittingServer(sockets: Router<RelaySocketContext>, relay: Relay) -> HTTPServerBuilder {
        let webSocketResponder = sockets.buildResponder()
        let unfinished = UnfinishedRequests(limitPerAddress: relay.limits.maxUnfinishedRequestsPerAddress)
        let headDeadline = TimeAmount.nanoseconds(Int64(relay.limits.requestHeadSeconds * 1e9))
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: keepAliveIdle),
            ws: .init(maxFrameSize: WireLimits.maxFrameBytes, validateUTF8: true))
        return HTTPServerBuilder { responder in
            AdmittingChildChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: configuration),
                unfinished: unfinished, headDeadline: headDeadline, metrics: relay.metrics)
        }
    }

    /// How long a plain HTTP connection (the page and its files) may wait between requests.
    static let keepAliveIdle: TimeAmount = .seconds(60)

    /// How long a relay that needs tokens waits for a client's hello (its token) before it
    /// refuses the connection.
    static let tokenWait: Duration = .seconds(10)

    /// The token of an `Authorization: Bearer <token>` header (a client that can set headers
    /// need not send a hello); never logged.
    static func bearerToken(_ header: String?) -> String? {
        guard let header, header.utf8.count <= 1024 else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1])
    }
}

/// The request context of the relay's routes: Hummingbird's, plus the connection's channel, which
/// `SocketWrites` asks whether the socket took what was written.
struct RelaySocketContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}

/// The first step of a relay's graceful shutdown (SIGTERM, SIGINT): it closes the relay, which
/// seals its boards and ends every connection with `unavailable`, so that the server's own
/// shutdown, which waits for its connections, does not wait for clients that never leave.
struct RelayStopper: Service {
    let relay: Relay
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        logger.notice("stopping: sealing and closing every open board", metadata: ["boards": "\(relay.openBoards.count)"])
        await relay.close()
    }
}
