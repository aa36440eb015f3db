import JournalCompression

/// A v2 real column (docs/FORMAT.md §14.3): each value is a *coarse* integer n on a grid
/// (`n / divisor`, optionally rounded to float32), predicted per stroke, plus an optional
/// *fine* integer c counting units of 2^e between that grid value and the exact value. Values
/// neither reproduces bit for bit are exceptions, stored whole.
///
/// Why two parts: device values are grid values plus noise (a float32 sensor, a 1/3-point
/// grid, a difference of two clocks). The coarse part carries what a predictor can guess; the
/// fine part carries the noise, which no predictor guesses and which costs what it costs.
/// The encoder tries the grids and fine units on the column and keeps the cheapest.
public enum FineUnit: UInt8, Sendable, CaseIterable {
    /// The value is the grid value.
    case none = 0
    /// Units of the grid value's binary64 ulp.
    case ulp64 = 1
    /// Units of the grid value's binary32 ulp.
    case ulp32 = 2
    /// Units of 2^e, one e per stroke (stored in the column).
    case strokeExponent = 3
}

/// The layout choices of one real column, as its two header bytes store them.
struct RealColumnShape: Equatable {
    var grid: UInt8 = 0
    var order: UInt8 = 2
    var startFromPrevious = false
    var narrow = false
    var fine = FineUnit.none

    var shapeByte: UInt8 {
        order | (startFromPrevious ? 4 : 0) | (narrow ? 8 : 0) | fine.rawValue << 4
    }
}

// MARK: - Exact arithmetic both sides share

/// What a column's grid code means (FORMAT.md §14.3, grid table).
enum GridV2 {
    /// value = n / divisor (then optionally rounded to float32).
    case divide(Double)
    /// n is the float32's bits in an order that follows the values: n >= 0 are the bits of
    /// non-negative floats, n < 0 those of -(n + 1) with the sign set.
    case ordered32
    /// The same for binary64 bits.
    case ordered64

    init?(code: UInt8) {
        switch code {
        case FormatV2.ordered32: self = .ordered32
        case FormatV2.ordered64: self = .ordered64
        default:
            guard let divisor = FormatV2.divisor(grid: code) else { return nil }
            self = .divide(divisor)
        }
    }

    /// The coarse integer of a value: exact for the ordered grids, nearest for a divisor.
    @inline(__always)
    func integer(_ value: Double) -> Int64? {
        switch self {
        case .divide(let divisor):
            return ExactReal.nearestInteger(value * divisor)
        case .ordered32:
            let narrow = Float(value)
            guard Double(narrow).bitPattern == value.bitPattern else { return nil }
            let bits = narrow.bitPattern
            return bits >> 31 == 0 ? Int64(bits) : -Int64(bits & 0x7FFF_FFFF) - 1
        case .ordered64:
            let bits = value.bitPattern
            return bits >> 63 == 0 ? Int64(bits) : -Int64(bits & 0x7FFF_FFFF_FFFF_FFFF) - 1
        }
    }

    /// The grid value of coarse integer n (nil: no float32 has that ordered index).
    @inline(__always)
    func value(_ n: Int64, narrow: Bool) -> Double? {
        switch self {
        case .divide(let divisor):
            let value = Double(n) / divisor
            return narrow ? Double(Float(value)) : value
        case .ordered32:
            guard n >= -(1 << 31), n < 1 << 31 else { return nil }
            return Double(Float(bitPattern: n >= 0 ? UInt32(n) : 1 << 31 | UInt32(-(n + 1))))
        case .ordered64:
            return Double(bitPattern: n >= 0 ? UInt64(n) : 1 << 63 | UInt64(-(n + 1)))
        }
    }

    var isOrdered: Bool {
        if case .divide = self { return false }
        return true
    }
}

enum ExactReal {
    /// x * 2^k, rounded once (every use either is exact or is refused afterwards).
    @inline(__always)
    static func scaled(_ x: Double, byPowerOfTwo k: Int) -> Double {
        if k >= -1022 && k <= 1023 { return x * Double(bitPattern: UInt64(1023 + k) << 52) }
        return Double(sign: .plus, exponent: k, significand: x)
    }

    /// The exponent of a fine unit for a grid value (per-stroke exponents are looked up).
    @inline(__always)
    static func unitExponent(_ base: Double, fine: FineUnit) -> Int {
        let field = Int((base.bitPattern >> 52) & 0x7FF)
        if fine == .ulp64 { return field == 0 ? -1074 : field - 1075 }
        // binary32 ulp of the grid value, judged by its binary64 exponent
        guard base != 0 else { return -149 }
        let exponent = field == 0 ? -1023 : field - 1023
        return max(exponent, -126) - 23
    }

