import JournalFormat
/// A JSON value whose objects keep their keys in insertion order, so that the file the
/// harness writes has a stable layout (docs/PERFORMANCE.md lists the keys).
indirect enum JSON: Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    static func == (lhs: JSON, rhs: JSON) -> Bool { lhs.encoded() == rhs.encoded() }

    subscript(key: String) -> JSON? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.first { $0.0 == key }?.1
    }

    var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }
    var intValue: Int? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9e15: return Int(value)
        default: return nil
        }
    }
    var stringValue: String? { if case .string(let value) = self { return value } else { return nil } }
    var boolValue: Bool? { if case .bool(let value) = self { return value } else { return nil } }
    var arrayValue: [JSON]? { if case .array(let value) = self { return value } else { return nil } }
    var objectValue: [(String, JSON)]? { if case .object(let value) = self { return value } else { return nil } }
    var doubles: [Double]? { arrayValue?.compactMap(\.doubleValue) }

    // MARK: Encoding

    /// Compact (one line) or indented by two spaces per level.
    func encoded(pretty: Bool = false) -> String {
        var out = ""
        write(to: &out, pretty: pretty, indent: 0)
        return out
    }

    private func write(to out: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value):
            guard value.isFinite else { out += "null"; return }
            if value == value.rounded() && abs(value) < 1e15 {
                out += String(Int(value))
            } else {
                out += "\(value)"
            }
        case .string(let value): JSON.quote(value, into: &out)
        case .array(let items):
            // Arrays of scalars stay on one line even when pretty.
            let flat = !pretty || items.allSatisfy { if case .array = $0 { false } else if case .object = $0 { false } else { true } }
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += flat && pretty ? ", " : "," }
                if !flat { out += "\n" + String(repeating: " ", count: indent + 2) }
                item.write(to: &out, pretty: pretty, indent: indent + 2)
            }
            if !flat && !items.isEmpty { out += "\n" + String(repeating: " ", count: indent) }
            out += "]"
        case .object(let pairs):
            out += "{"
            for (index, (key, value)) in pairs.enumerated() {
                if index > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: " ", count: indent + 2) }
                JSON.quote(key, into: &out)
                out += pretty ? ": " : ":"
                value.write(to: &out, pretty: pretty, indent: indent + 2)
            }
            if pretty && !pairs.isEmpty { out += "\n" + String(repeating: " ", count: indent) }
            out += "}"
        }
    }

    private static func quote(_ text: String, into out: inout String) {
        out += JSONText.quoted(text)
    }

    // MARK: Parsing (what a row child prints; strict enough for that)

    static func parse(_ text: String) throws -> JSON {
        var parser = Parser(bytes: Array(text.utf8))
        let value = try parser.value()
        parser.skipSpace()
        guard parser.position == parser.bytes.count else { throw BenchError("trailing text in JSON") }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var position = 0

        mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x0a, 0x0d, 0x09].contains(bytes[position]) { position += 1 }
        }

        mutating func value() throws -> JSON {
            skipSpace()
            guard position < bytes.count else { throw BenchError("unexpected end of JSON") }
            switch bytes[position] {
            case UInt8(ascii: "{"):
                position += 1
                var pairs: [(String, JSON)] = []
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") { position += 1; return .object(pairs) }
                while true {
                    skipSpace()
                    guard case .string(let key) = try value() else { throw BenchError("JSON object key is not a string") }
                    skipSpace()
                    try expect(":")
                    pairs.append((key, try value()))
                    skipSpace()
                    if try separator(close: "}") { return .object(pairs) }
                }
            case UInt8(ascii: "["):
                position += 1
                var items: [JSON] = []
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") { position += 1; return .array(items) }
                while true {
                    items.append(try value())
                    skipSpace()
                    if try separator(close: "]") { return .array(items) }
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default:
                return try number()
            }
        }

        mutating func separator(close: Unicode.Scalar) throws -> Bool {
            guard position < bytes.count else { throw BenchError("unexpected end of JSON") }
            if bytes[position] == UInt8(ascii: ",") { position += 1; return false }
            if bytes[position] == UInt8(ascii: close) { position += 1; return true }
            throw BenchError("expected ',' or '\(close)' in JSON at \(position)")
        }

        mutating func expect(_ character: Unicode.Scalar) throws {
            guard position < bytes.count, bytes[position] == UInt8(ascii: character) else {
                throw BenchError("expected '\(character)' in JSON at \(position)")
            }
            position += 1
        }

        mutating func literal(_ word: String) throws {
            let utf8 = Array(word.utf8)
            guard position + utf8.count <= bytes.count, Array(bytes[position..<position + utf8.count]) == utf8 else {
                throw BenchError("bad literal in JSON at \(position)")
            }
            position += utf8.count
        }

        mutating func string() throws -> String {
            try expect("\"")
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []
            func flush() { scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars); run.removeAll() }
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                if byte == UInt8(ascii: "\"") { flush(); return String(scalars) }
                if byte != UInt8(ascii: "\\") { run.append(byte); continue }
                flush()
                guard position < bytes.count else { break }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "b"): scalars.append("\u{8}")
                case UInt8(ascii: "f"): scalars.append("\u{c}")
                case UInt8(ascii: "u"):
                    guard position + 4 <= bytes.count,
                          let code = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16) else {
                        throw BenchError("bad \\u escape in JSON")
                    }
                    position += 4
                    scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                default: scalars.append(Unicode.Scalar(escape))
                }
            }
            throw BenchError("unterminated JSON string")
        }

        mutating func number() throws -> JSON {
            let start = position
            while position < bytes.count, "+-0123456789.eE".utf8.contains(bytes[position]) { position += 1 }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            if let value = Int(text) { return .int(value) }
            if let value = Double(text) { return .double(value) }
            throw BenchError("bad JSON number \(text.debugDescription) at \(start)")
        }
    }
}

/// Builds a JSON object in order: `var o = JSONObject(); o["key"] = .int(1)`.
struct JSONObject {
    private(set) var pairs: [(String, JSON)] = []

    subscript(key: String) -> JSON? {
        get { pairs.first { $0.0 == key }?.1 }
        set {
            if let index = pairs.firstIndex(where: { $0.0 == key }) {
                if let newValue { pairs[index].1 = newValue } else { pairs.remove(at: index) }
            } else if let newValue {
                pairs.append((key, newValue))
            }
        }
    }

    var json: JSON { .object(pairs) }
}

extension JSON {
    static func seconds(_ values: [Double]) -> JSON { .array(values.map { .double(($0 * 1e6).rounded() / 1e6) }) }
    static func number(_ value: Double, decimals: Int = 6) -> JSON {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        return .double((value * scale).rounded() / scale)
    }
}
