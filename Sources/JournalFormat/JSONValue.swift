/// A JSON document as read from a service that answers in JSON (etcd's v3 gateway, rclone's
/// remote control): numbers kept as their text (etcd's revisions are 64-bit), objects as
/// dictionaries (a repeated key keeps its last value). Not for the journal's own input, which
/// JournalIngest reads without building a tree.
public indirect enum JSONValue: Equatable, Sendable {
    case string(String)
    case number(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    public subscript(key: String) -> JSONValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }

    public var text: String? {
        switch self {
        case .string(let text), .number(let text): return text
        default: return nil
        }
    }
    /// A 64-bit number, written as a string or a number.
    public var integer: Int64? { text.flatMap { Int64($0) } }
    public var isTrue: Bool { if case .bool(true) = self { return true } else { return false } }
    public var elements: [JSONValue] { if case .array(let items) = self { return items } else { return [] } }

    public struct Malformed: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// Nesting beyond this is refused: an answer is parsed by recursion.
    public static let maxDepth = 32

    public static func parse(_ bytes: [UInt8]) throws(Malformed) -> JSONValue {
        var parser = Parser(bytes: bytes)
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.at == bytes.count else { throw Malformed(description: "text after the document at byte \(parser.at)") }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var at = 0

        mutating func skipSpace() {
            while at < bytes.count, [9, 10, 13, 32].contains(bytes[at]) { at += 1 }
        }

        func fail(_ what: String) -> Malformed { Malformed(description: "\(what) at byte \(at)") }

        mutating func value(depth: Int) throws(Malformed) -> JSONValue {
            guard depth < JSONValue.maxDepth else { throw fail("nested too deep") }
            skipSpace()
            guard at < bytes.count else { throw fail("expected a value") }
            switch bytes[at] {
            case UInt8(ascii: "{"):
                at += 1
                var fields: [String: JSONValue] = [:]
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(fields) }
                while true {
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                    let key = try string()
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    at += 1
                    fields[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard at < bytes.count else { throw fail("unfinished object") }
                    if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                    guard bytes[at] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
                    at += 1
                    return .object(fields)
                }
            case UInt8(ascii: "["):
                at += 1
                var items: [JSONValue] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                while true {
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard at < bytes.count else { throw fail("unfinished array") }
                    if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                    guard bytes[at] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
                    at += 1
                    return .array(items)
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                for (word, value) in [("true", JSONValue.bool(true)), ("false", .bool(false)), ("null", .null)]
                where bytes[at...].starts(with: Array(word.utf8)) {
                    at += word.utf8.count
                    return value
                }
                throw fail("unknown word")
            default:
                let start = at
                while at < bytes.count, "+-.0123456789eE".utf8.contains(bytes[at]) { at += 1 }
                guard at > start else { throw fail("unexpected character") }
                return .number(String(decoding: bytes[start..<at], as: UTF8.self))
            }
        }

        /// A string literal starting at its opening quote; `\u` escapes decoded, surrogate
        /// pairs joined, a lone surrogate read as U+FFFD.
        mutating func string() throws(Malformed) -> String {
            at += 1
            var text: [UInt8] = []
            while at < bytes.count, bytes[at] != UInt8(ascii: "\"") {
                guard bytes[at] == UInt8(ascii: "\\") else {
                    text.append(bytes[at])
                    at += 1
                    continue
                }
                at += 1
                guard at < bytes.count else { break }
                switch bytes[at] {
                case UInt8(ascii: "n"): text.append(10)
                case UInt8(ascii: "t"): text.append(9)
                case UInt8(ascii: "r"): text.append(13)
                case UInt8(ascii: "b"): text.append(8)
                case UInt8(ascii: "f"): text.append(12)
                case UInt8(ascii: "u"):
                    var scalar = try hexUnit()
                    if (0xD800..<0xDC00).contains(scalar), bytes[(at + 1)...].starts(with: Array("\\u".utf8)) {
                        let mark = at
                        at += 2
                        let low = try hexUnit()
                        if (0xDC00..<0xE000).contains(low) {
                            scalar = 0x10000 + (scalar - 0xD800) << 10 + (low - 0xDC00)
                        } else {
                            at = mark
                        }
                    }
                    text.append(contentsOf: Array(String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8))
                default: text.append(bytes[at])
                }
                at += 1
            }
            guard at < bytes.count else { throw fail("unfinished string") }
            at += 1
            return String(decoding: text, as: UTF8.self)
        }

        /// The four hex digits after `\u` (`at` on the `u`; left on the last digit).
        mutating func hexUnit() throws(Malformed) -> UInt32 {
            guard at + 4 < bytes.count, let unit = UInt32(String(decoding: bytes[(at + 1)...(at + 4)], as: UTF8.self), radix: 16) else {
                throw fail("a \\u escape without four hex digits")
            }
            at += 4
            return unit
        }
    }
}