    /// floor(base / 2^e) when it is below 2^62 in magnitude.
    @inline(__always)
    static func scaledFloor(_ base: Double, exponent: Int) -> Int64? {
        let scaled = Self.scaled(base, byPowerOfTwo: -exponent).rounded(.down)
        guard scaled.magnitude < Double(FormatV2.fineLimit) else { return nil }
        return Int64(scaled)
    }

    /// m * 2^e when that is a finite value reproduced exactly and not subnormal.
    @inline(__always)
    static func fineValue(_ m: Int64, exponent: Int) -> Double? {
        guard m.magnitude < UInt64(FormatV2.fineLimit) else { return nil }
        if m != 0 {
            let bits = 64 - m.magnitude.leadingZeroBitCount
            guard bits - 1 + exponent >= -1022 else { return nil }
        }
        let value = scaled(Double(m), byPowerOfTwo: exponent)
        return value.isFinite ? value : nil
    }

    /// The lowest power of two in a value's bits (nil for zero and non-finite values).
    static func lowestBitExponent(_ value: Double) -> Int? {
        guard value.isFinite, value != 0 else { return nil }
        let field = Int((value.bitPattern >> 52) & 0x7FF)
        let fraction = value.bitPattern & ((1 << 52) - 1)
        if field == 0 { return -1074 + fraction.trailingZeroBitCount }
        return field - 1075 + (fraction | (1 << 52)).trailingZeroBitCount
    }

    /// `x` rounded to the nearest integer, halves away from zero (`x.rounded()`), if that is
    /// below 2^53 in magnitude (`FormatV1.gridLimit`); nil otherwise and for NaN. Truncation
    /// and an exact fraction instead of libm's `round`, which was a call per value.
    @inline(__always)
    static func nearestInteger(_ x: Double) -> Int64? {
        guard x.magnitude < Double(FormatV1.gridLimit) else { return nil }
        var integer = Int64(x)
        let fraction = x - Double(integer)
        if fraction >= 0.5 { integer += 1 } else if fraction <= -0.5 { integer -= 1 }
        return integer.magnitude < UInt64(FormatV1.gridLimit) ? integer : nil
    }

    @inline(__always)
    static func zigzag(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value << 1) ^ (value >> 63)) }

    @inline(__always)
    static func unzigzag(_ value: UInt64) -> Int64 { Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1) }
}

// MARK: - Encoding

