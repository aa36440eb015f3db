import JournalFormat
import JournalIngest
import JournalTestSupport
import Testing

@Suite(.ownThreads) struct CanonicalFormTests {
    @Test func fullPointLine() {
        let line = ##"{"type":"point","stroke":"6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88","x":523.41,"y":398.07,"color":"#E53935FF","width":4.0,"pressure":0.53,"t":0.016}"##
        #expect(parsed(line) == [point(x: 523.41, y: 398.07, pressure: 0.53, t: 0.016, color: 0xE539_35FF, width: 4)])
    }

    @Test func defaultsForColorAndWidth() {
        let payloads = parsed(#"{"type":"point","stroke":"\#(strokeText)","x":1.5,"y":2.25}"#)
        #expect(payloads == [point(x: 1.5, y: 2.25, color: 0x0000_00FF, width: 2.0)])
        guard case .point(let sample)? = payloads.first else { return }
        #expect(sample.pressure == nil)
        #expect(sample.t == nil)
        #expect(LineParser.defaultColor == RGBA(rawValue: 0x0000_00FF))
        #expect(LineParser.defaultWidth == 2.0)
    }

    @Test func sixDigitColourIsOpaque() {
        #expect(parsed(##"{"type":"point","stroke":"\##(strokeText)","x":1,"y":2,"color":"#e53935","width":4}"##)
            == [point(x: 1, y: 2, color: 0xE539_35FF, width: 4)])
    }

    @Test func strokeEvents() {
        #expect(parsed(#"{"type":"end","stroke":"\#(strokeText)"}"#) == [.end(stroke)])
        #expect(parsed(#"{"type":"undo","stroke":"\#(strokeText)"}"#) == [.undo(stroke)])
        #expect(parsed(#"{"type":"redo","stroke":"\#(strokeText)"}"#) == [.redo(stroke)])
        #expect(parsed(#"{"type":"erase","stroke":"\#(strokeText)"}"#) == [.erase(stroke)])
        #expect(parsed(#"{"type":"clear"}"#) == [.clear])
    }

    @Test func envelopeFieldsAreIgnored() {
        let line = #"{"type":"end","stroke":"\#(strokeText)","replica":"0123456789abcdef0123456789abcdef","seq":12,"lamport":40,"time":1732190000000}"#
        #expect(parsed(line) == [.end(stroke)])
        #expect(parsed(#"{"type":"clear","seq":1,"time":2}"#) == [.clear])
    }

    @Test func keyOrderWhitespaceAndEscapes() {
        let line = " \t{ \"t\" : 0.5 , \"\\u0074ype\":\"po\\u0069nt\", \"y\":-2 ,\"x\":1e2,\"stroke\":\"6f1c2b9a-0b6d-4d9a-9e41-2a7f3c1d5e88\" }  "
        #expect(parsed(line) == [point(x: 100, y: -2, t: 0.5)])
    }

    @Test func compactUUIDForm() {
        #expect(parsed(#"{"type":"end","stroke":"6F1C2B9A0B6D4D9A9E412A7F3C1D5E88"}"#) == [.end(stroke)])
    }

    @Test func negativeZeroIsKept() {
        guard case .point(let sample)? = parsed(#"{"type":"point","stroke":"\#(strokeText)","x":-0,"y":-0.0e3,"width":-0.0}"#).first else {
            Issue.record("no point")
            return
        }
        #expect(sample.x.bitPattern == (-0.0).bitPattern)
        #expect(sample.y.bitPattern == (-0.0).bitPattern)
        #expect(sample.style.width.bitPattern == (-0.0).bitPattern)
    }

    @Test func blankLines() throws {
        #expect(try LineParser.parse("").isEmpty)
        #expect(try LineParser.parse("   \t ").isEmpty)
        #expect(try LineParser.parse("\r").isEmpty)
    }

    @Test func trailingCarriageReturn() {
        #expect(parsed("{\"type\":\"clear\"}\r") == [.clear])
    }

