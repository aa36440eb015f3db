import JournalCommandLine
import JournalFormat
import JournalLive
import JournalPlatform
import JournalReplay
import JournalSamples
import JournalStorage
import JournalSync

/// `journal demo --live`: two people draw at once on two live boards that share nothing but
/// a folder. Each board's `SyncWatch` publishes what it seals and imports what the other
/// published; each board folds that in and reports it. The demo prints when each side first
/// sees each of the other's strokes, measured from the moment its first point was appended.
struct LiveDemo {
    let root: String
    /// How much faster than real time the pens move (1: 120 samples a second, like a pen).
    let speed: Double

    /// Stroke id → when its first point was appended (monotonic seconds), by both boards.
    final class Timeline: Sendable {
        private let started = Locked<[StrokeID: (who: String, at: Double)]>([:])
        private let seen = Locked<[Double]>([])

        func began(_ stroke: StrokeID, by who: String) {
            let now = ProcessInfoLite.monotonicSeconds()
            started.withLock { table in if table[stroke] == nil { table[stroke] = (who, now) } }
        }

        /// The delay since `stroke` began, if another board drew it.
        func arrived(_ stroke: StrokeID, at viewer: String) -> (who: String, delay: Double)? {
            let now = ProcessInfoLite.monotonicSeconds()
            guard let origin = started.withLock({ $0[stroke] }), origin.who != viewer else { return nil }
            seen.withLock { $0.append(now - origin.at) }
            return (origin.who, now - origin.at)
        }

        var delays: [Double] { seen.withLock { $0 } }
    }

    func run() async throws {
        try FileSystem.createDirectory(root)
        let shared = root + "/shared"
        let names = ["alice", "bob"]
        let sessions = DemoSession.replicas(count: 2, strokesPerReplica: 8)
        let boards = try names.map { name throws(JournalError) in try Board(path: root + "/" + name, create: true) }
        let timeline = Timeline()
        Terminal.write("""
            Two live boards, \(root)/alice and \(root)/bob, share one folder (\(shared)).
            Each records its own pen and syncs continuously (journal sync --watch in the library);
            each line below is a stroke one board received from the other.

            """)
        Terminal.flush()

        // Sync loops: one per board, each with the shared folder.
        let watches = boards.map { board in
            SyncWatch(journal: board.directory, target: .directory(shared),
                      options: SyncWatch.Options(interval: 1, create: true))
        }
        let syncTasks = watches.map { watch in
            Task { try? await watch.run { _ in } }
        }
        // What each board hears.
        let listeners = zip(names, boards).map { name, board in
            let updates = board.updates()
            return Task {
                for await update in updates where update.origin == .remote {
                    for case .added(let stroke) in update.changes {
                        guard let (who, delay) = timeline.arrived(stroke, at: name) else { continue }
                        Terminal.write("  \(name) sees \(who)'s stroke \(stroke.uuidString.prefix(8))… \(formatSeconds(delay)) after \(who) began it\n")
                        Terminal.flush()
                    }
                }
            }
        }
        // Both draw at once, at pen speed times `speed`.
        let interval = 1.0 / (DemoSession.sampleRate * speed)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, board) in boards.enumerated() {
                let payloads = sessions[index]
                let name = names[index]
                group.addTask {
                    var next = ProcessInfoLite.monotonicSeconds()
                    for payload in payloads {
                        if case .point(let sample) = payload { timeline.began(sample.stroke, by: name) }
                        try board.append(payload)
                        if case .end = payload {
                            // The pen lifts between strokes for a moment, as people do.
                            next += 0.25 / speed
                        }
                        next += interval
                        let wait = next - ProcessInfoLite.monotonicSeconds()
                        if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
                    }
                    try await board.flush()
                }
            }
            try await group.waitForAll()
        }
        // Let the last seals travel, then compare.
        let expected = Set(sessions.joined().compactMap { payload -> StrokeID? in
            if case .point(let sample) = payload { return sample.stroke }
            return nil
        }).count
        let total = sessions.reduce(0) { $0 + $1.count }
        func holdsEverything(_ board: Board) -> Bool {
            board.covered.values.reduce(0) { $0 + Int(clamping: $1.count) } == total
        }
        let deadline = ProcessInfoLite.monotonicSeconds() + 15
        while ProcessInfoLite.monotonicSeconds() < deadline && !boards.allSatisfy(holdsEverything) {
            try await Task.sleep(for: .milliseconds(100))
        }
        let digests = boards.map { $0.drawing.digest }
        for watch in watches { watch.stop() }
        for task in syncTasks { await task.value }
        for board in boards { try await board.close() }
        for task in listeners { task.cancel() }
        let delays = timeline.delays.sorted()
        let converged = digests.allSatisfy { $0 == digests[0] } && boards.allSatisfy { $0.strokeCount == expected && holdsEverything($0) }
        Terminal.write("""

            \(delays.count) strokes crossed over; delay from the first point to the other screen: \
            median \(formatSeconds(delays.isEmpty ? 0 : delays[delays.count / 2])), \
            max \(formatSeconds(delays.last ?? 0)).
            alice \(digests[0].prefix(16))…  bob \(digests[1].prefix(16))…  \
            \(converged ? "the same drawing on both boards" : "THE BOARDS DIFFER")

            Try it by hand in two terminals (see README, "Live boards"):
              journal sync --watch -C \(root)/alice \(shared)

            """)
        Terminal.flush()
        if !converged { throw CLIError("the two boards did not converge within 15 s", code: 1) }
    }
}