/// Writes one real column (FORMAT.md §14.3). Blocks use it, and so do snapshots
/// (docs/SYNC.md): one coder for every column of reals the project stores.
package struct RealColumnEncoderV2 {
    let values: [Double]
    let strokes: [UInt32]
    let strokeCount: Int
    /// Whether a stream may be range coded (§18: block bodies of versions 6 and 7).
    let rangeCoding: RangeCodedStream.Policy
    /// How the body's deflate codes this column (`EncodedBody.method`): what a range-coded
    /// stream must beat when the estimates leave it in doubt.
    let lowFormDeflate: DeflateSection.Method

    /// `strokes[i]`: the stroke (below `strokeCount`) whose values predict `values[i]`.
    package init(values: [Double], strokes: [UInt32], strokeCount: Int, rangeCoding: RangeCodedStream.Policy = .never,
                 lowFormDeflate: DeflateSection.Method = .matching(level: 6)) {
        self.values = values
        self.strokes = strokes
        self.strokeCount = strokeCount
        self.rangeCoding = rangeCoding
        self.lowFormDeflate = lowFormDeflate
    }

    /// One way of coding the column, evaluated on its values.
    struct Plan {
        var shape = RealColumnShape()
        var exponents: [Int32] = []
        var exceptions: [Int] = []
        /// Per non-exception entry: the coarse integer and (if fine) the fine integer.
        var coarse: [Int64] = []
        var fine: [Int64] = []
        var bits = Int.max
        /// The bit lengths of the coarse residuals under `shape`'s order and start rule (65
        /// counts), as `chooseOrder` measured them: the coarse stream's split without another
        /// pass.
        var coarseHistogram: [Int]?
    }

    package func write(to out: inout ByteWriter) {
        var lowBytes: [Range<Int>] = []
        write(to: &out, lowBytes: &lowBytes)
    }

    /// `write(to:)`, noting where each stream's raw low bytes lie in `out` (§14.1): bytes a
    /// deflate codes best with Huffman codes of their own (`EncodedBody.deflateSections`).
    package func write(to out: inout ByteWriter, lowBytes: inout [Range<Int>]) {
        let plan = bestPlan()
        out.append(plan.shape.grid)
        out.append(plan.shape.shapeByte)
        out.appendVarint(UInt64(plan.exceptions.count))
        var previous = -1
        for index in plan.exceptions {
            out.appendVarint(UInt64(index - previous - 1))
            out.appendLE(values[index].bitPattern)
            previous = index
        }
        let residuals = coarseResiduals(plan)
        let ages = rangeCoding != .never && plan.coarse.count >= RangeCodedStream.minimumCount ? codedAges(plan) : nil
        Self.writeStream(residuals, histogram: plan.coarseHistogram, ages: ages, policy: rangeCoding,
                         lowFormDeflate: lowFormDeflate, to: &out, lowBytes: &lowBytes)
        guard plan.shape.fine != .none else { return }
        if plan.shape.fine == .strokeExponent {
            for exponent in plan.exponents { out.appendZigZag(Int64(exponent)) }
        }
        Self.writeStream(plan.fine.map(ExactReal.zigzag), ages: ages, policy: rangeCoding,
                         lowFormDeflate: lowFormDeflate, to: &out, lowBytes: &lowBytes)
    }

    /// The zigzagged residuals of the plan's coarse integers under its order and start rule
    /// (§14.3), in column order.
    func coarseResiduals(_ plan: Plan) -> [UInt64] {
        let order = plan.shape.order
        let startFromPrevious = plan.shape.startFromPrevious
        precondition(plan.coarse.count + plan.exceptions.count == values.count, "a plan of the whole column")
        return [UInt64](unsafeUninitializedCapacity: plan.coarse.count) { residuals, initialized in
            walkCodedEntries(of: plan, in: 0..<values.count) { cursor, n, predictor, last in
                let predicted = predictor.seen || !startFromPrevious ? predictor.predict(order: order) : last
                residuals[cursor] = ExactReal.zigzag(n &- predicted)
            }
            initialized = plan.coarse.count
        }
    }

    /// Calls `body` for each coded entry of `range` (exceptions skipped), in column order,
    /// with its place in `plan.coarse`, its coarse integer, its stroke's predictor before it
    /// and the previous coded entry's integer (0 for the first). A stroke's entries come in
    /// runs, so its predictor stays in registers for the run (`ColumnPredictors`).
    @inline(__always)
    func walkCodedEntries(of plan: Plan, in range: Range<Int>, _ body: (Int, Int64, Predictor, Int64) -> Void) {
        var table = [Predictor](repeating: Predictor(), count: strokeCount)
        table.withUnsafeMutableBufferPointer { table in
            strokes.withUnsafeBufferPointer { strokes in
                plan.coarse.withUnsafeBufferPointer { coarse in
                    plan.exceptions.withUnsafeBufferPointer { exceptions in
                        var last: Int64 = 0
                        var cursor = 0
                        var exceptionCursor = 0
                        var nextException = exceptions.first ?? Int.max
                        var current = -1
                        var predictor = Predictor()
                        for index in range {
                            if index == nextException {
                                exceptionCursor += 1
                                nextException = exceptionCursor < exceptions.count ? exceptions[exceptionCursor] : Int.max
                                continue
                            }
                            let stroke = Int(strokes[index])
                            if stroke != current {
                                if current >= 0 { table[current] = predictor }
                                predictor = table[stroke]
                                current = stroke
                            }
                            let n = coarse[cursor]
                            body(cursor, n, predictor, last)
                            cursor += 1
                            predictor.advance(n)
                            last = n
                        }
                    }
                }
            }
        }
    }

    /// The cheapest plan. Tidy columns (every value on a decimal grid) are settled by the
    /// first candidate; the others try each grid and fine unit on a prefix of the column,
    /// then code the whole column with the winner.
    func bestPlan() -> Plan {
        guard !values.isEmpty else { return Plan(bits: 0) }
        if let tidy = RealGrid.decimalIntegers(values) {
            // What `evaluate` gives on the smallest decimal grid when nothing is an exception,
            // without converting every value twice (once to find the grid, once on it).
            var plan = Plan()
            plan.shape.grid = tidy.scale
            plan.coarse = tidy.integers
            let chosen = chooseOrder(plan: plan, range: 0..<values.count)
            plan.shape.order = chosen.order
            plan.shape.startFromPrevious = chosen.start
            plan.coarseHistogram = chosen.histogram
            plan.bits = chosen.bits + 16
            return plan
        }
        let decimalScale = RealGrid.smallestScale(values)
        // The fallback every column can take: exceptions are unlimited here.
        let decimal = evaluate(grid: decimalScale, narrow: false, fine: .none, range: 0..<values.count, hopeless: Int.max)
        if decimal.exceptions.isEmpty { return decimal }

        let sample = 0..<min(values.count, Self.sampleSize)
        var candidates: [(grid: UInt8, narrow: Bool, fine: FineUnit)] = [(decimalScale, false, .none), (FormatV2.thirds, false, .none)]
        let floatExact = values.allSatisfy { Double(Float($0)).bitPattern == $0.bitPattern }
        if floatExact {
            candidates.append((RealGrid.smallestScale(values, narrow: true), true, .none))
        }
        if let binary = binaryGridCode() { candidates.append((binary, false, .none)) }
        candidates.append((floatExact ? FormatV2.ordered32 : FormatV2.ordered64, false, .none))
        for scale: UInt8 in 0...3 {
            if floatExact { candidates.append((scale, false, .ulp32)) }
            candidates.append((scale, false, .ulp64))
            candidates.append((scale, false, .strokeExponent))
        }
        var best = decimal
        var bestSample = values.count <= Self.sampleSize ? decimal.bits : Int.max
        var winner = (grid: decimalScale, narrow: false, fine: FineUnit.none)
        for candidate in candidates {
            let plan = evaluate(grid: candidate.grid, narrow: candidate.narrow, fine: candidate.fine, range: sample)
            if plan.bits < bestSample {
                bestSample = plan.bits
                winner = candidate
                if sample.count == values.count { best = plan }
            }
        }
        if sample.count == values.count { return best }
        let full = evaluate(grid: winner.grid, narrow: winner.narrow, fine: winner.fine, range: 0..<values.count)
        return full.bits < decimal.bits ? full : decimal
    }

    static let sampleSize = 4096

    /// The binary grid (2^-k, k <= 30) every value is on, if there is one finer than 1.
    func binaryGridCode() -> UInt8? {
        var needed = 1
        for value in values {
            guard let lowest = ExactReal.lowestBitExponent(value) else {
                if value == 0 && value.sign == .plus { continue }
                return nil
            }
            needed = max(needed, -lowest)
            guard needed <= Int(FormatV2.maxBinaryExponent) else { return nil }
        }
        return FormatV2.binaryBase + UInt8(needed)
    }

    /// Codes `values[range]` one way and measures it; gives up (an empty plan of infinite
    /// cost) once more than `hopeless` values (default: a quarter) are exceptions.
    func evaluate(grid: UInt8, narrow: Bool, fine: FineUnit, range: Range<Int>, hopeless: Int? = nil) -> Plan {
        guard let gridKind = GridV2(code: grid), !(gridKind.isOrdered && (fine != .none || narrow)) else { return Plan() }
        var plan = Plan()
        plan.shape.grid = grid
        plan.shape.narrow = narrow
        plan.shape.fine = fine
        plan.coarse.reserveCapacity(range.count)
        if fine != .none { plan.fine.reserveCapacity(range.count) }
        if fine == .strokeExponent { plan.exponents = strokeExponents(range: range) }
        let exceptionLimit = hopeless ?? range.count / 4 + 1
        for index in range {
            let value = values[index]
            if let (n, c) = code(value, grid: gridKind, narrow: narrow, fine: fine,
                                 strokeExponent: fine == .strokeExponent ? Int(plan.exponents[Int(strokes[index])]) : 0) {
                plan.coarse.append(n)
                if fine != .none { plan.fine.append(c) }
            } else {
                plan.exceptions.append(index)
                if plan.exceptions.count > exceptionLimit { return Plan() }
            }
        }
        let chosen = chooseOrder(plan: plan, range: range)
        plan.shape.order = chosen.order
        plan.shape.startFromPrevious = chosen.start
        plan.coarseHistogram = chosen.histogram
        var bits = chosen.bits + plan.exceptions.count * 80 + 16
        if fine != .none { bits += Self.streamBits(plan.fine.map(ExactReal.zigzag)) }
        if fine == .strokeExponent { bits += strokeCount * 16 }
        plan.bits = bits
        return plan
    }

    /// The coarse and fine integers that reproduce `value` exactly, if any.
    @inline(__always)
    func code(_ value: Double, grid: GridV2, narrow: Bool, fine: FineUnit, strokeExponent: Int) -> (Int64, Int64)? {
        guard let n = grid.integer(value), let base = grid.value(n, narrow: narrow) else { return nil }
        if fine == .none { return base.bitPattern == value.bitPattern ? (n, 0) : nil }
        let exponent = fine == .strokeExponent ? strokeExponent : ExactReal.unitExponent(base, fine: fine)
        let multiple = ExactReal.scaled(value, byPowerOfTwo: -exponent)
        guard multiple.magnitude < Double(FormatV2.fineLimit), multiple.rounded(.towardZero) == multiple,
              let floor = ExactReal.scaledFloor(base, exponent: exponent) else { return nil }
        let m = Int64(multiple)
        guard let back = ExactReal.fineValue(m, exponent: exponent), back.bitPattern == value.bitPattern else { return nil }
        return (n, m &- floor)
    }

    /// Per stroke, the exponent of the coarsest power of two every value of the stroke is a
    /// multiple of, raised where needed to keep the multiples and scaled grid values below 2^62.
    func strokeExponents(range: Range<Int>) -> [Int32] {
        var lowest = [Int](repeating: Int.max, count: strokeCount)
        var largest = [Double](repeating: 0, count: strokeCount)
        for index in range {
            let stroke = Int(strokes[index])
            let value = values[index]
            guard value.isFinite else { continue }
            if let bit = ExactReal.lowestBitExponent(value) { lowest[stroke] = min(lowest[stroke], bit) }
            largest[stroke] = max(largest[stroke], value.magnitude)
        }
        return (0..<strokeCount).map { stroke in
            guard lowest[stroke] != Int.max else { return 0 }
            // Values and grid values near the largest must stay below 2^61 units.
            var exponent = max(lowest[stroke], FormatV2.minFineExponent)
            if largest[stroke] > 0 {
                let ceiling = Int(largest[stroke].exponent) - 60
                exponent = max(exponent, ceiling)
            }
            return Int32(min(exponent, FormatV2.maxFineExponent))
        }
    }

    /// Order and stroke-start prediction minimising the coarse stream, all four measured in
    /// one pass; with the winner's estimate and histogram of residual bit lengths.
    func chooseOrder(plan: Plan, range: Range<Int>) -> (order: UInt8, start: Bool, bits: Int, histogram: [Int]) {
        // Two histograms of 65 bit lengths for a stroke's later entries (order 1, order 2)
        // and two for its first entry (predicted as 0, as the previous entry), one after the
        // other in one flat array (one allocation: a board commits a tiny block hundreds of
        // times a second); the four combinations are their sums.
        var counts = [Int](repeating: 0, count: 4 * 65)
        // Where the stream may be range coded, the same four for the symbols the coder models
        // (`RangeCodedSymbols`): it is cheapest where residuals repeat, not where they are small.
        let symbolsToo = rangeCoding != .never && range.count >= RangeCodedStream.minimumCount
        var symbols = [UInt32](repeating: 0, count: symbolsToo ? 4 * RangeCodedSymbols.count : 0)
        counts.withUnsafeMutableBufferPointer { counts in
            symbols.withUnsafeMutableBufferPointer { symbols in
                walkCodedEntries(of: plan, in: range) { _, n, predictor, last in
                    let residuals = predictor.seen
                        ? (n &- predictor.previous, n &- predictor.previous &- predictor.previousDelta, 0, 65)
                        : (n, n &- last, 130, 195)
                    counts[residuals.2 + Self.bitLength(residuals.0)] += 1
                    counts[residuals.3 + Self.bitLength(residuals.1)] += 1
                    guard symbolsToo else { return }
                    let base = residuals.2 / 65 * RangeCodedSymbols.count
                    symbols[base + RangeCodedSymbols.index(ExactReal.zigzag(residuals.0))] &+= 1
                    symbols[base + RangeCodedSymbols.count + RangeCodedSymbols.index(ExactReal.zigzag(residuals.1))] &+= 1
                }
            }
        }
        // Combination c: order 1 (c < 2) or 2, start from 0 (c even) or from the last entry.
        var best = (order: UInt8(2), start: false, bits: Int.max, histogram: [Int]())
        var bestCost = Double.infinity
        var histogram = [Int](repeating: 0, count: 65)
        for combination in 0..<4 {
            let later = combination >= 2 ? 65 : 0
            let first = combination & 1 == 1 ? 195 : 130
            for length in 0..<65 { histogram[length] = counts[later + length] + counts[first + length] }
            let bits = Self.bestSplit(histogram).bits
            let cost = symbolsToo
                ? RangeCodedSymbols.bits(symbols, later: later / 65, first: first / 65, lengths: histogram)
                : Double(bits)
            if cost < bestCost {
                bestCost = cost
                best = (combination >= 2 ? 2 : 1, combination & 1 == 1, bits, histogram)
            }
        }
        return best
    }

    @inline(__always)
    static func bitLength(_ residual: Int64) -> Int { 64 - ExactReal.zigzag(residual).leadingZeroBitCount }

    /// The split of a stream (how many raw low bytes per value, 0...7; the fewest of equal
    /// cost) and its estimated bits after deflate, from the histogram of its values' bit
    /// lengths. Raw low bytes cost 8 bits each; a high part under 128 costs about its bit
    /// length plus one (deflate's Huffman codes see it), a larger one its whole varint.
    static func bestSplit(_ histogram: UnsafeBufferPointer<Int>) -> (low: Int, bits: Int) {
        guard let shortest = histogram.firstIndex(where: { $0 != 0 }),
              let longest = histogram.lastIndex(where: { $0 != 0 }) else { return (0, 0) }
        var best = (low: 0, bits: Int.max)
        for low in 0...7 {
            var bits = 0
            for length in shortest...longest where histogram[length] != 0 {
                let high = length - 8 * low
                let highBits = high <= 0 ? 1 : high <= 7 ? high + 1 : 8 * ((high + 6) / 7)
                bits += histogram[length] * (8 * low + highBits)
            }
            if bits < best.bits { best = (low, bits) }
            // Once no value has a high part left, every further low byte only adds 8 bits a
            // value: the rest cost strictly more.
            if 8 * low >= longest { break }
        }
        return best
    }

    static func bestSplit(_ histogram: [Int]) -> (low: Int, bits: Int) {
        histogram.withUnsafeBufferPointer { bestSplit($0) }
    }

    static func histogram(_ stream: [UInt64]) -> [Int] {
        var histogram = [Int](repeating: 0, count: 65)
        for value in stream { histogram[64 - value.leadingZeroBitCount] += 1 }
        return histogram
    }

    static func streamBits(_ stream: [UInt64]) -> Int { bestSplit(histogram(stream)).bits }

    /// `low:u8`, then each value's high part (value >> 8*low) as a varint, then each value's
    /// low bytes, little-endian: noise bits stay raw, where deflate cannot shrink them anyway,
    /// and the high parts stay small, where its Huffman codes can.
    /// `histogram`: the stream's, if the caller has it (`Plan.coarseHistogram`).
    static func writeStream(_ stream: [UInt64], histogram known: [Int]? = nil, to out: inout ByteWriter) {
        var lowBytes: [Range<Int>] = []
        writeStream(stream, histogram: known, to: &out, lowBytes: &lowBytes)
    }

    /// `ages`: the entries' ages if the stream may be range coded (§18); it is if that is
    /// clearly smaller than what deflate makes of the `low` form (§18.3).
    static func writeStream(_ stream: [UInt64], histogram known: [Int]? = nil, ages: [UInt8]? = nil,
                            policy: RangeCodedStream.Policy = .whenSmaller, lowFormDeflate: DeflateSection.Method = .matching(level: 6),
                            to out: inout ByteWriter, lowBytes: inout [Range<Int>]) {
        let (low, estimate) = bestSplit(known ?? histogram(stream))
        if let ages, stream.count >= RangeCodedStream.minimumCount {
            let coded = RangeCodedStream.encode(stream, ages: ages)
            let bytes = 1 + coded.lengths.count + coded.coded.count + coded.raw.count
            if policy == .always || rangeCodingPays(bytes: bytes, stream, low: low, estimate: estimate, deflate: lowFormDeflate) {
                out.append(RangeCodedStream.marker)
                out.append(contentsOf: coded.lengths)
                let start = out.count
                out.append(contentsOf: coded.coded)
                out.append(contentsOf: coded.raw)
                lowBytes.append(start..<out.count)
                return
            }
        }
        writeLowForm(stream, low: low, to: &out, lowBytes: &lowBytes)
    }

    static func writeLowForm(_ stream: [UInt64], low: Int, to out: inout ByteWriter, lowBytes: inout [Range<Int>]) {
        out.append(UInt8(low))
        let shift = UInt64(8 * low)
        for value in stream { out.appendVarint(low == 0 ? value : value >> shift) }
        guard low > 0 else { return }
        let start = out.count
        for value in stream {
            for byte in 0..<low { out.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * byte))) }
        }
        lowBytes.append(start..<out.count)
    }
}

