import JournalFormat
import JournalReplay
import JournalSamples
import JournalStorage

/// The `liveClockOrder` row (issue 23, item 2): what the order of clocks within a stroke costs
/// `LiveDrawing.apply`. A client may send a stroke whose Lamport clocks fall as its seq rises;
/// each of its points then sorts before every point already held. Folding must not cost much
/// more for that than for rising clocks, or one such stroke stalls a relay's board and every
/// joiner's copy of it.
///
/// Cases, each a fresh `LiveDrawing` fed one replica's events in seq order, changes collected
/// per block of `clockOrderBlock` events as a joiner folds a catch-up message:
/// - one stroke of `clockOrderPoints` points, events built beforehand (untimed): clocks rising
///   (`risingSeconds`), falling (`seconds`, the row's main timing), and a seeded shuffle of
///   the rising clocks (`shuffledSeconds`);
/// - as many strokes of one point each, created with rising or falling clocks (z-order:
///   `risingStrokesSeconds`, `fallingStrokesSeconds`);
/// - the one-stroke rising and falling cases from the bytes of a sealed segment, decoded and
///   folded (`catchUpRisingSeconds`, `catchUpFallingSeconds`): what a joiner or a board
///   opening the journal pays, decoding included.
/// Not timed: each case's drawing against the order-free `Fold` of the same events (`digestOk`;
/// the cases that differ: `digestMismatches`).
extension RowRunner {
    static var clockOrderPoints: Int { 100_000 }
    static var clockOrderBlock: Int { 1_000 }

    func liveClockOrder() throws -> RowOutput {
        let points = Self.clockOrderPoints
        let replica = ReplicaID(UUIDBits(high: 0x5EED, low: 23))
        let style = Style(color: RGBA(rawValue: 0x202020FF), width: 2)
        func stroke(_ index: Int) -> StrokeID { StrokeID(UUIDBits(high: 0xC10C, low: UInt64(index))) }
        /// Event `seq` (from 1) of the case, with the Lamport clock `lamport(seq)`.
        func events(strokes: Bool, lamport: (UInt64) -> UInt64) -> [Event] {
            (1...UInt64(points)).map { seq in
                let sample = PointSample(stroke: stroke(strokes ? Int(seq) : 0), x: Double(seq % 1000), y: Double(seq / 1000),
                                         pressure: 0.5, t: Double(seq) / 240, style: style)
                return Event(id: EventID(replica: replica, seq: seq), lamport: lamport(seq), wallTime: 1_700_000_000_000,
                             payload: .point(sample))
            }
        }
        var shuffled = Array(1...UInt64(points))
        var random = SplitMix64(seed: 23)
        for index in shuffled.indices.dropLast() {
            shuffled.swapAt(index, Int.random(in: index..<shuffled.count, using: &random))
        }
        let top = UInt64(points) + 1
        let rising = events(strokes: false) { $0 }
        let falling = events(strokes: false) { top - $0 }
        /// (JSON key prefix, events, the sealed segment holding them when the case decodes it)
        let cases: [(key: String, events: [Event], segment: [UInt8]?)] = [
            ("rising", rising, nil),
            ("falling", falling, nil),
            ("shuffled", events(strokes: false) { shuffled[Int($0) - 1] }, nil),
            ("risingStrokes", events(strokes: true) { $0 }, nil),
            ("fallingStrokes", events(strokes: true) { top - $0 }, nil),
            ("catchUpRising", rising, SegmentEncoder.segment(replica: replica, events: rising)),
            ("catchUpFalling", falling, SegmentEncoder.segment(replica: replica, events: falling)),
        ]
        let references = cases.map { _, events, _ in
            var fold = Fold(replicas: [replica])
            events.forEach { fold.apply($0) }
            return fold.finish().digest
        }

        var output = RowOutput()
        var runs: [String: [Double]] = [:]
        var cpuRuns: [String: [Double]] = [:]
        var mismatched: Set<String> = []
        // Cases alternate within each repeat, so that a change in the machine's load falls on
        // all of them alike.
        for _ in 0..<repeats {
            for ((key, prepared, segment), reference) in zip(cases, references) {
                var live = LiveDrawing()
                let cpu = Clock.cpu()
                let (changeCount, seconds) = Clock.time { () -> Int in
                    var events = prepared
                    if let segment {
                        events = SegmentScanner.scan(bytes: segment, path: "catch-up", sealed: true).allEvents().events
                    }
                    var changes: [DrawingChange] = []
                    var count = 0
                    for block in stride(from: 0, to: events.count, by: Self.clockOrderBlock) {
                        for event in events[block..<min(block + Self.clockOrderBlock, events.count)] {
                            _ = live.apply(event, changes: &changes)
                        }
                        count += changes.count
                        changes.removeAll(keepingCapacity: true)
                    }
                    return count
                }
                let cpuSeconds = Clock.cpu() - cpu
                runs[key, default: []].append(seconds)
                cpuRuns[key, default: []].append(cpuSeconds)
                if key == "falling" {
                    output.seconds.append(seconds)
                    output.cpuSeconds.append(cpuSeconds)
                }
                if live.drawing.digest != reference || live.pointCount != points { mismatched.insert(key) }
                output.extra[key + "Changes"] = .int(changeCount)
            }
        }
        for (key, _, _) in cases where key != "falling" {
            output.extra[key + "Seconds"] = .seconds(runs[key]!)
            output.extra[key + "CPUSeconds"] = .seconds(cpuRuns[key]!)
        }
        func ratio(_ a: String, _ b: String, _ runs: [String: [Double]]) -> JSON {
            .number(median(runs[a]!) / median(runs[b]!), decimals: 3)
        }
        output.extra["points"] = .int(points)
        output.extra["fallingVsRising"] = ratio("falling", "rising", runs)
        // CPU time and the fastest runs: less disturbed by other work on a shared machine.
        output.extra["fallingVsRisingCPU"] = ratio("falling", "rising", cpuRuns)
        output.extra["fallingVsRisingMin"] = .number(runs["falling"]!.min()! / runs["rising"]!.min()!, decimals: 3)
        output.extra["shuffledVsRising"] = ratio("shuffled", "rising", runs)
        output.extra["fallingStrokesVsRisingStrokes"] = ratio("fallingStrokes", "risingStrokes", runs)
        output.extra["catchUpFallingVsRising"] = ratio("catchUpFalling", "catchUpRising", runs)
        output.extra["catchUpFallingVsRisingCPU"] = ratio("catchUpFalling", "catchUpRising", cpuRuns)
        output.extra["risingNanosPerPoint"] = .number(median(runs["rising"]!) / Double(points) * 1e9, decimals: 1)
        output.extra["fallingNanosPerPoint"] = .number(median(runs["falling"]!) / Double(points) * 1e9, decimals: 1)
        output.extra["digestOk"] = .bool(mismatched.isEmpty)
        output.extra["digestMismatches"] = .array(mismatched.sorted().map { .string($0) })
        return output
    }
}
