import Foundation
import JournalFormat
import JournalIngest
import JournalPlatform
import JournalTestSupport
import JournalWire

/// Clients draw on one board of a real `journal serve` process while it is killed with
/// SIGKILL at random moments and started again on the same folder and port; the clients
/// reconnect and resend what was not acknowledged. `check()` then reads the folder with the
/// real CLI.
///
/// Text mode records a client's events under the relay's replica, so a frame that was made
/// durable but whose ack died with the relay is recorded again when resent. The campaign
/// counts those duplicates point by point and checks that each is explained by a frame that
/// was unacknowledged when a connection was lost.
struct RelayCrashCampaign {
    struct Settings {
        var seed: UInt64
        var clients = 3
        var strokesPerClient = 20
        var pointsPerStroke = 40
        var kills = 4
        /// How long the relay runs before each kill, in milliseconds.
        var upMilliseconds = 300...1000
        /// Each client sends 1…`burst` frames, then pauses `pauseMilliseconds`.
        var burst = 6
        var pauseMilliseconds = 8...25

        /// The defaults, overridden by `RELAY_CRASH_SEED`, `_KILLS`, `_CLIENTS`, `_STROKES`
        /// (for a longer campaign: Tools/ci/relay-crash/run.sh).
        static func fromEnvironment(default seed: UInt64) -> Settings {
            let environment = ProcessInfo.processInfo.environment
            func number(_ key: String) -> Int? { environment["RELAY_CRASH_" + key].flatMap { Int($0) } }
            var settings = Settings(seed: environment["RELAY_CRASH_SEED"].flatMap { UInt64($0) } ?? seed)
            if let kills = number("KILLS") { settings.kills = kills }
            if let clients = number("CLIENTS") { settings.clients = clients }
            if let strokes = number("STROKES") { settings.strokesPerClient = strokes }
            return settings
        }
    }

    /// One point a client draws: which frame of which client, and where it lands.
    struct PointKey: Hashable {
        var stroke: StrokeID
        var index: Int
    }

    let settings: Settings
    let board = "crash"

    /// What a run saw, for the checks and the report.
    struct Outcome {
        var clients: [ResendingClient]
        var kills = 0
        /// Kills while at least one client had a frame sent and unacknowledged.
        var killsWithFramesInFlight = 0
        var relayHave: [Have?] = []
        var seconds = 0.0
    }

    /// The frames of client `number`: strokes of points, each ended.
    func frames(client number: Int) -> (frames: [String], points: [PointKey?]) {
        var frames: [String] = []
        var points: [PointKey?] = []
        for strokeNumber in 0..<settings.strokesPerClient {
            let stroke = StrokeID(UUIDBits(high: settings.seed, low: UInt64(number) << 32 | UInt64(strokeNumber)))
            let style = Style(color: RGBA(rawValue: 0x3949_ABFF &+ UInt32(number) << 8), width: 3)
            for index in 0..<settings.pointsPerStroke {
                frames.append(CanonicalJSON.line(for: .point(PointSample(
                    stroke: stroke, x: Double(index), y: Double(number), pressure: 0.5, t: Double(index) / 240, style: style))))
                points.append(PointKey(stroke: stroke, index: index))
            }
            frames.append(CanonicalJSON.line(for: .end(stroke)))
            points.append(nil)
        }
        return (frames, points)
    }

    /// Draws, kills and restarts, then catches every client up and kills the relay a last time.
    func run(data: String) async throws -> Outcome {
        let started = ContinuousClock.now
        let relay = try await RelayProcess(data: data)
        // With echo, each client holds the relay's replica, which all of them write, in one
        // piece, not in one piece per stroke of the others: a hello names at most
        // `WireLimits.helloRangesPerReplica` pieces of a replica, and the events of the pieces
        // past that would come again.
        let clients = (0..<settings.clients).map { ResendingClient(name: "client \($0)", frames: frames(client: $0).frames, echo: true) }
        var outcome = Outcome(clients: clients)
        for client in clients { client.finish() }
        let port = relay.port
        let drawing = clients.enumerated().map { number, client in
            let pace = Locked(SeededGenerator(seed: settings.seed &+ UInt64(number) &* 7919))
            let (burst, pauses) = (settings.burst, settings.pauseMilliseconds)
            return Task {
                await client.draw(port: port, board: board, pace: {
                    pace.withLock { random in
                        (Int.random(in: 1...burst, using: &random), .milliseconds(Int.random(in: pauses, using: &random)))
                    }
                })
            }
        }

        // The drawing tasks are not children of this one: cancelled with it (a test past its
        // time limit), they stop too, and the test reports what each client got.
        try await withTaskCancellationHandler {
            var killer = SeededGenerator(seed: settings.seed ^ 0x6B69_6C6C)
            while outcome.kills < settings.kills, !clients.allSatisfy(\.allAcknowledged) {
                try await Task.sleep(for: .milliseconds(Int.random(in: settings.upMilliseconds, using: &killer)))
                if clients.contains(where: { let state = $0.snapshot; return state.sent > state.acknowledged }) {
                    outcome.killsWithFramesInFlight += 1
                }
                await relay.kill9()
                outcome.kills += 1
                try await relay.start()
            }
            for task in drawing { await task.value }
        } onCancel: {
            for task in drawing { task.cancel() }
        }

        // A last catch-up: each client then holds what the board held.
        for client in clients { outcome.relayHave.append(await client.catchUp(port: port, board: board)) }
        // …and a last crash: the CLI reads the folder as the relay left it.
        await relay.kill9()
        outcome.seconds = Double((ContinuousClock.now - started).components.seconds)
            + Double((ContinuousClock.now - started).components.attoseconds) / 1e18
        return outcome
    }
}
