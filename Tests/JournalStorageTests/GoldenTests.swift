import JournalFormat
import JournalIngest
import JournalKeys
import JournalPlatform
import JournalReplay
import Foundation
import JournalStorage
import JournalTestSupport
import Testing
import JournalCompression

/// Golden vectors of formats v1 to v7: segment bytes and the events they must decode to.
/// Regenerate only on purpose: `RECORD_GOLDEN=1 swift test --filter GoldenTests` (the run then
/// fails, so a recording can never pass unnoticed). A new format version gets a new folder.
@Suite(.ownThreads) struct GoldenTests {
    static func folder(_ version: UInt16) -> String {
        let file = #filePath
        return String(file[..<file.lastIndex(of: "/")!]) + "/Golden/v\(version)"
    }
    static let folder = folder(1)

    /// Every event kind, optional fields present and absent, values on and off the grid.
    static func vectorEvents() -> [Event] {
        let replica = ReplicaID(hex: "00112233445566778899aabbccddeeff")!
        let first = StrokeID(uuidString: "6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88")!
        let second = StrokeID(uuidString: "A0000000-0000-4000-8000-00000000000B")!
        let red = Style(color: RGBA(rawValue: 0xE53935FF), width: 4)
        let thin = Style(color: RGBA(rawValue: 0x3949AB80), width: 1.5)
        let payloads: [Payload] = [
            .point(PointSample(stroke: first, x: 523.41, y: 398.07, pressure: 0.53, t: 0, style: red)),
            .point(PointSample(stroke: first, x: 527.9, y: 401.12, pressure: 0.55, t: 0.008, style: red)),
            .point(PointSample(stroke: first, x: 533.02, y: 403.5, pressure: 0.56, t: 0.017, style: red)),
            .point(PointSample(stroke: second, x: -0.0, y: Double(bitPattern: 1), pressure: nil, t: nil, style: thin)),
            .point(PointSample(stroke: second, x: 0.1 + 0.2, y: 1e300, pressure: 1, t: nil, style: thin)),
            .point(PointSample(stroke: first, x: 540, y: 404.25, pressure: nil, t: 0.025, style: red)),
            .end(first),
            .undo(first),
            .redo(first),
            .erase(second),
            .clear,
            .end(second),
        ]
        var wall: Int64 = 1_790_000_000_000
        return payloads.enumerated().map { index, payload in
            wall += Int64(index % 3)
            return Event(id: EventID(replica: replica, seq: UInt64(index + 1)), lamport: UInt64(index + 1) * 2,
                         wallTime: wall, payload: payload)
        }
    }

    static func expectedLines(_ events: [Event]) -> String {
        events.map { CanonicalJSON.line(for: $0) + "\n" }.joined()
    }

    /// Device-like values, one model per block, so that v2's grids and fine units are all in
    /// a vector (`segment-b`, v2 only). Compared with the recorded lines, not regenerated:
    /// the models use sin and cos, whose last bits may differ between C libraries.
    static func deviceVectorEvents() -> [Event] {
        let replica = ReplicaID(hex: "00112233445566778899aabbccddeeff")!
        var events: [Event] = []
        for (index, model) in DeviceModel.allCases.enumerated() {
            events += model.session(seed: UInt64(index), strokes: 2, points: 24)
        }
        return events.enumerated().map { index, event in
            Event(id: EventID(replica: replica, seq: UInt64(index + 1)), lamport: UInt64(index + 1),
                  wallTime: 1_790_000_000_000 + Int64(index / 7), payload: event.payload)
        }
    }

