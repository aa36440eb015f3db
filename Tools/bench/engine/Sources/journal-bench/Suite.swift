/// The parent process: prepares workloads, runs each row in a child, prints the table and
/// writes the JSON.

/// What one row child printed, or why there is nothing.
struct ChildResult {
    var seconds: [Double] = []
    var cpuSeconds: [Double] = []
    var peakRSSBytes: Int?
    var extra = JSON.object([])
    /// Why the row has no measurement (a failure, or n/a).
    var error: String?
    /// `/proc/loadavg` when the row started: other work on the machine skews timings.
    var loadBefore: (oneMinute: Double, runnable: Int)?

    var ok: Bool { error == nil }
    var median: Double? { seconds.isEmpty || !ok ? nil : journal_bench.median(seconds) }
    var minimum: Double? { ok ? seconds.min() : nil }
    var cpuMedian: Double? { cpuSeconds.isEmpty || !ok ? nil : journal_bench.median(cpuSeconds) }
    func double(_ key: String) -> Double? { extra[key]?.doubleValue }
    func int(_ key: String) -> Int? { extra[key]?.intValue }
    func string(_ key: String) -> String? { extra[key]?.stringValue }
    func bool(_ key: String) -> Bool? { extra[key]?.boolValue }
    func median(_ key: String) -> Double? { extra[key]?.doubles.flatMap { $0.isEmpty ? nil : journal_bench.median($0) } }

    /// The row as it appears under "rows" in the JSON: timings summarised as
    /// {median, min, runs}, then the row's own values.
    var json: JSON {
        var object = JSONObject()
        if let error { object["error"] = .string(error); return object.json }
        object["seconds"] = summary(seconds)
        object["cpuSeconds"] = summary(cpuSeconds)
        object["peakRSSBytes"] = peakRSSBytes.map(JSON.int) ?? .null
        if let loadBefore {
            object["loadAverage1m"] = .number(loadBefore.oneMinute, decimals: 2)
            object["runnableThreads"] = .int(loadBefore.runnable)
        }
        for (key, value) in extra.objectValue ?? [] {
            if key.hasSuffix("Seconds"), let runs = value.doubles { object[key] = summary(runs) } else { object[key] = value }
        }
        return object.json
    }

    private func summary(_ runs: [Double]) -> JSON {
        guard !runs.isEmpty else { return .null }
        var object = JSONObject()
        object["median"] = .number(journal_bench.median(runs))
        object["min"] = .number(runs.min()!)
        object["runs"] = .seconds(runs)
        return object.json
    }
}

struct GrowthCase {
    var key: String
    var label: String
    var generation: Generation
    var large: Bool

    static let all: [GrowthCase] = [
        GrowthCase(key: "scale0.25x", label: "0.25× (4 × 625 strokes)", generation: Generation(replicas: 4, strokes: 625), large: false),
        GrowthCase(key: "scale1x", label: "1× (4 × 2500 strokes)", generation: .standard, large: false),
        GrowthCase(key: "scale4x", label: "4× (4 × 10000 strokes)", generation: Generation(replicas: 4, strokes: 10_000), large: true),
        GrowthCase(key: "replicas1", label: "2M points, 1 replica", generation: Generation(replicas: 1, strokes: 10_000), large: false),
        GrowthCase(key: "replicas4", label: "2M points, 4 replicas (= 1×)", generation: .standard, large: false),
        GrowthCase(key: "replicas16", label: "2M points, 16 replicas", generation: Generation(replicas: 16, strokes: 625), large: false),
        GrowthCase(key: "replicas64", label: "2M points, 64 replicas (156 strokes each)", generation: Generation(replicas: 64, strokes: 156), large: true),
    ]
}

let hersheyText = "The quick brown fox jumps over the lazy dog"

final class Suite {
    let options: Options
    let layout: Layout
    let workload: Workload
    var journalBinary = ""
    var rows: [(String, ChildResult)] = []
    var growth: [(GrowthCase, ChildResult)] = []
    var precision: [(PrecisionCase, ChildResult)] = []
    var started = Clock.now()

    init(_ options: Options) throws {
        self.options = options
        layout = try Layout.locate()
        workload = Workload(options.workload!)
    }

    func result(_ row: RowName) -> ChildResult {
        rows.first { $0.0 == row.rawValue }?.1 ?? ChildResult(error: "not run")
    }

    func wanted(_ row: RowName) -> Bool { options.only.map { $0.contains(row.rawValue) } ?? true }

    func run() throws {
        started = Clock.now()
        try Generation.standard.ensure(in: workload.dir, layout: layout)
        try Generation.extra.ensure(in: workload.extraDir, layout: layout)
        try ensureJournalBinary()

        let order: [RowName] = [
            .processBaseline, .recordLibrary, .prepare, .parse, .parseLines, .append, .cliRecord, .mergeReconstruct, .sync,
            .snapshotOpen, .cliRead, .ndjsonPlain, .ndjsonDeflate, .bareInflate, .bareDeflate, .plainRead, .digestCheck,
            .live, .liveClockOrder,
        ]
        let slow: Set<RowName> = [.live, .liveClockOrder]
        for row in order where row == .prepare || (wanted(row) && (!slow.contains(row) || !options.quick || options.only != nil)) {
            let outcome = runChild(row)
            if row != .prepare { rows.append((row.rawValue, outcome)) }
        }
        if !options.quick && wanted(.hershey) { rows.append((RowName.hershey.rawValue, runHershey())) }
        if (!options.quick || options.only != nil) && wanted(.residualCoder) { runResidualCoder() }
        if !options.quick && wanted(.growth) { runGrowth() }
        if !options.quick && wanted(.precision) { runPrecision() }

        let report = renderTable()
        print(report, terminator: "")
        if let path = options.jsonPath {
            try Files.writeText(resultJSON().encoded(pretty: true) + "\n", to: path)
            log("wrote \(path)")
        }
    }

    // MARK: Children

