import JournalFormat
import Testing

/// The JSON a service answers with (etcd, rclone's remote control), read into a tree.
@Suite struct JSONValueTests {
    @Test func anAnswerIsReadWithItsNumbersAsText() throws {
        let value = try JSONValue.parse(Array(#" {"header": {"revision": "9007199254740993"}, "ok": true, "list": [1, -2.5e3, null], "none": {}} "#.utf8))
        #expect(value["header"]?["revision"]?.integer == 9_007_199_254_740_993)
        #expect(value["ok"]?.isTrue == true)
        #expect(value["list"]?.elements == [.number("1"), .number("-2.5e3"), .null])
        #expect(value["none"] == .object([:]))
        #expect(value["missing"] == nil)
    }

    @Test func escapesAreDecodedBeyondASCII() throws {
        // é, a musical G clef (a surrogate pair), a lone high surrogate, a quote and a line break.
        let value = try JSONValue.parse(Array(#"{"error": "caf\u00e9 \ud834\udd1e \ud834 \"x\"\n"}"#.utf8))
        #expect(value["error"]?.text == "café 𝄞 \u{FFFD} \"x\"\n")
    }

    @Test(arguments: [#"{"a": 1"#, #"{"a" 1}"#, #"[1, 2"#, #""unfinished"#, #"{"a": tru}"#, #"{"a": "\u12"}"#, "1 2", "", "{1: 2}"])
    func aMalformedDocumentIsRefusedWithWhere(_ text: String) {
        #expect(throws: JSONValue.Malformed.self) { try JSONValue.parse(Array(text.utf8)) }
    }

    @Test func nestingIsBounded() {
        let deep = String(repeating: "[", count: JSONValue.maxDepth + 1) + String(repeating: "]", count: JSONValue.maxDepth + 1)
        #expect(throws: JSONValue.Malformed.self) { try JSONValue.parse(Array(deep.utf8)) }
        let allowed = String(repeating: "[", count: JSONValue.maxDepth) + String(repeating: "]", count: JSONValue.maxDepth)
        #expect((try? JSONValue.parse(Array(allowed.utf8))) != nil)
    }

    @Test func base64RoundTripsEveryLength() {
        for length in 0..<8 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 97 + 200) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        #expect(Base64.encode(Array("user:pass".utf8)) == "dXNlcjpwYXNz")
        #expect(Base64.decode("not*base64") == nil)
    }
}