// MARK: - Decoding

/// A column's per-stroke predictors while it is decoded. A stroke's entries come in runs: its
/// predictor stays in registers for the run (kept in the table, each entry waited on the
/// store of the one before).
struct ColumnPredictors {
    private var table: [Predictor]
    private var current = -1
    private var predictor = Predictor()
    private var last: Int64 = 0
    private let order: UInt8
    private let startFromPrevious: Bool

    init(strokeCount: Int, order: UInt8, startFromPrevious: Bool) {
        table = [Predictor](repeating: Predictor(), count: strokeCount)
        self.order = order
        self.startFromPrevious = startFromPrevious
    }

    /// The coarse integer of column entry `entry` (of `stroke`) from its zigzag residual.
    @inline(__always)
    mutating func coarse(_ residual: UInt64, stroke: Int, entry: Int, offset: Int) throws(DecodeError) -> Int64 {
        if stroke != current {
            guard stroke < table.count else {
                throw .malformed(offset: offset, reason: "entry \(entry): stroke \(stroke) of \(table.count)")
            }
            if current >= 0 { table[current] = predictor }
            predictor = table[stroke]
            current = stroke
        }
        let predicted = predictor.seen || !startFromPrevious ? predictor.predict(order: order) : last
        let n = predicted &+ ExactReal.unzigzag(residual)
        predictor.advance(n)
        last = n
        return n
    }
}

