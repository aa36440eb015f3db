import JournalFormat
@_spi(Testing) import JournalIngest
import JournalTestSupport
import Testing

/// The canonical-layout fast path must agree with the general parser on every line.
@Suite(.ownThreads) struct FastPathTests {
    func outcome(_ body: () throws(LineError) -> [Payload]) -> Result<[Payload], LineError> {
        do { return .success(try body()) } catch { return .failure(error) }
    }

    @Test func takesEveryCanonicalPointAndEndLine() {
        var random = SeededGenerator(seed: 1)
        var taken = 0
        for _ in 0..<20_000 {
            let payload = CanonicalJSONTests.randomPayload(&random)
            let line = CanonicalJSON.line(for: payload)
            let fast = LineParser.templatePayload(line)
            switch payload {
            case .point, .end:
                #expect(fast == payload, "\(line)")
                taken += 1
            default:
                #expect(fast == nil, "\(line)")
            }
        }
        #expect(taken > 10_000)
    }

    @Test func declinesNearMisses() {
        let good = ##"{"type":"point","stroke":"\##(strokeText)","x":1,"y":2,"color":"#00000000","width":1}"##
        #expect(LineParser.templatePayload(good) != nil)
        for variant in [
            good.replacingOccurrences(",\"y\"", with: ", \"y\""),
            good + " ",
            good.replacingOccurrences("#00000000", with: "#000000"),
            good.replacingOccurrences("\"width\":1", with: "\"width\":-1"),
            good.replacingOccurrences("\"x\":1", with: "\"x\":1e999"),
            good.replacingOccurrences("\"x\":1", with: "\"x\":01"),
            good.replacingOccurrences("}", with: ",\"pressure\":1,\"pressure\":1}"),
            good.replacingOccurrences("}", with: ",\"t\":1,\"pressure\":1}"),
            good.replacingOccurrences("}", with: ",\"seq\":1}"),
            good.replacingOccurrences(strokeText, with: strokeText.replacingDashes() + "AAAA"),
        ] {
            #expect(LineParser.templatePayload(variant) == nil, "\(variant)")
        }
    }

    @Test func agreesWithTheGeneralParserOnMutatedLines() {
        var random = SeededGenerator(seed: 31337)
        let alphabet: [UInt8] = Array("0123456789abcdefABCDEF-+.eE\",:{}[] \\tx#".utf8) + [0x00, 0x0A, 0xC3, 0xFF]
        var acceptedByTemplate = 0
        for _ in 0..<40_000 {
            var payload = CanonicalJSONTests.randomPayload(&random)
            if case .clear = payload { payload = .end(stroke) }
            var bytes = Array(CanonicalJSON.line(for: payload).utf8)
            for _ in 0..<(1 + random.next() % 2) {
                switch random.next() % 4 {
                case 0: bytes[Int(random.next() % UInt64(bytes.count))] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: Int(random.next() % UInt64(bytes.count)))
                case 2: bytes.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: Int(random.next() % UInt64(bytes.count + 1)))
                default: bytes.removeLast(Int(random.next() % 4))
                }
                if bytes.isEmpty { bytes = [UInt8(ascii: "{")] }
            }
            let line = String(decoding: bytes, as: UTF8.self)
            guard Array(line.utf8) == bytes else { continue }  // keep to valid UTF-8 for String
            let fast = LineParser.templatePayload(line)
            let general = outcome { () throws(LineError) in try LineParser.parseInGeneral(line) }
            if let fast {
                acceptedByTemplate += 1
                #expect(general == .success([fast]), "\(line)")
            }
            let full = outcome { () throws(LineError) in try LineParser.parse(line) }
            #expect(full == general, "\(line)")
        }
        #expect(acceptedByTemplate > 1_000)  // mutations of digits keep many lines valid
    }
}

extension String {
    func replacingOccurrences(_ target: String, with replacement: String) -> String {
        var result = ""
        var rest = Substring(self)
        while let range = rest.range(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

extension Substring {
    func range(of target: String) -> Range<Index>? {
        guard !target.isEmpty else { return nil }
        var start = startIndex
        while start < endIndex {
            if self[start...].hasPrefix(target) {
                return start..<index(start, offsetBy: target.count)
            }
            start = index(after: start)
        }
        return nil
    }
}
