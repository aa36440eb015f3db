import JournalFormat
/// A cursor over the bytes of one line, with the JSON lexical pieces the line parser needs.
/// The bytes must outlive the scanner; they are already known to be valid UTF-8.
struct JSONScanner {
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
    var peek: UInt8 { index < end ? base[index] : 0 }

    @inline(__always)
    var atEnd: Bool { index >= end }

    /// 1-based byte column of the cursor, for messages.
    var column: Int { index + 1 }

    @inline(__always)
    mutating func skipWhitespace() {
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
