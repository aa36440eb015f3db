import Dispatch
import JournalCommit
import JournalFormat
import JournalIngest
import JournalLive
import JournalReplay
import JournalStorage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `live` row (issue 12, the live board), in one process:
///
/// 1. Integration against full replay. A journal holds the standard session minus the last 1%
///    of each replica's events; those arrive afterwards as new sealed segments (one per
///    replica, moved into `replicas/` by rename, as sync does). Timed: `LiveReplay.readNew`
///    + `integrate` of them on a `LiveReplay` loaded before they arrived, against
///    `Replay.load(dir, useSnapshots: false)` of the whole journal. The same with the +1%
///    session of a fifth replica (the `snapshotOpen` row's segment) on the merged journal.
/// 2. Append latency on the caller's thread: every payload of the standard session through
///    `Board.append` (no watcher, default group commit) at full speed and paced at 240 Hz,
///    each call timed with the monotonic clock; the same through a `JournalWriter` under
///    `Committer.Recording`'s default flush policy (no compaction) as the baseline.
extension RowRunner {
    func live() throws -> RowOutput {
        try fixtures.ensureMerged()
        let scratch = fixtures.scratch("live")
        try Files.removeTree(scratch)
        var output = RowOutput()

        // MARK: 1. readNew + integrate against full replay
        let mergedDigest = Replay.load(JournalDirectory(root: fixtures.merged), useSnapshots: false).drawing.digest
        let cases = [
            try liveTailFixture(at: scratch + "/tail"),
            try liveExtraReplicaFixture(at: scratch + "/extra"),
        ]
        for fixture in cases {
            var runs: [ArrivalRun] = []
            for _ in 0..<repeats { runs.append(try measureArrival(fixture)) }
            let prefix = fixture.key
            func put(_ key: String, _ value: JSON) { output.extra[prefix.isEmpty ? key : prefix + key.prefix(1).uppercased() + key.dropFirst()] = value }
            if prefix.isEmpty {
                // The row's main timing: what an open board pays when sync brings 1%.
                output.seconds = runs.map(\.integrateSeconds)
                output.cpuSeconds = runs.map(\.integrateCPUSeconds)
            } else {
                put("integrateSeconds", .seconds(runs.map(\.integrateSeconds)))
            }
            put("readNewSeconds", .seconds(runs.map(\.readNewSeconds)))
            put("applySeconds", .seconds(runs.map(\.applySeconds)))
            put("fullReplaySeconds", .seconds(runs.map(\.fullSeconds)))
            put("fullReplayCPUSeconds", .seconds(runs.map(\.fullCPUSeconds)))
            if !prefix.isEmpty { put("integrateCPUSeconds", .seconds(runs.map(\.integrateCPUSeconds))) }
            put("liveLoadSeconds", .seconds(runs.map(\.loadSeconds)))
            put("integrateVsFullReplay", .number(median(runs.map { $0.integrateSeconds / $0.fullSeconds }), decimals: 5))
            put("integrateVsFullReplayRuns", .array(runs.map { .number($0.integrateSeconds / $0.fullSeconds, decimals: 5) }))
            put("integrateVsFullReplayCPU", .number(median(runs.map { $0.integrateCPUSeconds / $0.fullCPUSeconds }), decimals: 5))
            let last = runs.last!
            put("newEvents", .int(last.newEvents))
            put("newSegments", .int(fixture.arrivals.count))
            put("totalEvents", .int(last.totalEvents))
            put("newEventsShare", .number(Double(last.newEvents) / Double(max(last.totalEvents, 1)), decimals: 5))
            put("fullReplayNanosPerEvent", .number(median(runs.map { $0.fullSeconds / Double(max($0.totalEvents, 1)) }) * 1e9, decimals: 1))
            put("integrateNanosPerEvent", .number(median(runs.map { $0.integrateSeconds / Double(max($0.newEvents, 1)) }) * 1e9, decimals: 1))
            put("applyNanosPerEvent", .number(median(runs.map { $0.applySeconds / Double(max($0.newEvents, 1)) }) * 1e9, decimals: 1))
            put("changes", .int(last.changes))
            put("integrated", .bool(runs.allSatisfy(\.integrated)))
            put("digestOk", .bool(runs.allSatisfy { $0.integrated && $0.liveDigest == $0.fullDigest }))
            put("digest", .string(last.fullDigest))
            if prefix.isEmpty {
                // The tail case holds exactly the standard session: the merged journal's drawing.
                put("digestEqualsMerged", .bool(last.fullDigest == mergedDigest))
            }
        }

        // MARK: 2. Append latency on the caller's thread
        var payloads: [Payload] = []
        for input in workload.inputs {
            var reader = try NDJSONReader(path: input)
            while try reader.next(appendingTo: &payloads) != nil {}
        }
        let paced = Array(payloads.prefix(Int(Self.pacedHz * Self.pacedSeconds)))
        var series: [String: [AppendRun]] = [:]
        for _ in 0..<repeats {
            let journals = scratch + "/append"
            for (key, isBoard, input, hz) in [
                ("board", true, payloads, nil), ("writer", false, payloads, nil),
                ("boardPaced", true, paced, Self.pacedHz), ("writerPaced", false, paced, Self.pacedHz),
                ("boardPacedNoCompaction", true, paced, Self.pacedHz),
            ] as [(String, Bool, [Payload], Double?)] {
                try Files.removeTree(journals)
                try Files.makeDirectories(journals)
                let journal = try JournalDirectory.create(at: journals + "/" + key)
                let run: AppendRun
                if isBoard {
                    // The baseline of issue 24: the same board without background compaction.
                    let compacts = key != "boardPacedNoCompaction"
                    run = try timedAppends(BoardTarget(try Board(directory: journal, options: BoardOptions(
                        watchForSegments: false, automaticCompaction: compacts))), input, hz: hz)
                } else {
                    run = try timedAppends(WriterTarget(try Committer.Recording(directory: journal, options: RecordingOptions(automaticCompaction: false))), input, hz: hz)
                }
                series[key, default: []].append(run)
            }
            try Files.removeTree(journals)
        }
        var latency = JSONObject()
        for key in ["board", "writer", "boardPaced", "writerPaced", "boardPacedNoCompaction"] {
            let runs = series[key] ?? []
            var object = JSONObject()
            object["appends"] = .int(runs.first?.appends ?? 0)
            object["hz"] = key.contains("Paced") ? .number(Self.pacedHz, decimals: 1) : .null
            object["p50Micros"] = .number(median(runs.map(\.p50)), decimals: 3)
            object["p99Micros"] = .number(median(runs.map(\.p99)), decimals: 3)
            object["p999Micros"] = .number(median(runs.map(\.p999)), decimals: 3)
            object["maxMicros"] = .number(median(runs.map(\.max)), decimals: 1)
            object["over50MicrosMedian"] = .int(Int(median(runs.map { Double($0.over50) })))
            object["runs"] = .array(runs.map { run in
                var one = JSONObject()
                one["p50Micros"] = .number(run.p50, decimals: 3)
                one["p99Micros"] = .number(run.p99, decimals: 3)
                one["p999Micros"] = .number(run.p999, decimals: 3)
                one["maxMicros"] = .number(run.max, decimals: 1)
                one["over50Micros"] = .int(run.over50)
                one["slowest"] = .array(run.slowest.map { .array([.int($0.index), .number($0.micros, decimals: 1)]) })
                return one.json
            })
            latency[key] = object.json
            output.extra[key + "AppendLoopSeconds"] = .seconds(runs.map(\.loopSeconds))
            output.extra[key + "FlushSeconds"] = .seconds(runs.map(\.flushSeconds))
            output.extra[key + "CloseSeconds"] = .seconds(runs.map(\.closeSeconds))
            if !key.contains("Paced") {
                output.extra[key + "EventsPerSecond"] = .number(median(runs.map { Double($0.appends) / $0.loopSeconds }), decimals: 0)
            }
        }
        output.extra["appendLatency"] = latency.json
        output.extra["appendEvents"] = .int(payloads.count)
        try Files.removeTree(scratch)
        return output
    }

