/// JSON string literals, for every module that prints JSON or quotes input in a message.
public enum JSONText {
    /// `text` as a JSON string literal: quotes, backslashes and control characters escaped.
    /// With `limit`, at most that many characters, then "…" (for quoting input in messages).
    public static func quoted(_ text: String, limit: Int? = nil) -> String {
        var out = "\""
        var count = 0
        for scalar in text.unicodeScalars {
            if let limit, count == limit {
                out += "…"
                break
            }
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
            count += 1
        }
        return out + "\""
    }
}

/// One JSON object, built field by field in the order given: the `--json` outputs promise
/// stable keys, so the order is the caller's and never a dictionary's.
public struct JSONObject: Sendable {
    private var fields: [String] = []

    public init() {}

    public mutating func add(_ key: String, _ value: String) { add(key, raw: JSONText.quoted(value)) }
    public mutating func add(_ key: String, _ value: String?) { add(key, raw: value.map { JSONText.quoted($0) } ?? "null") }
    public mutating func add(_ key: String, _ value: Bool) { add(key, raw: value ? "true" : "false") }
    public mutating func add(_ key: String, _ value: some BinaryInteger) { add(key, raw: "\(value)") }
    public mutating func add(_ key: String, _ value: (some BinaryInteger)?) { add(key, raw: value.map { "\($0)" } ?? "null") }
    /// Finite numbers in Swift's shortest round-trip form; NaN and infinities as `null`.
    public mutating func add(_ key: String, _ value: Double) { add(key, raw: JSONText.number(value)) }
    /// Strings as an array of JSON strings.
    public mutating func add(_ key: String, strings: [String]) { add(key, raw: JSONText.array(strings.map { JSONText.quoted($0) })) }
    public mutating func add(_ key: String, objects: [JSONObject]) { add(key, raw: JSONText.array(objects.map(\.text))) }
    /// A value that is JSON already (an array of numbers, a nested object).
    public mutating func add(_ key: String, raw json: String) { fields.append(JSONText.quoted(key) + ":" + json) }

    public var text: String { "{" + fields.joined(separator: ",") + "}" }
}

extension JSONText {
    public static func number(_ value: Double) -> String { value.isFinite ? value.description : "null" }
    public static func array(_ elements: [String]) -> String { "[" + elements.joined(separator: ",") + "]" }
}
