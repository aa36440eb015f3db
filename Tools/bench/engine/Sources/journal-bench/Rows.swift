import JournalCommit
import JournalCompression
import JournalFormat
import JournalIngest
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Every row a child process can run; the raw value is its name on the command line and its
/// key in the JSON.
enum RowName: String, CaseIterable {
    case processBaseline
    case recordLibrary
    case prepare
    case parse
    case parseLines
    case append
    case cliRecord
    case mergeReconstruct
    case sync
    case snapshotOpen
    case cliRead
    case ndjsonPlain
    case ndjsonDeflate
    case bareInflate
    case bareDeflate
    case plainRead
    case digestCheck
    case hershey
    case growth
    case precision
    case live
    case liveClockOrder
    case residualCoder
}

/// What a row child reports: the runs of its main timing, and row-specific values (arrays
/// whose key ends in "Seconds" are further timings, summarised like `seconds`).
struct RowOutput {
    var seconds: [Double] = []
    /// CPU time (user + system) of the same runs: less disturbed than wall time by other work
    /// on the machine, and lower than it where a row waits (fsync, child processes).
    var cpuSeconds: [Double] = []
    var extra = JSONObject()

    /// Runs `body` as one timed run of the row.
    mutating func time<T>(children: Bool = false, _ body: () throws -> T) rethrows -> T {
        let cpu = Clock.cpu(children: children)
        let (result, seconds) = try Clock.time(body)
        self.seconds.append(seconds)
        cpuSeconds.append(Clock.cpu(children: children) - cpu)
        return result
    }
}

/// Runs one row in this (child) process.
struct RowRunner {
    let name: RowName
    let workload: Workload
    let repeats: Int
    let journalBinary: String?
    /// The growth or Hershey workload, for those rows.
    let input: String?

    var fixtures: Fixtures { Fixtures(workload: workload) }

    func run() throws -> RowOutput {
        switch name {
        case .processBaseline: return RowOutput()
        case .recordLibrary: return try recordLibrary()
        case .prepare: return try prepare()
        case .parse: return try parse()
        case .parseLines: return try parseLines()
        case .append: return try append()
        case .cliRecord: return try cliRecord()
        case .mergeReconstruct: return try mergeReconstruct()
        case .sync: return try sync()
        case .snapshotOpen: return try snapshotOpen()
        case .cliRead: return try cliRead()
        case .ndjsonPlain: return try ndjsonPlain()
        case .ndjsonDeflate: return try ndjsonDeflate()
        case .bareInflate: return try bareInflate()
        case .bareDeflate: return try bareDeflate()
        case .plainRead: return try plainRead()
        case .digestCheck: return try digestCheck()
        case .live: return try live()
        case .liveClockOrder: return try liveClockOrder()
        case .residualCoder: return try residualCoder()
        case .precision:
            guard let input else { throw BenchError("row precision needs --input DIR") }
            return try precisionRow(Workload(input))
        case .hershey, .growth:
            guard let input else { throw BenchError("row \(name.rawValue) needs --input DIR") }
            return try scaleRow(Workload(input), repeats: name == .growth ? min(repeats, 3) : repeats)
        }
    }

    // MARK: This project

    /// NDJSONReader + `Committer.Recording` (default flush policy, no compaction) + close() for
    /// each file into a fresh journal; the last run's journals become the fixture the other rows use.
    func recordLibrary() throws -> RowOutput {
        let inputs = workload.inputs
        let scratch = fixtures.scratch("record")
        var output = RowOutput()
        var counts = Counts()
        for _ in 0..<repeats {
            try Files.removeTree(scratch)
            counts = try output.time { try recordJournals(inputs, under: scratch) }
        }
        let roots = inputs.indices.map { scratch + "/m\($0)" }
        let bytes = sealedBytes(roots)
        let segments = roots.flatMap(sealedFiles).count
        try fixtures.dropDerived()
        try Files.removeTree(fixtures.libRoot)
        try Files.rename(scratch, to: fixtures.libRoot)
        output.extra["points"] = .int(counts.points)
        output.extra["events"] = .int(counts.events)
        output.extra["replicas"] = .int(inputs.count)
        output.extra["ndjsonBytes"] = .int(inputs.reduce(0) { $0 + Files.size($1) })
        output.extra["sealedBytes"] = .int(bytes)
        output.extra["sealedSegments"] = .int(segments)
        output.extra["bytesPerPoint"] = .number(Double(bytes) / Double(max(counts.points, 1)), decimals: 4)
        output.extra["bytesPerEvent"] = .number(Double(bytes) / Double(max(counts.events, 1)), decimals: 4)
        return output
    }

    /// Untimed: the merged journal, m0 + 1%, the deflated NDJSON copies.
    func prepare() throws -> RowOutput {
        try fixtures.ensureMerged()
        _ = try fixtures.ensureExtraSegment()
        _ = try deflatedInputs()
        return RowOutput()
    }

