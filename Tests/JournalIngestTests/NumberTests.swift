@_spi(Testing) import JournalIngest
import JournalTestSupport
import Testing

@Suite(.ownThreads) struct NumberTests {
    /// Random decimal text in JSON grammar: up to 20 mantissa digits, optional fraction and
    /// exponent, sometimes negative, sometimes leading zeros after the point.
    static func randomNumberText(_ random: inout SeededGenerator) -> String {
        var text = random.next() & 1 == 0 ? "-" : ""
        let shape = random.next() % 8
        func digits(_ count: Int, leadingNonZero: Bool) -> String {
            var out = ""
            for index in 0..<count {
                let low: UInt64 = index == 0 && leadingNonZero ? 1 : 0
                out += String(low + random.next() % (10 - low))
            }
            return out
        }
        switch shape {
        case 0:
            // Integers.
            text += random.next() % 10 == 0 ? "0" : digits(Int(1 + random.next() % 20), leadingNonZero: true)
        case 1:
            // 17-digit mantissas, the shortest-round-trip length of a Double.
            text += digits(1, leadingNonZero: true) + "." + digits(16, leadingNonZero: false)
            text += "e" + String(Int(random.next() % 600) - 300)
        case 2:
            // Subnormals and the underflow edge.
            text += digits(1, leadingNonZero: true) + "." + digits(Int(1 + random.next() % 18), leadingNonZero: false)
            text += "e-" + String(300 + random.next() % 30)
        default:
            // Typical coordinates: a few integer digits, a few decimals, sometimes an exponent.
            text += random.next() % 4 == 0 ? "0" : digits(Int(1 + random.next() % 6), leadingNonZero: true)
            if random.next() % 4 != 0 {
                text += "." + String(repeating: "0", count: Int(random.next() % 4))
                    + digits(Int(1 + random.next() % 12), leadingNonZero: false)
            }
            if random.next() % 3 == 0 {
                let marker = ["e", "E", "e+", "e-", "E-"][Int(random.next() % 5)]
                text += marker + String(random.next() % 40)
            }
        }
        return text
    }

    @Test func agreesWithDoubleInitOnRandomText() {
        var random = SeededGenerator(seed: 2024)
        var fast = 0
        let total = 300_000
        for _ in 0..<total {
            let text = Self.randomNumberText(&random)
            guard let expected = Double(text) else {
                Issue.record("generator produced non-number \(text)")
                continue
            }
            let result = JSONNumber.parse(text)
            if expected.isFinite {
                #expect(result?.bitPattern == expected.bitPattern, "\(text): \(String(describing: result)) vs \(expected)")
            } else {
                #expect(result == nil, "\(text) overflows and must be refused")
            }
            if let quick = JSONNumber.fastPathValue(text) {
                fast += 1
                #expect(quick.bitPattern == expected.bitPattern, "fast path \(text): \(quick) vs \(expected)")
            }
        }
        // The fast path must actually carry most of the typical numbers.
        #expect(fast > total / 3, "fast path used for \(fast) of \(total)")
    }

    @Test func agreesOnRandomDoublesPrinted() {
        // Shortest round-trip text of random bit patterns (all magnitudes, subnormals included).
        var random = SeededGenerator(seed: 99)
        for _ in 0..<100_000 {
            let value = Double(bitPattern: random.next())
            guard value.isFinite else { continue }
            let text = value.description
            #expect(JSONNumber.parse(text)?.bitPattern == value.bitPattern, "\(text)")
            let scientific = text.contains("e") ? text : text + "e0"
            #expect(JSONNumber.parse(scientific)?.bitPattern == value.bitPattern, "\(scientific)")
        }
    }

    @Test func edgeCases() {
        let cases = [
            "0", "-0", "0.0", "-0.0", "0e0", "-0e-5", "0.000", "0e99999999999999999999",
            "1", "-1", "9007199254740992", "9007199254740993", "9007199254740995", "18446744073709551615",
            "18446744073709551616", "12345678901234567890123", "0.1", "0.2", "0.30000000000000004",
            "1e22", "1e23", "1e-22", "1e-23", "123456789e22", "4.0", "1.5", "1e-05", "5e-324", "4.9e-324",
            "2.4703282292062327e-324", "2.4703282292062328e-324", "1e-320", "-1e-320", "2.2250738585072011e-308",
            "2.2250738585072014e-308", "1.7976931348623157e308", "1.7976931348623158e308",
            "1797693134862315708145274237317043567981e269", "0.016", "523.41", "398.07", "0.53",
            "100000000000000000000000000000000000000000000000000e-50",
            "0.0000000000000000000000000000000000000000000001", "1E+2", "1e+0", "-1.0E-0",
        ]
        for text in cases {
            let expected = Double(text)!
            #expect(JSONNumber.parse(text)?.bitPattern == expected.bitPattern, "\(text)")
        }
        #expect(JSONNumber.parse("-0")?.sign == .minus)
        #expect(JSONNumber.parse("-0.0e10")?.sign == .minus)
        #expect(JSONNumber.parse("0")?.sign == .plus)
    }

    @Test func refusesNonFinite() {
        for text in ["1e999", "-1e999", "1.7976931348623159e308", "1e309", "9e99999999999999999999"] {
            #expect(JSONNumber.parse(text) == nil, "\(text)")
        }
    }

    @Test func refusesWhatIsNotJSONNumberGrammar() {
        for text in ["", "-", "+1", "01", "-01", "00", "1.", ".5", "1.e3", "1e", "1e+", "1e-", "--1", "NaN", "nan",
                     "Infinity", "inf", "0x10", "0x1p3", "1_000", " 1", "1 ", "1,5", "1.5.5", "1e5e5", "١"] {
            #expect(JSONNumber.parse(text) == nil, "\(text)")
        }
    }

    @Test func fastPathDeclinesWhatItCannotDoExactly() {
        // Beyond 2^53, beyond 10^22, beyond 19 digits: the fallback's job.
        #expect(JSONNumber.fastPathValue("9007199254740993") == nil)
        #expect(JSONNumber.fastPathValue("1e23") == nil)
        #expect(JSONNumber.fastPathValue("1e-23") == nil)
        #expect(JSONNumber.fastPathValue("12345678901234567890") == nil)
        #expect(JSONNumber.fastPathValue("523.41") == 523.41)
        #expect(JSONNumber.fastPathValue("9007199254740992") == 9007199254740992)
        #expect(JSONNumber.fastPathValue("-0")?.bitPattern == (-0.0).bitPattern)
    }
}