    func runChild(_ row: RowName, input: String? = nil, label: String? = nil) -> ChildResult {
        var arguments = [Paths.executable, "row", row.rawValue, "--workload", workload.dir, "--repeat", String(options.repeats)]
        if row == .cliRecord || row == .cliRead { arguments += ["--journal-binary", journalBinary] }
        if let input { arguments += ["--input", input] }
        let load = Machine.load
        log("row \(label ?? row.rawValue)… (load average \(fixed(load.oneMinute, 2)))")
        let outcome: Spawn.Result
        do {
            outcome = try Spawn.run(arguments, stdout: .capture)
        } catch {
            return ChildResult(error: "\(error)")
        }
        guard outcome.status == 0 else { return ChildResult(error: "row child exited with status \(outcome.status)") }
        guard let line = outcome.text.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
              let json = try? JSON.parse(String(line)) else {
            return ChildResult(error: "row child printed no result line")
        }
        return ChildResult(seconds: json["seconds"]?.doubles ?? [], cpuSeconds: json["cpuSeconds"]?.doubles ?? [], peakRSSBytes: json["peakRSSBytes"]?.intValue,
                           extra: json["extra"] ?? .object([]), loadBefore: load)
    }

    func ensureJournalBinary() throws {
        journalBinary = options.journalBinary.map(Paths.absolute) ?? layout.defaultJournalBinary
        if Files.exists(journalBinary) || options.journalBinary != nil { return }
        log("building the journal CLI: swift build -c release --product journal (in \(layout.repoRoot))")
        try Spawn.check(["swift", "build", "-c", "release", "--product", "journal", "--package-path", layout.repoRoot], stdout: .discard)
    }

    /// Generates the Hershey session if it is not there; why not, if it cannot.
    func ensureHersheyWorkload() -> String? {
        guard layout.hasStandardGenerator else {
            return "n/a (the Hershey session needs \(layout.standardGenerator); set SHARED_BENCH to its folder)"
        }
        var probe = (try? Spawn.run(["python3", "-c", "import HersheyFonts"], stdout: .discard))?.status ?? 1
        if probe != 0 {
            log("HersheyFonts is missing: trying `python3 -m pip install hershey-fonts` once")
            _ = try? Spawn.run(["python3", "-m", "pip", "install", "--quiet", "hershey-fonts"], stdout: .discard)
            probe = (try? Spawn.run(["python3", "-c", "import HersheyFonts"], stdout: .discard))?.status ?? 1
        }
        guard probe == 0 else { return "n/a (python3 cannot import HersheyFonts; pip install hershey-fonts failed)" }
        do {
            try hersheyGeneration.ensure(in: workload.hersheyDir, layout: layout)
        } catch {
            return "n/a (\(error))"
        }
        return nil
    }

    var hersheyGeneration: Generation { Generation(replicas: 4, strokes: 2500, points: nil, hershey: hersheyText) }

    func runHershey() -> ChildResult {
        if let error = ensureHersheyWorkload() { return ChildResult(error: error) }
        let generation = hersheyGeneration
        var result = runChild(.hershey, input: workload.hersheyDir)
        if result.ok, case .object(var pairs) = result.extra {
            pairs.append(("generator", .string("gen_session.py " + generation.description + " --out " + workload.hersheyDir)))
            result.extra = .object(pairs)
        }
        return result
    }

    /// The residual coder on the standard session and on Hershey handwriting (the row's
    /// stroke ids do not matter: it codes the four real columns only).
    func runResidualCoder() {
        rows.append((RowName.residualCoder.rawValue, runChild(.residualCoder)))
        if let error = ensureHersheyWorkload() {
            rows.append(("residualCoderHershey", ChildResult(error: error)))
        } else {
            rows.append(("residualCoderHershey", runChild(.residualCoder, input: workload.hersheyDir, label: "residualCoder on Hershey")))
        }
    }

    func runPrecision() {
        for precisionCase in PrecisionCase.all {
            let dir: String
            switch precisionCase.key {
            case "2dp": dir = workload.dir
            case "hershey": dir = workload.hersheyDir
            default: dir = workload.precisionDir(precisionCase.key)
            }
            do {
                try precisionCase.generation.ensure(in: dir, layout: layout)
            } catch {
                precision.append((precisionCase, ChildResult(error: "\(error)")))
                continue
            }
            precision.append((precisionCase, runChild(.precision, input: dir, label: "precision \(precisionCase.key)")))
        }
    }

    func runGrowth() {
        var byDirectory: [String: ChildResult] = [:]
        for growthCase in GrowthCase.all where !growthCase.large || options.growthLarge {
            let g = growthCase.generation
            let standard = g.replicas == 4 && g.strokes == 2500 && g.points == 200 && g.seed == 1
            let dir = standard ? workload.dir : workload.growthDir + "/r\(g.replicas)-s\(g.strokes)"
            if let known = byDirectory[dir] {
                growth.append((growthCase, known))
                continue
            }
            do {
                try g.ensure(in: dir, layout: layout)
            } catch {
                growth.append((growthCase, ChildResult(error: "\(error)")))
                continue
            }
            let result = runChild(.growth, input: dir, label: "growth \(growthCase.label)")
            byDirectory[dir] = result
            growth.append((growthCase, result))
        }
    }

    /// The commit the library was built from, and how many files under Sources/ differ from
    /// it (read-only git: `rev-parse`, and `status` without optional locks).
    lazy var source: (commit: String, modified: Int) = {
        let commit = (try? Spawn.run(["git", "-C", layout.repoRoot, "rev-parse", "--short=12", "HEAD"], stdout: .capture))
            .map { $0.text.trimmingSpaces } ?? ""
        let status = (try? Spawn.run(["git", "--no-optional-locks", "-C", layout.repoRoot, "status", "--porcelain", "--", "Sources"],
                                     stdout: .capture))?.text ?? ""
        return (commit.isEmpty ? "unknown" : commit, status.split(separator: "\n").count)
    }()

