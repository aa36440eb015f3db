import JournalFormat
import JournalPlatform
import JournalWire

extension RelayClient {
    /// Signs of life (docs/PROTOCOL.md): a relay repeats its last ack every half second while
    /// frames wait, so one that says nothing for `WireLimits.silentRelaySeconds` while this
    /// client's frames wait has stopped (frozen, cut off) though its socket stays open. Returns
    /// true then, false once cancelled. Once `close()` was called, the relay has as long to
    /// answer the close frame: a relay that never does (one seen with its server stopped and
    /// the connection left open, unread) would otherwise keep `run()` from returning for ever.
    func untilSilent(attempt: Int) async -> Bool {
        var silentSince = ProcessInfoLite.monotonicSeconds()
        while !Task.isCancelled {
            do { try await Task.sleep(for: .milliseconds(250)) } catch { return false }
            let now = ProcessInfoLite.monotonicSeconds()
            let (waiting, heardAt, closedAt) = state.withLock { state in
                (state.attempt == attempt && state.caughtUp
                    && (state.outgoing.contains { $0.frame != nil } || state.named.contains { $0.id.seq <= state.writtenThrough }),
                 state.heardAt, state.closedAt)
            }
            if let closedAt, now - closedAt >= WireLimits.silentRelaySeconds { return true }
            guard waiting else {
                silentSince = now
                continue
            }
            silentSince = max(silentSince, heardAt)
            if now - silentSince >= WireLimits.silentRelaySeconds { return true }
        }
        return false
    }
}
