import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import JournalPlatform
import JournalRelay
import JournalWire
import Logging
import NIOCore
import NIOWebSocket

/// A socket's messages, read through its one iterator (a WebSocket's inbound stream makes only
/// one): a relay that needs tokens reads the hello before the board is opened, then the
/// connection's reader goes on. `@unchecked`: read by one task at a time, by construction.
final class InboundMessages: @unchecked Sendable {
    private var iterator: WebSocketInboundMessageStream.AsyncIterator
    /// A read that `first(within:)` stopped waiting for: the next `next()` takes its result.
    /// Cancelled instead, it ended the socket's stream, and the refusal the client should
    /// read was never sent.
    private var pending: Task<Result<WebSocketMessage?, any Error>, Never>?

    init(_ inbound: WebSocketInboundStream) {
        iterator = inbound.messages(maxSize: WireLimits.maxFrameBytes).makeAsyncIterator()
    }

    func next() async throws -> WebSocketMessage? {
        if let read = pending {
            pending = nil
            return try await read.value.get()
        }
        return try await iterator.next()
    }

    /// The first message, if it comes within `wait` (nil: none came in time, or the socket
    /// closed). A read still waiting then is left to the next `next()`.
    func first(within wait: Duration) async -> WebSocketMessage? {
        let read = Task { () -> Result<WebSocketMessage?, any Error> in
            do { return .success(try await self.iterator.next()) } catch { return .failure(error) }
        }
        pending = read
        // A race of two tasks of their own, not a task group: a group waits for its children,
        // and the one awaiting the read would keep it waiting for the client.
        let arrived = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let decided = Locked(false)
            let decide: @Sendable (Bool) -> Void = { outcome in
                if decided.withLock({ done in defer { done = true }; return !done }) { continuation.resume(returning: outcome) }
            }
            Task { _ = await read.value; decide(true) }
            Task {
                try? await Task.sleep(for: wait)
                decide(false)
            }
        }
        guard arrived else { return nil }
        pending = nil
        return try? await read.value.get()
    }
}
