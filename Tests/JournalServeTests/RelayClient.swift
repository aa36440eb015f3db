import HTTPTypes
import HummingbirdWSClient
import JournalFormat
import JournalPlatform
import JournalTestSupport
import JournalWire
import NIOCore
import NIOWebSocket
import Logging

/// A WebSocket client of the relay for tests: frames go out through `send`, and what the
/// relay sends comes back, parsed, through `next`.
final class RelayTestClient: Sendable {
    enum Outgoing: Sendable {
        case text(String)
        case binary([UInt8])
    }

    private let outgoing: AsyncStream<Outgoing>.Continuation
    private let incoming: AsyncStream<Result<ServerMessage, WireError>>
    private let iterator: IteratorBox
    let task: Task<Void, any Error>

    /// The stream's iterator, kept across calls to `next` (one reader at a time: a test).
    final class IteratorBox: @unchecked Sendable {
        var iterator: AsyncStream<Result<ServerMessage, WireError>>.Iterator
        init(_ iterator: AsyncStream<Result<ServerMessage, WireError>>.Iterator) { self.iterator = iterator }
    }

    struct BinaryCounts {
        var binaryFrames = 0
        var binaryBytes = 0
    }

    /// Binary frames received so far (a catch-up in blocks) and their bytes.
    let counts = Locked(BinaryCounts())

    /// `bearer`: a token sent in an `Authorization: Bearer` header. `promisingHello`: the
    /// address promises that the first frame is a hello (the relay then waits for it alone).
    init(port: Int, board: String, bearer: String? = nil, promisingHello: Bool = false) {
        let (toSend, outgoing) = AsyncStream<Outgoing>.makeStream()
        let (incoming, received) = AsyncStream<Result<ServerMessage, WireError>>.makeStream()
        self.outgoing = outgoing
        self.incoming = incoming
        self.iterator = IteratorBox(incoming.makeAsyncIterator())
        let counts = self.counts
        task = Task {
            defer { received.finish() }
            try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(port)/boards/\(board)/ws" + (promisingHello ? "?hello" : ""),
                configuration: .init(
                    maxFrameSize: WireLimits.maxSegmentMessageBytes,
                    additionalHeaders: bearer.map { [.authorization: "Bearer " + $0] } ?? [:]),
                logger: Logger(label: "relay-test-client")
            ) { inbound, outbound, _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        // The last ack of each kind: one that does not grow is a sign of life
                        // (docs/PROTOCOL.md), which a client reads as nothing, and so does this one.
                        var framesAcked: UInt64 = 0
                        var replicaAcked: [ReplicaID: UInt64] = [:]
                        for try await message in inbound.messages(maxSize: WireLimits.maxSegmentMessageBytes) {
                            switch message {
                            case .text(let text):
                                let parsed = Result { () throws(WireError) in try ServerMessage(parsing: text) }
                                switch parsed {
                                case .success(.ack(let upTo)):
                                    guard upTo > framesAcked else { continue }
                                    framesAcked = upTo
                                case .success(.replicaAck(let replica, let upTo)):
                                    guard upTo > replicaAcked[replica, default: 0] else { continue }
                                    replicaAcked[replica] = upTo
                                default:
                                    break
                                }
                                received.yield(parsed)
                            case .binary(let buffer):
                                // A catch-up in blocks: handed on as the event messages a text
                                // catch-up would have sent, so tests compare the two directly.
                                let bytes = Array(buffer.readableBytesView)
                                counts.withLock { $0.binaryFrames += 1; $0.binaryBytes += bytes.count }
                                do throws(WireError) {
                                    for event in try SegmentMessage(decoding: bytes).events() {
                                        received.yield(.success(.event(event)))
                                    }
                                } catch {
                                    received.yield(.failure(error))
                                }
                            }
                        }
                        received.finish()
                    }
                    for await frame in toSend {
                        switch frame {
                        case .text(let text): try await outbound.write(.text(text))
                        case .binary(let bytes): try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
                        }
                    }
                    try await outbound.close(.normalClosure, reason: nil)
                    try await group.waitForAll()
                }
            }
        }
    }

    func send(_ text: String) { outgoing.yield(.text(text)) }

    /// A binary frame (native mode's events).
    func send(binary bytes: [UInt8]) { outgoing.yield(.binary(bytes)) }

    /// Closes the connection (after the frames already sent).
    func close() { outgoing.finish() }

    /// The next message, or nil when the connection ended or nothing came within `seconds`.
    func next(within seconds: Double = 60) async throws -> ServerMessage? {
        guard case .message(let message) = try await nextOrEnd(within: seconds) else { return nil }
        return message
    }

    /// What came next on the connection.
    enum Arrival: Equatable {
        case message(ServerMessage)
        /// The connection ended.
        case ended
        /// Nothing within the time given.
        case timedOut
    }

    /// The next message, or the connection's end, told apart from nothing within `seconds`: a
    /// check that the relay closed a connection waits for the end instead of for a silence.
    func nextOrEnd(within seconds: Double = 60) async throws -> Arrival {
        let box = iterator
        let result = await withTaskGroup(of: Result<ServerMessage, WireError>??.self) { group in
            group.addTask {
                var iterator = box.iterator
                let value = await iterator.next()
                box.iterator = iterator
                return .some(value)
            }
            group.addTask {
                await patientSleep(seconds: seconds)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let result else { return .timedOut }
        guard let message = result else { return .ended }
        return .message(try message.get())
    }

    /// Messages until (and without) the first one `stop` accepts, which is returned too.
    func collect(until stop: (ServerMessage) -> Bool, within seconds: Double = 60) async throws -> (before: [ServerMessage], last: ServerMessage?) {
        var before: [ServerMessage] = []
        while let message = try await next(within: seconds) {
            if stop(message) { return (before, message) }
            before.append(message)
        }
        return (before, nil)
    }
}
