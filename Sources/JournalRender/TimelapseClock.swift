/// When each event of a time-lapse's range happens, as a fraction of the animation
/// (docs/HISTORY.md, `journal timelapse`).
///
/// - `evenly`: each event takes the same share, so pauses take no time and a busy minute is
///   not rushed (the default).
/// - `drawn`: as the session was drawn, by the events' wall times, with every pause longer than
///   a limit shortened to it: `--speed` plays that many times faster than the drawing went.
public struct TimelapseClock: Sendable {
    /// Per event of the range, its fraction of the animation, rising; nil for `evenly`.
    private let fractions: [Double]?
    public let events: Int

    public static func evenly(events: Int) -> TimelapseClock { TimelapseClock(fractions: nil, events: events) }

    /// The clock of `wallTimes` (milliseconds, one per event of the range, in total order),
    /// and how many milliseconds of drawing it spans once pauses over `maxIdle` are cut to it.
    /// A wall time earlier than one before it (a machine whose clock is behind) counts as no
    /// time passing. Evenly, and 0 milliseconds, when no time passes at all.
    public static func drawn(wallTimes: [Int64], maxIdle: Int64) -> (clock: TimelapseClock, milliseconds: Int64) {
        guard var latest = wallTimes.first else { return (.evenly(events: 0), 0) }
        var elapsed: [Int64] = []
        elapsed.reserveCapacity(wallTimes.count)
        var total: Int64 = 0
        for time in wallTimes {
            if time > latest {
                let (step, overflow) = time.subtractingReportingOverflow(latest)
                total += overflow ? maxIdle : min(step, maxIdle)
                latest = time
            }
            elapsed.append(total)
        }
        guard total > 0 else { return (.evenly(events: wallTimes.count), 0) }
        return (TimelapseClock(fractions: elapsed.map { Double($0) / Double(total) }, events: wallTimes.count), total)
    }

    /// The fraction of the animation at which the range's event `index` (0-based) happens.
    func fraction(ofEvent index: Int) -> Double {
        guard let fractions else { return Double(index + 1) / Double(max(events, 1)) }
        return fractions[min(max(index, 0), fractions.count - 1)]
    }

    /// How many of the range's events frame `index` of `frames` shows.
    func events(throughFrame index: Int, of frames: Int) -> Int {
        guard fractions != nil else { return Int((Double(index + 1) * Double(events) / Double(frames)).rounded(.down)) }
        return events(through: Double(index + 1) / Double(frames))
    }

    /// How many of the range's events have happened by `fraction` of the animation.
    func events(through fraction: Double) -> Int {
        guard let fractions else { return min(events, Int((fraction * Double(events)).rounded(.down))) }
        var low = 0, high = fractions.count
        while low < high {
            let middle = (low + high) / 2
            if fractions[middle] <= fraction { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
