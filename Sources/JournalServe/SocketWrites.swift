import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import JournalPlatform
import JournalRelay
import JournalWire
import Logging
import NIOCore
import NIOWebSocket

/// One connection's writes, with backpressure that holds. A WebSocket write returns once
/// queued for the channel's event loop, before the channel's writability reflects it, so a
/// fast writer (a catch-up from memory) queued megabytes for a client that did not read, and
/// kept them as long as it stayed connected. Every `drainEvery` bytes the writer waits until
/// the channel has taken what was written. A connection whose write (or that wait) has made no
/// progress for `stallSeconds` is stalled, and the watchdog closes its socket. Progress is the
/// client's TCP acknowledging bytes (`tcp_info`): the relay's own buffers show none for tens of
/// seconds while a slow client empties a 4 MB socket buffer, so a client reading 28 KB/s was
/// taken for one that had stopped. A slow client that keeps reading is never stalled.
final class SocketWrites: Sendable {
    let channel: any Channel
    let stallSeconds: Double
    /// Bytes written between two waits for the socket: about what one connection may hold
    /// queued in the relay beyond the socket's own buffer.
    static let drainEvery = 256 * 1024

    private struct State {
        /// A write (or its wait for the socket) is under way.
        var writing = false
        /// When the write under way started, or last made progress (the client's TCP
        /// acknowledged more bytes; without `tcp_info`, the channel's buffered bytes went down).
        var progressAt = 0.0
        var acknowledged: UInt64?
        var buffered: Int?
        var unchecked = 0
    }
    private let state = Locked(State())

    /// Counts what is written (`strokejournal_bytes_sent_total`).
    let metrics: RelayMetrics

    init(channel: any Channel, stallSeconds: Double, metrics: RelayMetrics) {
        self.channel = channel
        self.stallSeconds = stallSeconds
        self.metrics = metrics
    }

    func text(_ text: String, to outbound: WebSocketOutboundWriter) async throws {
        try await write(bytes: text.utf8.count) { try await outbound.write(.text(text)) }
    }

    /// Runs `write` (of `count` bytes), then waits for the socket if enough went unchecked.
    func write(bytes count: Int, _ write: () async throws -> Void) async throws {
        metrics.sent(bytes: count)
        state.withLock { state in
            state.writing = true
            state.progressAt = ProcessInfoLite.monotonicSeconds()
        }
        defer { state.withLock { $0.writing = false } }
        try await write()
        let drain = state.withLock { state -> Bool in
            state.unchecked += count
            return state.unchecked >= Self.drainEvery
        }
        guard drain else { return }
        let channel = self.channel
        // Asked on the event loop, behind the writes queued before: their bytes are counted.
        while try await !channel.eventLoop.submit({ channel.isWritable }).get() {
            try await Task.sleep(for: .milliseconds(5))
        }
        state.withLock { $0.unchecked = 0 }
    }

    /// Whether the write under way has made no progress for `stallSeconds`: called by the
    /// watchdog a few times per `stallSeconds`. Samples what the client's TCP acknowledged
    /// (where the system does not say, the channel's buffered bytes going down).
    func isStalled() async -> Bool {
        guard state.withLock({ $0.writing }) else { return false }
        let acknowledged = await bytesAcknowledged()
        let buffered = acknowledged == nil ? (try? await channel.getOption(ChannelOptions.bufferedWritableBytes).get()) ?? 0 : nil
        let now = ProcessInfoLite.monotonicSeconds()
        return state.withLock { state in
            if let acknowledged, acknowledged != state.acknowledged {
                state.progressAt = now
                state.acknowledged = acknowledged
            }
            if let buffered, buffered == 0 || buffered < (state.buffered ?? .max) { state.progressAt = now }
            state.buffered = buffered
            return state.writing && now - state.progressAt > stallSeconds
        }
    }

    /// A catch-up that others wait for must take at least this many bytes a second, measured
    /// over at least `catchUpGraceSeconds` (a slow link that keeps reading is otherwise never
    /// ended): otherwise eight clients reading a big board at 3 KB/s hold every place for hours,
    /// and no one can join any board. The client ended reconnects with what it got in its
    /// hello; exact catch-up sends it only the rest.
    static let catchUpFloorBytesPerSecond = 64.0 * 1024
    static let catchUpGraceSeconds = 10.0

    /// The catch-up watched (when its place was taken), when the watch began and what the
    /// client had acknowledged then.
    private let catchUpMark = Locked<(since: Double, watchedFrom: Double, acknowledged: UInt64)?>(nil)

    /// Whether the catch-up holding its place since `since` has had its client acknowledge less
    /// than `catchUpFloorBytesPerSecond` over the last `catchUpGraceSeconds` or more of it that
    /// others waited (false where the system does not say).
    func isTooSlowForACatchUp(since: Double) async -> Bool {
        guard let acknowledged = await bytesAcknowledged() else { return false }
        let now = ProcessInfoLite.monotonicSeconds()
        let mark = catchUpMark.withLock { mark -> (since: Double, watchedFrom: Double, acknowledged: UInt64) in
            if mark?.since != since { mark = (since, now, acknowledged) }
            return mark!
        }
        let elapsed = now - mark.watchedFrom
        guard elapsed >= Self.catchUpGraceSeconds else { return false }
        return Double(acknowledged &- mark.acknowledged) / elapsed < Self.catchUpFloorBytesPerSecond
    }

    /// `struct tcp_info` up to `tcpi_bytes_acked` as <linux/tcp.h> lays it out (Linux 4.2 on):
    /// the u64 at byte 120. Glibc's `tcp_info` (NIO's `getTCPInfo`) stops before it.
    private typealias TCPInfo = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                 UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    /// Bytes of this connection the client's TCP has acknowledged, or nil where unknown.
    private func bytesAcknowledged() async -> UInt64? {
        #if os(Linux)
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        let info: TCPInfo? = try? await provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SocketOptions.tcpLevel), name: SocketOptionName(SocketOptions.tcpInfo)).get()
        return info?.15
        #else
        return nil
        #endif
    }

    /// Closes the socket with a reset: what was queued for it is dropped, in the relay and in
    /// the system's send buffer (a plain close keeps sending those megabytes to a client that
    /// reads a few kilobytes a second, for minutes), and a write waiting in it ends.
    func abandon() {
        let channel = self.channel
        guard let provider = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        provider.setSoLinger(SocketOptions.resetOnClose).whenComplete { _ in channel.close(promise: nil) }
    }
}
