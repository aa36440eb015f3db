import JournalFormat

// A fast path for the exact layout `CanonicalJSON` prints for points and ends, which is what
// large inputs consist of: fixed keys in a fixed order, no whitespace, no escapes, the
// 36-character UUID, `#RRGGBBAA`. It matches the line against that template and gives up
// (returns nil) at the first difference; the general parser then takes the line from the
// start and makes the decisions, errors included. Whatever the fast path accepts, the general
// parser accepts too, with the same payload (the tests check this differentially). Every
// byte it accepts is ASCII, so it needs no UTF-8 check.

/// A cursor that only moves forward over a template.
private struct TemplateCursor {
    let base: UnsafePointer<UInt8>
    let end: Int
    var index = 0

    /// Consumes `length` (1...8) bytes equal to the little-endian `pattern`.
    @inline(__always)
    mutating func literal(_ pattern: UInt64, _ length: Int) -> Bool {
        if index + 8 <= end {
            let mask: UInt64 = length == 8 ? .max : (1 << UInt64(8 * length)) &- 1
            guard load64(base + index) & mask == pattern else { return false }
        } else {
            guard index + length <= end else { return false }
            for offset in 0..<length where base[index + offset] != UInt8(truncatingIfNeeded: pattern >> UInt64(8 * offset)) {
                return false
            }
        }
        index += length
        return true
    }

    /// A dashed UUID (its quotes are part of the literals around it).
    @inline(__always)
    mutating func strokeID() -> StrokeID? {
        guard index + 36 <= end, let id = parseStrokeID(base + index, count: 36) else { return nil }
        index += 36
        return id
    }

    /// `#RRGGBBAA` (its quotes are part of the literals around it).
    @inline(__always)
    mutating func color() -> RGBA? {
        guard index + 9 <= end, let color = parseHexColor(base + index, count: 9) else { return nil }
        index += 9
        return color
    }

    /// A finite JSON number.
    @inline(__always)
    mutating func number() -> Double? {
        let result = scanNumber(base, from: index, end: end)
        guard result.status == .ok else { return nil }
        index = result.next
        return result.value
    }

    /// The last byte of the line.
    @inline(__always)
    mutating func last(_ byte: UInt8) -> Bool {
        guard index + 1 == end, base[index] == byte else { return false }
        index += 1
        return true
    }
}

/// The payload of a line in the exact canonical layout, or nil for any other line.
@inline(__always)
func parseCanonicalTemplate(_ base: UnsafePointer<UInt8>, count: Int) -> Payload? {
    var cursor = TemplateCursor(base: base, end: count)
    guard cursor.literal(0x3A22_6570_7974_227B, 8) else { return nil }  // {"type":
    if cursor.literal(0x2C22_746E_696F_7022, 8) {  // "point",
        guard cursor.literal(0x2265_6B6F_7274_7322, 8),  // "stroke"
              cursor.literal(0x223A, 2),  // :"
              let stroke = cursor.strokeID(),
              cursor.literal(0x3A22_7822_2C22, 6),  // ","x":
              let x = cursor.number(),
              cursor.literal(0x3A_2279_222C, 5),  // ,"y":
              let y = cursor.number(),
              cursor.literal(0x2272_6F6C_6F63_222C, 8),  // ,"color"
              cursor.literal(0x223A, 2),  // :"
              let color = cursor.color(),
              cursor.literal(0x6874_6469_7722_2C22, 8),  // ","width
              cursor.literal(0x3A22, 2),  // ":
              let width = cursor.number(), width >= 0
        else { return nil }
        var pressure: Double?
        var t: Double?
        if cursor.literal(0x7573_7365_7270_222C, 8) {  // ,"pressu
            guard cursor.literal(0x3A22_6572, 4), let value = cursor.number() else { return nil }  // re":
            pressure = value
        }
        if cursor.literal(0x3A_2274_222C, 5) {  // ,"t":
            guard let value = cursor.number() else { return nil }
            t = value
        }
        guard cursor.last(UInt8(ascii: "}")) else { return nil }
        let payload = Payload.point(PointSample(
            stroke: stroke, x: x, y: y, pressure: pressure, t: t, style: Style(color: color, width: width)))
        // Cannot fail for what the template lets through; should it, the general parser says why.
        guard (try? payload.validate()) != nil else { return nil }
        return payload
    }
    if cursor.literal(0x7322_2C22_646E_6522, 8) {  // "end","s
        guard cursor.literal(0x223A_2265_6B6F_7274, 8),  // troke":"
              let stroke = cursor.strokeID(),
              cursor.literal(0x22, 1),  // "
              cursor.last(UInt8(ascii: "}"))
        else { return nil }
        return .end(stroke)
    }
    return nil
}
