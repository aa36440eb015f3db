import JournalPlatform
import Testing

/// A handler installed after it is handed out, called by many threads many times.
@Suite struct SharedHandlerTests {
    /// Each call costs the same however many came before: a closure kept directly in a
    /// `Locked` and read through `withLock` was wrapped in two more thunks per call, and every
    /// call ran through all of them; after a few hundred thousand calls the chain overflowed
    /// the stack (a relay's committer reports several times per commit).
    @Test func aHandlerCalledHalfAMillionTimesRunsEachCallOnce() {
        let handler = SharedHandler<Int>()
        let total = Locked(0)
        handler(1)  // nothing installed yet: dropped
        handler.set { value in total.withLock { $0 += value } }
        for _ in 0..<500_000 { handler(1) }
        #expect(total.withLock { $0 } == 500_000)
        handler.set(nil)
        handler(1)
        #expect(total.withLock { $0 } == 500_000)
    }
}
