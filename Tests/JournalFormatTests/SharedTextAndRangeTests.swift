import JournalFormat
import JournalTestSupport
import Testing

/// The single implementations every module shares: seq ranges, hex, JSON objects.
@Suite(.ownThreads) struct SharedTextAndRangeTests {
    @Test func seqRangesAgreeWithASetOfSeqsOnRandomInput() {
        var random = SeededGenerator(seed: 99)
        /// Up to 7 random ranges of seqs 1...60 and up to `width` long, and the seqs they hold.
        func randomRanges(width: UInt64) -> (ranges: [ClosedRange<UInt64>], seqs: Set<UInt64>) {
            var ranges: [ClosedRange<UInt64>] = []
            var seqs = Set<UInt64>()
            for _ in 0..<Int(random.next() % 8) {
                let low = 1 + random.next() % 60
                let range = low...(low + random.next() % width)
                ranges.append(range)
                seqs.formUnion(range)
            }
            return (ranges, seqs)
        }
        for round in 0..<300 {
            let (ranges, naive) = randomRanges(width: 6)
            var built = SeqRanges()
            for range in ranges { built.insert(range) }
            let whole = SeqRanges(ranges)
            #expect(built == whole, "round \(round)")
            #expect(whole.count == UInt64(naive.count), "round \(round)")
            for seq in 0...70 { #expect(whole.contains(UInt64(seq)) == naive.contains(UInt64(seq)), "round \(round) seq \(seq)") }
            // Canonical: sorted, and neither overlapping nor touching.
            for (a, b) in zip(whole.ranges, whole.ranges.dropFirst()) { #expect(a.upperBound + 1 < b.lowerBound, "round \(round)") }
            // Against a second random set: the intersection holds exactly the seqs both hold.
            let (otherRanges, other) = randomRanges(width: 9)
            let both = whole.intersection(SeqRanges(otherRanges))
            #expect(both == SeqRanges(naive.intersection(other).map { $0...$0 }), "round \(round)")
            #expect(both == SeqRanges(otherRanges).intersection(whole), "round \(round)")
            let through: UInt64 = 75
            let missing = Set((1...through).filter { !naive.contains($0) })
            #expect(Set(whole.gaps(through: through).flatMap { Array($0) }) == missing, "round \(round)")
        }
    }

    @Test func seqRangesAtTheTopOfUInt64DoNotOverflow() {
        let ranges = SeqRanges([(UInt64.max - 2)...UInt64.max, 1...1, (UInt64.max - 5)...(UInt64.max - 3)])
        #expect(ranges.ranges == [1...1, (UInt64.max - 5)...UInt64.max])
        #expect(ranges.count == 7)
        #expect(ranges.gaps() == [2...(UInt64.max - 6)])
        #expect(SeqRanges.text(ranges.ranges) == "1,\(UInt64.max - 5)...\(UInt64.max)")
        #expect(SeqRanges.json([1...5, 9...9]) == "[[1,5],[9,9]]")
    }

    @Test func hexWritesAndReadsEveryDigit() {
        #expect(Hex.string(0xBEEF, digits: 8) == "0000beef")
        #expect(Hex.string(0xBEEF, digits: 4, uppercase: true) == "BEEF")
        #expect(Hex.string(.max, digits: 16) == "ffffffffffffffff")
        #expect(Hex.checksum(0x1A2B) == "0x00001a2b")
        for byte in UInt8.min...UInt8.max {
            let expected: UInt8? = switch byte {
            case 48...57: byte - 48
            case 97...102: byte - 87
            case 65...70: byte - 55
            default: nil
            }
            #expect((Hex.digitValue(byte) == Hex.invalidDigit ? nil : Hex.digitValue(byte)) == expected, "byte \(byte)")
        }
        let id = UUIDBits(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)
        #expect(id.uuidString == "01234567-89AB-CDEF-FEDC-BA9876543210")
        #expect(UUIDBits(parsing: id.uuidString) == id && UUIDBits(parsing: id.compactHex) == id)
        #expect(RGBA(rawValue: 0x0A0B_0C0D).hexString == "#0A0B0C0D")
    }

    @Test func jsonObjectsKeepTheirKeyOrderAndEscapeEverything() {
        var inner = JSONObject()
        inner.add("n", 1)
        var object = JSONObject()
        object.add("z", "a\"b\\c\n\u{01}")
        object.add("a", true)
        object.add("missing", nil as String?)
        object.add("seq", nil as UInt64?)
        object.add("x", 0.1)
        object.add("nan", Double.nan)
        object.add("list", strings: ["p", "q"])
        object.add("objects", objects: [inner, inner])
        #expect(object.text == #"{"z":"a\"b\\c\n\u0001","a":true,"missing":null,"seq":null,"x":0.1,"nan":null,"list":["p","q"],"objects":[{"n":1},{"n":1}]}"#)
    }
}
