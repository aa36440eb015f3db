import JournalFormat
import JournalIngest

/// What a client sends in text mode: one frame, one line of any form `journal record` accepts
/// (canonical, DrawTogether's `UpsertStrokeMessage`, CollabSketch's `DrawingStroke`, `clear`).
/// The same parser as `journal record`, so a line means the same on a socket as in a file.
public enum ClientFrame {
    /// The payloads of one text frame: several for a CollabSketch stroke, none for a blank
    /// frame. A frame may end with one newline (a client that writes NDJSON lines as they are).
    public static func payloads(of text: String) throws(WireError) -> [Payload] {
        guard text.utf8.count <= WireLimits.maxFrameBytes else {
            throw WireError("frame of \(text.utf8.count) bytes is over the limit of \(WireLimits.maxFrameBytes)")
        }
        var line = Substring(text)
        if line.utf8.last == UInt8(ascii: "\n") { line = line.dropLast() }
        do {
            return try LineParser.parse(String(line))
        } catch {
            throw WireError(error.reason)
        }
    }

    /// The text frame that records `payload`: its canonical line.
    public static func text(for payload: Payload) -> String { CanonicalJSON.line(for: payload) }
}

/// What a client says in its first frame: what it holds, and how it wants the catch-up.
public struct Hello: Equatable, Sendable {
    public var have: Have
    /// The catch-up as binary `SegmentMessage`s (the journal's blocks) instead of one text
    /// message per event.
    public var blocks: Bool
    /// The client's own events come back to it too (before the ack that covers them), so its
    /// copy of the board is the relay's, ids and clocks included; without it a sender gets
    /// acks only.
    public var echo: Bool
    /// Native mode: the client owns this replica and sends its own events (binary
    /// `SegmentMessage` frames), which the relay stores under this id and acknowledges by seq.
    public var replica: ReplicaID?
    /// Native mode: the replica's public key (32 bytes), which names the replica
    /// (`ReplicaKey.replica(forPublicKey:)`) and verifies the client's frames.
    public var key: [UInt8]?
    /// The capability the client presents to a relay that needs one (docs/PROTOCOL.md,
    /// "Access"): opaque here, checked by the relay.
    public var token: String?
    /// The client wants the board's other clients' presence messages (`Presence`).
    public var presence: Bool
    /// Native mode: an invitation's redemption making the hello's key a member (a membership
    /// statement, FORMAT.md §17.2, signed by the invitation's key: `Invitation.redemption`),
    /// which the relay stores before it decides whether the key may draw.
    public var redeem: MembershipStatement?
    /// Native mode, on a socket opened with `?challenge`: the key's signature over the relay's
    /// nonce (`HelloProof`).
    public var proof: [UInt8]?

    public init(have: Have = Have(), blocks: Bool = false, echo: Bool = false, token: String? = nil, presence: Bool = false) {
        self.have = have
        self.blocks = blocks
        self.echo = echo
        self.token = token
        self.presence = presence
    }

    /// A native client's hello: it owns the replica `key` names.
    public init(have: Have = Have(), blocks: Bool = false, echo: Bool = false, native key: ReplicaKey, token: String? = nil) {
        self.init(have: have, blocks: blocks, echo: echo, token: token)
        self.replica = key.replica
        self.key = key.publicKey
    }
}

extension ClientFrame {
    /// What a client holds, if `text` is a hello:
    /// `{"type":"hello","have":{…},"blocks":true,"echo":true,"presence":true}` (all but `type` optional, keys
    /// in any order). Nil when the frame is anything else (an event line goes
    /// on to `payloads(of:)`, which names what is wrong with it); a hello that is malformed
    /// throws, naming what was wrong.
    public static func hello(in text: String) throws(WireError) -> Hello? {
        guard text.utf8.count <= WireLimits.maxFrameBytes else { return nil }
        // First look: is "type" "hello"? A frame that is not even an object is not a hello.
        var type: String?
        _ = try? JSONScanner.scanning(text) { look throws(LineError) in
            try look.object("the frame") { key, json throws(LineError) in
                json.skipWhitespace()
                if key == "type", json.peek == UInt8(ascii: "\"") {
                    type = try json.string()
                } else {
                    try json.skipAnyValue()
                }
            }
        }
        // Malformed after it said it is a hello (cut short, nested too deep): still a hello the
        // client got wrong, refused as one by the full read below. Taken for an event line, it
        // would be numbered frame 1, and the client's frames and acks would be off by one.
        guard type == "hello" else { return nil }
        do {
            return try JSONScanner.scanning(text) { reader throws(LineError) in try readHello(&reader) }
        } catch {
            throw WireError("hello: " + error.reason.replacingPrefix("have: ", with: ""))
        }
    }

    /// A string of lowercase hex digits (`maxDigits` of them, or at most that many), as bytes.
    private static func lowercaseHex(_ json: inout JSONScanner, maxDigits: Int, exactly: Bool, _ wrong: String) throws(LineError) -> [UInt8] {
        json.skipWhitespace()
        let text = json.peek == UInt8(ascii: "\"") ? try json.string() : ""
        let count = text.utf8.count
        guard exactly ? count == maxDigits : count <= maxDigits, text.utf8.allSatisfy(Hex.isLowercaseHexDigit), let bytes = Hex.decode(text) else {
            throw LineError(reason: wrong)
        }
        return bytes
    }

