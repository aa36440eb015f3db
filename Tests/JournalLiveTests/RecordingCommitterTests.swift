import JournalCommit
import JournalFormat
import JournalLive
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// `journal record`'s committer (`Committer.Recording`): it, not the writer, decides every
/// flush, seal and compaction.
@Suite(.ownThreads) struct RecordingCommitterTests {
    static func point(_ stroke: StrokeID, _ x: Double) -> Payload {
        .point(PointSample(stroke: stroke, x: x, y: x / 2, pressure: 0.5, t: x / 100, style: Style(color: RGBA(rawValue: 0x3366FFFF), width: 2.5)))
    }

    @Test func flushesByCountReportDurableSeqsInOrderAndCloseMakesTheRestDurable() throws {
        let temp = TemporaryDirectory("recording")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let durable = Locked<[UInt64]>([])
        let recording = try Committer.Recording(
            directory: journal, options: RecordingOptions(flushEveryEvents: 100, flushIntervalMilliseconds: nil, automaticCompaction: false),
            durable: { seq in durable.withLock { $0.append(seq) } })
        let stroke = StrokeID(UUIDBits(high: 3, low: 4))
        for index in 0..<1_050 { try recording.append(Self.point(stroke, Double(index))) }
        // Ten flushes were handed off by count; the last one may still be in flight.
        let seen = durable.withLock { $0 }
        #expect(seen == seen.sorted())
        #expect(seen.allSatisfy { $0 % 100 == 0 })
        try recording.close()
        #expect(durable.withLock { $0.last } == 1_050)
        #expect(Replay.load(journal).report.eventCount == 1_050)
        #expect(journal.listSealed().sealed.count == 1, "sealed at close")
    }

    @Test func aRecordingThatSealsOftenLeavesItsJournalCompactedAtClose() throws {
        let temp = TemporaryDirectory("recording-compacts")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let recording = try Committer.Recording(
            directory: journal, options: RecordingOptions(flushEveryEvents: 25, flushIntervalMilliseconds: nil, sealEveryEvents: 25))
        for file in 0..<40 {
            let stroke = StrokeID(UUIDBits(high: 1, low: UInt64(file)))
            for index in 0..<24 { try recording.append(Self.point(stroke, Double(index))) }
            try recording.append(.end(stroke))
        }
        try recording.close()
        // Forty seals, then the compactions they asked for, waited for by close.
        #expect(journal.listSealed().sealed.count < 40)
        #expect(Replay.load(journal).report.eventCount == 1_000)
    }

    @Test func withoutCompactionEverySealStays() throws {
        let temp = TemporaryDirectory("recording-no-compaction")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let recording = try Committer.Recording(
            directory: journal, options: RecordingOptions(flushEveryEvents: 25, flushIntervalMilliseconds: nil, sealEveryEvents: 25, automaticCompaction: false))
        let stroke = StrokeID(UUIDBits(high: 1, low: 1))
        for index in 0..<1_000 { try recording.append(Self.point(stroke, Double(index))) }
        try recording.close()
        #expect(journal.listSealed().sealed.count == 40)
    }

    @Test func aBatchFlushesWhereOneByOneWouldAndStampsOneTime() throws {
        let temp = TemporaryDirectory("recording-batch")
        defer { temp.remove() }
        let stroke = StrokeID(UUIDBits(high: 5, low: 6))
        let payloads = (0..<1_050).map { Self.point(stroke, Double($0)) }
        var journals: [JournalDirectory] = []
        var durableSeqs: [[UInt64]] = []
        for batched in [false, true] {
            let journal = try JournalDirectory.create(at: temp.path + (batched ? "/batched" : "/single"))
            let durable = Locked<[UInt64]>([])
            let recording = try Committer.Recording(
                directory: journal, options: RecordingOptions(flushEveryEvents: 100, flushIntervalMilliseconds: nil, automaticCompaction: false),
                durable: { seq in durable.withLock { $0.append(seq) } })
            if batched {
                #expect(try recording.append(contentsOf: payloads[0..<333], arrivedAt: 1_700_000_000_005) == 1..<334)
                #expect(try recording.append(contentsOf: Array(payloads[333...]), arrivedAt: 1_700_000_000_021) == 334..<1_051)
            } else {
                for payload in payloads { try recording.append(payload, arrivedAt: 1_700_000_000_005) }
            }
            try recording.close()
            journals.append(journal)
            durableSeqs.append(durable.withLock { $0 })
        }
        // The same flushes by count (every 100 events, then the rest at close), whichever way
        // the events came.
        #expect(durableSeqs[0] == durableSeqs[1])
        #expect(durableSeqs[1].contains(300) && durableSeqs[1].contains(400) && durableSeqs[1].last == 1_050)
        let (single, _) = Replay.load(journals[0])
        let (batched, report) = Replay.load(journals[1])
        #expect(report.eventCount == 1_050)
        #expect(batched.digest == single.digest)
        // One time for each call, rounded down to the step writers record in.
        var walls: [Int64: Int] = [:]
        for file in journals[1].listSealed().sealed {
            let problems = SegmentScanner.scan(path: file.path, sealed: true).events { walls[$0.wallTime, default: 0] += 1 }
            #expect(problems.isEmpty)
        }
        #expect(walls == [1_700_000_000_000: 333, 1_700_000_000_016: 717])
    }

    @Test func aBatchWithAnInvalidPayloadAppendsNoneOfIt() throws {
        let temp = TemporaryDirectory("recording-batch-invalid")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let recording = try Committer.Recording(directory: journal, options: RecordingOptions(automaticCompaction: false))
        let stroke = StrokeID(UUIDBits(high: 7, low: 8))
        try recording.append(Self.point(stroke, 1))
        var batch = (0..<10).map { Self.point(stroke, Double($0)) }
        batch[7] = .point(PointSample(stroke: stroke, x: .nan, y: 0, style: Style(color: RGBA(rawValue: 0xFF), width: 1)))
        #expect(throws: JournalError.self) { try recording.append(contentsOf: batch) }
        #expect(recording.nextSeq == 2, "nothing of the batch got a seq")
        #expect(try recording.append(contentsOf: Array(batch[0..<7])) == 2..<9)
        try recording.close()
        #expect(Replay.load(journal).report.eventCount == 8)
    }
}
