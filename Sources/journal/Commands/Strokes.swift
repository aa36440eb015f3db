import ArgumentParser
import Dispatch
import JournalCommandLine
import JournalFormat
import JournalIngest
import JournalPlatform
import JournalReplay
import JournalStorage

extension JournalCommand {
    struct Strokes: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "strokes",
            abstract: "Print the reconstructed drawing as JSON.",
            discussion: """
                Output, one JSON object:
                  {"strokes":[{"id","color","width",
                               "points":[{"x","y","pressure"?,"t"?}]}],
                   "digest":"…"}
                Visible strokes only, in z-order; --all adds hidden ones with a
                "visible" flag.

                --at shows the drawing as it was at a moment (docs/HISTORY.md).

                Examples:
                  journal strokes -C board | jq '.strokes | length'
                  journal strokes -C board --at 10:05      # as it was at 10:05 today
                """)

        @OptionGroup var options: JournalOptions
        @OptionGroup var moment: MomentOption
        @Flag(help: "Include hidden (undone, erased, cleared) strokes, with a \"visible\" flag.")
        var all = false
        @Flag(help: "Accepted for symmetry: the output is already one JSON object.")
        var json = false

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let (drawing, report) = try moment.drawing(journal) ?? Replay.load(journal)
                reportProblems(report)
                Terminal.write("{\"strokes\":[")
                Terminal.flush()
                let strokes = all ? drawing.strokes : drawing.strokes.filter(\.visible)
                let digest = DrawingJSON.writeStrokes(strokes, includeVisibility: all, digest: report.digest) { bytes in
                    Terminal.writeDirectly(bytes)
                } computeDigest: { drawing.digest }
                Terminal.write("\n],\"digest\":\"\(digest)\"}\n")
                Terminal.flush()
            }
        }
    }
}