    // MARK: Targets and ratios

    struct Target {
        var key: String
        var text: String
        var value: Double?
        var met: Bool?
    }

    var mergeVsInflate: Double? {
        guard let merge = result(.mergeReconstruct).median, let inflate = result(.bareInflate).median else { return nil }
        return merge / inflate
    }

    /// `journal record` of the workload ÷ `gzip -1` of the same files, timed in the same row.
    var cliVsGzip: Double? {
        let cli = result(.cliRecord)
        guard let record = cli.median, let gzip = cli.median("gzip1Seconds"), gzip > 0 else { return nil }
        return record / gzip
    }

    var targets: [Target] {
        let record = result(.recordLibrary)
        let merge = result(.mergeReconstruct)
        let snapshot = result(.snapshotOpen)
        let bpp = record.double("bytesPerPoint")
        let rss = merge.peakRSSBytes.map(Double.init)
        let append = result(.append).double("pointsPerSecond")
        let speedup = snapshot.double("speedup")
        let snapshotBytes = snapshot.double("snapshotVsJournalBytes")
        let cliRead = result(.cliRead)
        let integrate = result(.live).double("integrateVsFullReplay")
        let boardP99 = liveLatency("board", "p99Micros")
        let pacedP99 = liveLatency("boardPaced", "p99Micros")
        let falling = result(.liveClockOrder).double("fallingVsRising")
        return [
            Target(key: "bytesPerPoint", text: "≤ 2.5 B/pt", value: bpp, met: bpp.map { $0 <= 2.5 }),
            Target(key: "mergeReconstructSeconds", text: "≤ 0.25 s", value: merge.median, met: merge.median.map { $0 <= 0.25 }),
            Target(key: "mergeReconstructVsBareInflate", text: "≤ 2× bare inflate", value: mergeVsInflate, met: mergeVsInflate.map { $0 <= 2 }),
            Target(key: "mergeReconstructPeakRSSBytes", text: "≤ 150 MB", value: rss, met: rss.map { $0 <= 150e6 }),
            Target(key: "cliRecordSeconds", text: "≤ 3 s", value: result(.cliRecord).median, met: result(.cliRecord).median.map { $0 <= 3 }),
            Target(key: "cliRecordVsGzip1", text: "≤ 0.6× gzip -1", value: cliVsGzip, met: cliVsGzip.map { $0 <= 0.6 }),
            Target(key: "appendPointsPerSecond", text: "≥ 5 M pt/s", value: append, met: append.map { $0 >= 5e6 }),
            Target(key: "snapshotSpeedup", text: "≥ 10× faster", value: speedup, met: speedup.map { $0 >= 10 }),
            Target(key: "snapshotVsJournalBytes", text: "≤ 2× the segments", value: snapshotBytes, met: snapshotBytes.map { $0 <= 2 }),
            Target(key: "cliStrokesSeconds", text: "≤ 0.35 s", value: cliRead.median, met: cliRead.median.map { $0 <= 0.35 }),
            Target(key: "cliDigestSeconds", text: "≤ 0.15 s", value: cliRead.median("digestSeconds"),
                   met: cliRead.median("digestSeconds").map { $0 <= 0.15 }),
            Target(key: "liveIntegrateVsFullReplay", text: "≤ 2% of full replay", value: integrate, met: integrate.map { $0 <= 0.02 }),
            Target(key: "boardAppendP99Micros", text: "p99 ≤ 50 µs", value: boardP99, met: boardP99.map { $0 <= 50 }),
            Target(key: "boardPacedAppendP99Micros", text: "p99 ≤ 50 µs", value: pacedP99, met: pacedP99.map { $0 <= 50 }),
            Target(key: "liveFallingVsRising", text: "≤ 1.5× rising", value: falling, met: falling.map { $0 <= 1.5 }),
        ]
    }

    /// A value of the `live` row's `appendLatency` object: series "board", "writer",
    /// "boardPaced", "writerPaced"; keys "p50Micros", "p99Micros", "p999Micros", "maxMicros".
    func liveLatency(_ series: String, _ key: String) -> Double? {
        let live = result(.live)
        guard live.ok else { return nil }
        return live.extra["appendLatency"]?[series]?[key]?.doubleValue
    }

    func target(_ key: String) -> String {
        guard let target = targets.first(where: { $0.key == key }) else { return "" }
        let verdict = target.met.map { $0 ? "ok" : "MISS" } ?? "n/a"
        return "\(target.text): \(verdict)"
    }

