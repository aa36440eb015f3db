import JournalFormat
import JournalIngest

/// Who is on a board and where their pointer is: ephemeral, relayed to the board's other
/// clients that asked for it (`Hello.presence`), never journalled, never numbered or
/// acknowledged (docs/PROTOCOL.md, "Presence").
///
/// A client sends `{"type":"presence","name":"Ada","color":"#1E88E5","x":120.5,"y":80}`
/// (`"type"` first; `x` and `y` in board coordinates, both or neither: neither says the pointer
/// left the board). The relay tells the others `{"type":"presence","id":N,…}`, N being the
/// connection's number on that relay, which the client cannot choose, and
/// `{"type":"presence","id":N,"gone":true}` when it leaves. A name is what the client says it
/// is: nothing checks it.
public struct Presence: Equatable, Sendable {
    public var name: String
    /// `#RRGGBB`.
    public var color: String?
    public var x: Double?
    public var y: Double?

    public init(name: String, color: String? = nil, x: Double? = nil, y: Double? = nil) {
        self.name = name
        self.color = color
        self.x = x
        self.y = y
    }

    /// How every presence frame starts: the relay tells one from an event line by it.
    public static let framePrefix = #"{"type":"presence""#

    /// Board coordinates beyond this are refused (a pointer is never there).
    static let maxCoordinate = 1e9

    /// The presence in `text`, nil when `text` is not a presence frame; a presence frame that
    /// is malformed throws, naming what was wrong.
    public static func parse(_ text: String) throws(WireError) -> Presence? {
        guard text.hasPrefix(framePrefix) else { return nil }
        guard text.utf8.count <= 1024 else { throw WireError("presence: over 1024 bytes") }
        do {
            return try JSONScanner.scanning(text) { reader throws(LineError) in try read(&reader) }
        } catch {
            throw WireError("presence: " + error.reason)
        }
    }

    private static func read(_ reader: inout JSONScanner) throws(LineError) -> Presence {
        var presence = Presence(name: "")
        var seen = Set<String>()
        try reader.object("the presence") { key, json throws(LineError) in
            guard seen.insert(key).inserted else { throw LineError(reason: "the key \"\(key)\" appears twice") }
            json.skipWhitespace()
            switch key {
            case "type":
                _ = try json.string()
            case "name":
                guard json.peek == UInt8(ascii: "\"") else { throw LineError(reason: "\"name\" must be a string") }
                let name = try json.string()
                guard name.utf8.count <= WireLimits.maxPresenceNameBytes,
                      !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                    throw LineError(reason: "\"name\" must be at most \(WireLimits.maxPresenceNameBytes) bytes of UTF-8 without control characters")
                }
                presence.name = name
            case "color":
                let color = json.peek == UInt8(ascii: "\"") ? try json.string() : ""
                let digits = color.utf8.dropFirst()
                guard color.utf8.first == UInt8(ascii: "#"), digits.count == 6, digits.allSatisfy({ Hex.isLowercaseHexDigit($0 | 0x20) }) else {
                    throw LineError(reason: "\"color\" must be #RRGGBB")
                }
                presence.color = color
            case "x", "y":
                let value = try json.finiteNumber("\"\(key)\"")
                guard abs(value) <= maxCoordinate else { throw LineError(reason: "\"\(key)\" is off any board") }
                if key == "x" { presence.x = value } else { presence.y = value }
            default:
                throw LineError(reason: "unknown key \(JSONText.quoted(key, limit: 40)) (a presence holds \"type\", \"name\", \"color\", \"x\" and \"y\")")
            }
        }
        try reader.expectEnd("the presence")
        guard (presence.x == nil) == (presence.y == nil) else { throw LineError(reason: "\"x\" and \"y\" come together, or neither") }
        return presence
    }

    /// The frame a client sends.
    public var frame: String { Self.framePrefix + fields + "}" }

    /// What the relay sends the board's other clients for connection `id`.
    public func message(from id: Int) -> String { Self.framePrefix + #","id":"# + String(id) + fields + "}" }

    /// What the relay sends the others when connection `id` leaves.
    public static func goneMessage(from id: Int) -> String { framePrefix + #","id":"# + String(id) + #","gone":true}"# }

    private var fields: String {
        var text = #","name":"# + JSONText.quoted(name)
        if let color { text += #","color":"# + JSONText.quoted(color) }
        if let x, let y { text += #","x":"# + JSONText.number(x) + #","y":"# + JSONText.number(y) }
        return text
    }
}
