import JournalFormat
import JournalPlatform
import JournalStorage
import JournalTestSupport
import Testing

@Suite(.ownThreads) struct WriterTests {
    func point(_ stroke: StrokeID, _ x: Double) -> Payload {
        .point(PointSample(stroke: stroke, x: x, y: x / 2, pressure: 0.5, t: x / 100, style: Style(color: RGBA(rawValue: 0xFF0000FF), width: 3)))
    }

    func allEvents(_ journal: JournalDirectory) -> [Event] {
        let set = SegmentSet.load(journal)
        return set.members.flatMap { $0.scan.allEvents().events }.sorted { $0.id.seq < $1.id.seq }
    }

    /// When to flush is the committer's decision (`Committer`, `Committer.Recording`): a writer
    /// alone buffers every append, past any count or age, until its owner flushes.
    @Test func theWriterFlushesOnlyWhenItsOwnerSays() throws {
        let temp = TemporaryDirectory("writer-owner-flushes")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let writer = try JournalWriter(directory: journal)
        let stroke = StrokeID(UUIDBits(high: 2, low: 2))
        // Past the count at which writers used to flush on their own (32,768).
        for index in 0..<40_000 { try writer.append(point(stroke, Double(index % 1000))) }
        #expect(writer.durableSeq == 0)
        #expect(writer.pendingEvents == 40_000)
        try writer.flush()
        #expect(writer.durableSeq == writer.nextSeq - 1)
        #expect(writer.pendingEvents == 0)
        try writer.close()
    }

    @Test func appendFlushSealAndReopenContinuesSeqAndClock() throws {
        let temp = TemporaryDirectory("writer")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let stroke = StrokeID(UUIDBits(high: 1, low: 1))
        do {
            let writer = try JournalWriter(directory: journal)
            for index in 0..<100 { try writer.append(point(stroke, Double(index)), flushingEvery: 7) }
            #expect(writer.durableSeq == 98)     // 14 automatic flushes of 7
            try writer.close()
        }
        let listing = journal.listSealed()
        #expect(listing.sealed.count == 1)
        #expect(listing.sealed.first?.name.firstSeq == 1 && listing.sealed.first?.name.lastSeq == 100)
        let writer = try JournalWriter(directory: journal)
        #expect(writer.nextSeq == 101)
        #expect(writer.clock == 100)
        let id = try writer.append(.end(stroke))
        #expect(id.seq == 101)
        try writer.close()
        let events = allEvents(journal)
        #expect(events.map(\.id.seq) == Array(1...101))
        #expect(events.map(\.lamport) == Array(1...101))
    }