    /// NDJSONReader over every file, payloads counted and dropped.
    func parse() throws -> RowOutput {
        var output = RowOutput()
        var counts = Counts()
        for _ in 0..<repeats {
            counts = try output.time { try countPayloads(workload.inputs) }
        }
        let bytes = workload.inputs.reduce(0) { $0 + Files.size($1) }
        let best = median(output.seconds)
        output.extra["points"] = .int(counts.points)
        output.extra["events"] = .int(counts.events)
        output.extra["ndjsonBytes"] = .int(bytes)
        output.extra["pointsPerSecond"] = .number(Double(counts.points) / best, decimals: 0)
        output.extra["bytesPerSecond"] = .number(Double(bytes) / best, decimals: 0)
        return output
    }

    /// NDJSONReader.next() over every file: a fresh payload array per line, the loop
    /// `journal record` runs; payloads counted and dropped.
    func parseLines() throws -> RowOutput {
        var output = RowOutput()
        var counts = Counts()
        for _ in 0..<repeats {
            counts = try output.time {
                var counts = Counts()
                for input in workload.inputs {
                    var reader = try NDJSONReader(path: input)
                    while let (_, payloads) = try reader.next() {
                        for payload in payloads { counts.add(payload) }
                    }
                }
                return counts
            }
        }
        let bytes = workload.inputs.reduce(0) { $0 + Files.size($1) }
        let best = median(output.seconds)
        output.extra["points"] = .int(counts.points)
        output.extra["events"] = .int(counts.events)
        output.extra["ndjsonBytes"] = .int(bytes)
        output.extra["pointsPerSecond"] = .number(Double(counts.points) / best, decimals: 0)
        output.extra["bytesPerSecond"] = .number(Double(bytes) / best, decimals: 0)
        return output
    }

    /// Payloads parsed beforehand; timed: `Committer.Recording` (default flush policy, no
    /// compaction) append + close per replica into fresh journals, one `append` per event
    /// (each reads the clock); then, in the same repeat, the same with
    /// `append(contentsOf:)` of 8,192 payloads at a time (`batchedSeconds`: one clock reading
    /// a batch, as `journal record` stamps the ~7,500 lines of one 1 MiB read).
    func append() throws -> RowOutput {
        var payloads: [[Payload]] = []
        var counts = Counts()
        for input in workload.inputs {
            var reader = try NDJSONReader(path: input)
            var all: [Payload] = []
            while try reader.next(appendingTo: &all) != nil {}
            for payload in all { counts.add(payload) }
            payloads.append(all)
        }
        let scratch = fixtures.scratch("append")
        var output = RowOutput()
        var batched: [Double] = []
        var batchedCPU: [Double] = []
        for _ in 0..<repeats {
            for batch in [false, true] {
                try Files.removeTree(scratch)
                try Files.makeDirectories(scratch)
                let journals = try payloads.indices.map { try JournalDirectory.create(at: scratch + "/m\($0)") }
                let run = {
                    for (journal, events) in zip(journals, payloads) {
                        let writer = try Committer.Recording(directory: journal, options: RecordingOptions(automaticCompaction: false))
                        if batch {
                            var start = 0
                            while start < events.count {
                                let end = min(events.count, start + 8_192)
                                try writer.append(contentsOf: events[start..<end])
                                start = end
                            }
                        } else {
                            for payload in events { try writer.append(payload) }
                        }
                        try writer.close()
                    }
                }
                if batch {
                    let cpu = Clock.cpu()
                    batched.append(try Clock.time(run).1)
                    batchedCPU.append(Clock.cpu() - cpu)
                } else {
                    try output.time(run)
                }
            }
        }
        try Files.removeTree(scratch)
        output.extra["batchedSeconds"] = .seconds(batched)
        output.extra["batchedCPUSeconds"] = .seconds(batchedCPU)
        output.extra["batchedPointsPerSecond"] = .number(Double(counts.points) / median(batched), decimals: 0)
        output.extra["points"] = .int(counts.points)
        output.extra["events"] = .int(counts.events)
        output.extra["pointsPerSecond"] = .number(Double(counts.points) / median(output.seconds), decimals: 0)
        output.extra["eventsPerSecond"] = .number(Double(counts.events) / median(output.seconds), decimals: 0)
        return output
    }

    /// `journal record -C mI replica-I.ndjson` for each file, one after the other, into
    /// journals made by `journal init` (not timed). Each run is followed by `gzip -1 -c` of the
    /// same files to /dev/null (`gzip1Seconds`), so that the two share the machine's load:
    /// the ratio is what a user compares against ("is recording cheaper than gzipping it?").
    func cliRecord() throws -> RowOutput {
        guard let binary = journalBinary, Files.exists(binary) else {
            throw BenchError("no journal binary (pass --journal-binary)")
        }
        let scratch = fixtures.scratch("cli")
        var output = RowOutput()
        var gzipRuns: [Double] = []
        for _ in 0..<repeats {
            gzipRuns.append(try Clock.time {
                for input in workload.inputs { try Spawn.check(["gzip", "-1", "-c", input], stdout: .discard) }
            }.1)
            try Files.removeTree(scratch)
            try Files.makeDirectories(scratch)
            for index in workload.inputs.indices {
                try Spawn.check([binary, "init", scratch + "/m\(index)"], stdout: .discard)
            }
            try output.time(children: true) {
                for (index, input) in workload.inputs.enumerated() {
                    try Spawn.check([binary, "record", "-C", scratch + "/m\(index)", input], stdout: .discard)
                }
            }
        }
        let roots = workload.inputs.indices.map { scratch + "/m\($0)" }
        output.extra["binary"] = .string(binary)
        output.extra["binaryModified"] = .int(Files.modified(binary))
        output.extra["sealedBytes"] = .int(sealedBytes(roots))
        output.extra["cliPeakRSSBytes"] = .int(Resources.childrenPeakRSSBytes())
        output.extra["gzip1Seconds"] = .seconds(gzipRuns)
        try Files.removeTree(scratch)
        return output
    }