package enum RealColumnDecoderV2 {
    /// `rangeCoded`: whether a stream may be range coded (§18: bodies of versions 6 and 7).
    package static func decode(
        _ reader: inout ByteReader, strokes: [UInt32], strokeCount: Int, rangeCoded: Bool = false
    ) throws(DecodeError) -> [Double] {
        var values: [Double] = []
        try decode(&reader, strokes: strokes, strokeCount: strokeCount, rangeCoded: rangeCoded, into: &values)
        return values
    }

    /// The column's values into the first `strokes.count` entries of `values`, which grows
    /// if it is shorter and is otherwise reused: a caller decoding chunk after chunk keeps
    /// one buffer per column instead of touching fresh memory for each (`SnapshotChunks.Scratch`).
    package static func decode(
        _ reader: inout ByteReader, strokes: [UInt32], strokeCount: Int, rangeCoded: Bool = false, into values: inout [Double]
    ) throws(DecodeError) {
        let count = strokes.count
        if values.count < count { values = [Double](repeating: 0, count: count) }
        let headerOffset = reader.offset
        let grid = try reader.readByte()
        let shapeByte = try reader.readByte()
        guard let gridKind = GridV2(code: grid) else {
            throw .malformed(offset: headerOffset, reason: "unknown real-column grid \(grid)")
        }
        let order = shapeByte & 3
        guard order == 1 || order == 2, shapeByte & 0xC0 == 0, let fine = FineUnit(rawValue: (shapeByte >> 4) & 3),
              !(gridKind.isOrdered && shapeByte & 0x38 != 0) else {
            throw .malformed(offset: headerOffset + 1, reason: "unknown real-column shape \(shapeByte)")
        }
        let startFromPrevious = shapeByte & 4 != 0
        let narrow = shapeByte & 8 != 0

        let exceptionsOffset = reader.offset
        let exceptionCount = try reader.readCount(minimumItemSize: 9, what: "exception")
        guard exceptionCount <= count else {
            throw .malformed(offset: exceptionsOffset, reason: "\(exceptionCount) exceptions in a column of \(count)")
        }
        // Most columns have no exception: then entry i is coded value i, and no per-entry test
        // is needed (`codedIndex`).
        var isException = exceptionCount == 0 ? [] : [Bool](repeating: false, count: count)
        var index = -1
        for _ in 0..<exceptionCount {
            let start = reader.offset
            let gap = try reader.readVarint()
            guard gap < UInt64(count) else { throw .malformed(offset: start, reason: "exception index beyond the column") }
            index += Int(gap) + 1
            guard index < count else {
                throw .malformed(offset: start, reason: "exception index \(index) beyond the column of \(count)")
            }
            values[index] = Double(bitPattern: try reader.readLE(UInt64.self))
            isException[index] = true
        }
        let coded = count - exceptionCount
        if exceptionCount == 0, fine == .none, case .divide(let divisor) = gridKind,
           reader.remaining > 0, reader.buffer[reader.offset] == 0 {
            return try decodeDivided(&reader, strokes: strokes, strokeCount: strokeCount, divisor: divisor, narrow: narrow,
                                     order: order, startFromPrevious: startFromPrevious, headerOffset: headerOffset, into: &values)
        }
        // The column's entry of each coded value, in order.
        let codedIndex: [Int]? = exceptionCount == 0 ? nil : isException.indices.filter { !isException[$0] }
        // A range-coded stream's contexts are its entries' ages (§18.2), computed once if needed.
        var ages: [UInt8]?
        func agesIfRangeCoded(_ reader: ByteReader) throws(DecodeError) -> [UInt8]? {
            guard rangeCoded, reader.remaining > 0, reader.buffer[reader.offset] == RangeCodedStream.marker else { return nil }
            if ages == nil {
                ages = try RangeCodedStream.ages(strokes: strokes, codedIndex: codedIndex, count: coded,
                                                 strokeCount: strokeCount, offset: headerOffset)
            }
            return ages
        }
        var coarse = try readStream(&reader, count: coded, what: "coarse", ages: try agesIfRangeCoded(reader))
        let strokesOffset = headerOffset

        // The residuals become coarse integers in place: one pass over unsafe buffers, as
        // this loop runs once per stored real (a snapshot's 2 M points are 6 M of them).
        try coarse.withUnsafeMutableBufferPointer { (stream) throws(DecodeError) in
            try strokes.withUnsafeBufferPointer { (strokeOf) throws(DecodeError) in
                var predictors = ColumnPredictors(strokeCount: strokeCount, order: order, startFromPrevious: startFromPrevious)
                for cursor in 0..<coded {
                    let index = codedIndex?[cursor] ?? cursor
                    stream[cursor] = UInt64(bitPattern: try predictors.coarse(stream[cursor], stroke: Int(strokeOf[index]),
                                                                             entry: index, offset: strokesOffset))
                }
            }
        }
        guard fine != .none else {
            try values.withUnsafeMutableBufferPointer { (values) throws(DecodeError) in
                try coarse.withUnsafeBufferPointer { (coarse) throws(DecodeError) in
                    for cursor in 0..<coded {
                        let index = codedIndex?[cursor] ?? cursor
                        let n = Int64(bitPattern: coarse[cursor])
                        guard let value = gridKind.value(n, narrow: narrow) else {
                            throw .malformed(offset: headerOffset, reason: "entry \(index): \(n) is no float32's ordered index")
                        }
                        values[index] = value
                    }
                }
            }
            return
        }
        guard case .divide(let divisor) = gridKind else { return }

        var exponents: [Int] = []
        if fine == .strokeExponent {
            exponents.reserveCapacity(strokeCount)
            for _ in 0..<strokeCount {
                let start = reader.offset
                let exponent = try reader.readZigZag()
                guard exponent >= Int64(FormatV2.minFineExponent), exponent <= Int64(FormatV2.maxFineExponent) else {
                    throw .malformed(offset: start, reason: "fine exponent \(exponent) out of range")
                }
                exponents.append(Int(exponent))
            }
        }
        let fineOffset = reader.offset
        let offsets = try readStream(&reader, count: coded, what: "fine", ages: try agesIfRangeCoded(reader))
        for cursor in 0..<coded {
            let index = codedIndex?[cursor] ?? cursor
            let base = GridV2.divide(divisor).value(Int64(bitPattern: coarse[cursor]), narrow: narrow)!
            let exponent = fine == .strokeExponent ? exponents[Int(strokes[index])] : ExactReal.unitExponent(base, fine: fine)
            let c = ExactReal.unzigzag(offsets[cursor])
            guard let floor = ExactReal.scaledFloor(base, exponent: exponent) else {
                throw .malformed(offset: fineOffset, reason: "entry \(index): grid value \(base) beyond 2^62 units of 2^\(exponent)")
            }
            let (m, overflow) = floor.addingReportingOverflow(c)
            guard !overflow, let value = ExactReal.fineValue(m, exponent: exponent) else {
                throw .malformed(offset: fineOffset, reason: "entry \(index): \(m) units of 2^\(exponent) is not a finite normal value")
            }
            values[index] = value
        }
    }

    /// The commonest column in one pass: no exception, no fine part, a coarse stream without
    /// low bytes, a divided grid (every column of a 2-decimal session). What the general path
    /// does in three passes over two arrays, with the same checks and errors.
    private static func decodeDivided(
        _ reader: inout ByteReader, strokes: [UInt32], strokeCount: Int, divisor: Double,
        narrow: Bool, order: UInt8, startFromPrevious: Bool, headerOffset: Int, into values: inout [Double]
    ) throws(DecodeError) {
        let count = strokes.count
        _ = try reader.readByte()
        guard reader.remaining >= count else { throw .truncated(offset: reader.offset, needed: "\(count) coarse values") }
        // Never nil: every integer has a divided grid value.
        let grid = GridV2.divide(divisor)
        try values.withUnsafeMutableBufferPointer { (values) throws(DecodeError) in
            try strokes.withUnsafeBufferPointer { (strokeOf) throws(DecodeError) in
                var predictors = ColumnPredictors(strokeCount: strokeCount, order: order, startFromPrevious: startFromPrevious)
                for index in 0..<count {
                    let residual = try reader.readShortVarint()
                    let n = try predictors.coarse(residual, stroke: Int(strokeOf[index]), entry: index, offset: headerOffset)
                    values[index] = grid.value(n, narrow: narrow)!
                }
            }
        }
    }

    /// Reads what `RealColumnEncoderV2.writeStream` wrote; `ages`: the entries' ages if the
    /// stream is range coded (§18), nil where that form is not allowed.
    static func readStream(_ reader: inout ByteReader, count: Int, what: String, ages: [UInt8]? = nil) throws(DecodeError) -> [UInt64] {
        let start = reader.offset
        let low = Int(try reader.readByte())
        if let ages, low == Int(RangeCodedStream.marker) {
            return try RangeCodedStream.decode(&reader, ages: ages, what: what)
        }
        guard low <= 7 else { throw .malformed(offset: start, reason: "\(what) stream: \(low) low bytes per value (at most 7)") }
        guard reader.remaining >= count * (1 + low) else {
            throw .truncated(offset: reader.offset, needed: "\(count) \(what) values")
        }
        var stream = [UInt64](repeating: 0, count: count)
        try stream.withUnsafeMutableBufferPointer { (stream) throws(DecodeError) in
            try reader.readVarints(into: stream)
            guard low > 0 else { return }
            let shift = UInt64(8 * low)
            for index in 0..<count where stream[index] >> (64 - shift) != 0 {
                throw .malformed(offset: start, reason: "\(what) stream: value \(index) exceeds 64 bits")
            }
            let lowBytes = try reader.readBytes(count * low)
            for index in 0..<count {
                var part: UInt64 = 0
                for byte in 0..<low { part |= UInt64(lowBytes[index * low + byte]) << UInt64(8 * byte) }
                stream[index] = stream[index] << shift | part
            }
        }
        return stream
    }
}
