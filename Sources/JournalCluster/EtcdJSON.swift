/// The little of JSON and base64 that etcd's v3 JSON gateway speaks: every key and value is
/// base64, every 64-bit number a string, fields at their default value left out.
enum EtcdJSON {
    /// A parsed answer: numbers kept as their text (etcd's revisions are 64-bit).
    indirect enum Value: Equatable {
        case string(String)
        case number(String)
        case bool(Bool)
        case null
        case array([Value])
        case object([String: Value])

        subscript(key: String) -> Value? {
            if case .object(let fields) = self { return fields[key] }
            return nil
        }

        /// The field under either spelling the gateway may use (`create_revision`, `createRevision`).
        func field(_ snake: String) -> Value? {
            if let value = self[snake] { return value }
            var camel = ""
            var upper = false
            for character in snake {
                if character == "_" { upper = true } else { camel += upper ? character.uppercased() : String(character); upper = false }
            }
            return self[camel]
        }

        var text: String? {
            switch self {
            case .string(let text), .number(let text): return text
            default: return nil
            }
        }
        /// A 64-bit number, written as a string or a number; absent fields read as 0.
        var integer: Int64? { text.flatMap { Int64($0) } }
        var isTrue: Bool { if case .bool(true) = self { return true } else { return false } }
        var elements: [Value] { if case .array(let items) = self { return items } else { return [] } }
    }

    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ bytes: [UInt8]) throws(Malformed) -> Value {
        var parser = Parser(bytes: bytes)
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.at == bytes.count else { throw Malformed(description: "text after the answer at byte \(parser.at)") }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var at = 0

        mutating func skipSpace() {
            while at < bytes.count, [9, 10, 13, 32].contains(bytes[at]) { at += 1 }
        }

        func fail(_ what: String) -> Malformed { Malformed(description: "\(what) at byte \(at)") }

        mutating func value(depth: Int) throws(Malformed) -> Value {
            guard depth < 32 else { throw fail("nested too deep") }
            skipSpace()
            guard at < bytes.count else { throw fail("expected a value") }
            switch bytes[at] {
            case UInt8(ascii: "{"):
                at += 1
                var fields: [String: Value] = [:]
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(fields) }
                while true {
                    skipSpace()
                    guard case .string(let key) = try value(depth: depth + 1) else { throw fail("expected a key") }
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
                var items: [Value] = []
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
                at += 1
                var text: [UInt8] = []
                while at < bytes.count, bytes[at] != UInt8(ascii: "\"") {
                    if bytes[at] == UInt8(ascii: "\\"), at + 1 < bytes.count {
                        at += 1
                        switch bytes[at] {
                        case UInt8(ascii: "n"): text.append(10)
                        case UInt8(ascii: "t"): text.append(9)
                        case UInt8(ascii: "r"): text.append(13)
                        case UInt8(ascii: "u"):
                            // etcd escapes only control characters and <>&: kept as '?' beyond ASCII.
                            let hex = at + 4 < bytes.count ? String(decoding: bytes[(at + 1)...(at + 4)], as: UTF8.self) : ""
                            let scalar = UInt32(hex, radix: 16) ?? 0x3F
                            text.append(scalar < 0x80 ? UInt8(scalar) : 0x3F)
                            at += 4
                        default: text.append(bytes[at])
                        }
                    } else {
                        text.append(bytes[at])
                    }
                    at += 1
                }
                guard at < bytes.count else { throw fail("unfinished string") }
                at += 1
                return .string(String(decoding: text, as: UTF8.self))
            case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                for (word, value) in [("true", Value.bool(true)), ("false", .bool(false)), ("null", .null)]
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
    }

    /// A JSON string literal of `text` (names of nodes and boards: no escapes needed beyond these).
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func base64(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * $1.offset) }
            for position in 0..<4 {
                out.append(position <= chunk.count ? alphabet[Int(value >> (18 - 6 * position) & 63)] : UInt8(ascii: "="))
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func fromBase64(_ text: String) -> [UInt8]? {
        var lookup = [UInt8: UInt32]()
        for (index, byte) in alphabet.enumerated() { lookup[byte] = UInt32(index) }
        var out: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0
        for byte in text.utf8 where byte != UInt8(ascii: "=") {
            guard let value = lookup[byte] else { return nil }
            buffer = buffer << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(buffer >> UInt32(bits) & 0xFF))
            }
        }
        return out
    }
}
