import JournalFormat

/// Turns one NDJSON line into journal payloads.
///
/// ## Input forms
/// The form is told by the keys present: a `"type"` key makes a canonical line, else a
/// `"point"` key a DrawTogether line, else a `"points"` key a CollabSketch line.
///
/// 1. Canonical (what `CanonicalJSON` prints, and what `journal log` prints, envelope and all):
///    - `{"type":"point","stroke":"<UUID>","x":1.5,"y":2.25,"color":"#RRGGBBAA","width":4,"pressure":0.5,"t":0.016}`.
///      `stroke`, `x`, `y` are required. `pressure` and `t` are optional (absent stays nil).
///      `color` is optional, `#RRGGBB` (opaque) or `#RRGGBBAA`, default black `#000000FF`
///      (`defaultColor`); `width` is optional, default 2.0 (`defaultWidth`).
///    - `{"type":"end"|"undo"|"redo"|"erase","stroke":"<UUID>"}` and `{"type":"clear"}`.
///    - The envelope keys `"replica"`, `"seq"`, `"lamport"`, `"time"` are accepted with any
///      JSON value and ignored, so that a log can be recorded again.
/// 2. DrawTogether's `UpsertStrokeMessage`, `{"id":"<UUID>","color":"red","point":[x,y]}`:
///    one point, no pressure, no `t`. `color` is one of `NamedColors` or `#RRGGBB[AA]`,
///    optional, default black; `width` is optional, default 4.0 (`drawTogetherDefaultWidth`).
/// 3. CollabSketch's `DrawingStroke`,
///    `{"id":"<UUID>","points":[{"x":…,"y":…},…],"red":…,"green":…,"blue":…,"alpha":…,"lineWidth":…}`:
///    all keys required; the components are 0…1 and become bytes by `round(v * 255)`. The
///    points in order, then `.end(id)` (an empty `points` gives just the end).
///
/// ## What is refused
/// Lines longer than `maxLineLength`, invalid UTF-8, anything but one JSON object (trailing
/// text included), syntax errors, keys no form knows or that do not belong to the form,
/// duplicate keys, missing required keys, values of the wrong JSON type, numbers that are not
/// finite once rounded (`1e999`), ids that are not UUIDs (36-character dashed form or 32 hex
/// digits), bad colours, negative widths, unknown `"type"`s, nesting deeper than `maxDepth`,
/// and whatever `Payload.validate()` refuses. Numbers convert bit-exactly (see `JSONNumber`).
public enum LineParser {
    /// The longest line accepted, in bytes, not counting its `\n` or `\r\n`.
    public static let maxLineLength = 1 << 20
    /// The deepest nesting accepted; the line's object is level 1.
    public static let maxDepth = 16
    /// The colour of a canonical or DrawTogether point that names none: opaque black.
    public static let defaultColor = RGBA(rawValue: 0x0000_00FF)
    /// The width of a canonical point that gives none.
    public static let defaultWidth = 2.0
    /// The width of a DrawTogether point that gives none.
    public static let drawTogetherDefaultWidth = 4.0

    /// Parses one line (without its newline; a trailing `\r` is fine). Returns [] for a blank line.
    public static func parse(_ line: UnsafeRawBufferPointer) throws(LineError) -> [Payload] {
        var payloads: [Payload] = []
        try parse(line, into: &payloads)
        return payloads
    }

    /// Parses one line and appends its payloads to `payloads` (nothing for a blank line, and
    /// nothing at all when the line is refused).
    public static func parse(
        _ line: UnsafeRawBufferPointer, into payloads: inout [Payload], maxLineLength: Int = maxLineLength
    ) throws(LineError) {
        guard let base = line.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        try parseLine(base, count: line.count, into: &payloads, maxLineLength: maxLineLength)
    }

    /// Parses one line given as text.
    public static func parse(_ line: String) throws(LineError) -> [Payload] {
        var copy = line
        return try copy.withUTF8 { buffer in
            Result { () throws(LineError) in try parse(UnsafeRawBufferPointer(buffer)) }
        }.get()
    }

    /// The payload the canonical-layout fast path gives for `line`, or nil when it declines.
    /// For tests, which check it against `parseInGeneral`.
    @_spi(Testing)
    public static func templatePayload(_ line: String) -> Payload? {
        var copy = line
        return copy.withUTF8 { buffer in
            guard let base = buffer.baseAddress else { return nil }
            return parseCanonicalTemplate(base, count: buffer.count)
        }
    }

