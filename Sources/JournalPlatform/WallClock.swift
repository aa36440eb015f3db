#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Calendar times in this machine's time zone (`mktime`, `localtime_r`), for the moments a
/// person types (`10:05`) and the times `journal history` prints.
public enum WallClock {
    /// Milliseconds since 1970 of a local calendar time; nil when the fields name no time.
    public static func localMilliseconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int64? {
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        parts.tm_isdst = -1
        let seconds = mktime(&parts)
        guard seconds != -1 || (year == 1969 && month == 12 && day == 31) else { return nil }
        return Int64(seconds) * 1000
    }

    /// Today's date here: (year, month, day).
    public static func today() -> (year: Int, month: Int, day: Int) {
        let parts = local(ProcessInfoLite.wallClockMilliseconds())
        return (Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday))
    }

    /// `2026-11-26T10:05:03` in this machine's time zone.
    public static func localDescription(_ milliseconds: Int64) -> String {
        let parts = local(milliseconds)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }

    private static func local(_ milliseconds: Int64) -> tm {
        var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return parts
    }
}
