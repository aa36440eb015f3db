import JournalFormat
/// A cursor over the bytes of one line, with the JSON lexical pieces the line parser needs,
/// and the structure (objects, arrays, exact integers) the relay's other messages need: the
/// project's one JSON reader. The bytes must outlive the scanner; they are already known to
/// be valid UTF-8.
package struct JSONScanner {
    let base: UnsafePointer<UInt8>
    let end: Int
    var index: Int

    init(_ base: UnsafePointer<UInt8>, count: Int) {
        self.base = base
        self.end = count
        self.index = 0
    }

    /// The current byte, or 0 at the end (a NUL byte is never valid outside a string, and
    /// strings are read by their own loops).
    @inline(__always)
    package var peek: UInt8 { index < end ? base[index] : 0 }

    @inline(__always)
    package var atEnd: Bool { index >= end }

    /// 1-based byte column of the cursor, for messages.
    package var column: Int { index + 1 }

    @inline(__always)
    package mutating func skipWhitespace() {
        while index < end {
            switch base[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    // MARK: Errors

    func error(_ reason: String) -> LineError { LineError(reason: reason) }

    /// What the value at the cursor is, for "must be a …" messages: `the string "NaN"`,
    /// `an array`, `null`, `NaN` …
    func describeValue() -> String {
        switch peek {
        case UInt8(ascii: "\""):
            var copy = self
            if let bytes = try? copy.decodeString() {
                return "the string " + quoted(bytes[...])
            }
            return "an unterminated string"
        case UInt8(ascii: "{"): return "an object"
        case UInt8(ascii: "["): return "an array"
        case 0: return "nothing"
        default:
            // A bare token such as NaN or true: up to the next delimiter, at most 32 bytes.
            let delimiters: [UInt8] = [UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D]
            var stop = index
            while stop < end, stop - index < 32, !delimiters.contains(base[stop]) { stop += 1 }
            // No token at all (`"y":}`): name the character found where a value belongs.
            if stop == index { return index < end ? "'\(Character(UnicodeScalar(base[index])))' where a value belongs" : "nothing" }
            return String(decoding: UnsafeBufferPointer(start: base + index, count: stop - index), as: UTF8.self)
        }
    }

    // MARK: Strings

    /// Reads the string at the cursor (which is on its opening quote) and hands `body` its
    /// content: straight from the line when it has no escapes, else decoded.
    @inline(__always)
    mutating func withString<R>(_ body: (UnsafePointer<UInt8>, Int) -> R) throws(LineError) -> R {
        let start = index + 1
        var cursor = start
        while cursor + 8 <= end {
            let stops = stringStopMask(load64(base + cursor))
            if stops != 0 {
                cursor += stops.trailingZeroBitCount >> 3
                if base[cursor] == UInt8(ascii: "\"") {
                    index = cursor + 1
                    return body(base + start, cursor - start)
                }
                break  // an escape or a control character: the slow path below
            }
            cursor += 8
        }
        while cursor < end {
            let byte = base[cursor]
            if byte == UInt8(ascii: "\"") {
                index = cursor + 1
                return body(base + start, cursor - start)
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            cursor += 1
        }
        let decoded = try decodeString()
        return decoded.withUnsafeBufferPointer { buffer in
            // A non-empty placeholder address for the empty string keeps `body` simple.
            body(buffer.baseAddress ?? base, buffer.count)
        }
    }

    /// Decodes the string at the cursor (on its opening quote) into UTF-8, resolving escapes.
    /// Leaves the cursor after the closing quote.
    mutating func decodeString() throws(LineError) -> [UInt8] {
        let open = index
        index += 1
        var out: [UInt8] = []
        while index < end {
            let byte = base[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return out
            case UInt8(ascii: "\\"):
                index += 1
                guard index < end else { break }
                let escape = base[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try readHex4()
                    if scalar >= 0xD800, scalar <= 0xDBFF {
                        // A high surrogate must be followed by an escaped low one.
                        guard index + 1 < end, base[index] == UInt8(ascii: "\\"), base[index + 1] == UInt8(ascii: "u") else {
                            throw error("invalid \\u escape: lone surrogate in a string at column \(index + 1)")
                        }
                        index += 2
                        let second = try readHex4()
                        guard second >= 0xDC00, second <= 0xDFFF else {
                            throw error("invalid \\u escape: lone surrogate in a string at column \(index + 1)")
                        }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (second - 0xDC00)
                    } else if scalar >= 0xDC00, scalar <= 0xDFFF {
                        throw error("invalid \\u escape: lone surrogate in a string at column \(index + 1)")
                    }
                    appendUTF8(scalar, to: &out)
                default:
                    throw error("invalid escape \"\\\(Unicode.Scalar(escape))\" in a string at column \(index)")
                }
            default:
                guard byte >= 0x20 else {
                    throw error("control character 0x\(String(byte, radix: 16)) in a string at column \(index + 1) (it must be escaped)")
                }
                out.append(byte)
                index += 1
            }
        }
        throw error("unterminated string starting at column \(open + 1)")
    }

    private mutating func readHex4() throws(LineError) -> UInt32 {
        guard index + 4 <= end else { throw error("invalid \\u escape at column \(index + 1)") }
        var value: UInt32 = 0
        for offset in 0..<4 {
            let nibble = Hex.digitValue(base[index + offset])
            guard nibble < 16 else { throw error("invalid \\u escape at column \(index + 1)") }
            value = value << 4 | UInt32(nibble)
        }
        index += 4
        return value
    }

    // MARK: Skipping

    /// Skips one complete JSON value of any kind, checking its syntax; `depth` is the
    /// nesting level of the value itself (the line's object is level 1).
    mutating func skipValue(depth: Int, maxDepth: Int) throws(LineError) {
        switch peek {
        case UInt8(ascii: "\""):
            _ = try decodeString()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let isObject = peek == UInt8(ascii: "{")
            guard depth <= maxDepth else {
                throw error("nesting deeper than \(maxDepth) levels at column \(column)")
            }
            let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
            index += 1
            skipWhitespace()
            if peek == close {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                if isObject {
                    guard peek == UInt8(ascii: "\"") else { throw error("expected a field name at column \(column)") }
                    _ = try decodeString()
                    skipWhitespace()
                    guard peek == UInt8(ascii: ":") else { throw error("expected ':' at column \(column)") }
                    index += 1
                    skipWhitespace()
                }
                try skipValue(depth: depth + 1, maxDepth: maxDepth)
                skipWhitespace()
                if peek == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard peek == close else {
                    throw error("expected ',' or '\(Unicode.Scalar(close))' at column \(column)")
                }
                index += 1
                return
            }
        case UInt8(ascii: "t"): try skipLiteral("true")
        case UInt8(ascii: "f"): try skipLiteral("false")
        case UInt8(ascii: "n"): try skipLiteral("null")
        default:
            let result = scanNumber(base, from: index, end: end)
            guard result.status != .syntax else { throw error("invalid value at column \(column)") }
            index = result.next  // an ignored number may be as large as it likes
        }
    }

    private mutating func skipLiteral(_ literal: StaticString) throws(LineError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= end,
              UnsafeBufferPointer(start: literal.utf8Start, count: count)
                .elementsEqual(UnsafeBufferPointer(start: base + index, count: count))
        else { throw error("invalid value at column \(column)") }
        index += count
    }
}

// MARK: - Structure

extension JSONScanner {
    /// Runs `body` with a scanner over the UTF-8 of `text` (valid, as every String's is).
    package static func scanning<Result>(
        _ text: String, _ body: (inout JSONScanner) throws(LineError) -> Result
    ) throws(LineError) -> Result {
        var copy = text
        let outcome = copy.withUTF8 { buffer -> Swift.Result<Result, LineError> in
            let empty: UInt8 = 0
            return withUnsafePointer(to: empty) { nothing in
                var scanner = JSONScanner(buffer.baseAddress ?? nothing, count: buffer.count)
                return Swift.Result { () throws(LineError) -> Result in try body(&scanner) }
            }
        }
        return try outcome.get()
    }

    /// "`what` at column N": where a message went wrong.
    func failure(_ what: String) -> LineError { error("\(what) at column \(column)") }

    /// Skips whitespace, then takes `byte` or fails saying `what` was expected.
    package mutating func expect(_ byte: UInt8, _ what: String) throws(LineError) {
        skipWhitespace()
        guard peek == byte else { throw failure("expected \(what)") }
        index += 1
    }

    /// Skips whitespace; takes `byte` if it is next.
    package mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard peek == byte else { return false }
        index += 1
        return true
    }

    /// The string at the cursor (after whitespace), escapes resolved.
    package mutating func string() throws(LineError) -> String {
        skipWhitespace()
        guard peek == UInt8(ascii: "\"") else { throw failure("expected a string") }
        return String(decoding: try decodeString(), as: UTF8.self)
    }

    /// `true` or `false`.
    package mutating func boolean(_ what: String) throws(LineError) -> Bool {
        skipWhitespace()
        for (literal, value) in [("true", true), ("false", false)] {
            let spelled = Array(literal.utf8)
            if end - index >= spelled.count, UnsafeBufferPointer(start: base + index, count: spelled.count).elementsEqual(spelled) {
                index += spelled.count
                return value
            }
        }
        throw failure("expected true or false for \(what)")
    }

    /// A whole number from 0 to 2^64-1, in plain decimal (no sign, fraction, exponent or
    /// leading zero): seqs are exact, never rounded through a Double.
    package mutating func unsignedInteger(_ what: String) throws(LineError) -> UInt64 {
        skipWhitespace()
        let start = index
        var value: UInt64 = 0
        while index < end, base[index] >= UInt8(ascii: "0"), base[index] <= UInt8(ascii: "9") {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(base[index] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { throw failure("\(what) is over 2^64-1") }
            value = sum
            index += 1
        }
        let followedByNumber = index < end && [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(base[index])
        guard index > start, !(base[start] == UInt8(ascii: "0") && index - start > 1), !followedByNumber else {
            index = start
            throw failure("\(what) must be a whole number from 0 to 2^64-1 in plain decimal")
        }
        return value
    }

    /// A finite JSON number, as the line parser reads a coordinate.
    package mutating func finiteNumber(_ what: String) throws(LineError) -> Double {
        skipWhitespace()
        let result = scanNumber(base, from: index, end: end)
        guard result.status == .ok else { throw failure("\(what) must be a finite number") }
        index = result.next
        return result.value
    }

    /// Calls `body` for each key of an object, the cursor on its value (which `body` reads).
    package mutating func object(
        _ what: String, _ body: (String, inout JSONScanner) throws(LineError) -> Void
    ) throws(LineError) {
        try expect(UInt8(ascii: "{"), "\(what) (an object)")
        if take(UInt8(ascii: "}")) { return }
        repeat {
            skipWhitespace()
            guard peek == UInt8(ascii: "\"") else { throw failure("expected a key in \(what)") }
            let key = try string()
            try expect(UInt8(ascii: ":"), "':' after key \(JSONText.quoted(key, limit: 40))")
            try body(key, &self)
        } while take(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"), "',' or '}' in \(what)")
    }

    /// Calls `body` for each element of an array, the cursor on it.
    package mutating func array(_ what: String, _ body: (inout JSONScanner) throws(LineError) -> Void) throws(LineError) {
        try expect(UInt8(ascii: "["), "\(what) (an array)")
        if take(UInt8(ascii: "]")) { return }
        repeat { try body(&self) } while take(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"), "',' or ']' in \(what)")
    }

    /// Nesting deeper than this is refused in a skipped value of a message.
    package static let maxMessageDepth = 16

    /// Skips one value of any kind (after whitespace), checking its syntax.
    package mutating func skipAnyValue() throws(LineError) {
        skipWhitespace()
        guard !atEnd else { throw failure("expected a value") }
        try skipValue(depth: 2, maxDepth: Self.maxMessageDepth)
    }

    /// Only whitespace is left.
    package mutating func expectEnd(_ what: String) throws(LineError) {
        skipWhitespace()
        guard atEnd else { throw failure("unexpected text after \(what)") }
    }
}

private func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
    switch scalar {
    case 0..<0x80:
        out.append(UInt8(scalar))
    case 0x80..<0x800:
        out.append(UInt8(0xC0 | scalar >> 6))
        out.append(UInt8(0x80 | scalar & 0x3F))
    case 0x800..<0x10000:
        out.append(UInt8(0xE0 | scalar >> 12))
        out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
        out.append(UInt8(0x80 | scalar & 0x3F))
    default:
        out.append(UInt8(0xF0 | scalar >> 18))
        out.append(UInt8(0x80 | scalar >> 12 & 0x3F))
        out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
        out.append(UInt8(0x80 | scalar & 0x3F))
    }
}

/// `"text"` for messages: the bytes as a JSON-style quoted string, control characters and
/// quotes escaped, cut at 40 characters.
func quoted(_ bytes: ArraySlice<UInt8>) -> String {
    JSONText.quoted(String(decoding: bytes, as: UTF8.self), limit: 40)
}