    static var pacedHz: Double { 240 }
    static var pacedSeconds: Double { 5 }

    // MARK: Part 1: fixtures and one measurement

    /// A journal and the sealed segments that "arrive" in it later.
    struct ArrivalFixture {
        /// JSON key prefix ("" for the main case).
        var key: String
        var root: String
        /// (where the file waits, where it arrives): same file system, moved by rename.
        var arrivals: [(staged: String, placed: String)]
    }

    struct ArrivalRun {
        var loadSeconds: Double
        var readNewSeconds: Double
        var applySeconds: Double
        var integrateSeconds: Double { readNewSeconds + applySeconds }
        var integrateCPUSeconds: Double
        var fullSeconds: Double
        /// Replay decodes on a second core: its CPU time can exceed its wall time.
        var fullCPUSeconds: Double
        var newEvents: Int
        var totalEvents: Int
        var changes: Int
        var integrated: Bool
        var liveDigest: String
        var fullDigest: String
    }

    /// The standard session with the last 1% (rounded up) of each replica's events held back:
    /// sealed files wholly below the cut are copied as they are; the one holding the cut is
    /// re-encoded (same events and envelopes, `SegmentEncoder.segment`) as the 99% part in the
    /// journal and the 1% part waiting in `arriving/`.
    func liveTailFixture(at root: String) throws -> ArrivalFixture {
        let base = root + "/journal"
        let staging = root + "/arriving"
        _ = try JournalDirectory.create(at: base)
        var arrivals: [(String, String)] = []
        for journal in fixtures.journals {
            for folder in Files.list(journal + "/replicas") {
                let source = journal + "/replicas/" + folder
                let names = Files.list(source).filter { $0.hasSuffix(".sjs") && !$0.hasPrefix(".") }.sorted()
                let scans = names.map { SegmentScanner.scan(path: source + "/" + $0, sealed: true) }
                if let problem = scans.flatMap(\.problems).first { throw BenchError("\(source) is damaged: \(problem)") }
                let total = scans.compactMap { $0.seqRange?.upperBound }.max() ?? 0
                let keep = total - (total + 99) / 100
                try Files.makeDirectories(base + "/replicas/" + folder)
                try Files.makeDirectories(staging + "/" + folder)
                for (name, scan) in zip(names, scans) {
                    guard let range = scan.seqRange, let replica = scan.replica else { continue }
                    if range.upperBound <= keep {
                        try Files.write(scan.bytes, to: base + "/replicas/" + folder + "/" + name)
                        continue
                    }
                    let (events, problems) = scan.allEvents()
                    if let problem = problems.first { throw BenchError("\(source)/\(name): \(problem)") }
                    let head = events.filter { $0.id.seq <= keep }
                    let tail = events.filter { $0.id.seq > keep }
                    for (part, folderPath) in [(head, base + "/replicas/" + folder), (tail, staging + "/" + folder)] where !part.isEmpty {
                        let bytes = SegmentEncoder.segment(replica: replica, events: part)
                        let file = SegmentName(firstSeq: part.first!.id.seq, lastSeq: part.last!.id.seq, contents: bytes).fileName
                        try Files.write(bytes, to: folderPath + "/" + file)
                        if folderPath.hasPrefix(staging) {
                            arrivals.append((folderPath + "/" + file, base + "/replicas/" + folder + "/" + file))
                        }
                    }
                }
            }
        }
        return ArrivalFixture(key: "", root: base, arrivals: arrivals)
    }