    private static func readHello(_ reader: inout JSONScanner) throws(LineError) -> Hello {
        var hello = Hello()
        var seen = Set<String>()
        try reader.object("the hello") { key, json throws(LineError) in
            guard seen.insert(key).inserted else { throw LineError(reason: "the key \"\(key)\" appears twice") }
            switch key {
            case "type":
                _ = try json.string()
            case "have":
                hello.have = try Have(reading: &json)
            case "blocks":
                hello.blocks = try json.boolean("\"blocks\"")
            case "echo":
                hello.echo = try json.boolean("\"echo\"")
            case "presence":
                hello.presence = try json.boolean("\"presence\"")
            case "replica":
                json.skipWhitespace()
                guard json.peek == UInt8(ascii: "\""), let replica = ReplicaID(hex: try json.string()) else {
                    throw LineError(reason: "\"replica\" must be a replica id: 32 lowercase hex digits")
                }
                hello.replica = replica
            case "key":
                hello.key = try lowercaseHex(&json, maxDigits: 64, exactly: true, "\"key\" must be a replica's public key: 64 lowercase hex digits")
            case "token":
                json.skipWhitespace()
                guard json.peek == UInt8(ascii: "\"") else { throw LineError(reason: "\"token\" must be a string") }
                hello.token = try json.string()
            case "proof":
                hello.proof = try lowercaseHex(&json, maxDigits: 128, exactly: true, "\"proof\" must be a signature: 128 lowercase hex digits")
            case "redeem":
                let wrong = "\"redeem\" must be one membership statement (FORMAT.md §17.2) in lowercase hex"
                let bytes = try lowercaseHex(&json, maxDigits: 2 * (FormatV4.statementFixedSize + FormatV4.maxLabelBytes), exactly: false, wrong)
                guard let statement = bytes.withUnsafeBytes({ try? FormatV4.decodeBody($0, count: 1) })?.first else {
                    throw LineError(reason: wrong)
                }
                hello.redeem = statement
            default:
                throw LineError(reason: "unknown key \(JSONText.quoted(key, limit: 40)) (a hello holds \"type\", \"have\", \"blocks\", \"echo\", \"presence\", \"replica\", \"key\", \"token\", \"proof\" and \"redeem\")")
            }
        }
        try reader.expectEnd("the hello")
        switch (hello.replica, hello.key) {
        case (nil, nil):
            break
        case (let replica?, let key?):
            guard ReplicaKey.replica(forPublicKey: key) == replica else {
                throw LineError(reason: "\"replica\" \(replica.hex) is not the replica its \"key\" names (\(ReplicaKey.replica(forPublicKey: key).hex)): a native client sends events only as the replica of its own key")
            }
        default:
            throw LineError(reason: "native mode needs both \"replica\" and \"key\" (the replica's public key, which names it)")
        }
        if hello.redeem != nil, hello.key == nil {
            throw LineError(reason: "\"redeem\" makes the hello's \"key\" a member: it needs \"replica\" and \"key\"")
        }
        return hello
    }

    /// The hello frame, within `WireLimits.maxFrameBytes` whatever the client holds: its `have`
    /// shortened (`Have.fitting`) when naming all of it would not fit.
    public static func helloText(_ hello: Hello) -> String {
        let text = fullHelloText(hello)
        guard text.utf8.count > WireLimits.maxFrameBytes else { return text }
        var shorter = hello
        shorter.have = Have()
        let room = WireLimits.maxFrameBytes - fullHelloText(shorter).utf8.count + 2
        shorter.have = hello.have.fitting(jsonBytes: room)
        return fullHelloText(shorter)
    }

    private static func fullHelloText(_ hello: Hello) -> String {
        #"{"type":"hello","have":"# + hello.have.json + (hello.blocks ? #","blocks":true"# : "")
            + (hello.echo ? #","echo":true"# : "") + (hello.presence ? #","presence":true"# : "") + (hello.replica.map { #","replica":""# + $0.hex + "\"" } ?? "")
            + (hello.key.map { #","key":""# + Hex.bytes($0) + "\"" } ?? "")
            + (hello.token.map { #","token":"# + JSONText.quoted($0) } ?? "")
            + (hello.redeem.map { #","redeem":""# + Hex.bytes($0.encoded) + "\"" } ?? "")
            + (hello.proof.map { #","proof":""# + Hex.bytes($0) + "\"" } ?? "") + "}"
    }

    public static func helloText(have: Have, blocks: Bool = false) -> String { helloText(Hello(have: have, blocks: blocks)) }
}

extension String {
    fileprivate func replacingPrefix(_ prefix: String, with replacement: String) -> String {
        hasPrefix(prefix) ? replacement + dropFirst(prefix.count) : self
    }
}