    @Test func appendingVariantAppends() throws {
        var payloads: [Payload] = [.clear]
        let line = Array(#"{"type":"end","stroke":"\#(strokeText)"}"#.utf8)
        try line.withUnsafeBytes { try LineParser.parse($0, into: &payloads) }
        #expect(payloads == [.clear, .end(stroke)])
    }
}

@Suite(.ownThreads) struct DrawTogetherFormTests {
    @Test func namedColourPoint() {
        let payloads = parsed(#"{"id":"\#(strokeText)","color":"red","point":[10.5,-3]}"#)
        #expect(payloads == [point(x: 10.5, y: -3, color: 0xFF3B_30FF, width: 4.0)])
        guard case .point(let sample)? = payloads.first else { return }
        #expect(sample.pressure == nil && sample.t == nil)
    }

    @Test func everyNamedColour() {
        let expected: [String: UInt32] = [
            "black": 0x0000_00FF, "blue": 0x007A_FFFF, "brown": 0xA284_5EFF, "cyan": 0x32AD_E6FF,
            "gray": 0x8E8E_93FF, "green": 0x34C7_59FF, "indigo": 0x5856_D6FF, "mint": 0x00C7_BEFF,
            "orange": 0xFF95_00FF, "pink": 0xFF2D_55FF, "purple": 0xAF52_DEFF, "red": 0xFF3B_30FF,
            "teal": 0x30B0_C7FF, "white": 0xFFFF_FFFF, "yellow": 0xFFCC_00FF, "clear": 0x0000_0000,
        ]
        #expect(NamedColors.all.count == expected.count)
        for (name, raw) in expected {
            #expect(NamedColors.color(named: name) == RGBA(rawValue: raw), "\(name)")
            #expect(parsed(#"{"id":"\#(strokeText)","color":"\#(name)","point":[1,2]}"#)
                == [point(x: 1, y: 2, color: raw, width: 4)], "\(name)")
        }
        #expect(NamedColors.color(named: "Red") == nil)
        #expect(NamedColors.color(named: "grey") == nil)
    }

    @Test func hexColourWidthAndDefaults() {
        #expect(parsed(##"{"id":"\##(strokeText)","color":"#11223344","point":[1,2],"width":7.5}"##)
            == [point(x: 1, y: 2, color: 0x1122_3344, width: 7.5)])
        #expect(parsed(#"{"point":[ 1 , 2 ],"id":"\#(strokeText)"}"#) == [point(x: 1, y: 2, color: 0x0000_00FF, width: 4)])
    }