    @Test(arguments: [FormatV1.version, FormatV2.version])
    func goldenSegmentDecodesToItsEvents(version: UInt16) throws {
        let events = Self.vectorEvents()
        let folder = Self.folder(version)
        let segmentPath = folder + "/segment-a.sjs"
        let expectedPath = folder + "/segment-a.expected.ndjson"
        if ProcessInfoLite.environment("RECORD_GOLDEN") != nil {
            // Two blocks, so that the vector covers block chaining too.
            let bytes = SegmentEncoder.segment(replica: events[0].id.replica, events: events, targetEvents: 7, version: version)
            try FileSystem.createDirectory(folder)
            try FileSystem.writeAtomically(bytes, to: segmentPath)
            let lines = Array(Self.expectedLines(events).utf8)
            try FileSystem.writeAtomically(lines, to: expectedPath)
            if version >= FormatV2.version {
                let device = Self.deviceVectorEvents()
                try FileSystem.writeAtomically(
                    SegmentEncoder.segment(replica: device[0].id.replica, events: device, targetEvents: 50, version: version),
                    to: folder + "/segment-b.sjs")
                try FileSystem.writeAtomically(Array(Self.expectedLines(device).utf8), to: folder + "/segment-b.expected.ndjson")
            }
            Issue.record("golden vectors recorded in \(folder); rerun without RECORD_GOLDEN")
            return
        }
        let scan = SegmentScanner.scan(path: segmentPath, sealed: true)
        #expect(scan.problems.isEmpty)
        #expect(scan.header?.version == version)
        #expect(scan.blocks.count == 2)
        let (decoded, problems) = scan.allEvents()
        #expect(problems.isEmpty)
        #expect(decoded == events)
        let expected = String(decoding: try FileSystem.readFile(expectedPath), as: UTF8.self)
        #expect(Self.expectedLines(decoded) == expected)
    }

    @Test func goldenDeviceSegmentOfVersionTwo() throws {
        let folder = Self.folder(FormatV2.version)
        let scan = SegmentScanner.scan(path: folder + "/segment-b.sjs", sealed: true)
        #expect(scan.problems.isEmpty)
        #expect(scan.header?.version == FormatV2.version)
        let (decoded, problems) = scan.allEvents()
        #expect(problems.isEmpty)
        #expect(decoded.count == DeviceModel.allCases.count * 2 * 25)
        let expected = String(decoding: try FileSystem.readFile(folder + "/segment-b.expected.ndjson"), as: UTF8.self)
        #expect(Self.expectedLines(decoded) == expected)
        // Re-encoding what it holds gives its bodies again: the encoder's choices must not drift.
        let bodies = try scan.blocks.map { block in
            try scan.bytes.withUnsafeBytes { buffer in
                try RawDeflate.decompress(
                    UnsafeRawBufferPointer(rebasing: buffer[(block.offset + FormatV1.blockHeaderSize)..<(block.offset + block.frame.totalLength)]),
                    expectedCount: block.frame.rawLength)
            }
        }
        var start = 0
        for (index, block) in scan.blocks.enumerated() {
            #expect(BlockCodec.encode(decoded[start..<(start + block.frame.eventCount)], version: FormatV2.version) == bodies[index], "block \(index)")
            start += block.frame.eventCount
        }
    }

