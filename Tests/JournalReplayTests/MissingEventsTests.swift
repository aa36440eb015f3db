import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// What a catch-up in blocks is read from: whole stored blocks when the holder lacks all of
/// them, events otherwise, and the same events either way.
@Suite(.ownThreads) struct MissingEventsTests {
    /// A journal with one sealed segment of `count` events (one block) and its file's bytes.
    func journal(_ temp: TemporaryDirectory, count: Int) throws -> (JournalDirectory, ReplicaID, [UInt8]) {
        let directory = try JournalDirectory.create(at: temp.path + "/j")
        let writer = try JournalWriter(directory: directory)
        var generator = EventGenerator(seed: 5)
        while writer.nextSeq <= UInt64(count) {
            for event in generator.stroke(points: 9) where writer.nextSeq <= UInt64(count) { _ = try writer.append(event.payload) }
        }
        let replica = writer.replica
        try writer.close()
        let folder = temp.path + "/j/replicas/" + replica.hex
        let files = try FileSystem.list(folder)
        try #require(files.count == 1)
        return (directory, replica, try FileSystem.readFile(folder + "/" + files[0].name))
    }

    func drain(_ missing: inout MissingEvents, verbatim: Bool) -> [MissingEvents.Piece] {
        var pieces: [MissingEvents.Piece] = []
        while let piece = missing.nextPiece(maxEvents: 64, verbatim: verbatim) { pieces.append(piece) }
        return pieces
    }

    func events(of pieces: [MissingEvents.Piece]) throws -> [Event] {
        try pieces.flatMap { piece -> [Event] in
            switch piece {
            case .events(_, let events): return events
            case .block(let replica, _, let frame, _):
                let bytes = Array(frame)
                return try bytes.withUnsafeBytes { buffer in
                    let header = try BlockFrame.decodeHeader(buffer)
                    return try BlockDecoder.events(frame: header, frameBytes: buffer, replica: replica)
                }
            }
        }
    }

    @Test func aBlockTheHolderLacksWhollyIsHandedOutAsStored() throws {
        let temp = TemporaryDirectory("missing-verbatim")
        defer { temp.remove() }
        let (directory, own, file) = try journal(temp, count: 300)
        let set = SegmentSet.load(directory)

        var verbatim = MissingEvents(set: set, have: [:])
        let pieces = drain(&verbatim, verbatim: true)
        guard pieces.count == 1, case .block(let replica, let version, let frame, let seqs) = pieces[0] else {
            Issue.record("expected one stored block, got \(pieces)")
            return
        }
        // A signed segment (the journal has a key): its block is everything between the header
        // and the seal record (docs/FORMAT.md §15).
        #expect(replica == own && version == FormatV7.version && seqs == 1...300)
        #expect(Array(frame) == Array(file[FormatV1.fileHeaderSize..<(file.count - FormatV3.sealRecordSize)]))
        #expect(verbatim.count == 300 && verbatim.covered == [own: SeqRanges([1...300])])

        var decoded = MissingEvents(set: set, have: [:])
        let plain = drain(&decoded, verbatim: false)
        #expect(plain.allSatisfy { if case .events = $0 { true } else { false } })
        #expect(try events(of: pieces) == events(of: plain))
    }

    @Test func aBlockHeldInPartComesAsTheEventsLacked() throws {
        let temp = TemporaryDirectory("missing-partial")
        defer { temp.remove() }
        let (directory, own, _) = try journal(temp, count: 300)
        var missing = MissingEvents(set: SegmentSet.load(directory), have: [own: SeqRanges([1...100, 200...250])])
        let pieces = drain(&missing, verbatim: true)
        #expect(pieces.allSatisfy { if case .events = $0 { true } else { false } })
        #expect(try events(of: pieces).map(\.id.seq) == Array(101...199) + Array(251...300))
        // A cap on stored blocks' size sends even a wholly lacked block as events.
        var capped = MissingEvents(set: SegmentSet.load(directory), have: [:])
        var sizes: [MissingEvents.Piece] = []
        while let piece = capped.nextPiece(maxEvents: 64, maxBlockBytes: 10) { sizes.append(piece) }
        #expect(sizes.allSatisfy { if case .events = $0 { true } else { false } } && sizes.reduce(0) { $0 + $1.eventCount } == 300)
    }
}

/// A read of a journal whose writer seals meanwhile still holds every event the writer had
/// made durable before the read began (the open segment is read before the sealed listing).
@Suite(.ownThreads) struct ReadWhileSealingTests {
    @Test func noDurableEventIsMissingFromAReadRacingASeal() throws {
        let temp = TemporaryDirectory("read-while-sealing")
        defer { temp.remove() }
        let directory = try JournalDirectory.create(at: temp.path + "/j")
        let durable = Locked<UInt64>(0)
        let stop = Locked(false)
        let writerThread = WorkerThread()
        let failure = Locked<String?>(nil)
        let seals = Locked(0)
        writerThread.submit {
            do {
                let writer = try JournalWriter(directory: directory)
                var generator = EventGenerator(seed: 3)
                var round = 0
                while !stop.withLock({ $0 }) {
                    for event in generator.stroke(points: 3) { _ = try writer.append(event.payload) }
                    try writer.flush()
                    durable.withLock { $0 = writer.nextSeq - 1 }
                    round += 1
                    if round % 2 == 0, try writer.seal() != nil { seals.withLock { $0 += 1 } }
                }
                try writer.close()
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        var reads = 0
        var short: [String] = []
        // Reads go on until the writer has sealed ten times meanwhile (progress, not a clock:
        // on a busy machine the race takes longer, it is not skipped).
        while reads < 20 || seals.withLock({ $0 }) < 10, failure.withLock({ $0 }) == nil {
            let before = durable.withLock { $0 }
            let report = Replay.replay(SegmentSet.load(directory)).report
            let held = report.replicas.reduce(0) { $0 + $1.events }
            if held < Int(before) { short.append("read \(reads): \(held) events, \(before) durable before it") }
            reads += 1
        }
        stop.withLock { $0 = true }
        writerThread.stop()
        #expect(failure.withLock { $0 } == nil)
        #expect(seals.withLock { $0 } >= 10 && reads >= 20)
        #expect(short.isEmpty, "\(short.prefix(5))")
    }
}