    var ratios: [(String, Double?)] {
        let record = result(.recordLibrary)
        let merge = result(.mergeReconstruct)
        let plain = result(.ndjsonPlain)
        let deflated = result(.ndjsonDeflate)
        let sync = result(.sync)
        func divide(_ a: Double?, _ b: Double?) -> Double? {
            guard let a, let b, b != 0 else { return nil }
            return a / b
        }
        return [
            ("mergeReconstructVsBareInflate", mergeVsInflate),
            ("cliRecordVsGzip1", cliVsGzip),
            ("mergeReconstructVsPlainRead", divide(merge.median, result(.plainRead).median)),
            ("recordLibraryVsParse", divide(record.median, result(.parse).median)),
            ("ndjsonPlainBytesVsJournal", divide(plain.double("bytesPerPoint"), record.double("bytesPerPoint"))),
            ("ndjsonDeflateBytesVsJournal", divide(deflated.double("bytesPerPoint"), record.double("bytesPerPoint"))),
            ("ndjsonPlainSecondsVsMergeReconstruct", divide(plain.median, merge.median)),
            ("ndjsonDeflateSecondsVsMergeReconstruct", divide(deflated.median, merge.median)),
            ("syncIncrementalVsFull", divide(sync.median("incrementalSeconds"), sync.median)),
            ("syncNoopVsFull", divide(sync.median("noopSeconds"), sync.median)),
            ("snapshotSpeedup", result(.snapshotOpen).double("speedup")),
            ("snapshotVsJournalBytes", result(.snapshotOpen).double("snapshotVsJournalBytes")),
            ("snapshotSpeedupCeiling", result(.snapshotOpen).double("speedupCeiling")),
            ("residualCoderBytesVsDeflate", result(.residualCoder).double("shortBytesRatio")),
            ("residualCoderDecodeVsInflate", result(.residualCoder).double("shortDecodeRatio")),
            ("residualCoderHersheyBytesVsDeflate", rows.first { $0.0 == "residualCoderHershey" }?.1.double("shortBytesRatio")),
            ("residualCoderHersheyDecodeVsInflate", rows.first { $0.0 == "residualCoderHershey" }?.1.double("shortDecodeRatio")),
            ("cliStrokesVsGunzip", result(.cliRead).double("strokesVsGunzip")),
            ("cliDigestVsGunzip", result(.cliRead).double("digestVsGunzip")),
            ("bareDeflateVsBareInflate", divide(result(.bareDeflate).median, result(.bareInflate).median)),
            ("liveIntegrateVsFullReplay", result(.live).double("integrateVsFullReplay")),
            ("liveExtraReplicaIntegrateVsFullReplay", result(.live).double("extraReplicaIntegrateVsFullReplay")),
            ("boardVsWriterAppendP99", divide(liveLatency("board", "p99Micros"), liveLatency("writer", "p99Micros"))),
            ("boardVsWriterPacedAppendP99", divide(liveLatency("boardPaced", "p99Micros"), liveLatency("writerPaced", "p99Micros"))),
            ("liveFallingVsRising", result(.liveClockOrder).double("fallingVsRising")),
            ("liveShuffledVsRising", result(.liveClockOrder).double("shuffledVsRising")),
            ("liveFallingStrokesVsRisingStrokes", result(.liveClockOrder).double("fallingStrokesVsRisingStrokes")),
            ("liveCatchUpFallingVsRising", result(.liveClockOrder).double("catchUpFallingVsRising")),
            ("boardVsWriterEventsPerSecond", divide(result(.live).double("boardEventsPerSecond"), result(.live).double("writerEventsPerSecond"))),
        ]
    }

    func digestEquals(_ row: RowName) -> Bool? {
        guard let mine = result(row).string("digest"), let journal = result(.mergeReconstruct).string("digest") else { return nil }
        return mine == journal
    }

    // MARK: Output

    var machineLine: String {
        "\(Machine.cpuModel), \(Machine.cores) cores, \(formatBytes(Machine.memoryBytes)) RAM"
    }

