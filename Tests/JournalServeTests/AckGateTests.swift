@testable import JournalServe
import JournalPlatform
import JournalFormat
import JournalWire
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

/// A node that wakes from a freeze with an ack already handed to its event loop sends nothing
/// once its lease lapsed: the last check is on the event loop, in the write itself.
struct AckGateTests {
    /// A channel as an upgraded WebSocket's: the frame encoder, then the gate installed the way
    /// the server installs it.
    func gatedChannel(_ open: Locked<Bool>) async throws -> NIOAsyncTestingChannel {
        let channel = NIOAsyncTestingChannel()
        try await channel.pipeline.addHandler(WebSocketFrameEncoder())
        try await channel.installAckGate { open.withLock { $0 } }
        return channel
    }

    func text(_ string: String) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: string))
    }

    /// Every byte the channel gave its socket since the last call.
    func written(_ channel: NIOAsyncTestingChannel) async throws -> String {
        var out = ""
        while let buffer = try await channel.readOutbound(as: ByteBuffer.self) {
            out += String(decoding: buffer.readableBytesView, as: UTF8.self)
        }
        return out
    }

    @Test func anAckAfterTheLeaseLapsedNeverReachesTheSocketWhileOtherMessagesDo() async throws {
        let open = Locked(true)
        let channel = try await gatedChannel(open)
        let frames = ServerMessage.ack(upTo: 7).text
        let replica = ServerMessage.replicaAck(replica: ReplicaID.random(), upTo: 9).text

        try await channel.writeAndFlush(text(frames))
        #expect(try await written(channel).contains(frames))

        open.withLock { $0 = false }
        try await channel.writeAndFlush(text(frames))
        try await channel.writeAndFlush(text(replica))
        let refusal = #"{"type":"error","code":"not-owner"}"#
        try await channel.writeAndFlush(text(refusal))
        let afterLapse = try await written(channel)
        #expect(!afterLapse.contains(#""type":"ack""#))
        #expect(afterLapse.contains(refusal))

        open.withLock { $0 = true }
        try await channel.writeAndFlush(text(replica))
        #expect(try await written(channel).contains(replica))
        _ = try await channel.finish()
    }

    @Test func onlyAckMessagesAreRecognisedAsAcks() {
        #expect(AckGate.isAck(ByteBuffer(string: ServerMessage.ack(upTo: 1).text)))
        #expect(!AckGate.isAck(ByteBuffer(string: #"{"type":"event","id":"x"}"#)))
        #expect(!AckGate.isAck(ByteBuffer(string: #"{"type":"ac"#)))
        #expect(!AckGate.isAck(ByteBuffer()))
    }
}
