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
}