    /// `parse(_:)` without the canonical-layout fast path. For tests.
    @_spi(Testing)
    public static func parseInGeneral(_ line: String) throws(LineError) -> [Payload] {
        var copy = line
        return try copy.withUTF8 { buffer in
            Result { () throws(LineError) -> [Payload] in
                var payloads: [Payload] = []
                guard let base = buffer.baseAddress else { return payloads }
                var count = buffer.count
                if count > 0, base[count - 1] == UInt8(ascii: "\r") { count -= 1 }
                try parseLineInGeneral(base, count: count, into: &payloads)
                return payloads
            }
        }.get()
    }

    /// Parses one line given as bytes.
    public static func parse(_ line: [UInt8]) throws(LineError) -> [Payload] {
        try line.withUnsafeBytes { buffer in
            Result { () throws(LineError) in try parse(buffer) }
        }.get()
    }
}

// MARK: - Fields

/// Every key of every form; the raw value is the key's bit in a `seen` mask.
enum Field: UInt8, CaseIterable {
    case type, stroke, x, y, color, width, pressure, t
    case replica, seq, lamport, time
    case id, point, points, red, green, blue, alpha, lineWidth

    @inline(__always) var bit: UInt32 { 1 << UInt32(rawValue) }

    var name: String {
        switch self {
        case .type: return "type"
        case .stroke: return "stroke"
        case .x: return "x"
        case .y: return "y"
        case .color: return "color"
        case .width: return "width"
        case .pressure: return "pressure"
        case .t: return "t"
        case .replica: return "replica"
        case .seq: return "seq"
        case .lamport: return "lamport"
        case .time: return "time"
        case .id: return "id"
        case .point: return "point"
        case .points: return "points"
        case .red: return "red"
        case .green: return "green"
        case .blue: return "blue"
        case .alpha: return "alpha"
        case .lineWidth: return "lineWidth"
        }
    }

    /// `"name"`, for messages.
    var quotedName: String { "\"" + name + "\"" }

    static func mask(_ fields: Field...) -> UInt32 { fields.reduce(0) { $0 | $1.bit } }

    /// The first field of a mask, for messages.
    static func first(in mask: UInt32) -> Field { Field(rawValue: UInt8(mask.trailingZeroBitCount))! }

    /// The key spelled by `count` bytes at `base`, or nil. The keys are compared as their
    /// first eight bytes packed little-endian into a word, plus the length.
    @inline(__always)
    static func match(_ base: UnsafePointer<UInt8>, count: Int) -> Field? {
        guard count >= 1, count <= 9 else { return nil }
        if count == 9 {
            return pack(base, count: 8) == 0x7464_6957_656E_696C && base[8] == UInt8(ascii: "h") ? .lineWidth : nil
        }
        return match(packed: pack(base, count: count), count: count)
    }

    /// The key of `count` (1...8) bytes packed little-endian into `packed`, or nil.
    @inline(__always)
    static func match(packed: UInt64, count: Int) -> Field? {
        switch count {
        case 1:
            switch packed {
            case 0x78: return .x
            case 0x79: return .y
            case 0x74: return .t
            default: return nil
            }
        case 2: return packed == 0x6469 ? .id : nil
        case 3:
            switch packed {
            case 0x71_6573: return .seq
            case 0x64_6572: return .red
            default: return nil
            }
        case 4:
            switch packed {
            case 0x6570_7974: return .type
            case 0x656D_6974: return .time
            case 0x6575_6C62: return .blue
            default: return nil
            }
        case 5:
            switch packed {
            case 0x72_6F6C_6F63: return .color
            case 0x68_7464_6977: return .width
            case 0x74_6E69_6F70: return .point
            case 0x6E_6565_7267: return .green
            case 0x61_6870_6C61: return .alpha
            default: return nil
            }
        case 6:
            switch packed {
            case 0x656B_6F72_7473: return .stroke
            case 0x7374_6E69_6F70: return .points
            default: return nil
            }
        case 7:
            switch packed {
            case 0x61_6369_6C70_6572: return .replica
            case 0x74_726F_706D_616C: return .lamport
            default: return nil
            }
        case 8: return packed == 0x6572_7573_7365_7270 ? .pressure : nil
        default: return nil
        }
    }
}