    func renderTable() -> String {
        var out = "StrokeJournal benchmark — \(Clock.utcTimestamp()) — \(machineLine)\n"
        let record = result(.recordLibrary)
        let points = record.int("points") ?? result(.parse).int("points")
        out += "workload: \(workload.dir): \(record.int("replicas").map(String.init) ?? "?") replicas, "
        out += "\(points.map(grouped) ?? "?") points, \(record.int("events").map(grouped) ?? "?") events, "
        out += "\(formatBytes(record.int("ndjsonBytes"))) of NDJSON\n"
        out += "library: commit \(source.commit)" + (source.modified > 0 ? " + \(source.modified) modified or new file(s) under Sources/ (working tree at build time)\n" : "\n")
        out += "each timed row: median and min wall time of \(options.repeats) runs in a child process, median CPU time (user + sys); "
        out += "peak RSS = that child's ru_maxrss; 1 MB = 10^6 B\n"
        let loads = rows.compactMap { $0.1.loadBefore?.oneMinute }
        if let highest = loads.max() {
            out += "load average (1 min) before the rows: \(fixed(loads.min()!, 2))…\(fixed(highest, 2)) on \(Machine.cores) cores"
            out += highest > 0.5 ? " (other work was running: compare the min column)\n\n" : "\n\n"
        } else {
            out += "\n"
        }

        var table = Table(["row", "median", "min", "cpu", "derived", "peak RSS", "target (not asserted)"],
                          alignments: [.left, .right, .right, .right, .left, .right, .left])
        func timed(_ label: String, _ row: RowName, derived: String = "", rss: Int?? = nil, target: String = "") {
            let r = result(row)
            if let error = r.error { table.add(["  " + label, "", "", "", error, "", target]); return }
            table.add(["  " + label, formatSeconds(r.median), formatSeconds(r.minimum), formatSeconds(r.cpuMedian), derived,
                       formatBytes(rss ?? r.peakRSSBytes), target])
        }
        func series(_ label: String, _ row: RowName, _ key: String, derived: String = "", target: String = "") {
            let r = result(row)
            guard r.ok, let runs = r.extra[key]?.doubles, !runs.isEmpty else { return }
            table.add(["  " + label, formatSeconds(median(runs)), formatSeconds(runs.min()), "", derived, "", target])
        }
        func value(_ label: String, derived: String, target: String = "") {
            table.add(["  " + label, "", "", "", derived, "", target])
        }
        func rate(_ count: Int?, _ seconds: Double?, _ unit: String) -> String {
            guard let count, let seconds, seconds > 0 else { return "" }
            if unit.hasPrefix("B/s") { return formatBytes(Int(Double(count) / seconds)) + unit.dropFirst() }
            return formatCount(Double(count) / seconds) + unit
        }
        func times(_ a: Double?, _ b: Double?, _ what: String) -> String {
            guard let a, let b, b > 0 else { return "" }
            return formatRatio(a / b) + " " + what
        }

        table.section("this project")
        if record.ok {
            var derived = "\(fixed(record.double("bytesPerPoint") ?? .nan, 3)) B/pt (\(formatBytes(record.int("sealedBytes"))) in "
            derived += "\(record.int("sealedSegments") ?? 0) segments; \(fixed(record.double("bytesPerEvent") ?? .nan, 3)) B/event)"
            value("bytes/point on disk, sealed", derived: derived, target: target("bytesPerPoint"))
        }
        timed("record via library (4 files)", .recordLibrary,
              derived: rate(record.int("points"), record.median, "pt/s"))
        let parse = result(.parse)
        timed("parse only (NDJSONReader)", .parse,
              derived: rate(parse.int("points"), parse.median, "pt/s, ") + rate(parse.int("ndjsonBytes"), parse.median, "B/s"))
        let parseLines = result(.parseLines)
        timed("parse only, next() per line (as `record`)", .parseLines,
              derived: rate(parseLines.int("points"), parseLines.median, "pt/s, ") + rate(parseLines.int("ndjsonBytes"), parseLines.median, "B/s"))
        let append = result(.append)
        timed("library append + close (pre-parsed)", .append,
              derived: rate(append.int("points"), append.median, "pt/s"), target: target("appendPointsPerSecond"))
        series("the same, append(contentsOf:) 8,192 at a time (same row)", .append, "batchedSeconds",
               derived: rate(append.int("points"), append.extra["batchedSeconds"]?.doubles.map(median), "pt/s"))
        let cli = result(.cliRecord)
        timed("`journal record` CLI (4 files)", .cliRecord,
              derived: cli.ok ? "peak RSS: the CLI's" : "",
              rss: cli.int("cliPeakRSSBytes"), target: target("cliRecordSeconds"))
        series("`gzip -1 -c` of the same files (same row)", .cliRecord, "gzip1Seconds",
               derived: cliVsGzip.map { "record ÷ gzip -1: " + formatRatio($0) } ?? "", target: target("cliRecordVsGzip1"))
        let merge = result(.mergeReconstruct)
        timed("merge + reconstruct", .mergeReconstruct,
              derived: merge.ok ? "load \(formatSeconds(merge.median("loadSeconds"))); \(formatRatio(mergeVsInflate)) bare inflate" : "",
              target: target("mergeReconstructSeconds") + ", " + target("mergeReconstructPeakRSSBytes"))
        series("digest (drawing.digest)", .mergeReconstruct, "digestSeconds",
               derived: merge.int("points").map { "\(grouped($0)) points, \(merge.int("strokes") ?? 0) strokes" } ?? "")
        let sync = result(.sync)
        timed("sync: full first (fresh journal)", .sync, derived: "1×")
        series("sync: incremental after +1%", .sync, "incrementalSeconds",
               derived: times(sync.median("incrementalSeconds"), sync.median, "full"))
        series("sync: no-op", .sync, "noopSeconds", derived: times(sync.median("noopSeconds"), sync.median, "full"))
        let snapshot = result(.snapshotOpen)
        if snapshot.ok, snapshot.string("status") == "measured" {
            timed("open from snapshot (+1% since)", .snapshotOpen,
                  derived: "\(formatRatio(snapshot.double("speedup"))) faster than useSnapshots: false (\(formatSeconds(snapshot.median("fullReplaySeconds"))))",
                  target: target("snapshotSpeedup"))
            value("open's floor: list segments + write the points", derived:
                    "\(formatSeconds(snapshot.median("segmentSetSeconds"))) + \(formatSeconds(snapshot.median("materialiseSeconds"))): at most \(formatRatio(snapshot.double("speedupCeiling"))) faster, decoding free")
            value("snapshot size", derived: "\(formatBytes(snapshot.int("snapshotBytes"))) = \(formatRatio(snapshot.double("snapshotVsJournalBytes"))) the segments (\(formatBytes(snapshot.int("journalBytes"))))",
                  target: target("snapshotVsJournalBytes"))
        } else {
            value("open from snapshot", derived: snapshot.string("status") ?? snapshot.error ?? "n/a", target: target("snapshotSpeedup"))
        }
        let cliRead = result(.cliRead)
        timed("`journal strokes > file` (2nd open)", .cliRead,
              derived: cliRead.ok ? "\(formatRatio(cliRead.double("strokesVsGunzip"))) `gzip -dc` of the NDJSON.gz (\(formatSeconds(cliRead.median("gunzipSeconds")))); \(formatBytes(cliRead.int("outputBytes"))) out; 1st open \(formatSeconds(cliRead.median("firstStrokesSeconds")))" : "",
              target: target("cliStrokesSeconds"))
        series("`journal digest` (snapshot valid)", .cliRead, "digestSeconds",
               derived: "\(formatRatio(cliRead.double("digestVsGunzip"))) `gzip -dc`", target: target("cliDigestSeconds"))
        series("`journal digest` (no snapshot)", .cliRead, "digestNoSnapshotSeconds", derived: "full replay + hash + writes the snapshot")

        if wanted(.live) && rows.contains(where: { $0.0 == RowName.live.rawValue }) {
            let live = result(.live)
            table.section("live boards (JournalLive): +1% arriving as new sealed segments; Board.append on the caller's thread")
            if let error = live.error {
                value("live", derived: error)
            } else {
                func arrival(_ prefix: String, _ label: String) {
                    func key(_ name: String) -> String { prefix.isEmpty ? name : prefix + name.prefix(1).uppercased() + name.dropFirst() }
                    let ratio = live.double(key("integrateVsFullReplay"))
                    let cpuRatio = live.double(key("integrateVsFullReplayCPU"))
                    let derived = "\(ratio.map { fixed($0 * 100, 2) + "%" } ?? "n/a") of full replay (CPU: \(cpuRatio.map { fixed($0 * 100, 2) + "%" } ?? "n/a")); "
                        + "\(grouped(live.int(key("newEvents")) ?? 0)) events in \(live.int(key("newSegments")) ?? 0) segments: "
                        + "\(fixed(live.double(key("integrateNanosPerEvent")) ?? .nan, 0)) ns/event (apply \(fixed(live.double(key("applyNanosPerEvent")) ?? .nan, 0))) "
                        + "vs \(fixed(live.double(key("fullReplayNanosPerEvent")) ?? .nan, 0)) ns/event replayed; "
                        + (live.bool(key("digestOk")) == true ? "digest ok" : "DIGEST MISMATCH")
                    let verdict = prefix.isEmpty ? target("liveIntegrateVsFullReplay")
                        : "≤ 2%: " + ((ratio ?? .infinity) <= 0.02 ? "ok" : "MISS")
                    if prefix.isEmpty {
                        timed(label, .live, derived: derived, target: verdict)
                    } else {
                        series(label, .live, key("integrateSeconds"), derived: derived, target: verdict)
                    }
                    series("  full replay (Replay.load, no snapshots)", .live, key("fullReplaySeconds"),
                           derived: "\(grouped(live.int(key("totalEvents")) ?? 0)) events, CPU \(formatSeconds(live.median(key("fullReplayCPUSeconds")))); readNew \(formatSeconds(live.median(key("readNewSeconds")))), "
                            + "apply \(formatSeconds(live.median(key("applySeconds"))))")
                }
                arrival("", "readNew + integrate: last 1% of each replica")
                arrival("extraReplica", "readNew + integrate: +1% session, 5th replica")
                func latency(_ series: String, _ label: String, target text: String = "") {
                    func micros(_ key: String) -> String {
                        guard let value = liveLatency(series, key) else { return "-" }
                        return value >= 1000 ? formatSeconds(value / 1e6) : significant(value) + " µs"
                    }
                    let appends = (live.extra["appendLatency"]?[series]?["appends"]?.intValue).map(grouped) ?? "?"
                    var derived = "p50 \(micros("p50Micros")), p99 \(micros("p99Micros")), p99.9 \(micros("p999Micros")), max \(micros("maxMicros")) "
                    derived += "(\(appends) appends"
                    if let rate = live.double(series + "EventsPerSecond") { derived += ", " + formatCount(rate) + "events/s" }
                    derived += ")"
                    table.add(["  " + label, "", "", "", derived, "", text])
                }
                latency("board", "Board.append, full speed", target: target("boardAppendP99Micros"))
                latency("writer", "Committer.Recording.append, full speed (baseline)")
                latency("boardPaced", "Board.append, 240 Hz for 5 s", target: target("boardPacedAppendP99Micros"))
                latency("writerPaced", "Committer.Recording.append, 240 Hz (baseline)")
                series("Board: final `await flush()` (full speed)", .live, "boardFlushSeconds",
                       derived: "then close (seals): \(formatSeconds(live.median("boardCloseSeconds")))")
                series("Committer.Recording: final flush() (full speed)", .live, "writerFlushSeconds",
                       derived: "then close (seals): \(formatSeconds(live.median("writerCloseSeconds")))")
            }
        }

        if rows.contains(where: { $0.0 == RowName.liveClockOrder.rawValue }) {
            let order = result(.liveClockOrder)
            table.section("LiveDrawing.apply and the order of clocks: \(grouped(order.int("points") ?? 0)) events, one replica")
            if let error = order.error {
                value("liveClockOrder", derived: error)
            } else {
                let check = order.bool("digestOk") == true ? "digest = Fold's" : "DIGEST ≠ Fold's"
                series("one stroke, clocks rising", .liveClockOrder, "risingSeconds",
                       derived: "\(fixed(order.double("risingNanosPerPoint") ?? .nan, 0)) ns/point")
                timed("one stroke, clocks falling", .liveClockOrder,
                      derived: "\(formatRatio(order.double("fallingVsRising"))) rising; \(fixed(order.double("fallingNanosPerPoint") ?? .nan, 0)) ns/point; \(check)",
                      target: target("liveFallingVsRising"))
                series("one stroke, clocks shuffled", .liveClockOrder, "shuffledSeconds",
                       derived: "\(formatRatio(order.double("shuffledVsRising"))) rising")
                series("one-point strokes, clocks rising", .liveClockOrder, "risingStrokesSeconds")
                series("one-point strokes, clocks falling", .liveClockOrder, "fallingStrokesSeconds",
                       derived: "\(formatRatio(order.double("fallingStrokesVsRisingStrokes"))) rising (z-order)")
                series("decode a segment + fold, clocks rising", .liveClockOrder, "catchUpRisingSeconds")
                series("decode a segment + fold, clocks falling", .liveClockOrder, "catchUpFallingSeconds",
                       derived: "\(formatRatio(order.double("catchUpFallingVsRising"))) rising")
            }
        }

        table.section("baselines a user would write instead (same events)")
        let plain = result(.ndjsonPlain)
        let deflated = result(.ndjsonDeflate)
        let journalBPP = record.double("bytesPerPoint")
        if plain.ok {
            value("NDJSON: size", derived: "\(fixed(plain.double("bytesPerPoint") ?? .nan, 2)) B/pt = "
                  + times(plain.double("bytesPerPoint"), journalBPP, "the journal"))
        }
        let plainDigest = digestEquals(.ndjsonPlain).map { $0 ? "digest = journal's" : "digest ≠ journal's" } ?? ""
        timed("NDJSON: read + parse + fold", .ndjsonPlain,
              derived: times(plain.median, merge.median, "merge+reconstruct") + "; " + plainDigest)
        if deflated.ok {
            value("NDJSON+deflate-6: size", derived: "\(fixed(deflated.double("bytesPerPoint") ?? .nan, 2)) B/pt = "
                  + times(deflated.double("bytesPerPoint"), journalBPP, "the journal")
                  + " (deflating took \(formatSeconds(deflated.median("deflateSeconds"))))")
        }
        timed("NDJSON+deflate-6: inflate+parse+fold", .ndjsonDeflate,
              derived: times(deflated.median, merge.median, "merge+reconstruct")
                + "; inflate \(formatSeconds(deflated.median("inflateSeconds")))")

        table.section("the physical limit (same blocks as the merged journal)")
        let inflate = result(.bareInflate)
        timed("bare inflate of the stored blocks", .bareInflate,
              derived: "\(inflate.int("blocks") ?? 0) blocks, \(formatBytes(inflate.int("compressedBytes"))) → \(formatBytes(inflate.int("rawBytes"))), "
                + rate(inflate.int("rawBytes"), inflate.median, "B/s raw"))
        let deflate = result(.bareDeflate)
        timed("bare deflate-6 of the block bodies", .bareDeflate,
              derived: times(deflate.median, inflate.median, "bare inflate") + "; \(formatBytes(deflate.int("compressedBytes"))) (stored: \(formatBytes(deflate.int("storedCompressedBytes"))))")
        let read = result(.plainRead)
        timed("plain read(2) of the segment files", .plainRead,
              derived: "\(read.int("files") ?? 0) files, \(formatBytes(read.int("bytes"))), " + rate(read.int("bytes"), read.median, "B/s"))
        value("merge + reconstruct ÷ bare inflate", derived: formatRatio(mergeVsInflate), target: target("mergeReconstructVsBareInflate"))

        table.section("checks")
        let check = result(.digestCheck)
        if check.ok {
            var text = check.bool("equalWallTimeZero") == true ? "equal" : "differs"
            if check.bool("equalWallTimeZero") == false {
                text += ": \(check.int("strokesInDifferentPosition") ?? -1) strokes in another z-position, "
                text += "\(check.int("strokesWithDifferentVisibility") ?? -1) visibility, \(check.int("strokesWithDifferentContent") ?? -1) content"
            }
            value("digest: NDJSON fold (wallTime 0) = journal?", derived: text)
            value("digest: NDJSON fold (journal's envelopes)", derived: check.bool("equalJournalEnvelopes") == true
                  ? "equal" : "DIFFER: a bug (same events and envelopes must give the same drawing)")
            let events = check.int("journalEvents") ?? 0
            value("journal events whose lamport = seq", derived: "\(grouped(check.int("journalEventsWithLamportEqualSeq") ?? 0)) of \(grouped(events))")
        } else {
            value("digest check", derived: check.error ?? "")
        }
        let baseline = result(.processBaseline)
        value("process baseline (empty row child)", derived: "peak RSS \(formatBytes(baseline.peakRSSBytes))")

        if !options.quick && wanted(.hershey) {
            let hershey = result(.hershey)
            table.section("hershey: gen_session.py --replicas 4 --strokes 2500 --seed 1 --hershey \"\(hersheyText)\"")
            if let error = hershey.error {
                value("hershey", derived: error)
            } else {
                value("bytes/point on disk, sealed", derived: "\(fixed(hershey.double("bytesPerPoint") ?? .nan, 3)) B/pt ("
                      + "\(grouped(hershey.int("points") ?? 0)) points, \(formatBytes(hershey.int("sealedBytes"))))", target: "≤ 2.5 B/pt: "
                      + ((hershey.double("bytesPerPoint") ?? .infinity) <= 2.5 ? "ok" : "MISS"))
                series("merge + reconstruct", .hershey, "replaySeconds",
                       derived: "\(hershey.int("strokes").map(grouped) ?? "?") strokes, \(fixed(Double(hershey.int("points") ?? 0) / Double(max(hershey.int("strokes") ?? 1, 1)), 1)) points/stroke")
                timed("record via library, 4 files", .hershey, derived: rate(hershey.int("points"), hershey.median, "pt/s"))
            }
        }
        if (!options.quick || options.only != nil) && wanted(.residualCoder) {
            table.section("residual coder (no format uses it): LZMA-style adaptive binary range coder vs deflate-6 of the same residuals, x y pressure t")
            for (key, label) in [("residualCoder", "standard"), ("residualCoderHershey", "hershey")] {
                let coder = rows.first { $0.0 == key }?.1 ?? ChildResult(error: "not run")
                if let error = coder.error {
                    value("  " + label, derived: error)
                    continue
                }
                let values = Double(max(coder.int("values") ?? 1, 1))
                value("  \(label): four columns, deflate", derived: "\(fixed(coder.double("deflateBytesPerPoint") ?? .nan, 3)) B/pt, "
                      + "inflate + varints \(fixed((coder.median("inflateSeconds") ?? .nan) * 1e9 / values, 1)) ns/value (\(grouped(coder.int("points") ?? 0)) points, one core)")
                for shape in AdaptiveResidualCoder.Shape.allCases.map(\.rawValue) {
                    value("  \(label): range coder, \(shape)", derived: "\(fixed(coder.double(shape + "BytesPerPoint") ?? .nan, 3)) B/pt "
                          + "(\(fixed(coder.double(shape + "BytesRatio") ?? .nan, 3))×), "
                          + "\(fixed((coder.median(shape + "DecodeSeconds") ?? .nan) * 1e9 / values, 1)) ns/value "
                          + "(\(fixed(coder.double(shape + "DecodeRatio") ?? .nan, 2))×)")
                }
            }
        }
        out += table.render()

        if !growth.isEmpty {
            out += "\ngrowth (record via library, merge + reconstruct, a fresh journal's first sync; median of \(min(options.repeats, 3)))\n"
            var table = Table(["case", "points", "NDJSON", "B/pt", "record", "s/Mpt", "replay", "s/Mpt", "sync first", "s/Mpt", "peak RSS"],
                              alignments: [.left, .right, .right, .right, .right, .right, .right, .right, .right, .right, .right])
            for (growthCase, r) in growth {
                if let error = r.error { table.add(["  " + growthCase.label, error]); continue }
                let millions = Double(r.int("points") ?? 0) / 1e6
                func perM(_ seconds: Double?) -> String { seconds.map { fixed($0 / millions, 3) } ?? "-" }
                table.add(["  " + growthCase.label, grouped(r.int("points") ?? 0), formatBytes(r.int("ndjsonBytes")),
                           fixed(r.double("bytesPerPoint") ?? .nan, 3),
                           formatSeconds(r.median), perM(r.median),
                           formatSeconds(r.median("replaySeconds")), perM(r.median("replaySeconds")),
                           formatSeconds(r.median("syncFirstSeconds")), perM(r.median("syncFirstSeconds")),
                           formatBytes(r.peakRSSBytes)])
            }
            out += table.render()
            if !options.growthLarge { out += "(4× and 64-replica cases: --growth-large)\n" }
        }
        if !precision.isEmpty {
            out += "\nformat v1 vs v2 by precision mode (gen_session.py --replicas 4 --strokes 2500 [--points 200] --seed 1 --precision MODE;"
            out += " library encode of sealed segments, replay from files; median of \(options.repeats); ratios in the same run)\n"
            var table = Table(["mode", "points", "gzip NDJSON", "v1 B/pt", "v2 B/pt", "target", "v2÷v1 encode", "v2÷v1 replay", "v2 replay s/Mpt", "same digest"],
                              alignments: [.left, .right, .right, .right, .right, .right, .right, .right, .right, .right])
            for (precisionCase, r) in precision {
                if let error = r.error { table.add(["  " + precisionCase.key, error]); continue }
                let millions = Double(r.int("points") ?? 0) / 1e6
                func ratio(_ key: String) -> String {
                    guard let v1 = r.median("v1" + key), let v2 = r.median("v2" + key), v1 > 0 else { return "-" }
                    return fixed(v2 / v1, 2) + "×"
                }
                let v2 = r.double("v2BytesPerPoint") ?? .nan
                table.add(["  " + precisionCase.key, grouped(r.int("points") ?? 0), fixed(r.double("ndjsonGzipBytesPerPoint") ?? .nan, 2),
                           fixed(r.double("v1BytesPerPoint") ?? .nan, 3), fixed(v2, 3),
                           "≤ \(fixed(precisionCase.target, 1)) " + (v2 <= precisionCase.target ? "ok" : "MISS"),
                           ratio("EncodeSeconds"), ratio("ReplaySeconds"),
                           r.median("v2ReplaySeconds").map { fixed($0 / millions, 3) } ?? "-",
                           r.bool("sameDigest") == true ? "yes" : "NO"])
            }
            out += table.render()
        }
        out += "\njournal CLI timed: \(journalBinary), built \(Files.exists(journalBinary) ? utcTimestamp(Files.modified(journalBinary)) : "?")\n"
        if result(.snapshotOpen).string("status")?.hasPrefix("n/a") == true {
            out += "snapshot row: enable with `.define(\"SNAPSHOTS\")` in Tools/bench/engine/Package.swift once JournalReplay has SnapshotStore\n"
        }
        out += "total: \(formatSeconds(Clock.now() - started))\n"
        return out
    }

