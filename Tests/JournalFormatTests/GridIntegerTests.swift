import JournalFormat
import JournalTestSupport
import Testing

/// `RealGrid.integer` rounds by truncation and an exact fraction instead of libm's `round`:
/// it must give exactly what `rounded()` (halves away from zero) gave, on the values where the
/// two could part: halves of either sign, values next to them, the ends of the ±2^53 range,
/// signed zeros, subnormals, infinities and NaN, and many random values on every scale.
@Suite struct GridIntegerTests {
    /// The rule as it was written before: `(value * 10^scale).rounded()`, then the ±2^53 bound.
    func reference(_ value: Double, scale: UInt8) -> Int64? {
        let power = FormatV1.powersOfTen[Int(scale)]
        let scaled = (value * power).rounded()
        guard scaled.magnitude < Double(FormatV1.gridLimit) else { return nil }
        let integer = Int64(scaled)
        guard (Double(integer) / power).bitPattern == value.bitPattern else { return nil }
        return integer
    }

    @Test func edgesRoundAsRoundedDid() {
        let limit = Double(FormatV1.gridLimit)
        var values: [Double] = [0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994,
                                limit, -limit, limit - 1, -(limit - 1), limit - 0.5, limit.nextDown, (limit - 1).nextDown,
                                .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .greatestFiniteMagnitude,
                                .infinity, -.infinity, .nan, 603.9993896484375, 604.3333333333334, 0.008000617614015937]
        for k in 0..<60 {
            let half = Double(k) + 0.5
            values += [half, -half, half.nextUp, half.nextDown, -half.nextUp, -half.nextDown]
        }
        for value in values {
            for scale in 0...FormatV1.maxDecimalScale {
                #expect(RealGrid.integer(value, scale: scale) == reference(value, scale: scale), "\(value) at scale \(scale)")
            }
        }
    }

    @Test func randomValuesRoundAsRoundedDid() {
        var generator = SeededGenerator(seed: 42)
        var differences = 0
        var onGrid = 0
        for index in 0..<200_000 {
            let scale = UInt8(index % Int(FormatV1.maxDecimalScale + 1))
            let raw = generator.next()
            let value: Double
            switch index % 3 {
            case 0: value = Double(Int64(bitPattern: raw) >> 20) / FormatV1.powersOfTen[Int(scale)]   // on a grid
            case 1: value = Double(bitPattern: raw)                                                       // any bits
            default: value = (Double(raw >> 11) / Double(1 << 53) - 0.5) * 2e6                           // plain reals
            }
            let ours = RealGrid.integer(value, scale: scale)
            if ours != reference(value, scale: scale) { differences += 1 }
            if ours != nil { onGrid += 1 }
        }
        #expect(differences == 0)
        #expect(onGrid > 60_000, "the grid values of the first case must be found: \(onGrid)")
    }
}
