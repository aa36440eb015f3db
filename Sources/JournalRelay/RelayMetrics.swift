import CoreMetrics
import JournalPlatform
import JournalWire
import Prometheus

/// What an operator watches on a relay (`GET /metrics`, Prometheus' text format, docs/DEPLOY.md
/// "Metrics"): swift-metrics counters and timers the relay raises as it works, and gauges set
/// when scraped, exposed by swift-prometheus. Each relay has a registry of its own (a process
/// may run several, as the tests do), so the metrics are made with its factory rather than
/// through the process-wide `MetricsSystem`. Counters only grow while the process lives; names
/// and labels are stable.
public final class RelayMetrics: Sendable {
    /// Why a socket was closed before its request was known (`RelayLimits.requestHeadSeconds`,
    /// `maxUnfinishedRequestsPerAddress`).
    public enum SocketTurnedAway: String, CaseIterable, Sendable {
        case requestHeadTimeout = "request-head-timeout"
        case tooManyUnfinishedFromAddress = "unfinished-per-address"
    }

    private let registry = PrometheusCollectorRegistry()
    private let connectionsOpened: CoreMetrics.Counter
    private let refusals: [RefusalCode: CoreMetrics.Counter]
    private let eventsAcknowledged: CoreMetrics.Counter
    /// From a frame's arrival to the ack that covers it (the oldest frame each ack covers: a
    /// text round's, a native client's ack by seq), per `--ack` mode.
    private let ackLatency: [AckMode: CoreMetrics.Timer]
    private let roundsSucceeded: CoreMetrics.Counter
    private let roundsFailed: CoreMetrics.Counter
    private let roundDuration: CoreMetrics.Timer
    private let leaseRefusals: CoreMetrics.Counter
    private let leasesLost: CoreMetrics.Counter
    private let handedOver: CoreMetrics.Counter
    private let socketsTurnedAway: [SocketTurnedAway: CoreMetrics.Counter]
    private let storeSyncsSucceeded: CoreMetrics.Counter
    private let storeSyncsFailed: CoreMetrics.Counter
    private let storeSyncDuration: CoreMetrics.Timer
    /// A board's opening in a cluster: the wait for its lease (a lost machine's lapses a time
    /// to live later), then bringing it from the store.
    private let openingLease: CoreMetrics.Timer
    private let openingStore: CoreMetrics.Timer
    private let storeDamagedReplaced: CoreMetrics.Counter
    private let storeLostRestored: CoreMetrics.Counter
    private let bytesReceived: CoreMetrics.Counter
    private let bytesSent: CoreMetrics.Counter
    private let boardsOpen: Prometheus.Gauge
    private let connections: Prometheus.Gauge
    private let catchUpsRunning: Prometheus.Gauge
    private let catchUpsWaiting: Prometheus.Gauge
    private let failingBoards: Prometheus.Gauge
    private let failingSeconds: Prometheus.Gauge
    /// When this relay started, seconds since 1970: an operator (or a campaign) sees a node
    /// restarted by this changing, since a restart also sets every counter back to 0.
    private let started: Prometheus.Gauge
    /// Boards whose last shared round failed, since when (monotonic seconds).
    private let failingSince = Locked([String: Double]())

