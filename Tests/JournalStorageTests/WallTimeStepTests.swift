import JournalFormat
import JournalPlatform
import JournalStorage
import JournalTestSupport
import Testing

/// Writers record wall times in steps of `Event.wallTimeStep`: the reading rounded down.
struct WallTimeStepTests {
    @Test func aReadingIsRoundedDownToTheStep() {
        let step = Event.wallTimeStep
        for reading: Int64 in [0, 1, 7, 8, 9, 1_796_064_642_093, -1, -8, -9, .max - 3] {
            let recorded = Event.wallTime(at: reading)
            #expect(recorded % step == 0, "\(reading) -> \(recorded)")
            #expect(recorded <= reading && reading - recorded < step, "\(reading) -> \(recorded)")
        }
        #expect(Event.wallTime(at: 1_796_064_642_093) == 1_796_064_642_088)
        #expect(Event.wallTime(at: -1) == -8)
    }

    @Test func aWriterRecordsWallTimesInSteps() throws {
        let temp = TemporaryDirectory("wall-time-step")
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
        let before = ProcessInfoLite.wallClockMilliseconds()
        var recorded: [Int64] = []
        for _ in 0..<200 { recorded.append(try writer.appendEvent(.clear).wallTime) }
        let after = ProcessInfoLite.wallClockMilliseconds()
        try writer.close()
        for wall in recorded {
            #expect(wall % Event.wallTimeStep == 0)
            #expect(wall > before - Event.wallTimeStep && wall <= after)
        }
    }

    /// A recorder that read many lines at once stamps them with the time they arrived
    /// (`NDJSONReader.arrivedAtMilliseconds`) instead of reading the clock for each.
    @Test func anEventTakesTheArrivalTimeItIsGiven() throws {
        let temp = TemporaryDirectory("wall-time-arrived")
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
        let arrived: Int64 = 1_796_064_642_093
        let given = try writer.appendEvent(.clear, arrivedAt: arrived)
        let before = ProcessInfoLite.wallClockMilliseconds()
        let read = try writer.appendEvent(.clear)
        try writer.close()
        #expect(given.wallTime == Event.wallTime(at: arrived))
        #expect(read.wallTime > before - Event.wallTimeStep, "without a time given, the clock's")
    }
}