    /// Version 3 (docs/FORMAT.md §15.4): the events of `segment-a` under the replica of the
    /// key whose seed is the bytes 1...32, in two blocks, sealed by that key.
    @Test func goldenSignedSegmentOfVersionThree() throws {
        let key = try ReplicaKey(rawRepresentation: Array(1...32))
        let events = Self.vectorEvents().map { event in
            Event(id: EventID(replica: key.replica, seq: event.id.seq), lamport: event.lamport, wallTime: event.wallTime,
                  payload: event.payload)
        }
        let folder = Self.folder(FormatV3.version)
        let keyText = "public " + Hex.bytes(key.publicKey) + "\nreplica " + key.replica.hex + "\n"
        if ProcessInfoLite.environment("RECORD_GOLDEN") != nil {
            let contents = SegmentEncoder.segment(replica: key.replica, events: events, targetEvents: 7, version: FormatV3.version)
            try FileSystem.createDirectory(folder)
            try FileSystem.writeAtomically(SegmentSeal.seal(contents, role: .replica, key: key), to: folder + "/segment-a.sjs")
            try FileSystem.writeAtomically(Array(Self.expectedLines(events).utf8), to: folder + "/segment-a.expected.ndjson")
            try FileSystem.writeAtomically(Array(keyText.utf8), to: folder + "/key.txt")
            Issue.record("golden vectors recorded in \(folder); rerun without RECORD_GOLDEN")
            return
        }
        let bytes = try FileSystem.readFile(folder + "/segment-a.sjs")
        let scan = SegmentScanner.scan(bytes: bytes, path: "segment-a.sjs", sealed: true)
        #expect(scan.problems.isEmpty)
        #expect(scan.header?.version == FormatV3.version && scan.header?.replica == key.replica)
        #expect(scan.blocks.count == 2)
        #expect(scan.sealOffset == bytes.count - FormatV3.sealRecordSize)
        let seal = try #require(scan.seal)
        #expect(seal.role == .replica && seal.publicKey == key.publicKey)
        #expect(SegmentSeal.verify(seal, contents: try #require(scan.sealedContents), replica: key.replica) == .valid)
        let (decoded, problems) = scan.allEvents()
        #expect(problems.isEmpty && decoded == events)
        #expect(Self.expectedLines(decoded) == String(decoding: try FileSystem.readFile(folder + "/segment-a.expected.ndjson"), as: UTF8.self))
        #expect(keyText == String(decoding: try FileSystem.readFile(folder + "/key.txt"), as: UTF8.self))
        // Signing is deterministic: the key seals the golden contents into the golden file again.
        #expect(SegmentSeal.seal(Array(bytes[..<(bytes.count - FormatV3.sealRecordSize)]), role: .replica, key: key) == bytes)
        // Bodies as version 2's (§15): the encoder's v2 bodies are these bodies.
        for (index, block) in scan.blocks.enumerated() {
            let body = try bytes.withUnsafeBytes { buffer in
                try RawDeflate.decompress(
                    UnsafeRawBufferPointer(rebasing: buffer[(block.offset + FormatV1.blockHeaderSize)..<(block.offset + block.frame.totalLength)]),
                    expectedCount: block.frame.rawLength)
            }
            #expect(BlockCodec.encode(events[(index * 7)..<min(events.count, index * 7 + 7)], version: FormatV2.version) == body)
        }
    }