    /// The merged journal as it is, and the +1% session's segment (a fifth replica that drew
    /// after seeing everyone's strokes) arriving.
    func liveExtraReplicaFixture(at root: String) throws -> ArrivalFixture {
        let extra = try fixtures.ensureExtraSegment()
        let base = root + "/journal"
        try Files.makeDirectories(root)
        try Files.copyTree(fixtures.merged, to: base)
        let name = Paths.base(extra.path)
        let staged = root + "/arriving/" + extra.replica.hex + "/" + name
        try Files.makeDirectories(Paths.parent(staged))
        try Files.write(try Files.read(extra.path), to: staged)
        return ArrivalFixture(key: "extraReplica", root: base, arrivals: [(staged, base + "/replicas/" + extra.replica.hex + "/" + name)])
    }

    /// Loads a `LiveReplay` without the arriving files, moves them in, then times
    /// `readNew` + `integrate` and a full replay of the result; moves them back.
    func measureArrival(_ fixture: ArrivalFixture) throws -> ArrivalRun {
        let directory = JournalDirectory(root: fixture.root)
        let (loaded, loadSeconds) = Clock.time { LiveReplay.load(directory, useSnapshots: false).0 }
        var live = loaded
        for arrival in fixture.arrivals {
            try Files.makeDirectories(Paths.parent(arrival.placed))
            try Files.rename(arrival.staged, to: arrival.placed)
        }
        defer {
            for arrival in fixture.arrivals { try? Files.rename(arrival.placed, to: arrival.staged) }
        }
        let cpu = Clock.cpu()
        let started = Clock.now()
        let increment = LiveReplay.readNew(directory, after: live.readCursor, own: nil)
        let read = Clock.now()
        var changes: [DrawingChange] = []
        let integrated = live.integrate(increment, changes: &changes)
        let applied = Clock.now()
        let cpuSeconds = Clock.cpu() - cpu
        let fullCPU = Clock.cpu()
        let (full, fullSeconds) = Clock.time { Replay.load(directory, useSnapshots: false) }
        let fullCPUSeconds = Clock.cpu() - fullCPU
        return ArrivalRun(
            loadSeconds: loadSeconds, readNewSeconds: read - started, applySeconds: applied - read, integrateCPUSeconds: cpuSeconds,
            fullSeconds: fullSeconds, fullCPUSeconds: fullCPUSeconds, newEvents: increment.events.count, totalEvents: full.report.eventCount, changes: changes.count,
            integrated: integrated && !increment.needsReload, liveDigest: live.drawing.drawing.digest, fullDigest: full.drawing.digest)
    }