    public init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        // A pen's ack is tens of milliseconds; a shared round through S3, seconds.
        factory.defaultDurationHistogramBuckets = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000].map { .milliseconds($0) }
        func counter(_ name: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: "strokejournal_" + name, dimensions: dimensions, factory: factory)
        }
        func timer(_ name: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Timer {
            CoreMetrics.Timer(label: "strokejournal_" + name, dimensions: dimensions, factory: factory)
        }
        connectionsOpened = counter("connections_opened_total")
        refusals = Dictionary(uniqueKeysWithValues: RefusalCode.allCases.map { ($0, counter("refusals_total", [("code", $0.rawValue)])) })
        eventsAcknowledged = counter("events_acknowledged_total")
        ackLatency = Dictionary(uniqueKeysWithValues: AckMode.allCases.map { ($0, timer("ack_seconds", [("mode", $0.rawValue)])) })
        roundsSucceeded = counter("share_rounds_total", [("outcome", "ok")])
        roundsFailed = counter("share_rounds_total", [("outcome", "failed")])
        roundDuration = timer("share_round_seconds")
        leaseRefusals = counter("lease_refusals_total")
        leasesLost = counter("leases_lost_total")
        handedOver = counter("boards_handed_over_total")
        socketsTurnedAway = Dictionary(uniqueKeysWithValues: SocketTurnedAway.allCases.map {
            ($0, counter("sockets_turned_away_total", [("reason", $0.rawValue)]))
        })
        storeSyncsSucceeded = counter("store_syncs_total", [("outcome", "ok")])
        storeSyncsFailed = counter("store_syncs_total", [("outcome", "failed")])
        storeSyncDuration = timer("store_sync_seconds")
        openingLease = timer("board_opening_seconds", [("step", "lease")])
        openingStore = timer("board_opening_seconds", [("step", "store")])
        storeDamagedReplaced = counter("store_repairs_total", [("kind", "damaged-replaced")])
        storeLostRestored = counter("store_repairs_total", [("kind", "lost-restored")])
        bytesReceived = counter("bytes_received_total")
        bytesSent = counter("bytes_sent_total")
        let registry = registry
        func gauge(_ name: String, _ labels: [(String, String)] = [], help: String) -> Prometheus.Gauge {
            registry.makeGauge(descriptor: MetricNameDescriptor(metricName: "strokejournal_" + name, unitName: "", helpText: help), labels: labels)
        }
        boardsOpen = gauge("boards_open", help: "Boards open on this relay.")
        connections = gauge("connections", help: "Client connections open.")
        let catchUps = "Catch-ups running, and waiting for a place (--max-catch-ups)."
        catchUpsRunning = gauge("catch_ups", [("state", "running")], help: catchUps)
        catchUpsWaiting = gauge("catch_ups", [("state", "waiting")], help: catchUps)
        failingBoards = gauge("share_failing_boards", help: "Open boards whose last shared-ack round failed: their acks wait.")
        failingSeconds = gauge("share_failing_seconds", help: "How long the board failing longest has failed its rounds (0: none).")
        started = gauge("relay_start_time_seconds", help: "When this relay started, seconds since 1970 (a change: the node restarted).")
        started.set(Double(ProcessInfoLite.wallClockMilliseconds()) / 1000)
    }

    func connectionOpened() {
        connectionsOpened.increment()
    }

    /// A connection refused, or ended by the relay with a refusal.
    public func refused(_ code: RefusalCode) {
        refusals[code]?.increment()
    }

    func acknowledged(events count: Int) {
        guard count > 0 else { return }
        eventsAcknowledged.increment(by: count)
    }

    /// A frame acknowledged `seconds` after it arrived, under `mode`.
    func acknowledged(after seconds: Double, mode: AckMode) {
        ackLatency[mode]?.recordNanoseconds(Int64(max(0, seconds) * 1e9))
    }

    /// A shared-ack round of `board` ended (`--ack shared`), after `seconds`.
    func round(of board: String, succeeded: Bool, seconds: Double) {
        (succeeded ? roundsSucceeded : roundsFailed).increment()
        roundDuration.recordNanoseconds(Int64(max(0, seconds) * 1e9))
        failingSince.withLock { failing in
            if succeeded {
                failing[board] = nil
            } else if failing[board] == nil {
                failing[board] = ProcessInfoLite.monotonicSeconds() - seconds
            }
        }
    }

    /// How long the board failing its shared rounds longest has failed them (0: none fails).
    var longestFailingSeconds: Double {
        let now = ProcessInfoLite.monotonicSeconds()
        return failingSince.withLock { $0.values.min().map { now - $0 } ?? 0 }
    }

    /// A board's opening was refused: another node holds its lease.
    func leaseRefused(_ board: String) {
        leaseRefusals.increment()
    }

    /// A board's lease lapsed here: it was closed.
    func leaseLost(_ board: String) {
        leasesLost.increment()
    }

    /// A board was handed to the node that wanted it.
    func boardHandedOver() {
        handedOver.increment()
    }

    /// A socket closed before its request head arrived.
    public func turnedAway(_ reason: SocketTurnedAway) {
        socketsTurnedAway[reason]?.increment()
    }

    /// A sync of a board with the cluster's store (`--share`: before it opens, while open,
    /// once closed, and in every shared-ack round) ended after `seconds`.
    func storeSynced(succeeded: Bool, seconds: Double) {
        (succeeded ? storeSyncsSucceeded : storeSyncsFailed).increment()
        storeSyncDuration.recordNanoseconds(Int64(max(0, seconds) * 1e9))
    }

    /// A board opened after `leaseSeconds` awaiting its lease (with `--lease`) and `storeSeconds`
    /// bringing it from the store after that (with `--share`).
    func boardOpening(leaseSeconds: Double?, storeSeconds: Double?) {
        if let leaseSeconds { openingLease.recordNanoseconds(Int64(max(0, leaseSeconds) * 1e9)) }
        if let storeSeconds { openingStore.recordNanoseconds(Int64(max(0, storeSeconds) * 1e9)) }
    }

    /// Copies a sync put back into the store.
    func storeRepaired(_ repairs: StoreRepairs) {
        if repairs.damagedReplaced > 0 { storeDamagedReplaced.increment(by: repairs.damagedReplaced) }
        if repairs.lostRestored > 0 { storeLostRestored.increment(by: repairs.lostRestored) }
    }

    /// WebSocket payload bytes read from clients.
    public func received(bytes count: Int) {
        bytesReceived.increment(by: count)
    }

    /// WebSocket payload bytes written to clients.
    public func sent(bytes count: Int) {
        bytesSent.increment(by: count)
    }

    /// A board closed: its rounds no longer fail.
    func boardClosed(_ board: String) {
        failingSince.withLock { _ = $0.removeValue(forKey: board) }
    }

    /// What the relay's state says now, for the gauges.
    struct Gauges {
        var boardsOpen: Int
        var connections: Int
        var catchUpsRunning: Int
        var catchUpsWaiting: Int
    }

    /// The exposition (text format 0.0.4), the gauges set from `gauges` first.
    func text(_ gauges: Gauges) -> String {
        boardsOpen.set(Int64(gauges.boardsOpen))
        connections.set(Int64(gauges.connections))
        catchUpsRunning.set(Int64(gauges.catchUpsRunning))
        catchUpsWaiting.set(Int64(gauges.catchUpsWaiting))
        let failing = failingSince.withLock { $0 }
        failingBoards.set(Int64(failing.count))
        failingSeconds.set(failing.values.min().map { ProcessInfoLite.monotonicSeconds() - $0 } ?? 0)
        return registry.emitToString()
    }
}
