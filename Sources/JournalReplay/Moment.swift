import JournalFormat
import JournalPlatform

/// A moment of a journal's history: which events the drawing "at" it holds
/// (docs/HISTORY.md). Every moment stands for a prefix of the total order (invariant 4), the
/// first k events, so it holds on every machine that holds the same events, and the drawing
/// at it never holds an undo without the stroke it undid.
///
/// - `.events(k)`: the first k events (`journal log` prints them in that order, numbered
///   from 1).
/// - `.wallTime(t)`: the first k events, k being how many events have a wall time at or before
///   `t`. With clocks in step this is exactly the events made by `t`; a machine whose clock is
///   off moves the cut by its own events only, never by everything it drew since.
/// - `.beforeEnd(d)`: `.wallTime` of the newest event's wall time minus `d`: `-15m` is fifteen
///   minutes before the session's last event, however long ago that was.
/// - `.end`: every event.
public enum Moment: Equatable, Sendable, CustomStringConvertible {
    case events(Int)
    case wallTime(Int64)
    case beforeEnd(milliseconds: Int64)
    case end

    /// Reads what a person types: `now` (or `end`); a count of events (`5230`); `-15m`, `-90s`,
    /// `-2h`, `-1d` (before the last event); `10:05`, `10:05:30` (today, this machine's time
    /// zone); `2026-11-26`, `2026-11-26T10:05`, `2026-11-26T10:05:30` (this time zone), with
    /// `Z` or `+01:00` after the time for another.
    public init(parsing text: String) throws(MomentError) {
        let trimmed = text.trimmingWhitespace
        if trimmed == "now" || trimmed == "end" {
            self = .end
        } else if !trimmed.isEmpty, trimmed.allSatisfy(\.isASCIIDigit) {
            guard let count = Int(trimmed) else { throw MomentError(text, "the number of events is too large") }
            self = .events(count)
        } else if trimmed.hasPrefix("-") {
            self = .beforeEnd(milliseconds: try Self.duration(String(trimmed.dropFirst()), text))
        } else {
            self = .wallTime(try Self.calendarTime(trimmed, text))
        }
    }

    /// Whether the moment is a time (not a count of events).
    public var isWallClock: Bool {
        switch self {
        case .wallTime, .beforeEnd: return true
        case .events, .end: return false
        }
    }

    public var description: String {
        switch self {
        case .events(let count): return "the first \(count) events"
        case .wallTime(let milliseconds): return WallClock.localDescription(milliseconds)
        case .beforeEnd(let milliseconds): return "\(milliseconds / 1000) s before the last event"
        case .end: return "now"
        }
    }

    private static func duration(_ text: String, _ whole: String) throws(MomentError) -> Int64 {
        let units: [Character: Int64] = ["s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000]
        guard let unit = text.last.flatMap({ units[$0] }), let amount = Int64(text.dropLast()), amount >= 0,
              amount <= Int64.max / unit else {
            throw MomentError(whole, "a time before the last event is a whole number and a unit: -90s, -15m, -2h, -1d")
        }
        return amount * unit
    }

    private static func calendarTime(_ text: String, _ whole: String) throws(MomentError) -> Int64 {
        let shapes = "a count of events (5230), -15m, 10:05, 2026-11-26T10:05 or now"
        // The zone: Z or ±hh:mm after a time; none: this machine's.
        var body = Substring(text)
        var offsetMinutes: Int?
        if body.hasSuffix("Z") {
            offsetMinutes = 0
            body = body.dropLast()
        } else if let sign = body.lastIndex(where: { $0 == "+" || $0 == "-" }), body[..<sign].contains("T") || body[..<sign].contains(":") {
            let zone = body[body.index(after: sign)...].split(separator: ":")
            guard zone.count == 2, let hours = Int(zone[0]), let minutes = Int(zone[1]), hours <= 14, minutes < 60 else {
                throw MomentError(whole, "a time zone is Z or ±hh:mm")
            }
            offsetMinutes = (hours * 60 + minutes) * (body[sign] == "-" ? -1 : 1)
            body = body[..<sign]
        }
        let date: (year: Int, month: Int, day: Int)
        let clock: Substring
        if let t = body.firstIndex(of: "T") ?? (body.contains("-") ? nil : body.startIndex) {
            let datePart = body[..<t]
            clock = body[t...].drop { $0 == "T" }
            if datePart.isEmpty {
                guard offsetMinutes == nil else { throw MomentError(whole, "a time with a zone needs its date: 2026-11-26T10:05Z") }
                date = WallClock.today()
            } else {
                date = try Self.date(datePart, whole, shapes)
            }
        } else {
            date = try Self.date(body, whole, shapes)
            clock = "00:00"
        }
        let fields = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(fields.count), fields.allSatisfy({ !$0.isEmpty && $0.count <= 2 && $0.allSatisfy(\.isASCIIDigit) }),
              let hour = Int(fields[0]), let minute = Int(fields[1]), hour < 24, minute < 60 else {
            throw MomentError(whole, "not a moment: give \(shapes)")
        }
        let second = fields.count == 3 ? Int(fields[2]) ?? 60 : 0
        guard second < 60 else { throw MomentError(whole, "seconds run from 00 to 59") }
        if let offsetMinutes {
            let days = Int64(daysFromCivil(date.year, date.month, date.day))
            return ((days * 24 + Int64(hour)) * 60 + Int64(minute) - Int64(offsetMinutes)) * 60_000 + Int64(second) * 1000
        }
        guard let milliseconds = WallClock.localMilliseconds(
            year: date.year, month: date.month, day: date.day, hour: hour, minute: minute, second: second) else {
            throw MomentError(whole, "no such time here")
        }
        return milliseconds
    }

    private static func date(_ text: Substring, _ whole: String, _ shapes: String) throws(MomentError) -> (year: Int, month: Int, day: Int) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) }),
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1...12).contains(month), (1...31).contains(day) else {
            throw MomentError(whole, "not a moment: give \(shapes)")
        }
        return (year, month, day)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// A moment that could not be read: what was typed and why.
public struct MomentError: Error, Equatable, Sendable, CustomStringConvertible {
    public var text: String
    public var reason: String

    init(_ text: String, _ reason: String) {
        self.text = text
        self.reason = reason
    }

    public var description: String { "\(text.debugDescription): \(reason)" }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
