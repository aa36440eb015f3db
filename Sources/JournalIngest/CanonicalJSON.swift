import JournalFormat

/// Formats payloads and events as canonical NDJSON lines: what `LineParser` reads back to
/// the same payload, bit for bit.
///
/// Keys come in a fixed order: `type`, `stroke`, `x`, `y`, `color`, `width`, `pressure`, `t`
/// (`pressure` and `t` only when present), then for events `replica`, `seq`, `lamport`,
/// `time`. Stroke ids print as `StrokeID.uuidString` (uppercase, dashed), colours as
/// `RGBA.hexString` (`#RRGGBBAA`, uppercase), replicas as `ReplicaID.hex`. No whitespace,
/// no newline.
public enum CanonicalJSON {
    /// The canonical line of a payload, e.g.
    /// `{"type":"point","stroke":"…","x":1.5,"y":2.0,"color":"#000000FF","width":2.0}`.
    public static func line(for payload: Payload) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(160)
        appendBody(payload, to: &out)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The payload's line with the event's envelope before the closing brace:
    /// `,"replica":"<32 hex>","seq":N,"lamport":N,"time":N`.
    public static func line(for event: Event) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(240)
        appendBody(event.payload, to: &out)
        append(#","replica":""#, to: &out)
        Hex.append(event.id.replica.bits.high, digits: 16, uppercase: false, to: &out)
        Hex.append(event.id.replica.bits.low, digits: 16, uppercase: false, to: &out)
        append(#"","seq":"#, to: &out)
        append(String(event.id.seq), to: &out)
        append(#","lamport":"#, to: &out)
        append(String(event.lamport), to: &out)
        append(#","time":"#, to: &out)
        append(String(event.wallTime), to: &out)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The shortest text that reads back as exactly `value`, and valid JSON: Swift's
    /// `description` ("1.5", "4.0", "5e-324", "1e-05", "1e+16", "-0.0"). JSON has no
    /// infinities or NaN, so a non-finite value prints `null` (which `LineParser` refuses:
    /// payloads that pass `Payload.validate()` never hold one).
    public static func number(_ value: Double) -> String {
        JSONText.number(value)
    }

    // MARK: Pieces

    private static func appendBody(_ payload: Payload, to out: inout [UInt8]) {
        append(#"{"type":""#, to: &out)
        append(payload.kind.description, to: &out)
        out.append(UInt8(ascii: "\""))
        guard let stroke = payload.stroke else { return }
        append(#","stroke":""#, to: &out)
        appendUUID(stroke.bits, to: &out)
        out.append(UInt8(ascii: "\""))
        guard case .point(let sample) = payload else { return }
        append(#","x":"#, to: &out)
        append(number(sample.x), to: &out)
        append(#","y":"#, to: &out)
        append(number(sample.y), to: &out)
        append(##","color":"#"##, to: &out)
        Hex.append(UInt64(sample.style.color.rawValue) << 32, digits: 8, uppercase: true, to: &out)
        append(#"","width":"#, to: &out)
        append(number(sample.style.width), to: &out)
        if let pressure = sample.pressure {
            append(#","pressure":"#, to: &out)
            append(number(pressure), to: &out)
        }
        if let t = sample.t {
            append(#","t":"#, to: &out)
            append(number(t), to: &out)
        }
    }

    @inline(__always)
    private static func append(_ text: String, to out: inout [UInt8]) {
        out.append(contentsOf: text.utf8)
    }

    private static func appendUUID(_ bits: UUIDBits, to out: inout [UInt8]) {
        bits.appendUUIDString(to: &out)
    }
}
