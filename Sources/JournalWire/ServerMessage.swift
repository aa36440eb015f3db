import JournalFormat
import JournalIngest

/// What the relay sends a client, one text frame each (docs/PROTOCOL.md).
///
/// Every message is a JSON object whose first key is `"type"`, in a fixed layout, so a client
/// tells them apart by their start:
/// - `{"type":"ack","upTo":N}`: the client's frames 1…N (counted from 1 on this connection,
///   refused ones included) are handled, and every event they held is fsynced in the board's
///   journal. Acks never shrink: the last one repeated is a sign of life (`WireLimits.signOfLifeSeconds`).
/// - `{"type":"error","frame":N,"code":"…","message":"…"}`: frame N was refused and nothing of
///   it was recorded; the connection stays open. Without `"frame"`: about the connection itself
///   (sent just before the relay closes it). `code` (`RefusalCode`) is what a client decides
///   on; the message is for a person. A relay older than codes sends none (`unspecified`).
/// - `{"type":"caughtUp","events":N,"have":{…}}`: the N events before it were what the
///   client lacked when it joined (all of the board, without a hello); `have` is what the
///   board held then (`Have`), so the client holds that after the catch-up. What follows is live.
///   `"viewOnly":true` after `events`: this connection may only view (its token's scope), so a
///   client shows no drawing tools rather than finding out at its first frame.
/// - `{"type":"presence",…}`: another client's presence (`Presence`), only to a client whose
///   hello asked for it; not an event, never recorded.
/// - anything else is an event of the board, as its canonical line with its envelope: the
///   line `journal log` prints for it (`{"type":"point",…,"replica":…,"seq":…,"lamport":…,"time":…}`).
public enum ServerMessage: Equatable, Sendable {
    case ack(upTo: UInt64)
    /// Native mode: every event of `replica` with seq 1…`upTo` that the client sent is fsynced
    /// in the board's journal (`{"type":"ack","replica":"<32 hex>","upTo":N}`).
    case replicaAck(replica: ReplicaID, upTo: UInt64)
    case error(frame: UInt64?, code: RefusalCode, message: String)
    case caughtUp(events: UInt64, have: Have = Have(), viewOnly: Bool = false)
    case event(line: String)

    /// The error message of a refusal.
    public static func error(frame: UInt64?, _ refusal: Refusal) -> ServerMessage {
        .error(frame: frame, code: refusal.code, message: refusal.message)
    }

    /// The message for one recorded event.
    public static func event(_ event: Event) -> ServerMessage { .event(line: CanonicalJSON.line(for: event)) }

    /// The text frame.
    public var text: String {
        switch self {
        case .ack(let upTo):
            return #"{"type":"ack","upTo":"# + String(upTo) + "}"
        case .replicaAck(let replica, let upTo):
            return #"{"type":"ack","replica":""# + replica.hex + #"","upTo":"# + String(upTo) + "}"
        case .error(let frame, let code, let message):
            var object = JSONObject()
            object.add("type", "error")
            if let frame { object.add("frame", frame) }
            if code != .unspecified { object.add("code", code.rawValue) }
            object.add("message", message)
            return object.text
        case .caughtUp(let events, let have, let viewOnly):
            return #"{"type":"caughtUp","events":"# + String(events) + (viewOnly ? #","viewOnly":true"# : "")
                + #","have":"# + have.json + "}"
        case .event(let line):
            return line
        }
    }