/// Up to the first eight bytes, little-endian.
@inline(__always)
func pack(_ base: UnsafePointer<UInt8>, count: Int) -> UInt64 {
    var packed: UInt64 = 0
    for index in 0..<min(count, 8) { packed |= UInt64(base[index]) << UInt64(8 * index) }
    return packed
}

/// The event kind a `"type"` value names.
@inline(__always)
func matchKind(_ base: UnsafePointer<UInt8>, count: Int) -> EventKind? {
    guard count >= 3, count <= 5 else { return nil }
    switch (count, pack(base, count: count)) {
    case (5, 0x74_6E69_6F70): return .point
    case (3, 0x64_6E65): return .end
    case (4, 0x6F64_6E75): return .undo
    case (4, 0x6F64_6572): return .redo
    case (5, 0x65_7361_7265): return .erase
    case (5, 0x72_6165_6C63): return .clear
    default: return nil
    }
}

private let envelopeMask = Field.mask(.replica, .seq, .lamport, .time)
private let canonicalPointMask = Field.mask(.type, .stroke, .x, .y, .color, .width, .pressure, .t) | envelopeMask
private let canonicalStrokeMask = Field.mask(.type, .stroke) | envelopeMask
private let canonicalClearMask = Field.mask(.type) | envelopeMask
private let drawTogetherMask = Field.mask(.id, .color, .point, .width)
private let collabSketchMask = Field.mask(.id, .points, .red, .green, .blue, .alpha, .lineWidth)

// MARK: - Parsing

/// What one line's object said, before the form is known.
private struct Fields {
    var seen: UInt32 = 0
    var kind: EventKind = .clear
    var stroke = StrokeID(UUIDBits(high: 0, low: 0))
    var x = 0.0
    var y = 0.0
    var color = LineParser.defaultColor
    var colorIsName = false
    var width = 0.0
    var pressure = 0.0
    var t = 0.0
    var pointX = 0.0
    var pointY = 0.0
    var red = 0.0
    var green = 0.0
    var blue = 0.0
    var alpha = 0.0

    @inline(__always) func has(_ field: Field) -> Bool { seen & field.bit != 0 }
}

@inline(__always)
private func parseLine(
    _ base: UnsafePointer<UInt8>, count rawCount: Int, into payloads: inout [Payload], maxLineLength: Int
) throws(LineError) {
    var count = rawCount
    if count > 0, base[count - 1] == UInt8(ascii: "\r") { count -= 1 }
    guard count <= maxLineLength else {
        throw LineError(reason: "line is too long (\(count) bytes; the limit is \(maxLineLength))")
    }
    // 62 bytes: the shortest line the template takes, an end.
    if count >= 62, let payload = parseCanonicalTemplate(base, count: count) {
        payloads.append(payload)
        return
    }
    try parseLineInGeneral(base, count: count, into: &payloads)
}

/// The general parser, for a line already stripped of its "\r" and within the length limit.
@inline(__always)
private func parseLineInGeneral(
    _ base: UnsafePointer<UInt8>, count: Int, into payloads: inout [Payload]
) throws(LineError) {
    if let bad = firstInvalidUTF8(base, count: count) {
        throw LineError(reason: "invalid UTF-8 at byte \(bad + 1)")
    }
    var scanner = JSONScanner(base, count: count)
    scanner.skipWhitespace()
    if scanner.atEnd { return }  // blank line
    guard scanner.peek == UInt8(ascii: "{") else {
        throw LineError(reason: "not a JSON object (the line starts with \(scanner.describeValue()))")
    }
    var fields = Fields()
    // CollabSketch points, x and y interleaved (kept out of `Fields` so that it stays trivial).
    var points: [Double] = []
    try scanner.readObject(into: &fields, points: &points)
    scanner.skipWhitespace()
    guard scanner.atEnd else {
        throw LineError(reason: "unexpected text after the JSON object at column \(scanner.column)")
    }
    try build(fields, points: points, into: &payloads)
}

