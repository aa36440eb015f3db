import JournalPlatform
@testable import JournalRelay
import JournalTestSupport
import Testing

/// `--ack shared`: an ack is released only by a seal-and-publish round that began after it fell
/// due and succeeded.
@Suite struct SharedAcksTests {
    /// Rounds the test finishes by hand, one at a time.
    final class Rounds: Sendable {
        private let waiting = Locked<[CheckedContinuation<String?, Never>]>([])
        let begun = Locked(0)
        let failures = Locked<[String]>([])

        func round() async -> String? {
            await withCheckedContinuation { continuation in
                waiting.withLock { $0.append(continuation) }
                begun.withLock { $0 += 1 }
            }
        }

        /// Ends the round under way with `failure` (nil: the store has everything).
        func finish(_ failure: String?) {
            waiting.withLock { $0.removeFirst() }.resume(returning: failure)
        }
    }

    @Test func anAckWaitsForARoundThatBeganAfterItAndSucceeded() async throws {
        let rounds = Rounds()
        let released = Locked<[String]>([])
        let acks = SharedAcks(round: { await rounds.round() }, failed: { why in rounds.failures.withLock { $0.append(why) } })

        acks.hold { released.withLock { $0.append("a") } }
        #expect(await eventually(within: 30) { rounds.begun.withLock { $0 } == 1 })
        // Due while round 1 runs: round 1 may have sealed before it, so it waits for round 2.
        acks.hold { released.withLock { $0.append("b") } }
        rounds.finish(nil)
        #expect(await eventually(within: 30) { released.withLock { $0 } == ["a"] })
        #expect(await eventually(within: 30) { rounds.begun.withLock { $0 } == 2 })
        #expect(released.withLock { $0 } == ["a"])

        // A failed round releases nothing and is reported; the next one is tried after a pause.
        rounds.finish("the store is down")
        #expect(await eventually(within: 30) { rounds.begun.withLock { $0 } == 3 })
        #expect(released.withLock { $0 } == ["a"])
        #expect(rounds.failures.withLock { $0 } == ["the store is down"])
        rounds.finish(nil)
        #expect(await eventually(within: 30) { released.withLock { $0 } == ["a", "b"] })

        // Nothing waits: no round runs. A closed board's acks are never sent.
        acks.close()
        acks.hold { released.withLock { $0.append("c") } }
        // Decided within `hold`, so checked at once: nothing held, no round started.
        #expect(acks.isIdle)
        #expect(rounds.begun.withLock { $0 } == 3)
        #expect(released.withLock { $0 } == ["a", "b"])
    }
}