    /// Reads a frame the relay sent. Strict about the layout of acks and errors (the relay
    /// writes them one way only); an event line is checked by the line parser, as a
    /// recorder would check it.
    public init(parsing text: String) throws(WireError) {
        let utf8 = Array(text.utf8)
        if let rest = Self.after(#"{"type":"ack","upTo":"#, in: utf8) {
            guard let (upTo, end) = Self.integer(utf8, at: rest), end == utf8.count - 1, utf8[end] == UInt8(ascii: "}") else {
                throw WireError("malformed ack: \(JSONText.quoted(text, limit: 80))")
            }
            self = .ack(upTo: upTo)
            return
        }
        if let rest = Self.after(#"{"type":"ack","replica":""#, in: utf8) {
            guard utf8.count >= rest + 32, let replica = ReplicaID(hex: String(decoding: utf8[rest..<rest + 32], as: UTF8.self)),
                  let upToStart = Self.after(#"","upTo":"#, in: utf8, from: rest + 32),
                  let (upTo, end) = Self.integer(utf8, at: upToStart), end == utf8.count - 1, utf8[end] == UInt8(ascii: "}")
            else {
                throw WireError("malformed ack: \(JSONText.quoted(text, limit: 80))")
            }
            self = .replicaAck(replica: replica, upTo: upTo)
            return
        }
        if let rest = Self.after(#"{"type":"caughtUp","events":"#, in: utf8) {
            guard let (events, afterEvents) = Self.integer(utf8, at: rest) else {
                throw WireError("malformed caughtUp: \(JSONText.quoted(text, limit: 80))")
            }
            let viewOnlyEnd = Self.after(#","viewOnly":true"#, in: utf8, from: afterEvents)
            guard let haveStart = Self.after(#","have":"#, in: utf8, from: viewOnlyEnd ?? afterEvents),
                  utf8.last == UInt8(ascii: "}")
            else {
                throw WireError("malformed caughtUp: \(JSONText.quoted(text, limit: 80))")
            }
            let have: Have
            do { have = try Have(parsing: String(decoding: utf8[haveStart..<(utf8.count - 1)], as: UTF8.self)) } catch {
                throw WireError("malformed caughtUp: \(error.reason)")
            }
            self = .caughtUp(events: events, have: have, viewOnly: viewOnlyEnd != nil)
            return
        }
        if let rest = Self.after(#"{"type":"error","#, in: utf8) {
            var cursor = rest
            var frame: UInt64?
            if let afterKey = Self.after(#""frame":"#, in: utf8, from: cursor) {
                guard let (number, end) = Self.integer(utf8, at: afterKey), end < utf8.count, utf8[end] == UInt8(ascii: ",") else {
                    throw WireError("malformed error message: \(JSONText.quoted(text, limit: 80))")
                }
                frame = number
                cursor = end + 1
            }
            var code = RefusalCode.unspecified
            if let afterKey = Self.after(#""code":"#, in: utf8, from: cursor) {
                let word: (value: String, end: Int)
                do { word = try JSONStringLiteral.decode(text, at: afterKey) } catch {
                    throw WireError("malformed error message: \(error.reason)")
                }
                guard word.end < utf8.count, utf8[word.end] == UInt8(ascii: ",") else {
                    throw WireError("malformed error message: \(JSONText.quoted(text, limit: 80))")
                }
                code = RefusalCode(wire: word.value)
                cursor = word.end + 1
            }
            guard let afterKey = Self.after(#""message":"#, in: utf8, from: cursor) else {
                throw WireError("malformed error message: \(JSONText.quoted(text, limit: 80))")
            }
            let decoded: (value: String, end: Int)
            do { decoded = try JSONStringLiteral.decode(text, at: afterKey) } catch {
                throw WireError("malformed error message: \(error.reason)")
            }
            guard decoded.end == utf8.count - 1, utf8[decoded.end] == UInt8(ascii: "}") else {
                throw WireError("malformed error message: \(JSONText.quoted(text, limit: 80))")
            }
            self = .error(frame: frame, code: code, message: decoded.value)
            return
        }
        do { _ = try LineParser.parse(text) } catch { throw WireError("not an event line: \(error.reason)") }
        self = .event(line: text)
    }

    /// The id of an event message: its envelope's replica and seq, which the relay always
    /// writes last (`…,"replica":"<32 hex>","seq":N,"lamport":N,"time":N}`). What a client
    /// dedups by and counts into its own `Have`. Nil for other messages and for an event line
    /// without that envelope.
    public var eventID: EventID? { envelope?.id }

    /// The event an event message carries, with its id and clocks (what a client folds), or
    /// nil for other messages; throws when the line is not one event with its envelope.
    public func event() throws(WireError) -> Event? {
        guard case .event(let line) = self else { return nil }
        guard let envelope else { throw WireError("event message without its envelope: \(JSONText.quoted(line, limit: 80))") }
        let payloads = try payloads()
        guard payloads.count == 1 else { throw WireError("event message holds \(payloads.count) events: \(JSONText.quoted(line, limit: 80))") }
        return Event(id: envelope.id, lamport: envelope.lamport, wallTime: envelope.wallTime, payload: payloads[0])
    }

    /// The envelope of an event message, in the layout the relay writes.
    private var envelope: (id: EventID, lamport: UInt64, wallTime: Int64)? {
        guard case .event(let line) = self else { return nil }
        let utf8 = Array(line.utf8)
        let key = Array(#","replica":""#.utf8)
        // The payload's own fields (ids, colours, numbers) never hold that text: the last
        // match is the envelope.
        guard utf8.count >= key.count + 32 else { return nil }
        var start = utf8.count - key.count - 32
        while start >= 0, !utf8[start..<start + key.count].elementsEqual(key) { start -= 1 }
        guard start >= 0 else { return nil }
        let hexStart = start + key.count
        guard let replica = ReplicaID(hex: String(decoding: utf8[hexStart..<hexStart + 32], as: UTF8.self)),
              let seqStart = Self.after(#"","seq":"#, in: utf8, from: hexStart + 32),
              let (seq, seqEnd) = Self.integer(utf8, at: seqStart), seq >= 1,
              let lamportStart = Self.after(#","lamport":"#, in: utf8, from: seqEnd),
              let (lamport, lamportEnd) = Self.integer(utf8, at: lamportStart),
              var timeStart = Self.after(#","time":"#, in: utf8, from: lamportEnd)
        else { return nil }
        let negative = timeStart < utf8.count && utf8[timeStart] == UInt8(ascii: "-")
        if negative { timeStart += 1 }
        guard let (magnitude, timeEnd) = Self.integer(utf8, at: timeStart), timeEnd == utf8.count - 1,
              let wallTime = negative ? (magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil)
                                      : (magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil)
        else { return nil }
        return (EventID(replica: replica, seq: seq), lamport, wallTime)
    }

    /// The payloads of an event message (the envelope is not part of them).
    public func payloads() throws(WireError) -> [Payload] {
        guard case .event(let line) = self else { return [] }
        do { return try LineParser.parse(line) } catch { throw WireError(error.reason) }
    }

    private static func after(_ prefix: String, in bytes: [UInt8], from start: Int = 0) -> Int? {
        let prefix = Array(prefix.utf8)
        guard bytes.count - start >= prefix.count, bytes[start..<start + prefix.count].elementsEqual(prefix) else { return nil }
        return start + prefix.count
    }

    /// A non-negative decimal integer without sign or leading zeros; nil on overflow.
    private static func integer(_ bytes: [UInt8], at start: Int) -> (UInt64, Int)? {
        var index = start
        var value: UInt64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            let digit = UInt64(bytes[index] - UInt8(ascii: "0"))
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            index += 1
        }
        guard index > start, !(bytes[start] == UInt8(ascii: "0") && index - start > 1) else { return nil }
        return (value, index)
    }
}
