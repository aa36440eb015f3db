import JournalCommit
import JournalLive
import Testing

/// Boards that start together must not seal together: a relay's 50 boards sealing in step
/// every 5 s stalled every acknowledgement at once (p99 55–65 ms at 50 × 240 Hz against
/// 15–18 ms spread; docs/history/PERFORMANCE-RUNS.md, "Fifth run").
@Suite struct SealSpreadTests {
    @Test func withoutSpreadEverySealWaitsTheWholeAge() {
        let options = BoardOptions(sealAfterMilliseconds: 5000)
        #expect(options.commit.sealSpread == 0)
        for _ in 0..<20 { #expect(options.commit.drawSealAge() == 5) }
    }

    @Test func spreadAgesFallWithinTheSpreadAndDiffer() {
        let options = BoardOptions(sealAfterMilliseconds: 5000, sealSpread: 0.3)
        let ages = (0..<200).map { _ in options.commit.drawSealAge() }
        #expect(ages.allSatisfy { $0 >= 3.5 && $0 <= 5 })
        // 200 uniform draws over 1.5 s that all land within 0.75 s of each other: about 2^-199.
        #expect(ages.max()! - ages.min()! > 0.75)
    }

    @Test func aRelaysBoardsSpreadTheirSeals() {
        #expect(BoardOptions.relay.commit.sealSpread > 0)
        #expect(BoardOptions.relay.commit.drawSealAge() <= Double(BoardOptions.relay.commit.sealAfterMilliseconds) / 1000)
    }

    @Test func spreadIsClampedToAFraction() {
        #expect(BoardOptions(sealSpread: 5).commit.sealSpread == 1)
        #expect(BoardOptions(sealSpread: -1).commit.sealSpread == 0)
        #expect(BoardOptions(sealSpread: .nan).commit.sealSpread == 0)
        #expect(BoardOptions(sealAfterMilliseconds: 1000, sealSpread: 1).commit.drawSealAge() >= 0)
    }
}