extension JSONScanner {
    /// Reads the line's object, the cursor on its `{`.
    @inline(__always)
    fileprivate mutating func readObject(into fields: inout Fields, points: inout [Double]) throws(LineError) {
        index += 1
        skipWhitespace()
        if peek == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            guard peek == UInt8(ascii: "\"") else { throw error("expected a field name at column \(column)") }
            let field = try readKey()
            guard fields.seen & field.bit == 0 else { throw error("duplicate field \(field.quotedName)") }
            fields.seen |= field.bit
            skipWhitespace()
            guard peek == UInt8(ascii: ":") else { throw error("expected ':' after \(field.quotedName) at column \(column)") }
            index += 1
            skipWhitespace()

            switch field {
            case .type: fields.kind = try readKind()
            case .stroke, .id: fields.stroke = try readStrokeID(field)
            case .x: fields.x = try readNumber(field)
            case .y: fields.y = try readNumber(field)
            case .color: (fields.color, fields.colorIsName) = try readColor()
            case .width, .lineWidth: fields.width = try readNumber(field)
            case .pressure: fields.pressure = try readNumber(field)
            case .t: fields.t = try readNumber(field)
            case .replica, .seq, .lamport, .time: try skipValue(depth: 2, maxDepth: LineParser.maxDepth)
            case .point: (fields.pointX, fields.pointY) = try readPair()
            case .points: points = try readPoints()
            case .red: fields.red = try readNumber(field)
            case .green: fields.green = try readNumber(field)
            case .blue: fields.blue = try readNumber(field)
            case .alpha: fields.alpha = try readNumber(field)
            }

            skipWhitespace()
            if peek == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard peek == UInt8(ascii: "}") else {
                throw error("expected ',' or '}' after \(field.quotedName) at column \(column)")
            }
            index += 1
            return
        }
    }

    /// Reads a key (cursor on its opening quote) and names it; unknown keys are refused.
    @inline(__always)
    private mutating func readKey() throws(LineError) -> Field {
        let start = index
        // Fast path: a plain key of at most seven bytes, its closing quote within the word.
        if start + 9 <= end {
            let word = load64(base + start + 1)
            let stops = stringStopMask(word)
            let length = stops.trailingZeroBitCount >> 3
            if stops != 0, base[start + 1 + length] == UInt8(ascii: "\"") {
                let packed = length == 0 ? 0 : word & (UInt64.max >> UInt64(64 - 8 * length))
                if let field = Field.match(packed: packed, count: length) {
                    index = start + length + 2
                    return field
                }
            }
        }
        if let field = try withString({ base, count in Field.match(base, count: count) }) { return field }
        index = start
        throw error("unknown field \(describeStringValue())")
    }

    @inline(__always)
    private mutating func readKind() throws(LineError) -> EventKind {
        guard peek == UInt8(ascii: "\"") else { throw error("\"type\" must be a string, got \(describeValue())") }
        let start = index
        if let kind = try withString({ base, count in matchKind(base, count: count) }) { return kind }
        index = start
        throw error("unknown type \(describeStringValue())")
    }

    @inline(__always)
    private mutating func readStrokeID(_ field: Field) throws(LineError) -> StrokeID {
        guard peek == UInt8(ascii: "\"") else {
            throw error("\(field.quotedName) must be a UUID string, got \(describeValue())")
        }
        let start = index
        // Fast path: the dashed form, which holds no quote, backslash or control character.
        if start + 38 <= end, base[start + 37] == UInt8(ascii: "\""),
           let id = parseStrokeID(base + start + 1, count: 36) {
            index = start + 38
            return id
        }
        if let id = try withString({ base, count in parseStrokeID(base, count: count) }) { return id }
        index = start
        throw error("\(field.quotedName) is not a UUID: \(describeStringValue())")
    }

    /// A colour and whether it was given by name.
    @inline(__always)
    private mutating func readColor() throws(LineError) -> (RGBA, Bool) {
        guard peek == UInt8(ascii: "\"") else { throw error("\"color\" must be a string, got \(describeValue())") }
        let start = index
        let found = try withString { base, count -> (RGBA, Bool)? in
            if let color = parseHexColor(base, count: count) { return (color, false) }
            if let color = NamedColors.lookup(base, count: count) { return (color, true) }
            return nil
        }
        if let found { return found }
        index = start
        throw error("\"color\" is not a colour: \(describeStringValue()) (expected #RRGGBB, #RRGGBBAA or a colour name)")
    }

    /// The quoted content of the string at the cursor, for messages.
    private func describeStringValue() -> String {
        var copy = self
        guard let bytes = try? copy.decodeString() else { return "(unterminated string)" }
        return quoted(bytes[...])
    }

    @inline(__always)
    mutating func readNumber(_ field: Field) throws(LineError) -> Double {
        let result = scanNumber(base, from: index, end: end)
        guard result.status == .ok else { throw numberError(field, result) }
        index = result.next
        return result.value
    }

    @inline(never)
    private func numberError(_ field: Field, _ result: NumberScan) -> LineError {
        let text = String(decoding: UnsafeBufferPointer(start: base + index, count: min(result.next - index, 40)), as: UTF8.self)
        switch result.status {
        case .nonFinite:
            return error("\(field.quotedName) must be a finite number, got \(text) (it overflows)")
        default:
            let first = peek
            if first == UInt8(ascii: "-") || (first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")) {
                return error("\(field.quotedName) is not a valid JSON number at column \(result.next + 1)")
            }
            return error("\(field.quotedName) must be a number, got \(describeValue())")
        }
    }

    /// DrawTogether's `[x, y]`.
    @inline(__always)
    private mutating func readPair() throws(LineError) -> (Double, Double) {
        let shape = "\"point\" must be an array of two numbers [x, y]"
        guard peek == UInt8(ascii: "[") else { throw error("\(shape), got \(describeValue())") }
        index += 1
        skipWhitespace()
        guard peek != UInt8(ascii: "]") else { throw error("\(shape), got an empty array") }
        let x = try readNumber(.point)
        skipWhitespace()
        guard peek == UInt8(ascii: ",") else { throw error("\(shape) (column \(column))") }
        index += 1
        skipWhitespace()
        let y = try readNumber(.point)
        skipWhitespace()
        guard peek == UInt8(ascii: "]") else { throw error("\(shape) (column \(column))") }
        index += 1
        return (x, y)
    }

    /// CollabSketch's `[{"x":…,"y":…},…]`, x and y interleaved.
    private mutating func readPoints() throws(LineError) -> [Double] {
        let shape = "\"points\" must be an array of {\"x\":…,\"y\":…} objects"
        guard peek == UInt8(ascii: "[") else { throw error("\(shape), got \(describeValue())") }
        index += 1
        var points: [Double] = []
        skipWhitespace()
        if peek == UInt8(ascii: "]") {
            index += 1
            return points
        }
        while true {
            skipWhitespace()
            guard peek == UInt8(ascii: "{") else { throw error("\(shape), got \(describeValue()) at column \(column)") }
            let number = points.count / 2 + 1
            index += 1
            var seen: UInt32 = 0
            var x = 0.0
            var y = 0.0
            skipWhitespace()
            if peek != UInt8(ascii: "}") {
                while true {
                    skipWhitespace()
                    guard peek == UInt8(ascii: "\"") else { throw error("expected a field name at column \(column)") }
                    let keyStart = index
                    let key = try withString { base, count in Field.match(base, count: count) }
                    guard key == .x || key == .y, let key else {
                        index = keyStart
                        throw error("unknown field \(describeStringValue()) in point \(number) of \"points\"")
                    }
                    guard seen & key.bit == 0 else { throw error("duplicate field \(key.quotedName) in point \(number) of \"points\"") }
                    seen |= key.bit
                    skipWhitespace()
                    guard peek == UInt8(ascii: ":") else { throw error("expected ':' at column \(column)") }
                    index += 1
                    skipWhitespace()
                    if key == .x { x = try readNumber(.x) } else { y = try readNumber(.y) }
                    skipWhitespace()
                    if peek == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard peek == UInt8(ascii: "}") else { throw error("expected ',' or '}' at column \(column)") }
                    break
                }
            }
            index += 1
            guard seen & Field.x.bit != 0 else { throw error("missing \"x\" in point \(number) of \"points\"") }
            guard seen & Field.y.bit != 0 else { throw error("missing \"y\" in point \(number) of \"points\"") }
            points.append(x)
            points.append(y)
            skipWhitespace()
            if peek == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard peek == UInt8(ascii: "]") else { throw error("expected ',' or ']' in \"points\" at column \(column)") }
            index += 1
            return points
        }
    }
}