    /// `Replay.replay(SegmentSet.load(dir))` on the merged journal; the digest timed apart.
    func mergeReconstruct() throws -> RowOutput {
        try fixtures.ensureMerged()
        let directory = JournalDirectory(root: fixtures.merged)
        var output = RowOutput()
        var loads: [Double] = []
        var digests: [Double] = []
        var summary = JSONObject()
        for _ in 0..<repeats {
            // One function call per run, so that the previous drawing is gone before the next.
            let run = timedReplay(directory)
            output.seconds.append(run.seconds)
            output.cpuSeconds.append(run.cpuSeconds)
            loads.append(run.loadSeconds)
            digests.append(run.digestSeconds)
            summary = run.summary
        }
        output.extra["loadSeconds"] = .seconds(loads)
        output.extra["digestSeconds"] = .seconds(digests)
        for (key, value) in summary.pairs { output.extra[key] = value }
        return output
    }

    /// Full first sync of a fresh journal from a shared folder holding the 4 replicas, then
    /// +1% recorded by replica 0 and synced, then the fresh journal's incremental and no-op syncs.
    func sync() throws -> RowOutput {
        try fixtures.ensureLibrary()
        let scratch = fixtures.scratch("sync")
        var output = RowOutput()
        var incremental: [Double] = []
        var noop: [Double] = []
        var imported = (first: 0, incremental: 0, noop: 0)
        var bytesRead = (first: Int64(0), incremental: Int64(0), noop: Int64(0))
        for _ in 0..<repeats {
            try Files.removeTree(scratch)
            try Files.makeDirectories(scratch)
            let machines = fixtures.journals.indices.map { scratch + "/m\($0)" }
            for (source, target) in zip(fixtures.journals, machines) { try Files.copyTree(source, to: target) }
            let shared = scratch + "/shared"
            try publish(machines, to: shared)
            let laptop = try JournalDirectory.create(at: scratch + "/laptop")

            let first = try output.time { try syncBlocking(laptop, .directory(shared)) }
            // Replica 0 syncs (seeing everyone's strokes), draws +1%, and syncs again.
            try publish([machines[0]], to: shared)
            try recordWithLibrary(workload.extraInput, into: try JournalDirectory.open(at: machines[0]))
            try publish([machines[0]], to: shared)
            let (plus, plusSeconds) = try Clock.time { try syncBlocking(laptop, .directory(shared)) }
            let (again, noopSeconds) = try Clock.time { try syncBlocking(laptop, .directory(shared)) }

            incremental.append(plusSeconds)
            noop.append(noopSeconds)
            imported = (first.imported.count, plus.imported.count, again.imported.count)
            bytesRead = (first.bytesRead, plus.bytesRead, again.bytesRead)
        }
        try Files.removeTree(scratch)
        output.extra["incrementalSeconds"] = .seconds(incremental)
        output.extra["noopSeconds"] = .seconds(noop)
        let full = median(output.seconds)
        output.extra["incrementalRatio"] = .number(median(incremental) / full, decimals: 5)
        output.extra["noopRatio"] = .number(median(noop) / full, decimals: 5)
        output.extra["importedSegments"] = .array([.int(imported.first), .int(imported.incremental), .int(imported.noop)])
        output.extra["bytesRead"] = .array([.int(Int(bytesRead.first)), .int(Int(bytesRead.incremental)), .int(Int(bytesRead.noop))])
        return output
    }

