import JournalFormat

// Byte-level parsers for the hot path. Each accepts exactly what its JournalFormat
// counterpart accepts (`StrokeID(uuidString:)`, `RGBA(hexString:)`) — the tests check the
// two agree — but reads raw bytes without building a `String` first.

// MARK: Word-at-a-time helpers (SWAR). Words are read little-endian: the first byte is
// the lowest.

let bytesOnes: UInt64 = 0x0101_0101_0101_0101
let bytesHigh: UInt64 = 0x8080_8080_8080_8080

@inline(__always)
func load64(_ pointer: UnsafePointer<UInt8>) -> UInt64 {
    UInt64(littleEndian: UnsafeRawPointer(pointer).loadUnaligned(as: UInt64.self))
}

@inline(__always)
func load32(_ pointer: UnsafePointer<UInt8>) -> UInt64 {
    UInt64(UInt32(littleEndian: UnsafeRawPointer(pointer).loadUnaligned(as: UInt32.self)))
}

@inline(__always)
func load16(_ pointer: UnsafePointer<UInt8>) -> UInt64 {
    UInt64(UInt16(littleEndian: UnsafeRawPointer(pointer).loadUnaligned(as: UInt16.self)))
}

/// 0x80 in (at least) the lowest byte of `word` that is `"`, `\` or a control character
/// (below 0x20); bytes above the lowest flagged one may be flagged spuriously. Zero when no
/// byte is one of those.
@inline(__always)
func stringStopMask(_ word: UInt64) -> UInt64 {
    let quote = word ^ (0x22 &* bytesOnes)
    let backslash = word ^ (0x5C &* bytesOnes)
    let quoteZero = (quote &- bytesOnes) & ~quote
    let backslashZero = (backslash &- bytesOnes) & ~backslash
    let control = (word &- 0x20 &* bytesOnes) & ~word
    return (quoteZero | backslashZero | control) & bytesHigh
}

/// The value of eight hex digits packed in a word (first digit in the lowest byte), or nil
/// when any byte is not `0-9`, `a-f` or `A-F`.
@inline(__always)
func parseHexWord(_ word: UInt64) -> UInt64? {
    guard word & bytesHigh == 0 else { return nil }
    // With every byte below 0x80, x + (0x80 - lo) sets bit 7 exactly when x >= lo, without
    // carrying into the next byte.
    let atLeastZero = word &+ (0x80 - 0x30) &* bytesOnes
    let aboveNine = word &+ (0x7F - 0x39) &* bytesOnes
    let folded = word | (0x20 &* bytesOnes)
    let atLeastA = folded &+ (0x80 - 0x61) &* bytesOnes
    let aboveF = folded &+ (0x7F - 0x66) &* bytesOnes
    let valid = ((atLeastZero & ~aboveNine) | (atLeastA & ~aboveF)) & bytesHigh
    guard valid == bytesHigh else { return nil }
    // Digits have bit 6 clear; letters have it set and a low nibble of 1...6.
    let nibbles = (word & (0x0F &* bytesOnes)) &+ 9 &* ((word >> 6) & bytesOnes)
    // Pairs of nibbles into bytes at even positions, then those bytes together.
    let pairs = ((nibbles & 0x0F00_0F00_0F00_0F00) >> 8) | ((nibbles & 0x000F_000F_000F_000F) << 4)
    let quads = (pairs & 0x0000_00FF_0000_00FF) | ((pairs >> 8) & 0x0000_FF00_0000_FF00)
    let packed = (quads & 0xFFFF) | ((quads >> 16) & 0xFFFF_0000)
    return UInt64(UInt32(truncatingIfNeeded: packed).byteSwapped)
}

/// A UUID as `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX` (36 bytes, either case) or as 32 bare
/// hex digits; nil for anything else.
@inline(__always)
func parseStrokeID(_ base: UnsafePointer<UInt8>, count: Int) -> StrokeID? {
    let words: (UInt64, UInt64, UInt64, UInt64)
    if count == 36 {
        guard base[8] == UInt8(ascii: "-"), base[13] == UInt8(ascii: "-"),
              base[18] == UInt8(ascii: "-"), base[23] == UInt8(ascii: "-") else { return nil }
        words = (load64(base), load32(base + 9) | load32(base + 14) << 32,
                 load32(base + 19) | load32(base + 24) << 32, load64(base + 28))
    } else if count == 32 {
        words = (load64(base), load64(base + 8), load64(base + 16), load64(base + 24))
    } else {
        return nil
    }
    guard let a = parseHexWord(words.0), let b = parseHexWord(words.1), let c = parseHexWord(words.2), let d = parseHexWord(words.3) else {
        return nil
    }
    return StrokeID(UUIDBits(high: a << 32 | b, low: c << 32 | d))
}

/// `#RRGGBB` (opaque) or `#RRGGBBAA`, either case; nil for anything else.
@inline(__always)
func parseHexColor(_ base: UnsafePointer<UInt8>, count: Int) -> RGBA? {
    guard count == 7 || count == 9, base[0] == UInt8(ascii: "#") else { return nil }
    let word: UInt64
    if count == 9 {
        word = load64(base + 1)
    } else if count == 7 {
        word = load32(base + 1) | load16(base + 5) << 32 | 0x4646 << 48  // "FF" for the alpha
    } else {
        return nil
    }
    guard let value = parseHexWord(word) else { return nil }
    return RGBA(rawValue: UInt32(value))
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
