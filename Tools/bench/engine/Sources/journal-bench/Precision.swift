import JournalCompression
import JournalFormat
import JournalIngest
import JournalReplay
import JournalStorage

/// The precision modes of gen_session.py (format v2, issue 10): the same curves written as a
/// tidy app (2 decimals), a float32 input stack, a 3x screen's 1/3-point grid with device
/// clocks, and arbitrary doubles; plus Hershey handwriting (short strokes).
struct PrecisionCase {
    var key: String
    var generation: Generation
    var target: Double

    static let all: [PrecisionCase] = [
        PrecisionCase(key: "2dp", generation: .standard, target: 2.1),
        PrecisionCase(key: "float32", generation: Generation(replicas: 4, strokes: 2500, precision: "float32"), target: 6.0),
        PrecisionCase(key: "third", generation: Generation(replicas: 4, strokes: 2500, precision: "third"), target: 4.5),
        PrecisionCase(key: "double", generation: Generation(replicas: 4, strokes: 2500, precision: "double"), target: 20),
        PrecisionCase(key: "hershey", generation: Generation(replicas: 4, strokes: 2500, points: nil, hershey: hersheyText), target: 3.0),
    ]
}

extension RowRunner {
    /// Format v1 against v2 on one workload, in one process: each replica's events encoded as
    /// sealed segments of each version (same blocks, same deflate level), then decoded and
    /// replayed from files. NDJSON + raw deflate (gzip without its 18-byte frame) is the
    /// outside reference.
    func precisionRow(_ scaled: Workload) throws -> RowOutput {
        let inputs = scaled.inputs
        guard !inputs.isEmpty else { throw BenchError("no replica-*.ndjson in \(scaled.dir)") }
        var replicas: [(ReplicaID, [Event])] = []
        var points = 0
        var gzipBytes = 0
        for (index, input) in inputs.enumerated() {
            let replica = ReplicaID(UUIDBits(high: 0x5EED_0000 + UInt64(index), low: 1))
            var reader = try NDJSONReader(path: input)
            var payloads: [Payload] = []
            var events: [Event] = []
            while try reader.next(appendingTo: &payloads) != nil {
                for payload in payloads {
                    let seq = UInt64(events.count + 1)
                    if case .point = payload { points += 1 }
                    events.append(Event(id: EventID(replica: replica, seq: seq), lamport: seq, wallTime: 1_790_000_000_000, payload: payload))
                }
                payloads.removeAll(keepingCapacity: true)
            }
            replicas.append((replica, events))
            gzipBytes += try RawDeflate.compress(Files.read(input), level: 6).count
        }
        let scratch = fixtures.scratch(name.rawValue)
        var output = RowOutput()
        var digests: [UInt16: String] = [:]
        for version in [FormatV1.version, FormatV2.version] {
            var encodeRuns: [Double] = []
            var replayRuns: [Double] = []
            var bytes = 0
            for _ in 0..<repeats {
                var segments: [(ReplicaID, [UInt8])] = []
                let (_, encodeSeconds) = try Clock.time {
                    segments = replicas.map { ($0.0, SegmentEncoder.segment(replica: $0.0, events: $0.1, version: version)) }
                }
                encodeRuns.append(encodeSeconds)
                bytes = segments.reduce(0) { $0 + $1.1.count }
                try Files.removeTree(scratch)
                for (replica, segment) in segments {
                    let folder = scratch + "/replicas/" + replica.hex
                    try Files.makeDirectories(folder)
                    let last = UInt64(replicas.first { $0.0 == replica }!.1.count)
                    try Files.write(segment, to: folder + "/" + SegmentName(firstSeq: 1, lastSeq: last, contents: segment).fileName)
                }
                let (drawing, replaySeconds) = try Clock.time { Replay.replay(SegmentSet.load(replicasPath: scratch + "/replicas")).drawing }
                replayRuns.append(replaySeconds)
                digests[version] = drawing.digest
            }
            output.extra["v\(version)EncodeSeconds"] = .seconds(encodeRuns)
            output.extra["v\(version)ReplaySeconds"] = .seconds(replayRuns)
            output.extra["v\(version)Bytes"] = .int(bytes)
            output.extra["v\(version)BytesPerPoint"] = .number(Double(bytes) / Double(max(points, 1)), decimals: 4)
        }
        try Files.removeTree(scratch)
        output.extra["workload"] = .string(scaled.dir)
        output.extra["points"] = .int(points)
        output.extra["ndjsonGzipBytesPerPoint"] = .number(Double(gzipBytes) / Double(max(points, 1)), decimals: 4)
        output.extra["sameDigest"] = .bool(digests[FormatV1.version] == digests[FormatV2.version])
        output.extra["digest"] = .string(digests[FormatV2.version] ?? "")
        return output
    }
}
