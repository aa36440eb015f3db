import JournalFormat

// Byte-level parsers for the hot path. Each accepts exactly what its JournalFormat
// counterpart accepts (`StrokeID(uuidString:)`, `RGBA(hexString:)`) — the tests check the
// two agree — but reads raw bytes without building a `String` first.

/// The value of one hex digit, or 0xFF.
@inline(__always)
func hexNibble(_ byte: UInt8) -> UInt8 {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
    default: return 0xFF
    }
}

/// A UUID as `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX` (36 bytes, either case) or as 32 bare
/// hex digits; nil for anything else.
@inline(__always)
func parseStrokeID(_ base: UnsafePointer<UInt8>, count: Int) -> StrokeID? {
    var high: UInt64 = 0
    var low: UInt64 = 0
    var digits = 0
    var bad: UInt8 = 0
    if count == 36 {
        guard base[8] == UInt8(ascii: "-"), base[13] == UInt8(ascii: "-"),
              base[18] == UInt8(ascii: "-"), base[23] == UInt8(ascii: "-") else { return nil }
        for index in 0..<36 where index != 8 && index != 13 && index != 18 && index != 23 {
            let nibble = hexNibble(base[index])
            bad |= nibble
            if digits < 16 { high = high << 4 | UInt64(nibble & 0xF) } else { low = low << 4 | UInt64(nibble & 0xF) }
            digits += 1
        }
    } else if count == 32 {
        for index in 0..<32 {
            let nibble = hexNibble(base[index])
            bad |= nibble
            if index < 16 { high = high << 4 | UInt64(nibble & 0xF) } else { low = low << 4 | UInt64(nibble & 0xF) }
        }
    } else {
        return nil
    }
    guard bad & 0xF0 == 0 else { return nil }
    return StrokeID(UUIDBits(high: high, low: low))
}

/// `#RRGGBB` (opaque) or `#RRGGBBAA`, either case; nil for anything else.
@inline(__always)
func parseHexColor(_ base: UnsafePointer<UInt8>, count: Int) -> RGBA? {
    guard count == 7 || count == 9, base[0] == UInt8(ascii: "#") else { return nil }
    var value: UInt32 = 0
    var bad: UInt8 = 0
    for index in 1..<count {
        let nibble = hexNibble(base[index])
        bad |= nibble
        value = value << 4 | UInt32(nibble & 0xF)
    }
    guard bad & 0xF0 == 0 else { return nil }
    if count == 7 { value = value << 8 | 0xFF }
    return RGBA(rawValue: value)
}

/// The offset of the first byte that is not part of well-formed UTF-8 (no overlong forms,
/// no surrogates, nothing above U+10FFFF), or nil when all `count` bytes are.
func firstInvalidUTF8(_ base: UnsafePointer<UInt8>, count: Int) -> Int? {
    var index = 0
    while true {
        // ASCII, eight bytes at a time.
        while index + 8 <= count {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            if word & 0x8080_8080_8080_8080 != 0 { break }
            index += 8
        }
        while index < count, base[index] < 0x80 { index += 1 }
        if index >= count { return nil }

        let lead = base[index]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return index
        }
        guard index + length <= count else { return index }
        let second = base[index + 1]
        guard second >= low, second <= high else { return index }
        for offset in 2..<max(2, length) {
            guard base[index + offset] & 0xC0 == 0x80 else { return index }
        }
        index += length
    }
}
