import JournalFormat
import JournalPlatform
import JournalStorage
import JournalTestSupport
import Testing

/// One test per failure mode, built from byte helpers (after LevelDB's log_test).
@Suite(.ownThreads) struct SegmentDamageTests {
    /// A segment of three blocks of `perBlock` events each, and the blocks' start offsets.
    func threeBlockSegment(perBlock: Int = 40, seed: UInt64 = 11) -> (bytes: [UInt8], events: [Event], starts: [Int], replica: ReplicaID) {
        var generator = EventGenerator(seed: seed)
        var events: [Event] = []
        while events.count < perBlock * 3 { events += generator.stroke(points: 25) }
        events = Array(events.prefix(perBlock * 3))
        let bytes = SegmentEncoder.segment(replica: generator.replica, events: events, targetEvents: perBlock)
        let scan = SegmentScanner.scan(bytes: bytes, path: "test.sjs", sealed: true)
        return (bytes, events, scan.blocks.map(\.offset), generator.replica)
    }

    /// Where each block of a `threeBlockSegment(perBlock:)` ends and the events it holds,
    /// found by encoding the blocks one by one after the header (not by scanning).
    func blockLayout(_ events: [Event], perBlock: Int) -> [(end: Int, events: ArraySlice<Event>)] {
        var end = FormatV1.fileHeaderSize
        return stride(from: 0, to: events.count, by: perBlock).map { first in
            let block = events[first..<min(first + perBlock, events.count)]
            end += SegmentEncoder.block(block).count
            return (end, block)
        }
    }

    /// The events a reader must keep from a sealed segment cut to `length` bytes: exactly those
    /// of the blocks that end at or before the cut.
    func eventsKept(cutAt length: Int, _ layout: [(end: Int, events: ArraySlice<Event>)]) -> [Event] {
        layout.filter { $0.end <= length }.flatMap(\.events)
    }

    @Test func cleanSegmentScansWhole() {
        let segment = threeBlockSegment()
        let scan = SegmentScanner.scan(bytes: segment.bytes, path: "test.sjs", sealed: true)
        #expect(scan.problems.isEmpty)
        #expect(scan.blocks.count == 3)
        #expect(scan.allEvents().events == segment.events)
        #expect(scan.validPrefixLength == segment.bytes.count)
    }

    @Test func truncationAtEveryOffsetOfTheLastBlockKeepsTheBlocksBefore() {
        let segment = threeBlockSegment()
        let lastStart = segment.starts[2]
        for length in lastStart..<segment.bytes.count {
            let scan = SegmentScanner.scan(bytes: Damage.truncate(segment.bytes, at: length), path: "open.sjo", sealed: false)
            #expect(scan.blocks.count == 2, "cut at \(length)")
            #expect(scan.validPrefixLength == lastStart, "cut at \(length)")
            #expect(scan.problemsAreOnlyAtTail)
            if length > lastStart {
                #expect(scan.problems.count == 1 && scan.problems[0].kind == .tornTail, "cut at \(length)")
            } else {
                #expect(scan.problems.isEmpty)
            }
            #expect(scan.allEvents().events == Array(segment.events.prefix(80)))
        }
    }