    /// Handwriting-like points for versions 6 and 7 (docs/FORMAT.md §18.5): enough of them in
    /// the first block (`rangeCodedVectorSplits`) that the writer range-codes its streams, and
    /// times that are readings of a millisecond clock, some a binary64 step below, so that t
    /// has a fine stream. Integer arithmetic only (and one exact division): every machine
    /// makes the same events.
    static func rangeCodedVectorEvents(replica: ReplicaID) -> [Event] {
        var state: UInt64 = 2026
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        var events: [Event] = []
        var stroke = StrokeID(uuidString: "00000000-0000-4000-8000-000000000000")!
        var x = 10_000, y = 20_000, dx = 0, dy = 0, pressure = 50, millisecond = 0
        let ink = Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2.5)
        for index in 0..<2_600 {
            if index % 40 == 0 {
                if index > 0 {
                    events.append(Event(id: EventID(replica: replica, seq: UInt64(events.count + 1)), lamport: UInt64(events.count + 1),
                                        wallTime: 1_790_000_000_000 + Int64(events.count), payload: .end(stroke)))
                }
                stroke = StrokeID(UUIDBits(high: next() << 31 ^ next(), low: next() << 31 ^ next()))
                x += Int(next() % 4_000) - 2_000
                dx = Int(next() % 200) - 100
                dy = Int(next() % 200) - 100
            }
            // A pen's accelerations: mostly none, sometimes a step of a few hundredths.
            func acceleration() -> Int {
                let draw = next()
                return draw % 10 < 6 ? 0 : (draw & 1024 == 0 ? 1 : -1) * (1 + Int((draw >> 12) % 8).trailingZeroBitCount)
            }
            dx += acceleration()
            dy += acceleration()
            x += dx
            y += dy
            pressure = max(1, min(100, pressure + (next() % 8 == 0 ? Int(next() % 3) - 1 : 0)))
            millisecond += 8 + (next() % 8 == 0 ? 1 : 0)
            // The clock's reading, now and then one binary64 step lower (a clock that subtracts).
            var t = Double(millisecond) / 1000
            if next() % 16 == 0 { t = t.nextDown }
            let sample = PointSample(stroke: stroke, x: Double(x) / 100, y: Double(y) / 100, pressure: Double(pressure) / 100,
                                     t: Double(t), style: ink)
            events.append(Event(id: EventID(replica: replica, seq: UInt64(events.count + 1)), lamport: UInt64(events.count + 1),
                                wallTime: 1_790_000_000_000 + Int64(events.count), payload: .point(sample)))
        }
        return events
    }

    /// The vector's blocks: the first (2,000 points, 49 ends) as the writer codes it; the second
    /// (300 points, 8 ends) in the `low` form throughout (`Policy.never`: a version 6 body may
    /// hold both forms); the third (300 points, 7 ends) range-coding every stream (`.always`).
    static let rangeCodedVectorSplits = [2_049, 2_357]

    static func rangeCodedVectorBlocks(_ events: [Event], version: UInt16) -> [[UInt8]] {
        let bounds = [0] + rangeCodedVectorSplits + [events.count]
        let policies: [RangeCodedStream.Policy] = [.whenSmaller, .never, .always]
        return policies.indices.map { index in
            let slice = events[bounds[index]..<bounds[index + 1]]
            return SegmentEncoder.frame(body: BlockCodec.encodeBody(slice, version: version, rangeCoding: policies[index]),
                                        eventCount: slice.count, firstSeq: slice.first!.id.seq,
                                        maxLamport: slice.map(\.lamport).max()!)
        }
    }

    /// Versions 6 and 7 (docs/FORMAT.md §18.5): range-coded streams, unsigned and signed.
    @Test(arguments: [FormatV6.version, FormatV7.version])
    func goldenRangeCodedSegment(version: UInt16) throws {
        let key = try ReplicaKey(rawRepresentation: Array(1...32))
        let signed = version == FormatV7.version
        let replica = signed ? key.replica : ReplicaID(hex: "00112233445566778899aabbccddeeff")!
        let events = Self.rangeCodedVectorEvents(replica: replica)
        let folder = Self.folder(version)
        let keyText = "public " + Hex.bytes(key.publicKey) + "\nreplica " + key.replica.hex + "\n"
        if ProcessInfoLite.environment("RECORD_GOLDEN") != nil {
            let contents = SegmentHeader(replica: replica, version: version).encoded()
                + Self.rangeCodedVectorBlocks(events, version: version).joined()
            try FileSystem.createDirectory(folder)
            try FileSystem.writeAtomically(signed ? SegmentSeal.seal(contents, role: .replica, key: key) : contents,
                                           to: folder + "/segment-a.sjs")
            try FileSystem.writeAtomically(Array(Self.expectedLines(events).utf8), to: folder + "/segment-a.expected.ndjson")
            if signed { try FileSystem.writeAtomically(Array(keyText.utf8), to: folder + "/key.txt") }
            Issue.record("golden vectors recorded in \(folder); rerun without RECORD_GOLDEN")
            return
        }
        let bytes = try FileSystem.readFile(folder + "/segment-a.sjs")
        let scan = SegmentScanner.scan(bytes: bytes, path: "segment-a.sjs", sealed: true)
        #expect(scan.problems.isEmpty)
        #expect(scan.header?.version == version && scan.header?.replica == replica)
        #expect(scan.blocks.count == 3)
        let (decoded, problems) = scan.allEvents()
        #expect(problems.isEmpty && decoded == events)
        #expect(Self.expectedLines(decoded) == String(decoding: try FileSystem.readFile(folder + "/segment-a.expected.ndjson"), as: UTF8.self))
        if signed {
            let seal = try #require(scan.seal)
            #expect(SegmentSeal.verify(seal, contents: try #require(scan.sealedContents), replica: key.replica) == .valid)
            #expect(SegmentSeal.seal(Array(bytes[..<(bytes.count - FormatV3.sealRecordSize)]), role: .replica, key: key) == bytes)
            #expect(keyText == String(decoding: try FileSystem.readFile(folder + "/key.txt"), as: UTF8.self))
        }
        // The encoder's choices must not drift (the first block is what the writer makes of its
        // events). The first and third blocks hold range-coded streams (their bodies are not
        // version 2 bodies); the second is a version 2 body in a version 6 file.
        let expectedBlocks = Self.rangeCodedVectorBlocks(events, version: FormatV6.version)
        for (index, block) in scan.blocks.enumerated() {
            let frame = Array(bytes[block.offset..<(block.offset + block.frame.totalLength)])
            let encodedAlike = frame == expectedBlocks[index]
            #expect(encodedAlike, "block \(index): the encoder's output differs from the vector")
            let body = try frame.withUnsafeBytes { buffer in
                try RawDeflate.decompress(UnsafeRawBufferPointer(rebasing: buffer[FormatV1.blockHeaderSize...]),
                                          expectedCount: block.frame.rawLength)
            }
            let asVersion2 = body.withUnsafeBytes { buffer in
                Result { () throws(DecodeError) in
                    try BlockCodec.decode(buffer, replica: replica, firstSeq: block.frame.firstSeq,
                                          eventCount: block.frame.eventCount, version: FormatV2.version)
                }
            }
            if case .success = asVersion2 { #expect(index == 1, "block \(index) holds no range-coded stream") }
            else { #expect(index != 1, "block 1 should be a version 2 body") }
        }
    }

    /// Versions 4 and 5 (docs/FORMAT.md §17): a membership segment of signed statements (5:
    /// with an invitation), the text each must read as, and the membership they fold to.
    @Test(arguments: [FormatV4.version, FormatV5.version])
    func goldenMembershipSegment(version: UInt16) throws {
        let alice = try ReplicaKey(rawRepresentation: Array(1...32))
        let bob = try ReplicaKey(rawRepresentation: Array(33...64))
        let carolsInvitation = try ReplicaKey(rawRepresentation: Array(65...96))
        let board = UUIDBits(bytes: Array(0...15) as [UInt8])
        let replica = MembershipSigning.membershipReplica(forPublicKey: alice.publicKey, board: board)
        var statements = [
            MembershipSigning.sign(MembershipStatement(
                lamport: 3, wallTime: 1_790_000_000_000, action: .create, role: .admin, board: board, subject: alice.publicKey,
                label: "Alice", signer: alice.publicKey), seq: 1, key: alice),
            MembershipSigning.sign(MembershipStatement(
                lamport: 4, wallTime: 1_790_000_000_250, action: .grant, role: .draw, board: board, subject: bob.publicKey,
                drawCut: 12, label: "Bob", signer: alice.publicKey), seq: 2, key: alice),
        ]
        if version == FormatV5.version {
            statements.append(MembershipSigning.sign(MembershipStatement(
                lamport: 5, wallTime: 1_790_000_000_500, action: .invite, role: .draw, board: board, subject: carolsInvitation.publicKey,
                drawCut: 1_790_086_400_500, label: "Carol", signer: alice.publicKey), seq: 3, key: alice))
        }
        func text(_ statements: [MembershipStatement]) -> String {
            statements.enumerated().map { index, statement in
                "seq \(index + 1) lamport \(statement.lamport) wall \(statement.wallTime) \(statement.action) \(statement.role)"
                    + " board \(statement.board.compactHex) subject \(Hex.bytes(statement.subject)) drawCut \(statement.drawCut)"
                    + " memberCut \(statement.memberCut) label \(statement.label) signer \(Hex.bytes(statement.signer))"
                    + " signature \(Hex.bytes(statement.signature))\n"
            }.joined() + "membershipReplica \(replica.hex)\n"
        }
        let folder = Self.folder(version)
        if ProcessInfoLite.environment("RECORD_GOLDEN") != nil {
            try FileSystem.createDirectory(folder)
            try FileSystem.writeAtomically(SegmentEncoder.membershipSegment(replica: replica, firstSeq: 1, statements: statements),
                                           to: folder + "/segment-a.sjs")
            try FileSystem.writeAtomically(Array(text(statements).utf8), to: folder + "/segment-a.expected.txt")
            Issue.record("golden vectors recorded in \(folder); rerun without RECORD_GOLDEN")
            return
        }
        let bytes = try FileSystem.readFile(folder + "/segment-a.sjs")
        let scan = SegmentScanner.scan(bytes: bytes, path: "segment-a.sjs", sealed: true)
        #expect(scan.problems.isEmpty && scan.seal == nil)
        #expect(scan.header?.version == version && scan.header?.replica == replica)
        let block = try #require(scan.blocks.first)
        let decoded = try bytes.withUnsafeBytes { buffer in
            try BlockDecoder.statements(frame: block.frame, frameBytes: UnsafeRawBufferPointer(
                rebasing: buffer[block.offset..<(block.offset + block.frame.totalLength)]), version: version)
        }
        if version == FormatV5.version {
            // An invitation in a file that says version 4 is malformed: a version 4 reader
            // would not know it.
            #expect(throws: SegmentFormatError.self) {
                try bytes.withUnsafeBytes { buffer in
                    try BlockDecoder.statements(frame: block.frame, frameBytes: UnsafeRawBufferPointer(
                        rebasing: buffer[block.offset..<(block.offset + block.frame.totalLength)]), version: FormatV4.version)
                }
            }
        }
        // Ed25519 is deterministic: today's signatures are the golden ones.
        #expect(decoded == statements)
        #expect(text(decoded) == String(decoding: try FileSystem.readFile(folder + "/segment-a.expected.txt"), as: UTF8.self))
        for (index, statement) in decoded.enumerated() {
            #expect(MembershipSigning.verify(statement, replica: replica, seq: UInt64(index + 1)))
        }
        // A drawing decoder refuses the block instead of misreading it.
        #expect(throws: SegmentFormatError.self) {
            try bytes.withUnsafeBytes { buffer in
                try BlockDecoder.columns(frame: block.frame, frameBytes: UnsafeRawBufferPointer(
                    rebasing: buffer[block.offset..<(block.offset + block.frame.totalLength)]))
            }
        }
        let membership = Membership.fold(decoded.enumerated().map { index, statement in
            Membership.Found(statement: statement, id: EventID(replica: replica, seq: UInt64(index + 1)), file: "segment-a.sjs", offset: 32)
        })
        #expect(membership.board == board && membership.founder == alice.publicKey)
        #expect(membership.member(bob.publicKey)?.role == .draw && membership.member(bob.publicKey)?.label == "Bob")
        if version == FormatV5.version {
            let invited = membership.member(carolsInvitation.publicKey)
            #expect(invited?.invitation == Membership.Invitation(role: .draw, expires: 1_790_086_400_500) && invited?.label == "Carol")
            #expect(membership.admitted(carolsInvitation.replica)?.isEmpty == true)
        }
    }

    /// The block bodies our encoder writes today equal the golden ones (compressed bytes may
    /// differ between zlib versions; the bodies are ours and must not drift).
    @Test(arguments: [FormatV1.version, FormatV2.version])
    func encoderStillWritesTheGoldenBodies(version: UInt16) throws {
        let scan = SegmentScanner.scan(path: Self.folder(version) + "/segment-a.sjs", sealed: true)
        let events = Self.vectorEvents()
        #expect(scan.blocks.count == 2)
        for (index, block) in scan.blocks.enumerated() {
            let body = try scan.bytes.withUnsafeBytes { buffer in
                try RawDeflate.decompress(
                    UnsafeRawBufferPointer(rebasing: buffer[(block.offset + FormatV1.blockHeaderSize)..<(block.offset + block.frame.totalLength)]),
                    expectedCount: block.frame.rawLength)
            }
            let slice = events[(index * 7)..<min(events.count, index * 7 + 7)]
            #expect(BlockCodec.encode(slice, version: version) == body, "block \(index)")
        }
    }

    /// Both name versions of the golden segment (docs/FORMAT.md §2.1): the version 2 name is
    /// computed from the bytes, and each name parses, matches the bytes, and prints back.
    @Test func goldenNamesOfBothVersions() throws {
        let bytes = try FileSystem.readFile(Self.folder + "/segment-a.sjs")
        let lines = String(decoding: try FileSystem.readFile(Self.folder + "/names.txt"), as: UTF8.self)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }
        let names = Dictionary(uniqueKeysWithValues: lines.map { line in
            (String(line.prefix(2)), String(line.dropFirst(3)))
        })
        let legacy = try #require(SegmentName(fileName: names["v1"] ?? ""))
        let current = try #require(SegmentName(fileName: names["v2"] ?? ""))
        #expect(!legacy.identifiesContents && current.identifiesContents)
        #expect(legacy.matches(bytes) && current.matches(bytes))
        #expect(SegmentName(firstSeq: 1, lastSeq: 12, contents: bytes) == current)
        #expect(legacy.fileName == names["v1"] && current.fileName == names["v2"])
        #expect(legacy.renamed(for: bytes) == current)
        // One spelling only: uppercase, a 31- or 33-digit hash, or a seq at 2^62 is no name.
        #expect(SegmentName(fileName: names["v2"]!.uppercased().replacingOccurrences(of: ".SJS", with: ".sjs")) == nil)
        #expect(SegmentName(fileName: "00000000000000000001-00000000000000000012-5b099ac8008ba2119c8132e418e0761.sjs") == nil)
        #expect(SegmentName(fileName: "00000000000000000001-00000000000000000012-5b099ac8008ba2119c8132e418e076160.sjs") == nil)
        #expect(SegmentName(fileName: "00000000000000000001-04611686018427387904-9849bc3c.sjs") == nil)
    }

    /// The digest of the golden segment's drawing, as the independent reader
    /// (`Tools/conformance/sjread/sjread.py digest`) computes it from FORMAT.md §9.3 alone.
    @Test func goldenDigest() throws {
        let folder = TemporaryDirectory("golden-digest")
        defer { folder.remove() }
        let bytes = try FileSystem.readFile(Self.folder + "/segment-a.sjs")
        let replica = ReplicaID(hex: "00112233445566778899aabbccddeeff")!
        let path = folder.path + "/replicas/" + replica.hex + "/" + SegmentName(firstSeq: 1, lastSeq: 12, contents: bytes).fileName
        try FileSystem.createDirectory(FileSystem.parent(of: path))
        let descriptor = try FileDescriptor.open(path, .createNew)
        try descriptor.writeAll(bytes)
        descriptor.close()
        // One golden digest for each version of FORMAT.md §9.3.
        let version1 = String(decoding: try FileSystem.readFile(Self.folder + "/segment-a.digest"), as: UTF8.self)
        let version2 = String(decoding: try FileSystem.readFile(Self.folder + "/segment-a.digest-v2"), as: UTF8.self)
        let (drawing, report) = Replay.replay(SegmentSet.load(replicasPath: folder.path + "/replicas"))
        #expect(report.problems.isEmpty)
        #expect(drawing.digestVersion1 + "\n" == version1)
        #expect(drawing.digest + "\n" == version2)
    }
}