    /// What a person at a terminal waits for, through the CLI on a copy of the merged journal:
    /// `journal strokes -C copy > file` and `journal digest -C copy`, each the second open (the
    /// first, timed apart, writes the automatic snapshot), against `gzip -dc` of the NDJSON
    /// inputs gzipped whole (level 6, cached) into a file, timed in the same runs.
    func cliRead() throws -> RowOutput {
        guard let binary = journalBinary, Files.exists(binary) else {
            throw BenchError("no journal binary (pass --journal-binary)")
        }
        try fixtures.ensureMerged()
        let scratch = fixtures.scratch("cliread")
        let sink = scratch + "-out.json"
        let gunzipSink = scratch + "-out.ndjson"
        try Files.removeTree(scratch)
        try Files.copyTree(fixtures.merged, to: scratch)
        let cache = fixtures.root + "/ndjson-gzip"
        try Files.makeDirectories(cache)
        var gzipped: [String] = []
        for (index, input) in workload.inputs.enumerated() {
            let path = cache + "/replica-\(index).ndjson.gz"
            if !Files.exists(path) {
                try Spawn.check(["sh", "-c", "gzip -6 -c \"$1\" > \"$2.tmp\" && mv \"$2.tmp\" \"$2\"", "sh", input, path])
            }
            gzipped.append(path)
        }
        var output = RowOutput()
        let (_, firstStrokes) = try Clock.time { try Spawn.check([binary, "strokes", "-C", scratch], stdout: .file(sink)) }
        var gunzip: [Double] = []
        var digests: [Double] = []
        var digestsWithout: [Double] = []
        for _ in 0..<repeats {
            try output.time(children: true) { try Spawn.check([binary, "strokes", "-C", scratch], stdout: .file(sink)) }
            gunzip.append(try Clock.time {
                try Spawn.check(["sh", "-c", "exec gzip -dc \"$@\"", "sh"] + gzipped, stdout: .file(gunzipSink))
            }.1)
            digests.append(try Clock.time { try Spawn.check([binary, "digest", "-C", scratch], stdout: .discard) }.1)
        }
        let snapshotPath = scratch + "/local/snapshots/latest.sjsnap"
        let snapshotBytes = Files.size(snapshotPath)
        for _ in 0..<max(1, repeats / 2) {
            // Without a snapshot: the open replays everything (and writes a new snapshot).
            try Files.removeTree(scratch + "/local/snapshots")
            digestsWithout.append(try Clock.time { try Spawn.check([binary, "digest", "-C", scratch], stdout: .discard) }.1)
        }
        output.extra["outputBytes"] = .int(Files.size(sink))
        output.extra["gunzipBytes"] = .int(Files.size(gunzipSink))
        try Files.removeTree(scratch)
        try Files.removeTree(sink)
        try Files.removeTree(gunzipSink)
        output.extra["firstStrokesSeconds"] = .seconds([firstStrokes])
        output.extra["gunzipSeconds"] = .seconds(gunzip)
        output.extra["digestSeconds"] = .seconds(digests)
        output.extra["digestNoSnapshotSeconds"] = .seconds(digestsWithout)
        output.extra["snapshotBytes"] = .int(snapshotBytes)
        output.extra["strokesVsGunzip"] = .number(median(output.seconds) / median(gunzip), decimals: 3)
        output.extra["digestVsGunzip"] = .number(median(digests) / median(gunzip), decimals: 3)
        return output
    }

    /// Snapshot the merged journal, add the +1% segment, then `Replay.load(dir, useSnapshots:)`
    /// with and without snapshots.
    func snapshotOpen() throws -> RowOutput {
        var output = RowOutput()
        #if SNAPSHOTS
        try fixtures.ensureMerged()
        let extra = try fixtures.ensureExtraSegment()
        let scratch = fixtures.scratch("snapshot")
        try Files.removeTree(scratch)
        try Files.copyTree(fixtures.merged, to: scratch)
        let directory = JournalDirectory(root: scratch)
        let (_, createSeconds) = try Clock.time { _ = try SnapshotStore.create(directory) }
        let outcome = SegmentImporter.importSegment(
            at: extra.path, replica: extra.replica, claimedName: SegmentName(fileName: Paths.base(extra.path)),
            intoReplicas: directory.replicasPath)
        guard case .imported = outcome else { throw BenchError("could not import the +1% segment: \(outcome)") }
        var full: [Double] = []
        var digestsEqual = true
        // Snapshots are a cache under local/: if a load rewrites them, later runs measure
        // something else, so say so.
        func snapshotFiles() -> [String: Int] {
            Dictionary(uniqueKeysWithValues: Files.walk(scratch + "/local").filter { $0.contains("snap") }.map { ($0, Files.size($0)) })
        }
        let snapshotsBefore = snapshotFiles()
        let journalBytes = sealedBytes([scratch])
        var rewritten = false
        var segmentSetSeconds: [Double] = []
        var materialiseSeconds: [Double] = []
        for _ in 0..<repeats {
            let (fromSnapshot, snapshotSeconds, snapshotCPU) = timedSnapshotLoad(directory, useSnapshots: true)
            if snapshotFiles() != snapshotsBefore { rewritten = true }
            let (fromScratch, fullSeconds, _) = timedSnapshotLoad(directory, useSnapshots: false)
            output.seconds.append(snapshotSeconds)
            output.cpuSeconds.append(snapshotCPU)
            full.append(fullSeconds)
            if let fromSnapshot, let fromScratch, fromSnapshot != fromScratch { digestsEqual = false }
            // What no open from any snapshot can avoid, measured beside it: listing and checking
            // the segments (to know the snapshot covers them), and putting every point of the
            // drawing into fresh arrays of the drawing's shape on every core.
            segmentSetSeconds.append(Clock.time { _ = SegmentSet.load(directory) }.1)
            materialiseSeconds.append(timedMaterialise(Replay.load(directory, useSnapshots: true).drawing))
        }
        try Files.removeTree(scratch)
        output.extra["status"] = .string("measured")
        output.extra["fullReplaySeconds"] = .seconds(full)
        output.extra["createSeconds"] = .seconds([createSeconds])
        output.extra["snapshotBytes"] = .int(snapshotsBefore.values.reduce(0, +))
        output.extra["journalBytes"] = .int(journalBytes)
        output.extra["snapshotVsJournalBytes"] = .number(Double(snapshotsBefore.values.reduce(0, +)) / Double(max(journalBytes, 1)), decimals: 3)
        output.extra["snapshotRewrittenByLoad"] = .bool(rewritten)
        output.extra["speedup"] = .number(median(full) / median(output.seconds), decimals: 2)
        output.extra["digestsEqual"] = .bool(digestsEqual)
        output.extra["segmentSetSeconds"] = .seconds(segmentSetSeconds)
        output.extra["materialiseSeconds"] = .seconds(materialiseSeconds)
        output.extra["speedupCeiling"] = .number(median(full) / (median(segmentSetSeconds) + median(materialiseSeconds)), decimals: 2)
        #else
        output.extra["status"] = .string("n/a (snapshots not implemented)")
        #endif
        return output
    }

