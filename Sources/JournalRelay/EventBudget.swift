import JournalPlatform

/// How many events a token's connections may send per second (`RelayLimits.maxEventsPerSecond`), as a
/// token bucket: a burst of `burst` at once, then `rate` a second. Past it the relay stops
/// reading the connection until the budget allows (its frames wait in TCP, so the sender
/// slows down; nothing is refused). One drawer sending a million points as fast as it can
/// otherwise pushed every other client's queue past its bound over and over, and a page's own
/// stroke waited up to 50 s for its ack.
struct EventBudget: Sendable {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var last: Double

    init(rate: Double, burst: Double, now: Double) {
        self.rate = max(1, rate)
        self.burst = max(1, burst)
        tokens = self.burst
        last = now
    }

    /// Takes `count` events at `now` (monotonic seconds): how long the sender must wait before
    /// its next frame is read, 0 while it is within the budget.
    mutating func take(_ count: Int, now: Double) -> Double {
        tokens = min(burst, tokens + max(0, now - last) * rate)
        last = now
        tokens -= Double(count)
        return tokens >= 0 ? 0 : -tokens / rate
    }

    /// Whether the bucket would be full at `now`: nothing spent lately, nothing to remember.
    func isFull(now: Double) -> Bool {
        tokens + max(0, now - last) * rate >= burst
    }
}

/// The event budgets of a relay's connections (`RelayLimits.maxEventsPerSecond`): one per
/// token, shared by every connection it opened on any board, so that a token's 64 connections
/// (`maxConnectionsPerToken`) flood no more than one; one of its own for a connection without a
/// token (an `--open` relay, where anyone may open connections anyway).
final class EventBudgets: Sendable {
    let rate: Int
    private let byToken = Locked([String: Locked<EventBudget>]())
    /// Tokens remembered at most; past it, those whose budget is full (idle) are forgotten.
    static let rememberedTokens = 4096

    init(rate: Int) { self.rate = max(1, rate) }

    func budget(for grant: Grant) -> Locked<EventBudget> {
        let now = ProcessInfoLite.monotonicSeconds()
        let fresh = { Locked(EventBudget(rate: Double(self.rate), burst: Double(self.rate) * 10, now: now)) }
        guard let token = grant.tokenID else { return fresh() }
        return byToken.withLock { budgets in
            if let known = budgets[token] { return known }
            if budgets.count >= Self.rememberedTokens {
                budgets = budgets.filter { !$0.value.withLock { $0.isFull(now: now) } }
                // Every one of them busy: forgotten all the same (memory is bounded first).
                if budgets.count >= Self.rememberedTokens { budgets.removeAll() }
            }
            let made = fresh()
            budgets[token] = made
            return made
        }
    }
}
