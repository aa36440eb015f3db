/// An RGBA colour packed as `0xRRGGBBAA`.
public struct RGBA: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        rawValue = UInt32(red) << 24 | UInt32(green) << 16 | UInt32(blue) << 8 | UInt32(alpha)
    }
    public var red: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 24) }
    public var green: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 16) }
    public var blue: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 8) }
    public var alpha: UInt8 { UInt8(truncatingIfNeeded: rawValue) }

    /// `#RRGGBBAA`, uppercase: the canonical text form.
    public var hexString: String {
        "#" + Hex.string(UInt64(rawValue), digits: 8, uppercase: true)
    }
    public var description: String { hexString }

    /// Parses `#RRGGBB` (opaque) or `#RRGGBBAA`.
    public init?(hexString text: some StringProtocol) {
        let utf8 = Array(text.utf8)
        guard utf8.first == UInt8(ascii: "#"), utf8.count == 7 || utf8.count == 9 else { return nil }
        var value: UInt32 = 0
        for unit in utf8.dropFirst() {
            let nibble = Hex.digitValue(unit)
            guard nibble != Hex.invalidDigit else { return nil }
            value = value << 4 | UInt32(nibble)
        }
        if utf8.count == 7 { value = value << 8 | 0xFF }
        rawValue = value
    }
}

/// How a stroke is drawn. Travels with every point (an upsert carries it) but is stored once
/// per block in a style table.
public struct Style: Sendable, CustomStringConvertible {
    public var color: RGBA
    /// Line width in canvas units; finite and not negative.
    public var width: Double

    public init(color: RGBA, width: Double) {
        self.color = color
        self.width = width
    }
    public var description: String { "\(color) \(width)" }
}

extension Style: Hashable {
    // Bitwise: two styles are the same only if every bit is (invariant 7).
    public static func == (lhs: Style, rhs: Style) -> Bool {
        lhs.color == rhs.color && lhs.width.bitPattern == rhs.width.bitPattern
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(color)
        hasher.combine(width.bitPattern)
    }
}

/// One pen sample: the point-level upsert of DrawTogether's `UpsertStrokeMessage`.
public struct PointSample: Sendable {
    public var stroke: StrokeID
    public var x: Double
    public var y: Double
    public var pressure: Double?
    /// Seconds since the stroke began, as the drawing app measured it.
    public var t: Double?
    public var style: Style

    public init(stroke: StrokeID, x: Double, y: Double, pressure: Double? = nil, t: Double? = nil, style: Style) {
        self.stroke = stroke
        self.x = x
        self.y = y
        self.pressure = pressure
        self.t = t
        self.style = style
    }
}

extension PointSample: Equatable {
    public static func == (lhs: PointSample, rhs: PointSample) -> Bool {
        lhs.stroke == rhs.stroke && lhs.x.bitPattern == rhs.x.bitPattern
            && lhs.y.bitPattern == rhs.y.bitPattern
            && lhs.pressure?.bitPattern == rhs.pressure?.bitPattern
            && lhs.t?.bitPattern == rhs.t?.bitPattern && lhs.style == rhs.style
    }
}

/// What happened. Each case is a max-register or set update in the fold (see DESIGN.md).
public enum Payload: Equatable, Sendable {
    case point(PointSample)
    case end(StrokeID)
    case undo(StrokeID)
    case redo(StrokeID)
    case erase(StrokeID)
    case clear

    public var kind: EventKind {
        switch self {
        case .point: return .point
        case .end: return .end
        case .undo: return .undo
        case .redo: return .redo
        case .erase: return .erase
        case .clear: return .clear
        }
    }

    public var stroke: StrokeID? {
        switch self {
        case .point(let sample): return sample.stroke
        case .end(let id), .undo(let id), .redo(let id), .erase(let id): return id
        case .clear: return nil
        }
    }

