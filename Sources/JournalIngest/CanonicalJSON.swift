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

    /// Appends exactly the bytes of `number(value)`, without a String per number for values
    /// on a short decimal grid (pen data: 2–3 decimals), which `description` formats several
    /// times slower.
    ///
    /// Why the digits are the same: if v is the double nearest n / 10^k with 0 < n < 2^47, the
    /// decimals of k digits are at least 32 ulps of v apart, so n / 10^k is the only k-digit
    /// decimal that reads back as v, and with trailing zeros stripped it is the shortest one,
    /// which is what `description` prints; between 1e-3 and 1e15 `description` writes it
    /// without an exponent and with at least one fractional digit. Anything else (no such n,
    /// zero, -0.0, huge or tiny values) takes `description`'s own path. Tests compare both.
    @inline(__always)
    public static func appendNumber(_ value: Double, to out: inout [UInt8]) {
        let magnitude = value.magnitude
        if magnitude >= 1e-3 && magnitude < 1e15 {
            if let (integer, scale) = gridDigits(magnitude) {
                if value < 0 { out.append(UInt8(ascii: "-")) }
                appendDecimal(integer, scale: scale, to: &out)
                return
            }
        }
        out.append(contentsOf: number(value).utf8)
    }

    /// (n, k) with `magnitude` the double nearest n / 10^k, n < 2^47 not a multiple of 10
    /// unless k = 0; nil if there is none with k ≤ 9 (tried at 3, 6, 9: a value exact at
    /// a smaller k is exact there too, and stripping zeros finds the smallest).
    @inline(__always)
    static func gridDigits(_ magnitude: Double) -> (UInt64, Int)? {
        var scale = 3
        while scale <= 9 {
            let power = gridPowers[scale]
            let scaled = (magnitude * power).rounded()
            guard scaled < 140_737_488_355_328 else { return nil }   // 2^47
            if scaled / power == magnitude {
                var integer = UInt64(scaled)
                var digits = scale
                while digits > 0 && integer % 10 == 0 {
                    integer /= 10
                    digits -= 1
                }
                return (integer, digits)
            }
            scale += 3
        }
        return nil
    }

    private static let gridPowers: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]

    /// n / 10^k in plain decimal notation, with ".0" when k = 0.
    @inline(__always)
    private static func appendDecimal(_ integer: UInt64, scale: Int, to out: inout [UInt8]) {
        // At most 15 digits (n < 2^47), a point, and up to 9 fractional digits: under 32.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buffer in
            var end = 32
            var rest = integer
            var written = 0
            if scale == 0 {
                end -= 1; buffer[end] = UInt8(ascii: "0")
                end -= 1; buffer[end] = UInt8(ascii: ".")
            } else {
                while written < scale {
                    end -= 1
                    buffer[end] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                    rest /= 10
                    written += 1
                }
                end -= 1; buffer[end] = UInt8(ascii: ".")
            }
            repeat {
                end -= 1
                buffer[end] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[end..<32]))
        }
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
