import JournalIngest
import JournalTestSupport
import Testing

/// `appendNumber` must print exactly what `number` (Swift's `description`) prints: `journal
/// strokes` output is compared byte for byte across versions.
@Suite(.ownThreads) struct FastNumberTests {
    func fast(_ value: Double) -> String {
        var bytes: [UInt8] = []
        CanonicalJSON.appendNumber(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func gridValuesOfEveryScaleAndMagnitude() {
        var random = SeededGenerator(seed: 77)
        let powers: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11]
        for _ in 0..<200_000 {
            let scale = Int.random(in: 0..<powers.count, using: &random)
            let digits = Int.random(in: 1...17, using: &random)
            var limit: Int64 = 1
            for _ in 0..<digits { limit = limit &* 10 }
            let integer = Int64.random(in: -limit...limit, using: &random)
            let value = Double(integer) / powers[scale]
            #expect(fast(value) == CanonicalJSON.number(value), "\(integer) / 10^\(scale)")
        }
    }

    @Test func edgesAndArbitraryBits() {
        var values: [Double] = [0, -0.0, 1, -1, 0.001, 0.000999, 0.0009999999999999998, 0.0010000000000000002, 1e-4, 1e-5,
                                1e14, 1e15, 1e15 - 0.125, 999_999_999_999_999.9, 1e16, 140_737_488_355_327, 140_737_488_355_328,
                                140_737_488.355_328, 0.1 + 0.2, 9.995, 9.9999, 10.0, 99.99, 100.005, 123_456.789_012_345,
                                .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude, .infinity, -.infinity, .nan,
                                4.35, 0.30000000000000004, 1.0000000000000002, 2.675, 1.005]
        var random = SeededGenerator(seed: 78)
        for _ in 0..<100_000 {
            values.append(Double(bitPattern: random.next()))
            values.append(Double.random(in: -2000...2000, using: &random))
            values.append(Double.random(in: 0.0005...0.002, using: &random))
            values.append(Double(Int.random(in: 1...9, using: &random)) * [1e-3, 1e-4, 1e14, 1e15][Int.random(in: 0...3, using: &random)])
        }
        for value in values {
            #expect(fast(value) == CanonicalJSON.number(value), "bits \(value.bitPattern)")
            #expect(fast(-value) == CanonicalJSON.number(-value), "bits \((-value).bitPattern)")
        }
    }
}
