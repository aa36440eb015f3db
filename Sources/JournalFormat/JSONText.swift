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
