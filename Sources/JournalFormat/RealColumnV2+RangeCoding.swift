import JournalCompression

// The parts of a v2 real column's encoder that serve range-coded streams (docs/FORMAT.md §18):
// the ages that are their contexts, and the estimates by which the writer decides whether a
// stream is range coded and in which order and start rule its column goes.
extension RealColumnEncoderV2 {
    /// Each coded entry's age in its stroke (§18.2), for a range-coded stream's contexts.
    func codedAges(_ plan: Plan) -> [UInt8] {
        var seen = [UInt8](repeating: 0, count: strokeCount)
        var ages = [UInt8]()
        ages.reserveCapacity(plan.coarse.count)
        var exceptionCursor = 0
        for index in values.indices {
            if exceptionCursor < plan.exceptions.count && plan.exceptions[exceptionCursor] == index {
                exceptionCursor += 1
                continue
            }
            let stroke = Int(strokes[index])
            ages.append(seen[stroke])
            if seen[stroke] < 2 { seen[stroke] += 1 }
        }
        return ages
    }

    /// The order-0 entropy of the stream's high-part varint bytes, plus its raw low bytes:
    /// about what Huffman codes make of the `low` form.
    static func huffmanBits(_ stream: [UInt64], low: Int) -> Double {
        var counts = [Int](repeating: 0, count: 256)
        var total = 0
        let shift = UInt64(8 * low)
        for value in stream {
            var high = low == 0 ? value : value >> shift
            repeat {
                counts[Int(high < 0x80 ? high : (high & 0x7F) | 0x80)] += 1
                total += 1
                high >>= 7
            } while high != 0
        }
        var bits = Double(total) * log2(Double(total))
        for count in counts where count > 0 { bits -= Double(count) * log2(Double(count)) }
        return bits + Double(8 * low * stream.count)
    }

    /// log2 without Foundation: the exponent, and the significand's by a series (error < 1e-5).
    static func log2(_ x: Double) -> Double {
        let m = x.significand
        let t = (m - 1) / (m + 1)
        let t2 = t * t
        let ln = 2 * t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 / 9))))
        return Double(x.exponent) + ln * 1.4426950408889634
    }

    /// Whether a range-coded stream of `bytes` is under `worthwhileShare` of what deflate makes
    /// of the `low` form. Deflate's Huffman codes get close to the order-0 entropy of the
    /// varint bytes, and below the estimate where residuals spread evenly over a few bits:
    /// under both, the range coder wins without deflating. Above the `low` form's own bytes it
    /// loses. In between (a stream of small residuals, like pressure, whose runs and repeats
    /// deflate codes worse than their entropy), the `low` form is deflated as the body will.
    static func rangeCodingPays(bytes: Int, _ stream: [UInt64], low: Int, estimate: Int, deflate method: DeflateSection.Method) -> Bool {
        let share = RangeCodedStream.worthwhileShare
        let codedBits = Double(8 * bytes)
        if codedBits < share * min(Double(8 + estimate), 8 + huffmanBits(stream, low: low)) { return true }
        var lowForm = ByteWriter(capacity: stream.count * (1 + low) + 1)
        var ignored: [Range<Int>] = []
        writeLowForm(stream, low: low, to: &lowForm, lowBytes: &ignored)
        guard codedBits < share * Double(8 * lowForm.count) else { return false }
        let section = DeflateSection(end: lowForm.count, method: method)
        guard let deflated = try? RawDeflate.compress(lowForm.bytes, sections: [section]) else { return false }
        return codedBits < share * Double(8 * deflated.count)
    }
}

/// What the range coder (§18.2) models of an integer: its bit length and the four bits below
/// its leading one; the bits below those are raw. The order-0 entropy of these symbols plus
/// the raw bits is close to what the coder spends (on Hershey's and the standard session's
/// columns it picks the order and start rule an exact coding would pick), at the cost of a
/// histogram, where coding the stream each way would cost the coder's 24 ns a value.
enum RangeCodedSymbols {
    static let count = 65 * 32

    @inline(__always) static func index(_ value: UInt64) -> Int {
        let length = 64 - value.leadingZeroBitCount
        let top = length > 5 ? Int(truncatingIfNeeded: value >> UInt64(length - 5)) : Int(truncatingIfNeeded: value)
        return length << 5 | top & 31
    }

    /// The estimated bits of the sum of histograms `later` and `first` (each `count` long in
    /// `symbols`), whose bit lengths are `lengths`.
    static func bits(_ symbols: [UInt32], later: Int, first: Int, lengths: [Int]) -> Double {
        var raw = 0
        var total = 0
        for (length, number) in lengths.enumerated() {
            total += number
            if length > 5 { raw += (length - 5) * number }
        }
        guard total > 0 else { return 0 }
        var bits = Double(total) * RealColumnEncoderV2.log2(Double(total))
        symbols.withUnsafeBufferPointer { symbols in
            let a = later * count, b = first * count
            for index in 0..<count {
                let number = Int(symbols[a + index]) + Int(symbols[b + index])
                if number > 1 { bits -= Double(number) * RealColumnEncoderV2.log2(Double(number)) }
            }
        }
        return bits + Double(raw)
    }
}