    /// Refuses what the format cannot store losslessly or what no drawing can mean.
    public func validate() throws(EventValidationError) {
        guard case .point(let sample) = self else { return }
        guard sample.x.isFinite else { throw .nonFinite(field: "x", value: sample.x) }
        guard sample.y.isFinite else { throw .nonFinite(field: "y", value: sample.y) }
        if let pressure = sample.pressure, !pressure.isFinite {
            throw .nonFinite(field: "pressure", value: pressure)
        }
        if let t = sample.t, !t.isFinite { throw .nonFinite(field: "t", value: t) }
        guard sample.style.width.isFinite else { throw .nonFinite(field: "width", value: sample.style.width) }
        guard sample.style.width >= 0 else { throw .negativeWidth(sample.style.width) }
    }
}

/// The event kinds and their one-byte tags in a block's kind column (docs/FORMAT.md).
public enum EventKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case point = 0, end = 1, undo = 2, redo = 3, erase = 4, clear = 5
    public var description: String {
        switch self {
        case .point: return "point"
        case .end: return "end"
        case .undo: return "undo"
        case .redo: return "redo"
        case .erase: return "erase"
        case .clear: return "clear"
        }
    }
}

public enum EventValidationError: Error, Equatable, Sendable, CustomStringConvertible {
    case nonFinite(field: String, value: Double)
    case negativeWidth(Double)

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.description == rhs.description }

    public var description: String {
        switch self {
        case .nonFinite(let field, let value): return "\(field) must be a finite number, got \(value)"
        case .negativeWidth(let width): return "width must not be negative, got \(width)"
        }
    }
}

/// A recorded event: the payload plus its envelope.
public struct Event: Equatable, Sendable {
    public var id: EventID
    /// Lamport clock: greater than every event the replica had seen when recording this one.
    public var lamport: UInt64
    /// Wall-clock milliseconds since 1970 at the recording replica: a tie-breaker only.
    public var wallTime: Int64
    public var payload: Payload

    public init(id: EventID, lamport: UInt64, wallTime: Int64, payload: Payload) {
        self.id = id
        self.lamport = lamport
        self.wallTime = wallTime
        self.payload = payload
    }

    public var orderKey: OrderKey {
        OrderKey(lamport: lamport, wallTime: wallTime, replica: id.replica, seq: id.seq)
    }

    /// The step writers record wall times in: a clock reading is rounded down to a multiple
    /// of it (`wallTime(at:)`). A live session's points reach their writer with a few
    /// milliseconds of network and scheduling jitter each; in 1 ms steps that jitter was most
    /// of the wall-time column (4 drawers at 120 Hz through a relay: 0.205 B/pt), in 8 ms steps
    /// the column takes 0.051 (docs/PERFORMANCE.md, "Live vs batch, four drawers"). Finer
    /// timing is the pen's own, and a point keeps it in `t`. Readers accept any wall time.
    public static let wallTimeStep: Int64 = 8

    /// The wall time a writer records for a clock reading of `milliseconds`.
    public static func wallTime(at milliseconds: Int64) -> Int64 {
        let remainder = milliseconds % wallTimeStep
        return milliseconds - (remainder < 0 ? remainder + wallTimeStep : remainder)
    }
}

/// The total order of events (invariant 4): lamport, then wall clock, then replica, then seq.
public struct OrderKey: Hashable, Comparable, Sendable {
    public var lamport: UInt64
    public var wallTime: Int64
    public var replica: ReplicaID
    public var seq: UInt64

    public init(lamport: UInt64, wallTime: Int64, replica: ReplicaID, seq: UInt64) {
        self.lamport = lamport
        self.wallTime = wallTime
        self.replica = replica
        self.seq = seq
    }

    public static func < (lhs: OrderKey, rhs: OrderKey) -> Bool {
        if lhs.lamport != rhs.lamport { return lhs.lamport < rhs.lamport }
        if lhs.wallTime != rhs.wallTime { return lhs.wallTime < rhs.wallTime }
        if lhs.replica != rhs.replica { return lhs.replica < rhs.replica }
        return lhs.seq < rhs.seq
    }
}