    func resultJSON() -> JSON {
        var root = JSONObject()
        root["schema"] = .string("strokejournal-bench/1")
        root["date"] = .string(Clock.utcTimestamp())
        var machine = JSONObject()
        machine["cores"] = .int(Machine.cores)
        machine["cpuModel"] = .string(Machine.cpuModel)
        machine["memoryBytes"] = .int(Machine.memoryBytes)
        root["machine"] = machine.json
        root["command"] = .string((["journal-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " "))
        root["repeat"] = .int(options.repeats)
        root["quick"] = .bool(options.quick)
        var load = JSONObject()
        let record = result(.recordLibrary)
        load["dir"] = .string(workload.dir)
        load["generator"] = .string("gen_session.py " + Generation.standard.description)
        load["extraGenerator"] = .string("gen_session.py " + Generation.extra.description)
        load["replicas"] = record.extra["replicas"] ?? .null
        load["points"] = record.extra["points"] ?? .null
        load["events"] = record.extra["events"] ?? .null
        load["ndjsonBytes"] = record.extra["ndjsonBytes"] ?? .null
        root["workload"] = load.json
        root["journalBinary"] = .string(journalBinary)
        root["journalBinaryModified"] = .string(Files.exists(journalBinary) ? utcTimestamp(Files.modified(journalBinary)) : "")
        var sourceObject = JSONObject()
        sourceObject["commit"] = .string(source.commit)
        sourceObject["modifiedSourceFiles"] = .int(source.modified)
        root["source"] = sourceObject.json

        var rowObject = JSONObject()
        for (name, row) in rows {
            var json = row.json
            if let kind = RowName(rawValue: name), kind == .ndjsonPlain || kind == .ndjsonDeflate, case .object(var pairs) = json {
                pairs.append(("digestEqualsJournal", digestEquals(kind).map(JSON.bool) ?? .null))
                json = .object(pairs)
            }
            rowObject[name] = json
        }
        root["rows"] = rowObject.json

        var ratioObject = JSONObject()
        for (key, value) in ratios { ratioObject[key] = value.map { .number($0, decimals: 5) } ?? .null }
        root["ratios"] = ratioObject.json

        var targetObject = JSONObject()
        for target in targets {
            var object = JSONObject()
            object["target"] = .string(target.text)
            object["value"] = target.value.map { .number($0, decimals: 5) } ?? .null
            object["met"] = target.met.map(JSON.bool) ?? .null
            targetObject[target.key] = object.json
        }
        root["targets"] = targetObject.json

        root["precision"] = .array(precision.map { precisionCase, result in
            var object = JSONObject()
            object["mode"] = .string(precisionCase.key)
            object["generator"] = .string("gen_session.py " + precisionCase.generation.description)
            object["targetBytesPerPoint"] = .number(precisionCase.target, decimals: 2)
            object["result"] = result.json
            return object.json
        })
        root["growth"] = .array(growth.map { growthCase, result in
            var object = JSONObject()
            object["case"] = .string(growthCase.key)
            object["label"] = .string(growthCase.label)
            object["generator"] = .string("gen_session.py " + growthCase.generation.description)
            for (key, value) in result.json.objectValue ?? [] { object[key] = value }
            return object.json
        })
        root["totalSeconds"] = .number(Clock.now() - started, decimals: 3)
        return root.json
    }
}
