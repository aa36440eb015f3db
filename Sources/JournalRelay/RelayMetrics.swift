import JournalPlatform
import JournalWire

/// What an operator watches on a relay (`GET /metrics`, Prometheus' text format, docs/DEPLOY.md
/// "Metrics"): counters the relay raises as it works, and gauges read when scraped. Counters
/// only grow while the process lives; names and labels are stable.
public final class RelayMetrics: Sendable {
    private struct Counters {
        var connectionsOpened: UInt64 = 0
        var refusals: [RefusalCode: UInt64] = [:]
        var eventsAcknowledged: UInt64 = 0
        var roundsSucceeded: UInt64 = 0
        var roundsFailed: UInt64 = 0
        var roundSeconds: Double = 0
        /// Boards whose last shared round failed, since when (monotonic seconds).
        var failingSince: [String: Double] = [:]
        /// Openings refused because another node held the board's lease.
        var leaseRefusals: UInt64 = 0
        /// Boards closed here because their lease lapsed (a renewal failed, a freeze).
        var leasesLost: UInt64 = 0
        var socketsTurnedAway: [SocketTurnedAway: UInt64] = [:]
    }

    /// Why a socket was closed before its request was known (`RelayLimits.requestHeadSeconds`,
    /// `maxUnfinishedRequestsPerAddress`).
    public enum SocketTurnedAway: String, CaseIterable, Sendable {
        case requestHeadTimeout = "request-head-timeout"
        case tooManyUnfinishedFromAddress = "unfinished-per-address"
    }

    private let counters = Locked(Counters())

    public init() {}

    func connectionOpened() {
        counters.withLock { $0.connectionsOpened += 1 }
    }

    /// A connection refused, or ended by the relay with a refusal.
    public func refused(_ code: RefusalCode) {
        counters.withLock { $0.refusals[code, default: 0] += 1 }
    }

    func acknowledged(events count: Int) {
        guard count > 0 else { return }
        counters.withLock { $0.eventsAcknowledged += UInt64(count) }
    }

    /// A shared-ack round of `board` ended (`--ack shared`), after `seconds`.
    func round(of board: String, succeeded: Bool, seconds: Double) {
        counters.withLock { counters in
            counters.roundSeconds += seconds
            if succeeded {
                counters.roundsSucceeded += 1
                counters.failingSince[board] = nil
            } else {
                counters.roundsFailed += 1
                if counters.failingSince[board] == nil { counters.failingSince[board] = ProcessInfoLite.monotonicSeconds() - seconds }
            }
        }
    }

    /// How long the board failing its shared rounds longest has failed them (0: none fails).
    var longestFailingSeconds: Double {
        let now = ProcessInfoLite.monotonicSeconds()
        return counters.withLock { $0.failingSince.values.min().map { now - $0 } ?? 0 }
    }

    /// A board's opening was refused: another node holds its lease.
    func leaseRefused(_ board: String) {
        counters.withLock { $0.leaseRefusals += 1 }
    }

    /// A board's lease lapsed here: it was closed.
    func leaseLost(_ board: String) {
        counters.withLock { $0.leasesLost += 1 }
    }

    /// A socket closed before its request head arrived.
    public func turnedAway(_ reason: SocketTurnedAway) {
        counters.withLock { $0.socketsTurnedAway[reason, default: 0] += 1 }
    }

    /// A board closed: its rounds no longer fail.
    func boardClosed(_ board: String) {
        counters.withLock { _ = $0.failingSince.removeValue(forKey: board) }
    }

    /// What the relay's state says now, for the gauges.
    struct Gauges {
        var boardsOpen: Int
        var connections: Int
        var catchUpsRunning: Int
        var catchUpsWaiting: Int
    }

    /// The exposition (text format 0.0.4): `# HELP`, `# TYPE`, then the samples of each metric.
    func text(_ gauges: Gauges) -> String {
        let counters = counters.withLock { $0 }
        let now = ProcessInfoLite.monotonicSeconds()
        var out = ""
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            out += "# HELP strokejournal_\(name) \(help)\n# TYPE strokejournal_\(name) \(type)\n"
            for sample in samples { out += "strokejournal_\(name)\(sample.labels) \(sample.value)\n" }
        }
        func number(_ value: Double) -> String {
            let rounded = (value * 1000).rounded() / 1000
            return rounded == rounded.rounded() ? String(Int64(rounded)) : String(rounded)
        }
        metric("boards_open", "gauge", "Boards open on this relay.", [("", String(gauges.boardsOpen))])
        metric("connections", "gauge", "Client connections open.", [("", String(gauges.connections))])
        metric("catch_ups", "gauge", "Catch-ups running, and waiting for a place (--max-catch-ups).",
               [(#"{state="running"}"#, String(gauges.catchUpsRunning)), (#"{state="waiting"}"#, String(gauges.catchUpsWaiting))])
        metric("connections_opened_total", "counter", "Client connections accepted.", [("", String(counters.connectionsOpened))])
        metric("refusals_total", "counter", "Connections refused or ended by the relay, and frames refused, by error code (docs/PROTOCOL.md).",
               RefusalCode.allCases.compactMap { code in
                   counters.refusals[code].map { (#"{code=""# + code.rawValue + #""}"#, String($0)) }
               })
        metric("sockets_turned_away_total", "counter",
               "Sockets closed before their request was known: its head took too long, or its address had too many unfinished (--request-head-timeout, --max-unfinished-per-address).",
               SocketTurnedAway.allCases.map { reason in
                   (#"{reason=""# + reason.rawValue + #""}"#, String(counters.socketsTurnedAway[reason] ?? 0))
               })
        metric("events_acknowledged_total", "counter", "Events acknowledged to their clients (durable, and in the store under --ack shared).",
               [("", String(counters.eventsAcknowledged))])
        metric("share_rounds_total", "counter", "Shared-ack rounds (seal, publish to the store) by outcome (--ack shared).",
               [(#"{outcome="ok"}"#, String(counters.roundsSucceeded)), (#"{outcome="failed"}"#, String(counters.roundsFailed))])
        metric("share_round_seconds_total", "counter", "Time spent in shared-ack rounds.", [("", number(counters.roundSeconds))])
        metric("lease_refusals_total", "counter", "Boards not opened here because another node held their lease (--lease).",
               [("", String(counters.leaseRefusals))])
        metric("leases_lost_total", "counter", "Boards closed here because their lease lapsed: a renewal failed or the node was frozen (--lease).",
               [("", String(counters.leasesLost))])
        metric("share_failing_boards", "gauge", "Open boards whose last shared-ack round failed: their acks wait.",
               [("", String(counters.failingSince.count))])
        metric("share_failing_seconds", "gauge", "How long the board failing longest has failed its rounds (0: none).",
               [("", number(counters.failingSince.values.min().map { now - $0 } ?? 0))])
        return out
    }
}
