import JournalFormat
import JournalIngest
import JournalPlatform
import JournalStorage
import JournalTestSupport
import Testing

/// Replays the fuzzers' inputs through the same entry points as the libFuzzer harnesses in
/// Tools/fuzz (`fuzz-segment`, `fuzz-ndjson`), as a fast regression test that needs no
/// sanitizer build:
///   - the committed seed corpora, Tools/fuzz/corpus/segment/* and Tools/fuzz/corpus/ndjson/*;
///   - every input a fuzzer ever crashed on, saved under Golden/fuzz-regressions/ (files named
///     `ndjson-*` are NDJSON input, every other file is segment bytes).
/// A file that still crashes takes the test process down with it: that is the failure.
@Suite(.ownThreads) struct FuzzRegressionTests {
    static let repositoryRoot: String = {
        // <root>/Tests/JournalStorageTests/FuzzRegressionTests.swift
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()
    static let segmentCorpus = repositoryRoot + "/Tools/fuzz/corpus/segment"
    static let ndjsonCorpus = repositoryRoot + "/Tools/fuzz/corpus/ndjson"
    static let regressions = repositoryRoot + "/Tests/JournalStorageTests/Golden/fuzz-regressions"

    static let replica = ReplicaID(UUIDBits(high: 0x0011_2233_4455_6677, low: 0x8899_AABB_CCDD_EEFF))

    /// (name, bytes) of the regular files in `folder`, sorted; none if the folder is absent.
    static func files(in folder: String, where keep: (String) -> Bool = { _ in true }) throws -> [(name: String, bytes: [UInt8])] {
        guard FileSystem.linkStatus(folder)?.kind == .directory else { return [] }
        return try FileSystem.list(folder)
            .filter { $0.kind == .file && !$0.name.hasPrefix(".") && keep($0.name) }
            .map { ($0.name, try FileSystem.readFile(folder + "/" + $0.name)) }
    }

    // MARK: Segment bytes

    @Test func segmentSeedsAndRegressionsGoThroughTheReader() throws {
        let seeds = try Self.files(in: Self.segmentCorpus)
        #expect(seeds.count >= 10, "the seed corpus is missing from \(Self.segmentCorpus)")
        let crashers = try Self.files(in: Self.regressions) { !$0.hasPrefix("ndjson-") }
        for (name, bytes) in seeds + crashers {
            Self.feedSegment(bytes, name: name)
        }
    }

    /// The seeds that are whole segments scan clean and decode every event they claim; the
    /// damaged ones are reported the way docs/FORMAT.md §8.4 says.
    @Test func segmentSeedsScanAsTheirNamesSay() throws {
        for (name, bytes) in try Self.files(in: Self.segmentCorpus) where !name.hasPrefix("body-") {
            let scan = SegmentScanner.scan(bytes: bytes, path: name, sealed: name.hasSuffix(".sjs"))
            let (events, problems) = scan.allEvents()
            #expect(problems.isEmpty, "\(name): \(problems)")
            switch name {
            case "record-open-damaged-block-2.sjo":
                #expect(scan.problems.map(\.kind) == [.corrupt], "\(name): \(scan.problems)")
                #expect(!scan.problemsAreOnlyAtTail, "\(name): the blocks after the damage are kept")
            case "record-open-torn-tail.sjo":
                #expect(scan.problems.map(\.kind) == [.tornTail], "\(name): \(scan.problems)")
                #expect(scan.problemsAreOnlyAtTail)
            default:
                #expect(scan.problems.isEmpty, "\(name): \(scan.problems)")
                #expect(scan.header != nil, "\(name)")
                #expect(events.count == scan.eventCount, "\(name)")
                #expect(scan.validPrefixLength == bytes.count, "\(name)")
            }
        }
    }

    /// Seeds named `body-v2-*` are version 2 bodies; the older `body-*` seeds version 1.
    static func bodyVersion(_ name: String) -> UInt16 {
        name.hasPrefix("body-v2-") ? FormatV2.version : FormatV1.version
    }

    /// The `body-*` seeds are real block bodies (first byte: the event count, as the harness
    /// maps it): they must decode, or the harness would start from nothing.
    @Test func bodySeedsDecode() throws {
        let bodies = try Self.files(in: Self.segmentCorpus) { $0.hasPrefix("body-") }
        #expect(!bodies.isEmpty)
        for (name, bytes) in bodies {
            let count = Self.eventCount(fromTag: bytes[0])
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(DecodeError) in
                    try BlockCodec.decodeColumns(UnsafeRawBufferPointer(rebasing: raw[1...]), firstSeq: 1, eventCount: count,
                                                 version: Self.bodyVersion(name))
                }
            }
            guard case .success(let columns) = result else {
                Issue.record("\(name) does not decode: \(result)")
                continue
            }
            #expect(columns.count == count, "\(name)")
            #expect(throws: Never.self, "\(name)") { try columns.validate() }
        }
    }

    /// What `fuzz-segment` does with one input, with `#expect` for its `precondition`s.
    static func feedSegment(_ bytes: [UInt8], name: String) {
        for sealed in [false, true] {
            let scan = SegmentScanner.scan(bytes: bytes, path: name, sealed: sealed)
            #expect(scan.validPrefixLength <= bytes.count, "\(name)")
            if scan.header == nil { #expect(scan.blocks.isEmpty && !scan.problems.isEmpty, "\(name)") }
            var end = FormatV1.fileHeaderSize
            for block in scan.blocks {
                #expect(block.offset >= end && block.offset + block.frame.totalLength <= bytes.count, "\(name)")
                end = block.offset + block.frame.totalLength
            }
            let (events, problems) = scan.allEvents()
            #expect(events.count <= scan.eventCount && problems.count <= scan.blocks.count, "\(name)")
            for event in events {
                #expect(throws: Never.self, "\(name)") { try event.payload.validate() }
            }
        }

        if let tag = bytes.first {
            let count = eventCount(fromTag: tag)
            for version in FormatVersion.readable {
                let result = bytes.withUnsafeBytes { raw in
                    Result { () throws(DecodeError) -> BlockColumns in
                        let columns = try BlockCodec.decodeColumns(
                            UnsafeRawBufferPointer(rebasing: raw[1...]), firstSeq: 1, eventCount: count, version: version)
                        try columns.validate()
                        return columns
                    }
                }
                if case .success(let columns) = result, count >= 1, count <= FormatV1.maxEventsPerBlock {
                    let events = columns.events(replica: replica)
                    let again = BlockCodec.encode(events, version: version).withUnsafeBytes { raw in
                        Result { () throws(DecodeError) in
                            try BlockCodec.decode(raw, replica: replica, firstSeq: 1, eventCount: count, version: version)
                        }
                    }
                    #expect((try? again.get()) == events, "\(name) v\(version): the body does not survive a re-encoding")
                }
            }
        }

        bytes.withUnsafeBytes { raw in
            _ = try? SegmentHeader.decode(raw)
            _ = try? BlockFrame.decodeHeader(raw)
            if raw.count > FormatV1.fileHeaderSize {
                _ = try? BlockFrame.decodeHeader(UnsafeRawBufferPointer(rebasing: raw[FormatV1.fileHeaderSize...]))
            }
        }
    }

    /// The harness's mapping from the first byte to the block's event count.
    static func eventCount(fromTag tag: UInt8) -> Int {
        switch tag {
        case 0...200: return Int(tag)
        case 201...216: return 1 << Int(tag - 200)
        default: return FormatV1.maxEventsPerBlock + Int(tag - 216)
        }
    }

    // MARK: NDJSON lines

    @Test func ndjsonSeedsAndRegressionsRoundTrip() throws {
        let seeds = try Self.files(in: Self.ndjsonCorpus)
        #expect(seeds.count >= 10, "the seed corpus is missing from \(Self.ndjsonCorpus)")
        let crashers = try Self.files(in: Self.regressions) { $0.hasPrefix("ndjson-") }
        var accepted = 0
        for (name, bytes) in seeds + crashers {
            accepted += Self.feedLine(bytes[...], name: name)
            var start = bytes.startIndex
            for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
                accepted += Self.feedLine(bytes[start..<index], name: name)
                start = index + 1
            }
            if start != bytes.startIndex, start < bytes.endIndex {
                accepted += Self.feedLine(bytes[start...], name: name)
            }
        }
        #expect(accepted >= 20, "the seeds should mostly be lines the parser accepts")
    }

    /// What `fuzz-ndjson` does with one line; returns how many payloads it gave.
    static func feedLine(_ line: ArraySlice<UInt8>, name: String) -> Int {
        let payloads: [Payload]
        do {
            payloads = try LineParser.parse(Array(line))
        } catch {
            return 0
        }
        for payload in payloads {
            #expect(throws: Never.self, "\(name)") { try payload.validate() }
            let canonical = CanonicalJSON.line(for: payload)
            #expect((try? LineParser.parse(canonical)) == [payload], "\(name): \(canonical) does not read back as \(payload)")
        }
        return payloads.count
    }
}