    @Test func aSecondWriterIsRefusedWithTheHoldersPid() throws {
        let temp = TemporaryDirectory("lock")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let first = try JournalWriter(directory: journal)
        #expect {
            _ = try JournalWriter(directory: journal)
        } throws: { error in
            guard case JournalError.locked(_, let holder) = error else { return false }
            return holder.contains("pid \(ProcessInfoLite.processID)")
        }
        try first.close()
        let second = try JournalWriter(directory: journal)
        try second.close()
    }

    @Test func aTornTailOfTheOpenSegmentIsCutAtEveryOffset() throws {
        let temp = TemporaryDirectory("torn")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let stroke = StrokeID(UUIDBits(high: 2, low: 2))
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
        for index in 0..<30 { try writer.append(point(stroke, Double(index)), flushingEvery: 10) }
        try writer.close()
        let full = try FileSystem.readFile(journal.openSegmentPath)
        let blocks = SegmentScanner.scan(bytes: full, path: "", sealed: false).blocks
        #expect(blocks.count == 3)
        let lastStart = blocks[2].offset
        for cut in lastStart..<full.count {
            try FileSystem.writeAtomically(Damage.truncate(full, at: cut), to: journal.openSegmentPath)
            let reopened = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
            #expect(reopened.recovery.bytesCut == Int64(cut - lastStart))
            #expect(reopened.nextSeq == 21)
            try reopened.close()
            #expect(allEvents(journal).map(\.id.seq) == Array(1...20))
        }
    }

    @Test func sealedSegmentsAreNeverModified() throws {
        let temp = TemporaryDirectory("immutable")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let stroke = StrokeID(UUIDBits(high: 3, low: 3))
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealEveryEvents: 20))
        for index in 0..<20 { try writer.append(point(stroke, Double(index)), flushingEvery: 5) }
        let firstSealed = journal.listSealed().sealed
        #expect(firstSealed.count == 1)
        let before = try FileSystem.readFile(firstSealed[0].path)
        for index in 20..<95 { try writer.append(point(stroke, Double(index)), flushingEvery: 5) }
        try writer.close()
        #expect(try FileSystem.readFile(firstSealed[0].path) == before)
        let names = journal.listSealed().sealed.map(\.name)
        #expect(names.map(\.firstSeq) == [1, 21, 41, 61, 81])
        #expect(names.last?.lastSeq == 95)
    }

    @Test func aCrashBetweenSealAndResetDoesNotDuplicateEvents() throws {
        let temp = TemporaryDirectory("sealcrash")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let stroke = StrokeID(UUIDBits(high: 4, low: 4))
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
        for index in 0..<10 { try writer.append(point(stroke, Double(index))) }
        try writer.close()
        let openCopy = try FileSystem.readFile(journal.openSegmentPath)
        let sealer = try JournalWriter(directory: journal)
        try sealer.close()
        // Put back the open segment as it was before sealing: the state a crash leaves.
        try FileSystem.writeAtomically(openCopy, to: journal.openSegmentPath)
        let reopened = try JournalWriter(directory: journal)
        #expect(reopened.recovery.discardedSealedCopy)
        #expect(reopened.nextSeq == 11)
        try reopened.close()
    }

    @Test func nonFiniteCoordinatesAreRefusedAtTheAPI() throws {
        let temp = TemporaryDirectory("finite")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let writer = try JournalWriter(directory: journal)
        #expect(throws: JournalError.self) { try writer.append(point(StrokeID(UUIDBits(high: 5, low: 5)), .nan)) }
        #expect(throws: JournalError.self) { try writer.append(point(StrokeID(UUIDBits(high: 5, low: 5)), .infinity)) }
        #expect(writer.nextSeq == 1)
        try writer.close()
    }

    /// Damage before the last block is not a crash tail: the writer must refuse rather than
    /// cut acknowledged events (found by reading FORMAT.md against the code).
    @Test func damageInsideTheOpenSegmentIsRefusedNotCut() throws {
        let temp = TemporaryDirectory("midcorrupt")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let stroke = StrokeID(UUIDBits(high: 6, low: 6))
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
        for index in 0..<30 { try writer.append(point(stroke, Double(index)), flushingEvery: 5) }
        try writer.close()
        let original = try FileSystem.readFile(journal.openSegmentPath)
        let blocks = SegmentScanner.scan(bytes: original, path: "", sealed: false).blocks
        #expect(blocks.count == 6)
        for (label, damaged) in [("block 2", Damage.flipByte(original, at: blocks[1].offset + 40)),
                                 ("header", Damage.flipByte(original, at: 3))] {
            try FileSystem.writeAtomically(damaged, to: journal.openSegmentPath)
            #expect(throws: JournalError.self, "\(label)") { _ = try JournalWriter(directory: journal) }
            #expect(try FileSystem.readFile(journal.openSegmentPath) == damaged, "\(label): the file must be left as it was")
        }
    }

    /// A journal whose `local/` is a symlink into another journal: its writer would read that
    /// journal's identity, take its lock and append to its open segment, as if it were it.
    @Test func aSymlinkedLocalFolderIsRefusedAndWhatItPointsToIsUntouched() throws {
        let temp = TemporaryDirectory("writer-local-symlink")
        defer { temp.remove() }
        let victim = try JournalDirectory.create(at: temp.path + "/victim")
        do {
            let writer = try JournalWriter(directory: victim)
            try writer.append(.clear)
            try writer.close()
        }
        let before = try FileSystem.list(victim.localPath).map { [$0.name, String($0.size)] }
        let planted = try JournalDirectory.create(at: temp.path + "/planted")
        try FileSystem.rename(planted.localPath, to: temp.path + "/aside")
        try FileSystem.symlink(victim.localPath, at: planted.localPath)
        #expect {
            _ = try JournalWriter(directory: planted)
        } throws: { error in
            guard case JournalError.io(let cause) = error else { return false }
            return cause.isSymbolicLink && cause.path.hasSuffix("planted/local")
        }
        #expect(try FileSystem.list(victim.localPath).map { [$0.name, String($0.size)] } == before)
        // The victim still opens as itself, with its one event.
        let writer = try JournalWriter(directory: victim)
        #expect(writer.durableSeq == 1)
        try writer.close()
    }

    /// `append(contentsOf:)`: consecutive seqs and Lamport clocks, one wall time for the batch,
    /// the events exactly as appended one by one would be, and nothing of a batch holding an
    /// invalid payload.
    @Test func aBatchIsAppendedWholeWithOneWallTime() throws {
        let temp = TemporaryDirectory("writer-batch")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
        let stroke = StrokeID(UUIDBits(high: 9, low: 9))
        try writer.append(point(stroke, 0))
        let batch = (1...500).map { point(stroke, Double($0)) }
        for round in 0..<20 {
            #expect(try writer.append(contentsOf: batch, arrivedAt: 1_700_000_000_000 + Int64(round) * 100) == UInt64(2 + 500 * round)..<UInt64(502 + 500 * round))
        }
        var broken = batch
        broken[250] = .point(PointSample(stroke: stroke, x: 1, y: .infinity, style: Style(color: RGBA(rawValue: 0xFF), width: 1)))
        #expect(throws: JournalError.self) { try writer.append(contentsOf: broken[...]) }
        #expect(writer.nextSeq == 10_002)
        #expect(try writer.append(contentsOf: []) == 10_002..<10_002)
        try writer.close()
        let events = allEvents(journal)
        #expect(events.count == 10_001)
        #expect(events.map(\.id.seq) == Array(1...10_001))
        #expect(events.map(\.lamport) == Array(1...10_001))
        #expect(Set(events[1...500].map(\.wallTime)) == [1_700_000_000_000])
        #expect(Set(events[501...1000].map(\.wallTime)) == [Event.wallTime(at: 1_700_000_000_100)])
        #expect(events[1...500].map(\.payload) == batch)
        #expect(throws: JournalError.self) { try writer.append(contentsOf: batch) }
    }
}
