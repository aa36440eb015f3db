/// Hexadecimal digits, the one place every module reads and writes them: replica ids, stroke
/// UUIDs, colours, segment names and checksums in messages.
public enum Hex {
    /// The value of one hex digit of either case, or `invalidDigit`.
    @inlinable @inline(__always)
    public static func digitValue(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
        default: return invalidDigit
        }
    }

    public static let invalidDigit: UInt8 = 0xFF

    /// The low `digits` hex digits of `value`, zero-padded.
    public static func string(_ value: UInt64, digits: Int, uppercase: Bool = false) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits)
        append(value << UInt64(64 - 4 * min(16, max(0, digits))), digits: digits, uppercase: uppercase, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the top `digits` hex digits of `value` (the form a byte-level encoder needs:
    /// shift the field to the top, then take as many digits as it has).
    @inlinable
    public static func append(_ value: UInt64, digits: Int, uppercase: Bool, to out: inout [UInt8]) {
        let letters = uppercase ? UInt8(ascii: "A") : UInt8(ascii: "a")
        for index in 0..<digits {
            let nibble = UInt8(truncatingIfNeeded: value >> UInt64(60 - 4 * index)) & 0xF
            out.append(nibble < 10 ? UInt8(ascii: "0") + nibble : letters + nibble - 10)
        }
    }

    /// `0x` and 8 digits: how messages print a CRC-32.
    public static func checksum(_ value: UInt32) -> String { "0x" + string(UInt64(value), digits: 8) }

    /// Two lowercase digits a byte (keys, signatures, token ids).
    public static func bytes(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { append(UInt64(byte) << 56, digits: 2, uppercase: false, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of an even number of hex digits (either case), or nil.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            let high = digitValue(digits[index]), low = digitValue(digits[index + 1])
            guard high != invalidDigit, low != invalidDigit else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    public static func isDecimalDigit(_ byte: UInt8) -> Bool { (48...57).contains(byte) }
    public static func isLowercaseHexDigit(_ byte: UInt8) -> Bool { (48...57).contains(byte) || (97...102).contains(byte) }
}