// MARK: - Building payloads

@inline(__always)
private func build(_ fields: Fields, points: [Double], into payloads: inout [Payload]) throws(LineError) {
    if fields.has(.type) {
        try buildCanonical(fields, into: &payloads)
    } else if fields.has(.point) {
        try buildDrawTogether(fields, into: &payloads)
    } else if fields.has(.points) {
        try buildCollabSketch(fields, points: points, into: &payloads)
    } else if fields.seen == 0 {
        throw LineError(reason: "empty object: expected a \"type\", \"point\" or \"points\" field")
    } else {
        throw LineError(reason: "cannot tell the input form: no \"type\", \"point\" or \"points\" field")
    }
}

@inline(__always)
private func require(_ fields: Fields, _ field: Field) throws(LineError) {
    guard fields.has(field) else { throw LineError(reason: "missing \(field.quotedName)") }
}

@inline(__always)
private func checkWidth(_ width: Double, _ field: Field) throws(LineError) {
    guard width >= 0 else { throw LineError(reason: "\(field.quotedName) must not be negative, got \(width)") }
}

@inline(__always)
private func validated(_ payload: Payload) throws(LineError) -> Payload {
    do {
        try payload.validate()
    } catch {
        throw LineError(reason: error.description)
    }
    return payload
}

@inline(__always)
private func buildCanonical(_ fields: Fields, into payloads: inout [Payload]) throws(LineError) {
    let allowed: UInt32
    switch fields.kind {
    case .point: allowed = canonicalPointMask
    case .clear: allowed = canonicalClearMask
    default: allowed = canonicalStrokeMask
    }
    let extra = fields.seen & ~allowed
    guard extra == 0 else {
        throw LineError(reason: "field \(Field.first(in: extra).quotedName) is not allowed in a \"type\":\"\(fields.kind)\" line")
    }
    let payload: Payload
    switch fields.kind {
    case .point:
        try require(fields, .stroke)
        try require(fields, .x)
        try require(fields, .y)
        if fields.colorIsName {
            throw LineError(reason: "\"color\" must be #RRGGBB or #RRGGBBAA in a canonical line, not a colour name")
        }
        let width = fields.has(.width) ? fields.width : LineParser.defaultWidth
        try checkWidth(width, .width)
        payload = .point(PointSample(
            stroke: fields.stroke, x: fields.x, y: fields.y,
            pressure: fields.has(.pressure) ? fields.pressure : nil,
            t: fields.has(.t) ? fields.t : nil,
            style: Style(color: fields.color, width: width)))
    case .end:
        try require(fields, .stroke)
        payload = .end(fields.stroke)
    case .undo:
        try require(fields, .stroke)
        payload = .undo(fields.stroke)
    case .redo:
        try require(fields, .stroke)
        payload = .redo(fields.stroke)
    case .erase:
        try require(fields, .stroke)
        payload = .erase(fields.stroke)
    case .clear:
        payload = .clear
    }
    payloads.append(try validated(payload))
}