    @Test func truncationAnywhereNeverCrashesAndKeepsAPrefix() {
        let segment = threeBlockSegment(perBlock: 10)
        let layout = blockLayout(segment.events, perBlock: 10)
        #expect(layout.map(\.end) == Array(segment.starts.dropFirst()) + [segment.bytes.count])
        for length in 0..<segment.bytes.count {
            let scan = SegmentScanner.scan(bytes: Damage.truncate(segment.bytes, at: length), path: "x.sjs", sealed: true)
            let (events, decodeProblems) = scan.allEvents()
            #expect(events == eventsKept(cutAt: length, layout), "cut at \(length)")
            #expect(decodeProblems.isEmpty, "cut at \(length)")
            // A cut inside a block is always reported; a cut on a block boundary loses nothing readable.
            if !segment.starts.contains(length) && length != FormatV1.fileHeaderSize { #expect(!scan.problems.isEmpty, "cut at \(length)") }
        }
    }

    @Test func aFlippedByteInAnyBlockIsReportedAndTheOtherBlocksStillRead() {
        let segment = threeBlockSegment(perBlock: 12)
        for offset in FormatV1.fileHeaderSize..<segment.bytes.count {
            let damagedBlock = segment.starts.lastIndex { $0 <= offset }!
            let scan = SegmentScanner.scan(bytes: Damage.flipByte(segment.bytes, at: offset), path: "x.sjs", sealed: true)
            #expect(scan.blocks.count == 2, "flip at \(offset)")
            #expect(scan.blocks.map(\.offset) == segment.starts.enumerated().filter { $0.offset != damagedBlock }.map(\.element))
            let problem = scan.problems.first
            #expect(problem?.kind == .corrupt || problem?.kind == .incomplete, "flip at \(offset)")
            #expect(problem?.offset == Int64(segment.starts[damagedBlock]), "flip at \(offset)")
            #expect(scan.problems.count == 1, "flip at \(offset)")
            let kept = scan.allEvents().events
            let expected = segment.events.enumerated().filter { $0.offset / 12 != damagedBlock }.map(\.element)
            #expect(kept == expected)
        }
    }

    @Test func aFlippedHeaderByteRejectsTheFile() {
        let segment = threeBlockSegment(perBlock: 5)
        for offset in 0..<FormatV1.fileHeaderSize {
            let scan = SegmentScanner.scan(bytes: Damage.flipByte(segment.bytes, at: offset), path: "x.sjs", sealed: true)
            #expect(scan.header == nil)
            #expect(scan.blocks.isEmpty)
            #expect(scan.problems.first?.offset == 0)
        }
    }

    @Test func garbageAfterTheLastBlockIsATailNotAnEvent() {
        let segment = threeBlockSegment(perBlock: 5)
        let scan = SegmentScanner.scan(bytes: Damage.appendGarbage(segment.bytes, count: 100, seed: 4), path: "open.sjo", sealed: false)
        #expect(scan.blocks.count == 3)
        #expect(scan.problemsAreOnlyAtTail)
        #expect(scan.validPrefixLength == segment.bytes.count)
        #expect(scan.allEvents().events == segment.events)
    }

    @Test func absurdLengthFieldsAreRefused() {
        var header = SegmentHeader(replica: ReplicaID(UUIDBits(high: 9, low: 9))).encoded()
        var frame = ByteWriter()
        frame.append(contentsOf: FormatV1.blockMagic)
        frame.appendLE(UInt32.max)          // compressed length: 4 GiB
        frame.appendLE(UInt32.max)          // raw length: 4 GiB
        frame.appendLE(UInt32(1))
        frame.appendLE(UInt64(1))
        frame.appendLE(UInt64(1))
        frame.appendLE(UInt32(0))
        header += frame.bytes
        let scan = SegmentScanner.scan(bytes: header, path: "bomb.sjs", sealed: true)
        #expect(scan.blocks.isEmpty)
        #expect(scan.problems.first?.reason.contains("bounds") == true)
    }

    /// A checksum-valid block whose frame lies about its clock, or whose events hold values no
    /// writer may record, is refused when decoded.
    @Test func dishonestFramesAreRefusedAtDecode() throws {
        var generator = EventGenerator(seed: 12)
        let events = generator.stroke(points: 5)
        var frame = SegmentEncoder.block(events[...])
        // Raise maxLamport (bytes 24..<32) and recompute the checksum: valid CRC, false claim.
        frame[24] = 0xFF
        let crc = frame.withUnsafeBytes { raw in
            BlockFrame.computeChecksum(header: UnsafeRawBufferPointer(rebasing: raw[0..<FormatV1.blockHeaderSize]),
                                       body: UnsafeRawBufferPointer(rebasing: raw[FormatV1.blockHeaderSize...]))
        }
        withUnsafeBytes(of: crc.littleEndian) { for (index, byte) in $0.enumerated() { frame[32 + index] = byte } }
        let bytes = SegmentHeader(replica: generator.replica).encoded() + frame
        let scan = SegmentScanner.scan(bytes: bytes, path: "liar.sjs", sealed: true)
        #expect(scan.blocks.count == 1)
        let (decoded, problems) = scan.allEvents()
        #expect(decoded.isEmpty)
        #expect(problems.first?.reason.contains("max lamport") == true)
    }

    @Test func namesAndFoldersHaveExactlyOneSpelling() {
        #expect(SegmentName(fileName: "+0000000000000000001-00000000000000000002-0000abcd.sjs") == nil)
        #expect(SegmentName(fileName: "00000000000000000001-00000000000000000002-0000ABCD.sjs") == nil)
        #expect(SegmentName(fileName: "00000000000000000001-00000000000000000002-0000abcd.sjs") != nil)
        #expect(ReplicaID(hex: String(repeating: "A", count: 32)) == nil)
        #expect(ReplicaID(hex: String(repeating: "a", count: 32)) != nil)
    }

    /// Every single-byte change and every truncation of a sealed segment is either reported or
    /// leaves the decoded events exactly as they were: damage never silently changes data.
    @Test func everyByteFlipAndCutIsDetectedOrHarmless() {
        let segment = threeBlockSegment(perBlock: 9, seed: 21)
        var random = SeededGenerator(seed: 22)
        var detected = 0
        var harmless = 0
        for offset in 0..<segment.bytes.count {
            for mask in [0x01, 0x80, UInt8.random(in: 1...255, using: &random)] as [UInt8] {
                let scan = SegmentScanner.scan(bytes: Damage.flipByte(segment.bytes, at: offset, mask: mask), path: "x.sjs", sealed: true)
                let (events, decodeProblems) = scan.allEvents()
                if scan.problems.isEmpty && decodeProblems.isEmpty {
                    #expect(events == segment.events, "flip \(mask) at \(offset) changed events without a report")
                    harmless += 1
                } else {
                    // What is kept is a subset of the original, never altered events.
                    #expect(events.allSatisfy { segment.events.contains($0) }, "flip \(mask) at \(offset)")
                    detected += 1
                }
            }
        }
        // Each cut keeps exactly the blocks that end at or before it, decoded unchanged; a cut
        // inside the header or a block is reported.
        let layout = blockLayout(segment.events, perBlock: 9)
        #expect(layout.map(\.end) == Array(segment.starts.dropFirst()) + [segment.bytes.count])
        let boundaries = Set([FormatV1.fileHeaderSize] + layout.map(\.end))
        for length in 0..<segment.bytes.count {
            let scan = SegmentScanner.scan(bytes: Damage.truncate(segment.bytes, at: length), path: "x.sjs", sealed: true)
            let (events, decodeProblems) = scan.allEvents()
            #expect(events == eventsKept(cutAt: length, layout), "cut at \(length)")
            #expect(decodeProblems.isEmpty, "cut at \(length)")
            if !boundaries.contains(length) { #expect(!scan.problems.isEmpty, "cut at \(length)") }
        }
        #expect(detected > 0)
        print("byte damage: \(detected) flips detected, \(harmless) harmless, \(segment.bytes.count) truncations checked")
    }
}