    @Test func malformedPoints() {
        for bad in ["[1]", "[1,2,3]", "[]", "\"1,2\"", "{\"x\":1,\"y\":2}", "[1,\"2\"]"] {
            expectRefused(#"{"id":"\#(strokeText)","color":"red","point":\#(bad)}"#, "\"point\"")
        }
    }

    @Test func foreignFields() {
        expectRefused(#"{"id":"\#(strokeText)","point":[1,2],"pressure":0.5}"#, "\"pressure\"", "not allowed")
        expectRefused(#"{"id":"\#(strokeText)","point":[1,2],"seq":1}"#, "\"seq\"", "not allowed")
        expectRefused(#"{"color":"red","point":[1,2]}"#, "missing \"id\"")
    }
}

@Suite(.ownThreads) struct CollabSketchFormTests {
    @Test func pointsThenEnd() {
        let line = #"{"id":"\#(strokeText)","points":[{"x":1,"y":2},{"y":4.5,"x":3}],"red":1,"green":0.5,"blue":0.2,"alpha":1,"lineWidth":3}"#
        // round(0.5 * 255) = round(127.5) = 128; round(0.2 * 255) = 51.
        let color: UInt32 = 0xFF80_33FF
        #expect(parsed(line) == [point(x: 1, y: 2, color: color, width: 3), point(x: 3, y: 4.5, color: color, width: 3), .end(stroke)])
    }

    @Test func emptyPointsGiveJustTheEnd() {
        #expect(parsed(#"{"id":"\#(strokeText)","points":[ ],"red":0,"green":0,"blue":0,"alpha":0,"lineWidth":1}"#) == [.end(stroke)])
    }

    @Test func componentRounding() {
        let line = #"{"id":"\#(strokeText)","points":[{"x":0,"y":0}],"red":0.0019,"green":0.002,"blue":0.33333333333333333,"alpha":0.998,"lineWidth":1}"#
        // 0.4845 -> 0, 0.51 -> 1, 85 (84.99999…), 254.49 -> 254
        #expect(parsed(line).first == point(x: 0, y: 0, color: 0x0001_55FE, width: 1))
    }

    @Test func componentOutOfRange() {
        expectRefused(#"{"id":"\#(strokeText)","points":[],"red":1.5,"green":0,"blue":0,"alpha":1,"lineWidth":1}"#, "\"red\"", "between 0 and 1")
        expectRefused(#"{"id":"\#(strokeText)","points":[],"red":0,"green":-0.1,"blue":0,"alpha":1,"lineWidth":1}"#, "\"green\"", "between 0 and 1")
    }

    @Test func malformedStrokes() {
        let tail = #","red":0,"green":0,"blue":0,"alpha":1,"lineWidth":1}"#
        expectRefused(#"{"id":"\#(strokeText)","points":[{"x":1}]"# + tail, "missing \"y\"")
        expectRefused(#"{"id":"\#(strokeText)","points":[{"x":1,"y":2,"z":3}]"# + tail, "unknown field \"z\"")
        expectRefused(#"{"id":"\#(strokeText)","points":[{"x":1,"y":2,"x":3}]"# + tail, "duplicate field \"x\"")
        expectRefused(#"{"id":"\#(strokeText)","points":[[1,2]]"# + tail, "\"points\" must be an array")
        expectRefused(#"{"id":"\#(strokeText)","points":{}"# + tail, "\"points\" must be an array")
        expectRefused(#"{"id":"\#(strokeText)","points":[],"red":0,"green":0,"blue":0,"alpha":1}"#, "missing \"lineWidth\"")
        expectRefused(#"{"id":"\#(strokeText)","points":[],"red":0,"green":0,"blue":0,"alpha":1,"lineWidth":-2}"#, "\"lineWidth\"", "negative")
        expectRefused(#"{"id":"\#(strokeText)","points":[],"red":0,"green":0,"blue":0,"alpha":1,"lineWidth":1,"width":2}"#, "\"width\"", "not allowed")
    }
}

@Suite(.ownThreads) struct MalformedLineTests {
    let head = #"{"type":"point","stroke":"\#(strokeText)""#

    @Test func invalidUTF8() {
        for bytes: [UInt8] in [[0x7B, 0xFF, 0x7D], Array(#"{"type":"clear","seq":""#.utf8) + [0xC3, 0x28, 0x22, 0x7D],
                               [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82]] {
            let error = lineError(bytes: bytes)
            #expect(error?.reason.contains("invalid UTF-8") == true, "\(bytes): \(String(describing: error))")
        }
        // Overlong forms, surrogates, beyond U+10FFFF, stray continuation bytes, truncation.
        for bad: [UInt8] in [[0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x8F, 0xBF, 0xBF],
                               [0xC1, 0xBF], [0xF5, 0x80, 0x80, 0x80], [0x80], [0xBF], [0xF0, 0x9F, 0x98]] {
            let error = lineError(bytes: Array(#"{"type":"clear","seq":""#.utf8) + bad + [0x22, 0x7D])
            #expect(error?.reason.contains("invalid UTF-8") == true, "\(bad): \(String(describing: error))")
        }
        // Well-formed multi-byte text is fine inside an ignored string.
        #expect(lineError(#"{"type":"clear","replica":"é – 😀"}"#) == nil)
    }

    /// The UTF-8 check agrees with the standard library's on random bytes.
    @Test func utf8CheckAgreesWithStandardLibrary() {
        var random = SeededGenerator(seed: 77)
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1,
                                    0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        var invalid = 0
        for _ in 0..<50_000 {
            let count = Int(random.next() % 12)
            let bytes = (0..<count).map { _ in interesting[Int(random.next() % UInt64(interesting.count))] }
                .map { $0 == 0x00 || $0 == 0x7F ? UInt8(ascii: "a") : $0 }  // keep JSON-legal ASCII
            let line = Array(#"{"type":"clear","seq":""#.utf8) + bytes + [0x22, 0x7D]
            let valid = String(validating: line, as: UTF8.self) != nil
            let error = lineError(bytes: line)
            #expect((error == nil) == valid, "\(bytes): \(String(describing: error))")
            if !valid { invalid += 1 }
        }
        #expect(invalid > 10_000)
    }

    @Test func notAnObject() {
        expectRefused("[1,2]", "not a JSON object")
        expectRefused("\"point\"", "not a JSON object")
        expectRefused("42", "not a JSON object")
        expectRefused("null", "not a JSON object")
    }

    @Test func trailingGarbage() {
        expectRefused(#"{"type":"clear"} x"#, "after the JSON object")
        expectRefused(#"{"type":"clear"}{"type":"clear"}"#, "after the JSON object")
        expectRefused(#"{"type":"clear"},"#, "after the JSON object")
    }

    @Test func missingFields() {
        expectRefused(#"{"type":"end"}"#, "missing \"stroke\"")
        expectRefused(#"{"type":"point","x":1,"y":2}"#, "missing \"stroke\"")
        expectRefused(head + #","y":2}"#, "missing \"x\"")
        expectRefused(head + #","x":2}"#, "missing \"y\"")
        expectRefused(#"{"stroke":"\#(strokeText)"}"#, "\"type\"", "\"point\"", "\"points\"")
        expectRefused("{}", "\"type\"")
    }

    @Test func wrongTypes() {
        expectRefused(head + #","x":"1","y":2}"#, "\"x\" must be a number")
        expectRefused(head + #","x":1,"y":true}"#, "\"y\" must be a number")
        expectRefused(head + #","x":null,"y":2}"#, "\"x\" must be a number")
        expectRefused(head + #","x":[1],"y":2}"#, "\"x\" must be a number")
        expectRefused(head + #","x":1,"y":2,"pressure":{}}"#, "\"pressure\" must be a number")
        expectRefused(#"{"type":5}"#, "\"type\" must be a string")
        expectRefused(#"{"type":"end","stroke":7}"#, "\"stroke\"", "UUID")
        expectRefused(head + #","x":1,"y":2,"color":255}"#, "\"color\" must be a string")
    }

    @Test func nonNumbersWhereNumbersGo() {
        expectRefused(head + #","x":"NaN","y":2}"#, "\"x\" must be a number", "NaN")
        expectRefused(head + #","x":NaN,"y":2}"#, "\"x\" must be a number")
        expectRefused(head + #","x":Infinity,"y":2}"#, "\"x\" must be a number")
        expectRefused(head + #","x":-Infinity,"y":2}"#, "\"x\"")
        expectRefused(head + #","x":1,"y":"Infinity"}"#, "\"y\" must be a number")
    }

    @Test func invalidNumberSyntax() {
        for bad in ["01", "1.", ".5", "+1", "1e", "1e+", "-", "1.e5", "0x10", "1_0"] {
            expectRefused(head + #","x":\#(bad),"y":2}"#, "\"x\"")
        }
    }

    @Test func overflowingNumbers() {
        expectRefused(head + #","x":1e999,"y":2}"#, "\"x\"", "finite")
        expectRefused(head + #","x":1,"y":-1e999}"#, "\"y\"", "finite")
        expectRefused(head + #","x":1,"y":2,"width":1.8e308}"#, "\"width\"", "finite")
        // Underflow is not an error: it rounds like strtod.
        #expect(parsed(head + #","x":1e-999,"y":2}"#) == [point(x: 0, y: 2)])
    }

    @Test func badStrokeIDs() {
        for bad in ["abc", "", "6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E8", "6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88A",
                    "6F1C2B9A0-B6D-4D9A-9E41-2A7F3C1D5E88", "6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E8G",
                    "{6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88}", "6F1C2B9A0B6D4D9A9E412A7F3C1D5E8", "6F1C2B9A-0B6D4D9A-9E41-2A7F3C1D5E88"] {
            expectRefused(#"{"type":"end","stroke":"\#(bad)"}"#, "\"stroke\" is not a UUID")
        }
        expectRefused(#"{"id":"nope","point":[1,2]}"#, "\"id\" is not a UUID", "nope")
    }

    @Test func badColours() {
        for bad in ["#GGG", "#12345", "#1234567", "#1234567G", "123456", "#", "", "#12345G", "rgb(1,2,3)"] {
            expectRefused(head + #","x":1,"y":2,"color":"\#(bad)"}"#, "\"color\"")
        }
        expectRefused(head + ##","x":1,"y":2,"color":"#GGG"}"##, "not a colour", "#GGG")
        // Names are for DrawTogether lines only.
        expectRefused(head + #","x":1,"y":2,"color":"red"}"#, "\"color\"", "#RRGGBB")
    }

    @Test func badWidths() {
        expectRefused(head + #","x":1,"y":2,"width":-1}"#, "\"width\" must not be negative")
        expectRefused(head + #","x":1,"y":2,"width":-1e-300}"#, "\"width\" must not be negative")
        expectRefused(#"{"id":"\#(strokeText)","point":[1,2],"width":-4}"#, "\"width\" must not be negative")
    }

    @Test func unknownTypeAndFields() {
        expectRefused(#"{"type":"fly","stroke":"\#(strokeText)"}"#, "unknown type \"fly\"")
        expectRefused(#"{"type":"Point","stroke":"\#(strokeText)"}"#, "unknown type \"Point\"")
        expectRefused(#"{"type":"clear","foo":1}"#, "unknown field \"foo\"")
        expectRefused(#"{"type":"clear","xx":1}"#, "unknown field \"xx\"")
        expectRefused(#"{"type":"clear","pressures":1}"#, "unknown field \"pressures\"")
        expectRefused(#"{"type":"clear","lineWidthX":1}"#, "unknown field \"lineWidthX\"")
        expectRefused(#"{"type":"clear","":1}"#, "unknown field \"\"")
        expectRefused(#"{"type":"clear","x\u0000":1}"#, "unknown field")
        expectRefused(#"{"type":"end","stroke":"\#(strokeText)","x":1}"#, "field \"x\" is not allowed")
        expectRefused(#"{"type":"clear","stroke":"\#(strokeText)"}"#, "field \"stroke\" is not allowed")
        expectRefused(head + #","x":1,"y":2,"id":"\#(strokeText)"}"#, "field \"id\" is not allowed")
    }

    @Test func duplicateKeys() {
        expectRefused(head + #","x":1,"y":2,"x":1}"#, "duplicate field \"x\"")
        expectRefused(#"{"type":"clear","type":"clear"}"#, "duplicate field \"type\"")
        expectRefused(#"{"type":"clear","seq":1,"seq":1}"#, "duplicate field \"seq\"")
        expectRefused(head + #","x":1,"y":2,"\u0078":1}"#, "duplicate field \"x\"")
    }

    @Test func nestingDepth() {
        func line(_ levels: Int) -> String {
            #"{"type":"clear","seq":"# + String(repeating: "[", count: levels) + String(repeating: "]", count: levels) + "}"
        }
        // The line's object is level 1, so 15 nested arrays reach level 16.
        #expect(parsed(line(LineParser.maxDepth - 1)) == [.clear])
        expectRefused(line(LineParser.maxDepth), "nesting deeper than 16")
        expectRefused(line(100_000), "nesting deeper than 16")
        #expect(parsed(#"{"type":"clear","seq":{"a":[1,{"b":null}],"c":"d"}}"#) == [.clear])
    }

    @Test func syntaxErrors() {
        expectRefused(#"{"type""clear"}"#, "expected ':'")
        expectRefused(#"{"type":"clear" "seq":1}"#, "expected ',' or '}'")
        expectRefused(#"{"type":"clear","#, "expected a field name")
        expectRefused(#"{"type":"clear""#, "expected ',' or '}'")
        expectRefused(#"{"type":"clear"#, "unterminated string")
        expectRefused(#"{type:"clear"}"#, "expected a field name")
        expectRefused(#"{"type":"clear","seq":"a\qb"}"#, "invalid escape")
        expectRefused("{\"type\":\"clear\",\"seq\":\"a\tb\"}", "control character")
        expectRefused(#"{"type":"clear","seq":"\ud800"}"#, "surrogate")
        expectRefused(#"{"type":"clear","seq":"\u12"}"#, "\\u escape")
        expectRefused(#"{"type":"clear","seq":tru}"#, "invalid value")
        expectRefused(#"{"type":"clear","seq":[1,]}"#, "invalid value")
        expectRefused(head + #","x":1.5x,"y":2}"#, "after \"x\"")
    }

    @Test func tooLongLine() {
        let padding = String(repeating: " ", count: LineParser.maxLineLength)
        expectRefused(#"{"type":"clear"}"# + padding, "too long")
        // Exactly at the limit is fine, with or without a carriage return.
        let exact = #"{"type":"clear"}"# + String(repeating: " ", count: LineParser.maxLineLength - 16)
        #expect(parsed(exact) == [.clear])
        #expect(parsed(exact + "\r") == [.clear])
    }

    @Test func validationOfResult() {
        // Accepted syntax, refused meaning: a huge but finite width passes; overflow does not.
        #expect(parsed(head + #","x":1,"y":2,"width":1.7976931348623157e308}"#)
            == [point(x: 1, y: 2, width: .greatestFiniteMagnitude)])
    }
}

@Suite(.ownThreads) struct IdentifierAndColourAgreementTests {
    /// The line parser accepts exactly the stroke ids `StrokeID(uuidString:)` accepts.
    @Test func strokeIDsAgreeWithJournalFormat() {
        var random = SeededGenerator(seed: 7)
        let alphabet = Array("0123456789abcdefABCDEF-gG{} ".utf8) + [0xC3, 0xA9]
        var candidates: [String] = [strokeText, strokeText.lowercased(), strokeText.replacingDashes()]
        for _ in 0..<20_000 {
            var bytes = Array((random.next() & 1 == 0 ? strokeText : strokeText.replacingDashes()).utf8)
            // One to three random byte substitutions, sometimes a deletion or insertion.
            for _ in 0...(random.next() % 3) {
                let index = Int(random.next() % UInt64(bytes.count))
                bytes[index] = alphabet[Int(random.next() % UInt64(alphabet.count))]
            }
            if random.next() % 10 == 0 { bytes.remove(at: Int(random.next() % UInt64(bytes.count))) }
            if random.next() % 10 == 0 { bytes.insert(UInt8(ascii: "A"), at: Int(random.next() % UInt64(bytes.count))) }
            candidates.append(String(decoding: bytes, as: UTF8.self))
        }
        var accepted = 0
        for candidate in candidates where !candidate.contains("\"") && !candidate.contains("\\") {
            let expected = StrokeID(uuidString: candidate)
            let result = try? LineParser.parse(#"{"type":"end","stroke":"\#(candidate)"}"#)
            #expect(result == expected.map { [.end($0)] }, "\(candidate)")
            if expected != nil { accepted += 1 }
        }
        #expect(accepted > 1000)  // the mutations keep enough valid ids to compare values
    }

    /// The line parser accepts exactly the colours `RGBA(hexString:)` accepts.
    @Test func coloursAgreeWithJournalFormat() {
        var random = SeededGenerator(seed: 11)
        let alphabet = Array("0123456789abcdefABCDEFgG#x ".utf8)
        var candidates = ["#000000", "#FFFFFF", "#ffffff00", "#E53935FF", "#e53935"]
        for _ in 0..<20_000 {
            let length = Int(random.next() % 11)
            var bytes = (0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            if random.next() % 4 != 0, !bytes.isEmpty { bytes[0] = UInt8(ascii: "#") }
            candidates.append(String(decoding: bytes, as: UTF8.self))
        }
        for byte in UInt8(0x20)..<0x7F where byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
            for position in 1..<9 {
                var bytes = Array("#12AB34CD".utf8)
                bytes[position] = byte
                candidates.append(String(decoding: bytes, as: UTF8.self))
            }
        }
        var accepted = 0
        for candidate in candidates {
            let expected = RGBA(hexString: candidate)
            let result = try? LineParser.parse(#"{"type":"point","stroke":"\#(strokeText)","x":1,"y":2,"color":"\#(candidate)"}"#)
            #expect(result == expected.map { [point(x: 1, y: 2, color: $0.rawValue)] }, "\(candidate)")
            if expected != nil { accepted += 1 }
        }
        #expect(accepted > 100)
    }

    /// Every byte at every position of a UUID, against `StrokeID(uuidString:)`.
    @Test func everyByteAtEveryPosition() {
        for form in [strokeText, strokeText.replacingDashes()] {
            for position in 0..<form.utf8.count {
                for byte in UInt8(0x20)..<0x7F where byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                    var bytes = Array(form.utf8)
                    bytes[position] = byte
                    let candidate = String(decoding: bytes, as: UTF8.self)
                    let expected = StrokeID(uuidString: candidate)
                    let result = try? LineParser.parse(#"{"type":"undo","stroke":"\#(candidate)"}"#)
                    #expect(result == expected.map { [.undo($0)] }, "\(candidate)")
                }
            }
        }
    }
}

extension String {
    func replacingDashes() -> String { String(filter { $0 != "-" }) }
}
