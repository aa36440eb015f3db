import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalIngest
import JournalReplay
import JournalStorage

extension JournalCommand {
    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stats",
            abstract: "Summarise a journal: replicas, segments, events, size, bytes per point.",
            discussion: """
                The compression ratio is raw encoded block bytes over compressed block bytes.

                Example:
                  journal stats -C board --json | jq .bytesPerPoint
                """)

        @OptionGroup var options: JournalOptions
        @Flag(help: "Print one JSON object with stable keys instead of text.") var json = false

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let set = SegmentSet.load(journal)
                let (drawing, report) = Replay.load(journal, set: set, useSnapshots: true)
                reportProblems(report)
                let stats = JournalStats(set: set, drawing: drawing, report: report)
                Terminal.write(json ? stats.json : stats.text)
                Terminal.flush()
            }
        }
    }
}

struct JournalStats {
    var replicas: Int
    var sealedSegments: Int
    var openSegments: Int
    var events: Int
    var points: Int
    var strokes: Int
    var visibleStrokes: Int
    var bytesOnDisk: Int64
    var rawBlockBytes: Int64
    var compressedBlockBytes: Int64
    var duplicates: Int
    var forks: Int
    var problems: Int

    init(set: SegmentSet, drawing: Drawing, report: ReplayReport) {
        replicas = set.replicas.count
        sealedSegments = set.members.filter(\.isSealed).count
        openSegments = set.members.filter { !$0.isSealed && $0.scan.eventCount > 0 }.count
        events = report.eventCount
        points = report.pointCount
        strokes = drawing.strokes.count
        visibleStrokes = drawing.visibleStrokes.count
        bytesOnDisk = set.totalBytes
        rawBlockBytes = set.members.reduce(0) { total, member in
            total + member.scan.blocks.reduce(0) { $0 + Int64($1.frame.rawLength) }
        }
        compressedBlockBytes = set.members.reduce(0) { total, member in
            total + member.scan.blocks.reduce(0) { $0 + Int64($1.frame.compressedLength) }
        }
        duplicates = report.duplicateEvents
        forks = report.forks.count
        problems = report.problems.filter { $0.kind != .tornTail }.count
    }

    var bytesPerPoint: Double { points == 0 ? 0 : Double(bytesOnDisk) / Double(points) }
    var compressionRatio: Double { compressedBlockBytes == 0 ? 0 : Double(rawBlockBytes) / Double(compressedBlockBytes) }

    var text: String {
        """
        replicas:          \(replicas)
        segments:          \(sealedSegments) sealed, \(openSegments) open
        events:            \(events) (\(points) points)
        strokes:           \(strokes) (\(visibleStrokes) visible)
        bytes on disk:     \(bytesOnDisk)
        bytes per point:   \(format(bytesPerPoint))
        compression ratio: \(format(compressionRatio)) (raw \(rawBlockBytes) → \(compressedBlockBytes) bytes)
        duplicates:        \(duplicates)
        forks:             \(forks)
        problems:          \(problems)

        """
    }

    var json: String {
        var object = JSONObject()
        object.add("replicas", replicas)
        object.add("sealedSegments", sealedSegments)
        object.add("openSegments", openSegments)
        object.add("events", events)
        object.add("points", points)
        object.add("strokes", strokes)
        object.add("visibleStrokes", visibleStrokes)
        object.add("bytesOnDisk", bytesOnDisk)
        object.add("bytesPerPoint", rounded(bytesPerPoint))
        object.add("rawBlockBytes", rawBlockBytes)
        object.add("compressedBlockBytes", compressedBlockBytes)
        object.add("compressionRatio", rounded(compressionRatio))
        object.add("duplicates", duplicates)
        object.add("forks", forks)
        object.add("problems", problems)
        return object.text + "\n"
    }

    private func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
    private func format(_ value: Double) -> String {
        let scaled = Int((value * 100).rounded())
        let fraction = scaled % 100
        return "\(scaled / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