    // MARK: Baselines

    /// Read each file, split lines, LineParser, Fold with writer-like envelopes (seq from 1,
    /// lamport = seq, wallTime = 0), finish; digest timed apart.
    func ndjsonPlain() throws -> RowOutput {
        let replicas = try fixtures.replicaIDs()
        let inputs = workload.inputs
        var output = RowOutput()
        var digests: [Double] = []
        var summary = JSONObject()
        var counts = Counts()
        for _ in 0..<repeats {
            let run = try timedBaseline(replicas: replicas) { index in try Files.read(inputs[index]) }
            output.seconds.append(run.seconds)
            output.cpuSeconds.append(run.cpuSeconds)
            digests.append(run.digestSeconds)
            summary = run.summary
            counts = run.counts
        }
        let bytes = inputs.reduce(0) { $0 + Files.size($1) }
        output.extra["digestSeconds"] = .seconds(digests)
        output.extra["points"] = .int(counts.points)
        output.extra["events"] = .int(counts.events)
        output.extra["bytes"] = .int(bytes)
        output.extra["bytesPerPoint"] = .number(Double(bytes) / Double(max(counts.points, 1)), decimals: 4)
        for (key, value) in summary.pairs { output.extra[key] = value }
        return output
    }

    /// The same, from each file deflated whole at level 6 (RawDeflate, the journal's zlib).
    func ndjsonDeflate() throws -> RowOutput {
        let replicas = try fixtures.replicaIDs()
        let deflated = try deflatedInputs()
        var output = RowOutput()
        var digests: [Double] = []
        var inflates: [Double] = []
        var summary = JSONObject()
        var counts = Counts()
        for _ in 0..<repeats {
            var inflateSeconds = 0.0
            let run = try timedBaseline(replicas: replicas) { index in
                let compressed = try Files.read(deflated.files[index])
                let started = Clock.now()
                let raw = try compressed.withUnsafeBytes { buffer in
                    try RawDeflate.decompress(buffer, expectedCount: deflated.rawSizes[index])
                }
                inflateSeconds += Clock.now() - started
                return raw
            }
            output.seconds.append(run.seconds)
            output.cpuSeconds.append(run.cpuSeconds)
            digests.append(run.digestSeconds)
            inflates.append(inflateSeconds)
            summary = run.summary
            counts = run.counts
        }
        let bytes = deflated.files.reduce(0) { $0 + Files.size($1) }
        output.extra["inflateSeconds"] = .seconds(inflates)
        output.extra["digestSeconds"] = .seconds(digests)
        output.extra["deflateSeconds"] = .seconds([deflated.deflateSeconds])
        output.extra["points"] = .int(counts.points)
        output.extra["bytes"] = .int(bytes)
        output.extra["bytesPerPoint"] = .number(Double(bytes) / Double(max(counts.points, 1)), decimals: 4)
        for (key, value) in summary.pairs { output.extra[key] = value }
        return output
    }

    /// Each input deflated whole (level 6), cached in the work folder with its size and the
    /// seconds deflating took.
    func deflatedInputs() throws -> (files: [String], rawSizes: [Int], deflateSeconds: Double) {
        let cache = fixtures.deflateCache
        try Files.makeDirectories(cache)
        var files: [String] = []
        var sizes: [Int] = []
        var total = 0.0
        for (index, input) in workload.inputs.enumerated() {
            let file = cache + "/replica-\(index).ndjson.deflate"
            let stamp = "\(Files.size(input)) \(Files.modified(input))"
            let sidecar = file + ".info"
            if let info = Files.readText(sidecar), info.hasPrefix(stamp + " "), Files.exists(file),
               let seconds = Double(info.dropFirst(stamp.count + 1).trimmingSpaces) {
                total += seconds
            } else {
                let raw = try Files.read(input)
                let (compressed, seconds) = try Clock.time { try RawDeflate.compress(raw, level: 6) }
                try Files.write(compressed, to: file)
                try Files.writeText("\(stamp) \(seconds)\n", to: sidecar)
                total += seconds
            }
            files.append(file)
            sizes.append(Files.size(input))
        }
        return (files, sizes, total)
    }

    // MARK: The physical limit

