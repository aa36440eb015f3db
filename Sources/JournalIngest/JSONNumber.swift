/// Parsing of JSON numbers to the correctly rounded `Double`.
///
/// The grammar is RFC 8259's, strictly: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`. No
/// `+1`, `.5`, `1.`, `01`, `NaN` or `Infinity`. The result is bit for bit the `Double` a
/// correctly rounded conversion (Swift's `Double(String)`, i.e. `strtod`) gives: a fast path
/// handles the common case exactly (Clinger: a decimal mantissa of at most 2^53 scaled by an
/// exact power of ten up to 10^22, one correctly rounded IEEE multiplication or division),
/// everything else falls back to `Double(String)`. The sign of zero is kept (`-0` → `-0.0`).
/// A number that rounds to infinity (`1e999`) is refused as not finite; one that underflows
/// rounds to a subnormal or to zero like `strtod` does.
public enum JSONNumber {
    /// The value of `text` when all of it is one finite JSON number, else nil.
    public static func parse(_ text: UnsafeRawBufferPointer) -> Double? {
        guard let base = text.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        let result = scanNumber(base, from: 0, end: text.count)
        guard result.status == .ok, result.next == text.count else { return nil }
        return result.value
    }

    /// The value of `text` when all of it is one finite JSON number, else nil.
    public static func parse(_ text: some StringProtocol) -> Double? {
        var copy = String(text)
        return copy.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    /// The fast path alone: the value when `text` is a JSON number the fast path converts
    /// exactly, nil when it would fall back (or is not a number). For tests.
    @_spi(Testing)
    public static func fastPathValue(_ text: String) -> Double? {
        var copy = text
        return copy.withUTF8 { buffer -> Double? in
            guard let base = buffer.baseAddress else { return nil }
            let result = scanNumber(base, from: 0, end: buffer.count, allowSlowPath: false)
            guard result.status == .ok, result.next == buffer.count else { return nil }
            return result.value
        }
    }
}

/// What `scanNumber` found.
struct NumberScan {
    enum Status: UInt8 {
        case ok
        /// Not JSON number grammar; `next` is the offending byte.
        case syntax
        /// Grammatical, but rounds to infinity.
        case nonFinite
        /// Only with `allowSlowPath: false`: the fast path does not apply.
        case slow
    }

    var value: Double
    /// Index just past the number (or of the offending byte).
    var next: Int
    var status: Status
}

@inline(__always)
private func digitValue(_ byte: UInt8) -> UInt8 { byte &- UInt8(ascii: "0") }

/// Scans one JSON number starting at `start` and stops at the first byte that cannot
/// continue it (the caller checks what follows).
@inline(__always)
func scanNumber(
    _ base: UnsafePointer<UInt8>, from start: Int, end: Int, allowSlowPath: Bool = true
) -> NumberScan {
    var index = start
    var negative = false
    if index < end, base[index] == UInt8(ascii: "-") {
        negative = true
        index += 1
    }
    guard index < end, digitValue(base[index]) < 10 else {
        return NumberScan(value: 0, next: index, status: .syntax)
    }

    var mantissa: UInt64 = 0
    var significantDigits = 0
    var exponent = 0
    // More than 19 significant digits: the mantissa no longer fits, take the slow path.
    var truncated = false

    // Integer part.
    if base[index] == UInt8(ascii: "0") {
        index += 1
        if index < end, digitValue(base[index]) < 10 {
            return NumberScan(value: 0, next: index, status: .syntax)
        }
    } else {
        while index < end {
            let digit = digitValue(base[index])
            guard digit < 10 else { break }
            if significantDigits < 19 {
                mantissa = mantissa &* 10 &+ UInt64(digit)
                significantDigits += 1
            } else {
                truncated = true
            }
            index += 1
        }
    }

    // Fraction.
    if index < end, base[index] == UInt8(ascii: ".") {
        index += 1
        guard index < end, digitValue(base[index]) < 10 else {
            return NumberScan(value: 0, next: index, status: .syntax)
        }
        while index < end {
            let digit = digitValue(base[index])
            guard digit < 10 else { break }
            if mantissa == 0 && digit == 0 {
                exponent -= 1  // a leading zero: only shifts the scale
            } else if significantDigits < 19 {
                mantissa = mantissa &* 10 &+ UInt64(digit)
                significantDigits += 1
                exponent -= 1
            } else {
                truncated = true
            }
            index += 1
        }
    }

    // Exponent.
    if index < end, base[index] | 0x20 == UInt8(ascii: "e") {
        index += 1
        var exponentNegative = false
        if index < end, base[index] == UInt8(ascii: "-") || base[index] == UInt8(ascii: "+") {
            exponentNegative = base[index] == UInt8(ascii: "-")
            index += 1
        }
        guard index < end, digitValue(base[index]) < 10 else {
            return NumberScan(value: 0, next: index, status: .syntax)
        }
        var explicit = 0
        while index < end {
            let digit = digitValue(base[index])
            guard digit < 10 else { break }
            if explicit < 1_000_000 { explicit = explicit * 10 + Int(digit) }  // far past any Double
            index += 1
        }
        exponent += exponentNegative ? -explicit : explicit
    }

    if !truncated {
        if mantissa == 0 {
            return NumberScan(value: negative ? -0.0 : 0.0, next: index, status: .ok)
        }
        if mantissa <= 1 << 53, exponent >= -22, exponent <= 22 {
            // Both operands exact, so the one IEEE operation rounds correctly.
            var value = Double(mantissa)
            if exponent < 0 {
                value /= exactPowerOfTen(-exponent)
            } else {
                value *= exactPowerOfTen(exponent)
            }
            return NumberScan(value: negative ? -value : value, next: index, status: .ok)
        }
    }
    guard allowSlowPath else { return NumberScan(value: 0, next: index, status: .slow) }
    return slowNumber(base, from: start, to: index)
}

/// The correctly rounded conversion of an already validated JSON number.
@inline(never)
private func slowNumber(_ base: UnsafePointer<UInt8>, from start: Int, to end: Int) -> NumberScan {
    let text = String(decoding: UnsafeBufferPointer(start: base + start, count: end - start), as: UTF8.self)
    guard let value = Double(text) else { return NumberScan(value: 0, next: start, status: .syntax) }
    guard value.isFinite else { return NumberScan(value: value, next: end, status: .nonFinite) }
    return NumberScan(value: value, next: end, status: .ok)
}

/// 10^exponent for 0...22, all exactly representable.
@inline(__always)
private func exactPowerOfTen(_ exponent: Int) -> Double {
    switch exponent {
    case 0: return 1e0
    case 1: return 1e1
    case 2: return 1e2
    case 3: return 1e3
    case 4: return 1e4
    case 5: return 1e5
    case 6: return 1e6
    case 7: return 1e7
    case 8: return 1e8
    case 9: return 1e9
    case 10: return 1e10
    case 11: return 1e11
    case 12: return 1e12
    case 13: return 1e13
    case 14: return 1e14
    case 15: return 1e15
    case 16: return 1e16
    case 17: return 1e17
    case 18: return 1e18
    case 19: return 1e19
    case 20: return 1e20
    case 21: return 1e21
    default: return 1e22
    }
}
