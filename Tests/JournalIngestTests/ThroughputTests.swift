import JournalFormat
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalIngest
import Testing

/// A throughput measurement, off unless INGEST_BENCH names NDJSON files (colon-separated).
/// Run it in release: `INGEST_BENCH=/path/a.ndjson:/path/b.ndjson swift test -c release
/// --filter ThroughputTests`.
@Suite struct ThroughputTests {
    static let files: [String] = {
        guard let value = getenv("INGEST_BENCH") else { return [] }
        return String(cString: value).split(separator: ":").map(String.init)
    }()

    @Test(.enabled(if: !files.isEmpty))
    func parseThroughput() throws {
        for round in 1...3 {
            var lines = 0
            var payloadCount = 0
            var bytes = 0
            var checksum: UInt64 = 0
            let clock = ContinuousClock()
            let elapsed = try clock.measure {
                for file in Self.files {
                    var reader = try NDJSONReader(path: file)
                    while let (_, payloads) = try reader.next() {
                        payloadCount += payloads.count
                        if case .point(let sample) = payloads[0] { checksum &+= sample.x.bitPattern }
                    }
                    lines += reader.lineNumber
                    bytes += fileSize(file)
                }
            }
            report("next()", round, lines, payloadCount, bytes, elapsed, checksum)
        }
        for round in 1...3 {
            var lines = 0
            var payloadCount = 0
            var bytes = 0
            var checksum: UInt64 = 0
            let clock = ContinuousClock()
            let elapsed = try clock.measure {
                var payloads: [Payload] = []
                payloads.reserveCapacity(4096)
                for file in Self.files {
                    var reader = try NDJSONReader(path: file)
                    while try reader.next(appendingTo: &payloads) != nil {
                        if payloads.count >= 4096 {
                            payloadCount += payloads.count
                            if case .point(let sample) = payloads[0] { checksum &+= sample.x.bitPattern }
                            payloads.removeAll(keepingCapacity: true)
                        }
                    }
                    lines += reader.lineNumber
                    bytes += fileSize(file)
                }
                payloadCount += payloads.count
            }
            report("next(appendingTo:)", round, lines, payloadCount, bytes, elapsed, checksum)
        }
    }

    private func report(_ label: String, _ round: Int, _ lines: Int, _ payloads: Int, _ bytes: Int, _ elapsed: Duration, _ checksum: UInt64) {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let linesPerSecond = Double(lines) / seconds
        let megabytesPerSecond = Double(bytes) / seconds / 1e6
        print("[bench] \(label) round \(round): \(lines) lines, \(payloads) payloads, \(bytes) bytes in \(seconds) s = \(Int(linesPerSecond)) lines/s, \(Int(megabytesPerSecond)) MB/s (checksum \(checksum))")
    }

    private func fileSize(_ path: String) -> Int {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return Int(info.st_size)
    }
}