    /// Inflate exactly the block bodies the merged journal stores (files scanned beforehand).
    func bareInflate() throws -> RowOutput {
        let scans = try mergedScans()
        let largest = scans.flatMap(\.blocks).map(\.frame.rawLength).max() ?? 0
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: max(largest, 1), alignment: 16)
        defer { out.deallocate() }
        var output = RowOutput()
        for _ in 0..<repeats {
            try output.time {
                for scan in scans {
                    try scan.bytes.withUnsafeBytes { buffer in
                        for block in scan.blocks {
                            let start = block.offset + FormatV1.blockHeaderSize
                            let body = UnsafeRawBufferPointer(rebasing: buffer[start..<block.offset + block.frame.totalLength])
                            try RawDeflate.decompress(body, into: UnsafeMutableRawBufferPointer(rebasing: out[0..<block.frame.rawLength]))
                        }
                    }
                }
            }
        }
        let blocks = scans.flatMap(\.blocks)
        let compressed = blocks.reduce(0) { $0 + $1.frame.compressedLength }
        let raw = blocks.reduce(0) { $0 + $1.frame.rawLength }
        output.extra["blocks"] = .int(blocks.count)
        output.extra["compressedBytes"] = .int(compressed)
        output.extra["rawBytes"] = .int(raw)
        output.extra["rawBytesPerSecond"] = .number(Double(raw) / median(output.seconds), decimals: 0)
        return output
    }

    /// Deflate (level 6) the inflated block bodies.
    func bareDeflate() throws -> RowOutput {
        let scans = try mergedScans()
        var bodies: [[UInt8]] = []
        var stored = 0
        for scan in scans {
            try scan.bytes.withUnsafeBytes { buffer in
                for block in scan.blocks {
                    let start = block.offset + FormatV1.blockHeaderSize
                    let body = UnsafeRawBufferPointer(rebasing: buffer[start..<block.offset + block.frame.totalLength])
                    bodies.append(try RawDeflate.decompress(body, expectedCount: block.frame.rawLength))
                    stored += block.frame.compressedLength
                }
            }
        }
        var output = RowOutput()
        var produced = 0
        for _ in 0..<repeats {
            produced = try output.time {
                var total = 0
                for body in bodies { total += try RawDeflate.compress(body, level: 6).count }
                return total
            }
        }
        let raw = bodies.reduce(0) { $0 + $1.count }
        output.extra["rawBytes"] = .int(raw)
        output.extra["compressedBytes"] = .int(produced)
        output.extra["storedCompressedBytes"] = .int(stored)
        output.extra["rawBytesPerSecond"] = .number(Double(raw) / median(output.seconds), decimals: 0)
        return output
    }

    /// read(2) of every segment file of the merged journal (page cache warm).
    func plainRead() throws -> RowOutput {
        try fixtures.ensureMerged()
        let files = sealedFiles(fixtures.merged)
        var buffer = [UInt8](repeating: 0, count: files.map(Files.size).max() ?? 1)
        var output = RowOutput()
        var bytes = 0
        for _ in 0..<repeats {
            bytes = try output.time {
                var total = 0
                for file in files { total += try Files.read(file, into: &buffer) }
                return total
            }
        }
        output.extra["files"] = .int(files.count)
        output.extra["bytes"] = .int(bytes)
        output.extra["bytesPerSecond"] = .number(Double(bytes) / median(output.seconds), decimals: 0)
        return output
    }

    private func mergedScans() throws -> [ScannedSegment] {
        try fixtures.ensureMerged()
        let scans = sealedFiles(fixtures.merged).map { SegmentScanner.scan(path: $0, sealed: true) }
        if let problem = scans.flatMap(\.problems).first { throw BenchError("merged journal is damaged: \(problem)") }
        return scans
    }

    // MARK: Diagnostics (not timed)

    /// Whether the NDJSON baseline's drawing equals the journal's, and if not, why: the same
    /// fold with the envelopes the journal actually stored (its lamports and wall clocks)
    /// must give the journal's digest; any difference left is a bug.
    func digestCheck() throws -> RowOutput {
        try fixtures.ensureMerged()
        let replicas = try fixtures.replicaIDs()
        let set = SegmentSet.load(JournalDirectory(root: fixtures.merged))
        let journal = Replay.replay(set)
        var output = RowOutput()
        output.extra["journalDigest"] = .string(journal.drawing.digest)
        output.extra["journalProblems"] = .int(journal.report.problems.count)

        // The journal's envelopes, per replica, indexed by seq - 1.
        var lamports: [ReplicaID: [UInt64]] = [:]
        var walls: [ReplicaID: [Int64]] = [:]
        var lamportIsSeq = 0
        var eventCount = 0
        var report = ReplayReport()
        Replay.forEachUniqueEvent(set, report: &report) { event in
            let index = Int(event.id.seq) - 1
            if lamports[event.id.replica] == nil { lamports[event.id.replica] = []; walls[event.id.replica] = [] }
            if lamports[event.id.replica]!.count <= index {
                lamports[event.id.replica]!.append(contentsOf: repeatElement(0, count: index + 1 - lamports[event.id.replica]!.count))
                walls[event.id.replica]!.append(contentsOf: repeatElement(0, count: index + 1 - walls[event.id.replica]!.count))
            }
            lamports[event.id.replica]![index] = event.lamport
            walls[event.id.replica]![index] = event.wallTime
            if event.lamport == event.id.seq { lamportIsSeq += 1 }
            eventCount += 1
        }
        output.extra["journalEvents"] = .int(eventCount)
        output.extra["journalEventsWithLamportEqualSeq"] = .int(lamportIsSeq)

        let inputs = workload.inputs
        let plain = try foldInputs(inputs, replicas: replicas) { _, seq in (seq, 0) }
        let matched = try foldInputs(inputs, replicas: replicas) { replica, seq in
            let index = Int(seq) - 1
            guard let lamport = lamports[replica], index < lamport.count else { return (seq, 0) }
            return (lamport[index], walls[replica]![index])
        }
        output.extra["baselineEvents"] = .int(plain.counts.events)
        output.extra["digestWallTimeZero"] = .string(plain.drawing.digest)
        output.extra["equalWallTimeZero"] = .bool(plain.drawing.digest == journal.drawing.digest)
        output.extra["digestJournalEnvelopes"] = .string(matched.drawing.digest)
        output.extra["equalJournalEnvelopes"] = .bool(matched.drawing.digest == journal.drawing.digest)

        // Where the wallTime = 0 drawing differs: stroke order, visibility, or content.
        let byID = { (drawing: Drawing) in drawing.strokes.sorted { $0.id < $1.id } }
        let mine = byID(plain.drawing)
        let theirs = byID(journal.drawing)
        output.extra["strokes"] = .array([.int(journal.drawing.strokes.count), .int(plain.drawing.strokes.count)])
        if mine.count == theirs.count {
            var visibility = 0
            var content = 0
            for (a, b) in zip(mine, theirs) {
                if a.id != b.id || a.points != b.points || a.style != b.style || a.pointStyles != b.pointStyles || a.ended != b.ended {
                    content += 1
                } else if a.visible != b.visible {
                    visibility += 1
                }
            }
            let order = zip(plain.drawing.strokes, journal.drawing.strokes).filter { $0.id != $1.id }.count
            output.extra["strokesInDifferentPosition"] = .int(order)
            output.extra["strokesWithDifferentVisibility"] = .int(visibility)
            output.extra["strokesWithDifferentContent"] = .int(content)
        }
        return output
    }

    // MARK: Growth and Hershey

    /// Record (library), merge + reconstruct, and a fresh journal's first sync, for any workload.
    func scaleRow(_ scaled: Workload, repeats: Int) throws -> RowOutput {
        let inputs = scaled.inputs
        guard !inputs.isEmpty else { throw BenchError("no replica-*.ndjson in \(scaled.dir)") }
        let scratch = fixtures.scratch(name.rawValue)
        var output = RowOutput()
        var replays: [Double] = []
        var digests: [Double] = []
        var syncs: [Double] = []
        var counts = Counts()
        var bytes = 0
        var summary = JSONObject()
        for _ in 0..<repeats {
            try Files.removeTree(scratch)
            counts = try output.time { try recordJournals(inputs, under: scratch) }
            let journals = inputs.indices.map { scratch + "/m\($0)" }
            bytes = sealedBytes(journals)

            try buildMerged(from: journals, at: scratch + "/merged")
            let run = timedReplay(JournalDirectory(root: scratch + "/merged"))
            replays.append(run.seconds)
            digests.append(run.digestSeconds)
            summary = run.summary

            try publish(journals, to: scratch + "/shared")
            let laptop = try JournalDirectory.create(at: scratch + "/laptop")
            let (_, syncSeconds) = try Clock.time { try syncBlocking(laptop, .directory(scratch + "/shared")) }
            syncs.append(syncSeconds)
        }
        try Files.removeTree(scratch)
        output.extra["replaySeconds"] = .seconds(replays)
        output.extra["digestSeconds"] = .seconds(digests)
        output.extra["syncFirstSeconds"] = .seconds(syncs)
        output.extra["workload"] = .string(scaled.dir)
        output.extra["replicas"] = .int(inputs.count)
        output.extra["points"] = .int(counts.points)
        output.extra["events"] = .int(counts.events)
        output.extra["ndjsonBytes"] = .int(inputs.reduce(0) { $0 + Files.size($1) })
        output.extra["sealedBytes"] = .int(bytes)
        output.extra["bytesPerPoint"] = .number(Double(bytes) / Double(max(counts.points, 1)), decimals: 4)
        for (key, value) in summary.pairs { output.extra[key] = value }
        return output
    }
}