private func buildDrawTogether(_ fields: Fields, into payloads: inout [Payload]) throws(LineError) {
    let extra = fields.seen & ~drawTogetherMask
    guard extra == 0 else {
        throw LineError(reason: "field \(Field.first(in: extra).quotedName) is not allowed in a DrawTogether line (one with \"point\")")
    }
    try require(fields, .id)
    let width = fields.has(.width) ? fields.width : LineParser.drawTogetherDefaultWidth
    try checkWidth(width, .width)
    let payload = Payload.point(PointSample(
        stroke: fields.stroke, x: fields.pointX, y: fields.pointY,
        style: Style(color: fields.color, width: width)))
    payloads.append(try validated(payload))
}

private func buildCollabSketch(_ fields: Fields, points: [Double], into payloads: inout [Payload]) throws(LineError) {
    let extra = fields.seen & ~collabSketchMask
    guard extra == 0 else {
        throw LineError(reason: "field \(Field.first(in: extra).quotedName) is not allowed in a CollabSketch line (one with \"points\")")
    }
    for field in [Field.id, .red, .green, .blue, .alpha, .lineWidth] { try require(fields, field) }
    func component(_ value: Double, _ field: Field) throws(LineError) -> UInt8 {
        guard value >= 0, value <= 1 else {
            throw LineError(reason: "\(field.quotedName) must be between 0 and 1, got \(value)")
        }
        return UInt8((value * 255).rounded())
    }
    let color = RGBA(
        red: try component(fields.red, .red), green: try component(fields.green, .green),
        blue: try component(fields.blue, .blue), alpha: try component(fields.alpha, .alpha))
    try checkWidth(fields.width, .lineWidth)
    let style = Style(color: color, width: fields.width)
    var built: [Payload] = []
    built.reserveCapacity(points.count / 2 + 1)
    var index = 0
    while index < points.count {
        built.append(try validated(.point(PointSample(
            stroke: fields.stroke, x: points[index], y: points[index + 1], style: style))))
        index += 2
    }
    built.append(.end(fields.stroke))
    payloads.append(contentsOf: built)
}
