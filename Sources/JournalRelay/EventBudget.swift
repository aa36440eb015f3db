/// How many events a connection may send per second (`RelayLimits.maxEventsPerSecond`), as a
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
}