// MARK: - Shared measurements

struct ReplayRun {
    var seconds: Double
    var cpuSeconds: Double
    var loadSeconds: Double
    var digestSeconds: Double
    var summary: JSONObject
}

/// One merge + reconstruct: load (scan every segment), replay, then the digest.
func timedReplay(_ directory: JournalDirectory) -> ReplayRun {
    let cpu = Clock.cpu()
    let started = Clock.now()
    let set = SegmentSet.load(directory)
    let loaded = Clock.now()
    let (drawing, report) = Replay.replay(set)
    let replayed = Clock.now()
    let cpuReplayed = Clock.cpu()
    let digest = drawing.digest
    let digested = Clock.now()
    var summary = JSONObject()
    summary["digest"] = .string(digest)
    summary["points"] = .int(drawing.pointCount)
    summary["strokes"] = .int(drawing.strokes.count)
    summary["visibleStrokes"] = .int(drawing.visibleStrokes.count)
    summary["events"] = .int(report.eventCount)
    summary["problems"] = .int(report.problems.count)
    return ReplayRun(seconds: replayed - started, cpuSeconds: cpuReplayed - cpu, loadSeconds: loaded - started, digestSeconds: digested - replayed, summary: summary)
}

struct BaselineRun {
    var seconds: Double
    var cpuSeconds: Double
    var digestSeconds: Double
    var counts: Counts
    var summary: JSONObject
}