    // MARK: Part 2: append latency

    struct AppendRun {
        var appends: Int
        /// Microseconds.
        var p50: Double
        var p99: Double
        var p999: Double
        var max: Double
        /// Appends that took longer than 50 µs.
        var over50: Int
        var loopSeconds: Double
        var flushSeconds: Double
        var closeSeconds: Double
        /// The slowest appends: (index in the run, microseconds), slowest first.
        var slowest: [(index: Int, micros: Double)]
    }

    /// Appends every payload, timing each call; then flush (timed), then close (timed). With
    /// `hz`, append i starts at start + i / hz (absolute monotonic deadlines).
    func timedAppends<Target: AppendTarget>(_ target: Target, _ payloads: [Payload], hz: Double?) throws -> AppendRun {
        var nanos = [UInt64](repeating: 0, count: payloads.count)
        let interval = hz.map { UInt64((1e9 / $0).rounded()) }
        let started = Clock.now()
        try nanos.withUnsafeMutableBufferPointer { nanos in
            let origin = monotonicNanos()
            for index in payloads.indices {
                if let interval { sleepUntil(nanos: origin + UInt64(index) * interval) }
                let before = monotonicNanos()
                try target.append(payloads[index])
                nanos[index] = monotonicNanos() - before
            }
        }
        let loopSeconds = Clock.now() - started
        // The five slowest calls and where they fell (a stall at a power of two is an array
        // doubling; every 32,768 or 262,144 events, the writer's batch or seal).
        var slowest: [(index: Int, nanos: UInt64)] = []
        for (index, value) in nanos.enumerated() where slowest.count < 5 || value > slowest[slowest.count - 1].nanos {
            slowest.append((index, value))
            slowest.sort { $0.nanos > $1.nanos }
            if slowest.count > 5 { slowest.removeLast() }
        }
        let (_, flushSeconds) = try Clock.time { try target.flush() }
        let (_, closeSeconds) = try Clock.time { try target.close() }
        nanos.sort()
        func percentile(_ q: Double) -> Double {
            guard !nanos.isEmpty else { return .nan }
            let rank = Swift.max(1, Int((Double(nanos.count) * q).rounded(.up)))
            return Double(nanos[Swift.min(rank, nanos.count) - 1]) / 1000
        }
        return AppendRun(appends: payloads.count, p50: percentile(0.5), p99: percentile(0.99), p999: percentile(0.999),
                         max: Double(nanos.last ?? 0) / 1000, over50: nanos.count - (nanos.firstIndex { $0 > 50_000 } ?? nanos.count),
                         loopSeconds: loopSeconds, flushSeconds: flushSeconds, closeSeconds: closeSeconds,
                         slowest: slowest.map { ($0.index, Double($0.nanos) / 1000) })
    }
}

/// What the latency loop appends to: a live board, or a plain writer (the baseline).
protocol AppendTarget {
    func append(_ payload: Payload) throws
    /// Returns once everything appended is durable.
    func flush() throws
    func close() throws
}

struct BoardTarget: AppendTarget {
    let board: Board
    init(_ board: Board) { self.board = board }
    func append(_ payload: Payload) throws { try board.append(payload) }
    func flush() throws { let board = board; try blockingAwait { try await board.flush() } }
    func close() throws { let board = board; try blockingAwait { try await board.close() } }
}

struct WriterTarget: AppendTarget {
    let writer: Committer.Recording
    init(_ writer: Committer.Recording) { self.writer = writer }
    func append(_ payload: Payload) throws { try writer.append(payload) }
    func flush() throws { try writer.flush() }
    func close() throws { try writer.close() }
}

func monotonicNanos() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Sleeps until the monotonic clock reads `nanos` (returns at once if it already has).
func sleepUntil(nanos: UInt64) {
    var deadline = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
}

/// Runs async library calls (the board's flush and close) from the synchronous row, as
/// `syncBlocking` does: the row's thread is not one of the concurrency pool's.
func blockingAwait(_ body: @escaping @Sendable () async throws -> Void) throws {
    let done = DispatchSemaphore(value: 0)
    let outcome = AwaitOutcome()
    Task.detached {
        do { try await body(); outcome.error = nil } catch { outcome.error = error }
        done.signal()
    }
    done.wait()
    if let error = outcome.error { throw error }
}

/// Written by the task before it signals, read after the wait: the semaphore orders them.
private final class AwaitOutcome: @unchecked Sendable {
    var error: (any Error)?
}
