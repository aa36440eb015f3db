import JournalFormat
import JournalIngest

/// A cursor over one frame's JSON for the few relay messages that are not event lines (a
/// hello, a `have` map). Every failure is a `WireError` naming what was wrong and where;
/// nothing here traps, whatever the bytes.
struct WireJSON {
    let text: String
    let bytes: [UInt8]
    var index = 0

    /// Nesting deeper than this is refused (a skipped value is walked recursively).
    static let maxDepth = 16

    init(_ text: String) {
        self.text = text
        bytes = Array(text.utf8)
    }

    var peek: UInt8 { index < bytes.count ? bytes[index] : 0 }
    var atEnd: Bool { index >= bytes.count }

    mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    func error(_ what: String) -> WireError { WireError("\(what) at column \(index + 1)") }

    /// Skips whitespace, then takes `byte` or fails saying `what` was expected.
    mutating func expect(_ byte: UInt8, _ what: String) throws(WireError) {
        skipWhitespace()
        guard peek == byte else { throw error("expected \(what)") }
        index += 1
    }

    /// Skips whitespace; takes `byte` if it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard peek == byte else { return false }
        index += 1
        return true
    }

    mutating func string() throws(WireError) -> String {
        skipWhitespace()
        do {
            let (value, end) = try JSONStringLiteral.decode(text, at: index)
            index = end
            return value
        } catch {
            throw WireError(error.reason)
        }
    }

    /// `true` or `false`.
    mutating func boolean(_ what: String) throws(WireError) -> Bool {
        skipWhitespace()
        for (literal, value) in [("true", true), ("false", false)] {
            let spelled = Array(literal.utf8)
            if bytes.count - index >= spelled.count, bytes[index..<index + spelled.count].elementsEqual(spelled) {
                index += spelled.count
                return value
            }
        }
        throw error("expected true or false for \(what)")
    }

    /// A whole number from 0 to 2^64-1, in plain decimal (no sign, fraction, exponent or
    /// leading zero): seqs are exact, never rounded through a Double.
    mutating func integer(_ what: String) throws(WireError) -> UInt64 {
        skipWhitespace()
        let start = index
        var value: UInt64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { throw error("\(what) is over 2^64-1") }
            value = sum
            index += 1
        }
        let followedByNumber = index < bytes.count && [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index])
        guard index > start, !(bytes[start] == UInt8(ascii: "0") && index - start > 1), !followedByNumber else {
            index = start
            throw error("\(what) must be a whole number from 0 to 2^64-1 in plain decimal")
        }
        return value
    }

    /// Calls `body` for each key of an object, the cursor on its value (which `body` reads).
    mutating func object(_ what: String, _ body: (String, inout WireJSON) throws(WireError) -> Void) throws(WireError) {
        try expect(UInt8(ascii: "{"), "\(what) (an object)")
        if take(UInt8(ascii: "}")) { return }
        repeat {
            skipWhitespace()
            guard peek == UInt8(ascii: "\"") else { throw error("expected a key in \(what)") }
            let key = try string()
            try expect(UInt8(ascii: ":"), "':' after key \(JSONText.quoted(key, limit: 40))")
            try body(key, &self)
        } while take(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"), "',' or '}' in \(what)")
    }

    /// Calls `body` for each element of an array, the cursor on it.
    mutating func array(_ what: String, _ body: (inout WireJSON) throws(WireError) -> Void) throws(WireError) {
        try expect(UInt8(ascii: "["), "\(what) (an array)")
        if take(UInt8(ascii: "]")) { return }
        repeat { try body(&self) } while take(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"), "',' or ']' in \(what)")
    }

    /// Skips one value of any kind.
    mutating func skipValue(depth: Int = 0) throws(WireError) {
        guard depth < Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth)") }
        skipWhitespace()
        switch peek {
        case UInt8(ascii: "\""):
            _ = try string()
        case UInt8(ascii: "{"):
            try object("a value") { _, json throws(WireError) in try json.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            try array("a value") { json throws(WireError) in try json.skipValue(depth: depth + 1) }
        default:
            // A number or a literal: the bytes up to the next delimiter.
            let start = index
            while index < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) {
                index += 1
            }
            guard index > start else { throw error("expected a value") }
        }
    }

    /// Only whitespace is left.
    mutating func expectEnd(_ what: String) throws(WireError) {
        skipWhitespace()
        guard atEnd else { throw error("unexpected text after \(what)") }
    }
}