/// A user's own replay of NDJSON: get each file's bytes (`contents`, timed), parse every line,
/// fold with envelopes like the writer's (seq from 1, lamport = seq, wallTime = 0), finish.
func timedBaseline(replicas: [ReplicaID], contents: (Int) throws -> [UInt8]) throws -> BaselineRun {
    let cpu = Clock.cpu()
    let started = Clock.now()
    var fold = Fold(replicas: replicas)
    var counts = Counts()
    for (index, replica) in replicas.enumerated() {
        let bytes = try contents(index)
        counts = counts + (try foldLines(bytes, replica: replica, into: &fold) { seq in (seq, 0) })
    }
    let drawing = fold.finish()
    let finished = Clock.now()
    let cpuFinished = Clock.cpu()
    let digest = drawing.digest
    let digested = Clock.now()
    var summary = JSONObject()
    summary["digest"] = .string(digest)
    summary["strokes"] = .int(drawing.strokes.count)
    summary["visibleStrokes"] = .int(drawing.visibleStrokes.count)
    return BaselineRun(seconds: finished - started, cpuSeconds: cpuFinished - cpu, digestSeconds: digested - finished, counts: counts, summary: summary)
}

/// Parses every line of `bytes` and applies its payloads to `fold` as events of `replica`
/// with seq from 1 and the envelope `envelope(seq)` gives (lamport, wallTime).
func foldLines(
    _ bytes: [UInt8], replica: ReplicaID, into fold: inout Fold, envelope: (UInt64) -> (UInt64, Int64)
) throws -> Counts {
    var counts = Counts()
    var payloads: [Payload] = []
    var seq: UInt64 = 0
    try bytes.withUnsafeBytes { buffer in
        guard let base = buffer.baseAddress else { return }
        var start = 0
        var lineNumber = 0
        while start < buffer.count {
            let end: Int
            if let found = memchr(base + start, Int32(UInt8(ascii: "\n")), buffer.count - start) {
                end = base.distance(to: UnsafeRawPointer(found))
            } else {
                end = buffer.count
            }
            lineNumber += 1
            do {
                try LineParser.parse(UnsafeRawBufferPointer(rebasing: buffer[start..<end]), into: &payloads)
            } catch {
                throw BenchError("line \(lineNumber): \(error)")
            }
            for payload in payloads {
                seq += 1
                let (lamport, wallTime) = envelope(seq)
                fold.apply(Event(id: EventID(replica: replica, seq: seq), lamport: lamport, wallTime: wallTime, payload: payload))
                counts.add(payload)
            }
            payloads.removeAll(keepingCapacity: true)
            start = end + 1
        }
    }
    return counts
}

/// Folds every input file with envelopes from `envelope(replica, seq)`.
func foldInputs(
    _ inputs: [String], replicas: [ReplicaID], envelope: (ReplicaID, UInt64) -> (UInt64, Int64)
) throws -> (drawing: Drawing, counts: Counts) {
    var fold = Fold(replicas: replicas)
    var counts = Counts()
    for (input, replica) in zip(inputs, replicas) {
        counts = counts + (try foldLines(try Files.read(input), replica: replica, into: &fold) { envelope(replica, $0) })
    }
    return (fold.finish(), counts)
}

#if SNAPSHOTS
/// Times `Replay.load(_:useSnapshots:)` alone; the digest of its drawing is taken afterwards
/// (nil if the result is not a (drawing, report) pair).
func timedSnapshotLoad(_ directory: JournalDirectory, useSnapshots: Bool) -> (digest: String?, seconds: Double, cpuSeconds: Double) {
    let cpu = Clock.cpu()
    let (result, seconds) = Clock.time { Replay.load(directory, useSnapshots: useSnapshots) }
    let cpuSeconds = Clock.cpu() - cpu
    return (snapshotDigest(result), seconds, cpuSeconds)
}
func snapshotDigest(_ result: (drawing: Drawing, report: ReplayReport)) -> String? { result.drawing.digest }

func snapshotDigest<T>(_ result: T) -> String? { nil }

/// Seconds to copy every point of `drawing` into fresh per-stroke arrays, strokes split across
/// the cores as a snapshot's chunks are: the memory a decoded drawing must be written into
/// (2 M points of 32 bytes), without any decoding.
func timedMaterialise(_ drawing: Drawing) -> Double {
    let strokes = drawing.strokes
    let lanes = max(1, ProcessInfoLite.activeProcessorCount)
    let copies = UnsafeMutableBufferPointer<[Drawing.Point]>.allocate(capacity: strokes.count)
    copies.initialize(repeating: [])
    defer {
        _ = copies.deinitialize()
        copies.deallocate()
    }
    // Each lane writes only its own strokes' entries.
    nonisolated(unsafe) let shared = copies
    return Clock.time {
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            for index in stride(from: lane, to: strokes.count, by: lanes) {
                let source = strokes[index].points
                shared[index] = [Drawing.Point](unsafeUninitializedCapacity: source.count) { buffer, initialized in
                    for (offset, point) in source.enumerated() { buffer.initializeElement(at: offset, to: point) }
                    initialized = source.count
                }
            }
        }
    }.1
}
#endif

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