/// JSON text of reconstructed strokes; keys in a fixed order so output is stable.
enum DrawingJSON {
    static func stroke(_ stroke: Drawing.Stroke, includeVisibility: Bool) -> String {
        var bytes: [UInt8] = []
        append(stroke, includeVisibility: includeVisibility, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes `,\n`-separated strokes through `write`, formatting batches of strokes on every
    /// core (number formatting is most of the cost of a 2-million-point drawing) and, when
    /// `digest` is nil, hashing the drawing meanwhile. Returns the digest.
    static func writeStrokes(
        _ strokes: [Drawing.Stroke], includeVisibility: Bool, digest known: String?,
        write: ([UInt8]) -> Void, computeDigest: @escaping @Sendable () -> String
    ) -> String {
        let hashing = known == nil ? DigestTask(computeDigest) : nil
        let lanes = 4
        // Reused from batch to batch: fresh buffers would page-fault in every time.
        let results = ParallelBytes(count: lanes)
        var start = 0
        while start < strokes.count {
            // About 64k points per lane: a few MB of text each, so memory stays bounded.
            var bounds = [start]
            var end = start
            for _ in 0..<lanes {
                var points = 0
                while end < strokes.count && points < 65_536 {
                    points += strokes[end].points.count + 1
                    end += 1
                }
                bounds.append(end)
            }
            let laneBounds = bounds
            DispatchQueue.concurrentPerform(iterations: lanes) { lane in
                var bytes = results.take(lane)
                bytes.removeAll(keepingCapacity: true)
                let range = laneBounds[lane]..<laneBounds[lane + 1]
                bytes.reserveCapacity(range.reduce(0) { $0 + 40 + strokes[$1].points.count * 64 })
                for index in range {
                    if index > 0 { bytes.append(UInt8(ascii: ",")) }
                    bytes.append(UInt8(ascii: "\n"))
                    append(strokes[index], includeVisibility: includeVisibility, to: &bytes)
                }
                results.set(lane, bytes)
            }
            for lane in 0..<lanes { write(results.get(lane)) }
            start = end
        }
        return known ?? hashing!.wait()
    }

    static func append(_ stroke: Drawing.Stroke, includeVisibility: Bool, to out: inout [UInt8]) {
        func put(_ text: StaticString) {
            text.withUTF8Buffer { out.append(contentsOf: $0) }
        }
        put("{\"id\":\"")
        out.append(contentsOf: stroke.id.uuidString.utf8)
        put("\",\"color\":\"")
        out.append(contentsOf: stroke.style.color.hexString.utf8)
        put("\",\"width\":")
        CanonicalJSON.appendNumber(stroke.style.width, to: &out)
        if includeVisibility { stroke.visible ? put(",\"visible\":true") : put(",\"visible\":false") }
        stroke.ended ? put(",\"ended\":true,\"points\":[") : put(",\"ended\":false,\"points\":[")
        let uniform = stroke.pointStyles == nil
        for (index, point) in stroke.points.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            put("{\"x\":")
            CanonicalJSON.appendNumber(point.x, to: &out)
            put(",\"y\":")
            CanonicalJSON.appendNumber(point.y, to: &out)
            if let pressure = point.pressure {
                put(",\"pressure\":")
                CanonicalJSON.appendNumber(pressure, to: &out)
            }
            if let t = point.t {
                put(",\"t\":")
                CanonicalJSON.appendNumber(t, to: &out)
            }
            if !uniform {
                let style = stroke.style(ofPoint: index)
                put(",\"color\":\"")
                out.append(contentsOf: style.color.hexString.utf8)
                put("\",\"width\":")
                CanonicalJSON.appendNumber(style.width, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        put("]}")
    }
}

/// One byte buffer per parallel lane; each lane writes only its own slot.
private final class ParallelBytes: @unchecked Sendable {
    private var slots: UnsafeMutablePointer<[UInt8]>
    private let count: Int
    init(count: Int) {
        self.count = count
        slots = .allocate(capacity: count)
        slots.initialize(repeating: [], count: count)
    }
    deinit {
        slots.deinitialize(count: count)
        slots.deallocate()
    }
    func set(_ index: Int, _ bytes: [UInt8]) { slots[index] = bytes }
    func get(_ index: Int) -> [UInt8] { slots[index] }
    func take(_ index: Int) -> [UInt8] {
        let bytes = slots[index]
        slots[index] = []
        return bytes
    }
}

/// Hashes the drawing on another thread while the caller formats it.
private final class DigestTask: @unchecked Sendable {
    private var result = ""
    private let done = DispatchSemaphore(value: 0)
    init(_ compute: @escaping @Sendable () -> String) {
        WorkerThread.shared.submit {
            self.result = compute()
            self.done.signal()
        }
    }
    func wait() -> String {
        done.wait()
        return result
    }
}

/// Problems go to stderr so that stdout stays machine-readable. Quarantined files are one line
/// per reason (per key not trusted, say), not one per file: every read command says it, and a
/// board with a hundred files of one untrusted key printed a hundred long lines each time.
func reportProblems(_ report: ReplayReport) {
    var quarantined: [(reason: String, files: [String])] = []
    for problem in report.problems where problem.kind != .tornTail {
        guard problem.kind == .quarantined else {
            Terminal.standardError("journal: warning: \(problem)\n")
            continue
        }
        if let index = quarantined.firstIndex(where: { $0.reason == problem.reason }) {
            quarantined[index].files.append(problem.file)
        } else {
            quarantined.append((problem.reason, [problem.file]))
        }
    }
    for (reason, files) in quarantined {
        let which = files.count == 1 ? files[0] : "\(files[0]) and \(Wording.counted(files.count - 1, "other"))"
        Terminal.standardError("journal: warning: \(Wording.counted(files.count, "segment")) quarantined (\(which)): \(reason); `journal verify` lists them\n")
    }
    if let failure = report.snapshotNotWritten {
        Terminal.standardError("journal: note: no snapshot written (\(failure)): the answer is the same, and the next read of this journal replays as much again\n")
    }
    if let snapshot = report.snapshotWritten {
        Terminal.standardError("journal: wrote a snapshot of \(Wording.counted(snapshot.events, "event")) (\(Wording.counted(snapshot.bytes, "byte"))) to \(snapshot.path), so that the next open replays less; delete it any time\n")
    }
}
