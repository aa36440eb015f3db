#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalCompression
import JournalFormat
import JournalKeys
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// Signed sealed segments (docs/FORMAT.md §15) and the trust list (invariant 12): who sealed a
/// segment is proven by its bytes, and a journal with a list applies only what listed keys
/// sealed, the same way wherever it is read.
@Suite(.ownThreads) struct SignedSegmentTests {
    static let style = Style(color: RGBA(rawValue: 0x112233FF), width: 2)

    /// Records `points` points of one stroke and seals them: the sealed segment's path.
    @discardableResult
    static func record(_ directory: JournalDirectory, points: Int, x: Double = 0) throws -> String {
        let writer = try JournalWriter(directory: directory)
        for index in 0..<points {
            try writer.append(.point(PointSample(stroke: StrokeID(UUIDBits(high: 7, low: UInt64(x))), x: x + Double(index), y: 1,
                                                 pressure: nil, t: nil, style: style)))
        }
        let name = try #require(try writer.seal())
        try writer.close()
        return directory.segmentPath(try directory.identity(), name)
    }

    /// Puts `bytes` into `directory` under the canonical name of `replica`'s segment: what a
    /// sync (or anyone who can write the shared folder) leaves there.
    @discardableResult
    static func place(_ bytes: [UInt8], replica: ReplicaID, seqs: ClosedRange<UInt64>, in directory: JournalDirectory) throws -> String {
        let path = directory.segmentPath(replica, SegmentName(firstSeq: seqs.lowerBound, lastSeq: seqs.upperBound, contents: bytes))
        try FileSystem.createDirectory(FileSystem.parent(of: path))
        try FileSystem.writeAtomically(bytes, to: path)
        return path
    }

    static func events(_ replica: ReplicaID, _ seqs: ClosedRange<UInt64>, x: Double) -> [Event] {
        seqs.map { seq in
            Event(id: EventID(replica: replica, seq: seq), lamport: seq, wallTime: 1_790_000_000_000 + Int64(seq),
                  payload: .point(PointSample(stroke: StrokeID(UUIDBits(high: 9, low: 9)), x: x + Double(seq), y: 2,
                                              pressure: nil, t: nil, style: style)))
        }
    }

    /// A version 3 segment of `events`, sealed by `key` in `role`.
    static func signedSegment(_ events: [Event], key: ReplicaKey, role: SealRecord.Role = .replica) -> [UInt8] {
        SegmentSeal.seal(SegmentEncoder.segment(replica: events[0].id.replica, events: events, version: FormatV3.version),
                         role: role, key: key)
    }

    /// A damaged key file stops the writer, naming it: sealing unsigned instead made segments
    /// every trust list and membership quarantines. Without the file the journal writes
    /// unsigned, as an open journal does.
    @Test func aKeyFileThatCannotBeReadStopsTheWriterInsteadOfSealingUnsigned() throws {
        let temp = TemporaryDirectory("signed-bad-key")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        try Self.record(journal, points: 5)
        let before = journal.listSealed().sealed.count
        try FileSystem.writeAtomically(Array("strokejournal-key v1\nnot hex\n".utf8), to: journal.keyPath)
        #expect {
            _ = try JournalWriter(directory: journal)
        } throws: { error in
            "\(error)".contains("local/replica.key") && "\(error)".contains("cannot be read")
        }
        #expect(journal.listSealed().sealed.count == before)
        FileSystem.removeTree(journal.keyPath)
        let path = try Self.record(journal, points: 5, x: 10)
        #expect(SegmentScanner.scan(path: path, sealed: true).seal == nil)
    }

    /// The same for a relay's host key: a `local/host.key` that cannot be read stops the hosted
    /// writer, naming it, instead of sealing as the journal's own key (which a board's
    /// membership may not count as a host).
    @Test func aHostKeyThatCannotBeReadStopsTheHostedWriter() throws {
        let temp = TemporaryDirectory("signed-bad-host-key")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let hosted = ReplicaID(UUIDBits(high: 0xB0, low: 0x57))
        try journal.installHostKey(ReplicaKey())
        #expect(try journal.loadIdentity().hostKey() != nil)
        try FileSystem.writeAtomically(Array("strokejournal-key v1\nnot hex\n".utf8), to: journal.hostKeyPath)
        #expect {
            _ = try HostedReplicaWriter(directory: journal, replica: hosted)
        } throws: { error in
            "\(error)".contains("local/host.key") && "\(error)".contains("cannot be read")
        }
        // Without the file, the journal's own key seals as host, as before.
        FileSystem.removeTree(journal.hostKeyPath)
        #expect(try journal.loadIdentity().hostKey()?.publicKey == journal.replicaKey()?.publicKey)
        #expect(throws: Never.self) { try HostedReplicaWriter(directory: journal, replica: hosted).close() }
    }

    /// Compaction reads the key the same way: with a key file that cannot be read it writes no
    /// cover (an unsigned cover of signed files would be quarantined, and retire them).
    @Test func aKeyFileThatCannotBeReadSealsNoCover() throws {
        let temp = TemporaryDirectory("signed-bad-key-compaction")
        defer { temp.remove() }
        let journal = try CompactionTests.journalOfSmallSegments(temp.path + "/j", files: 6, perFile: 10)
        let before = journal.listSealed().sealed.map(\.name)
        try FileSystem.writeAtomically(Array("strokejournal-key v1\nnot hex\n".utf8), to: journal.keyPath)
        let report = Compactor(directory: journal, policy: .everything).run()
        #expect(report.covers.isEmpty)
        #expect(journal.listSealed().sealed.map(\.name) == before)
    }

    @Test func aNewJournalSignsWhatItSealsWithTheKeyItsReplicaIsNamedBy() throws {
        let temp = TemporaryDirectory("signed-new")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let key = try #require(journal.replicaKey())
        #expect(key.replica == (try journal.identity()))
        #expect(FileSystem.linkStatus(journal.keyPath)?.kind == .file)
        var status = stat()
        #expect(stat(journal.keyPath, &status) == 0 && status.st_mode & 0o777 == 0o600)

        let path = try Self.record(journal, points: 40)
        let scan = SegmentScanner.scan(path: path, sealed: true)
        #expect(scan.problems.isEmpty)
        #expect(scan.header?.version == FormatV7.version)
        let seal = try #require(scan.seal)
        #expect(seal.role == .replica && seal.publicKey == key.publicKey)
        #expect(scan.sealOffset == scan.bytes.count - FormatV3.sealRecordSize)
        #expect(SegmentSeal.verify(seal, contents: try #require(scan.sealedContents), replica: key.replica) == .valid)
        // Its name still proves its bytes, seal record included.
        let verdict = SegmentVerdict.judge(scan, path: path, replica: key.replica,
                                           claimedName: SegmentName(fileName: FileSystem.lastComponent(of: path)), policy: .wholeFile)
        #expect(verdict.isValid)
        #expect(scan.allEvents().events.count == 40)
    }

    @Test func aJournalMadeWithAGivenReplicaHasNoKeyAndSealsUnsignedVersionSix() throws {
        let temp = TemporaryDirectory("signed-legacy")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j", replica: .random())
        #expect(journal.replicaKey() == nil)
        let scan = SegmentScanner.scan(path: try Self.record(journal, points: 5), sealed: true)
        #expect(scan.problems.isEmpty && scan.header?.version == FormatV6.version && scan.seal == nil)
        #expect(Replay.check(SegmentSet.load(journal)).problems.isEmpty)
    }

    @Test func aSignedSegmentCutBeforeItsSealOrWithBytesAfterItIsDamage() throws {
        let key = ReplicaKey()
        let bytes = Self.signedSegment(Self.events(key.replica, 1...10, x: 0), key: key)
        let cut = SegmentScanner.scan(bytes: Array(bytes.dropLast(FormatV3.sealRecordSize)), path: "cut.sjs", sealed: true)
        #expect(cut.problems.map(\.kind) == [.incomplete])
        #expect(cut.problems.first?.reason.contains("without its seal record") == true)
        let halfSeal = SegmentScanner.scan(bytes: Array(bytes.dropLast(10)), path: "half.sjs", sealed: true)
        #expect(halfSeal.problems.map(\.kind) == [.incomplete] && halfSeal.seal == nil)
        let trailing = SegmentScanner.scan(bytes: bytes + [0], path: "trailing.sjs", sealed: true)
        #expect(trailing.problems.map(\.kind) == [.corrupt] && trailing.seal == nil)
        #expect(trailing.problems.first?.reason.contains("not the last") == true)
        var flipped = bytes
        flipped[flipped.count - 20] ^= 1
        let badCRC = SegmentScanner.scan(bytes: flipped, path: "crc.sjs", sealed: true)
        #expect(badCRC.problems.map(\.kind) == [.corrupt] && badCRC.problems.first?.reason.contains("checksum") == true)
    }

    @Test func aTrustListAppliesOnlySegmentsSealedByItsOwnOrListedKeys() throws {
        let temp = TemporaryDirectory("signed-trust")
        defer { temp.remove() }
        let alice = try JournalDirectory.create(at: temp.path + "/alice")
        let mallory = try JournalDirectory.create(at: temp.path + "/mallory")
        let legacy = try JournalDirectory.create(at: temp.path + "/legacy", replica: .random())
        let bob = try JournalDirectory.create(at: temp.path + "/bob")
        try Self.record(bob, points: 3, x: 500)
        for (source, x) in [(alice, 0.0), (mallory, 100.0), (legacy, 200.0)] {
            let path = try Self.record(source, points: 10, x: x)
            try Self.place(try FileSystem.readFile(path), replica: try source.identity(), seqs: 1...10, in: bob)
        }
        // Open (no list): everything valid is applied, as before keys.
        #expect(Replay.check(SegmentSet.load(bob)).eventCount == 33)

        var list = TrustList()
        list.add(TrustList.Entry(publicKey: try #require(alice.replicaKey()).publicKey, mayHost: false, label: "alice"))
        try list.save(to: bob)
        let set = SegmentSet.load(bob)
        #expect(Set(set.members.map(\.replica)) == [try alice.identity(), try bob.identity()])
        let quarantined = set.problems.filter { $0.kind == .quarantined }
        #expect(quarantined.count == 2)
        #expect(quarantined.contains { $0.replica == (try? mallory.identity()) && $0.reason.contains("not in the trust list") })
        #expect(quarantined.contains { $0.replica == (try? legacy.identity()) && $0.reason.contains("unsigned segment") })
        #expect(Replay.check(set).eventCount == 13)
        // Quarantined, never deleted: the files stay as evidence.
        #expect(FileSystem.isDirectory(bob.replicaPath(try mallory.identity())))

        // An unreadable list fails closed: only the journal's own key is trusted.
        try FileSystem.writeAtomically(Array("not a trust list\n".utf8), to: bob.trustPath)
        let closed = SegmentSet.load(bob)
        #expect(Set(closed.members.map(\.replica)) == [try bob.identity()])
        #expect(closed.problems.filter { $0.kind == .quarantined }.allSatisfy { $0.reason.contains("trust list is unreadable") })
    }

    @Test func aSealThatDoesNotVerifyOrWhoseKeyNamesAnotherReplicaIsQuarantined() throws {
        let temp = TemporaryDirectory("signed-forged")
        defer { temp.remove() }
        let bob = try JournalDirectory.create(at: temp.path + "/bob")
        let alice = ReplicaKey()
        let mallory = ReplicaKey()
        var list = TrustList()
        list.add(TrustList.Entry(publicKey: alice.publicKey, mayHost: false))
        list.add(TrustList.Entry(publicKey: mallory.publicKey, mayHost: false))
        try list.save(to: bob)

        // Mallory (trusted for her own replica) signs events under Alice's replica id.
        let forged = Self.signedSegment(Self.events(alice.replica, 1...5, x: 0), key: mallory)
        try Self.place(forged, replica: alice.replica, seqs: 1...5, in: bob)
        // Alice's own segment with one signature bit flipped (the record's CRC made right again,
        // and the file under the name of its new bytes): only the signature can tell.
        var honest = Self.signedSegment(Self.events(alice.replica, 6...9, x: 0), key: alice)
        honest[honest.count - FormatV3.sealRecordSize + 50] ^= 0x01
        let crcAt = honest.count - 4
        let crc = CRC32.checksum(Array(honest[(honest.count - FormatV3.sealRecordSize)..<crcAt]))
        for index in 0..<4 { honest[crcAt + index] = UInt8(truncatingIfNeeded: crc >> (8 * index)) }
        try Self.place(honest, replica: alice.replica, seqs: 6...9, in: bob)
        // Mallory as a host, which the list does not let her be.
        let hosted = ReplicaKey()
        try Self.place(Self.signedSegment(Self.events(hosted.replica, 1...3, x: 0), key: mallory, role: .host),
                       replica: hosted.replica, seqs: 1...3, in: bob)

        let set = SegmentSet.load(bob)
        #expect(set.members.isEmpty)
        let reasons = set.problems.filter { $0.kind == .quarantined }.map(\.reason)
        #expect(reasons.count == 3)
        #expect(reasons.contains { $0.contains("which names replica \(mallory.replica.hex)") })
        #expect(reasons.contains { $0.contains("does not verify") })
        #expect(reasons.contains { $0.contains("for its own replica only") })

        // Damaged on purpose (a byte after the last block), a forgery would be salvaged block by
        // block in an open journal; under a list, a damaged file is not applied at all.
        let unsigned = SegmentEncoder.segment(replica: alice.replica, events: Self.events(alice.replica, 10...12, x: 0))
        try Self.place(unsigned + [0x53], replica: alice.replica, seqs: 10...12, in: bob)
        let damaged = SegmentSet.load(bob)
        #expect(damaged.members.isEmpty)
        #expect(damaged.problems.contains { $0.kind == .quarantined && $0.reason.contains("damaged") && $0.seqRange == 10...12 })

        // Trusted as a host, Mallory's hosted segment is applied; but no host may seal for a
        // replica that seals for itself (a listed one, or the journal's own).
        list.add(TrustList.Entry(publicKey: mallory.publicKey, mayHost: true))
        try list.save(to: bob)
        try Self.place(Self.signedSegment(Self.events(alice.replica, 20...22, x: 0), key: mallory, role: .host),
                       replica: alice.replica, seqs: 20...22, in: bob)
        let own = try bob.identity()
        try Self.place(Self.signedSegment(Self.events(own, 1...2, x: 0), key: mallory, role: .host), replica: own, seqs: 1...2, in: bob)
        let hostTrusted = SegmentSet.load(bob)
        #expect(hostTrusted.members.filter(\.isSealed).map(\.replica) == [hosted.replica])
        #expect(hostTrusted.problems.filter { $0.reason.contains("seals its own segments") }.count == 2)
    }

    @Test func twoSignedVariantsOfOneSeqAreReportedAsEquivocationAndBothKept() throws {
        let temp = TemporaryDirectory("signed-equivocation")
        defer { temp.remove() }
        let bob = try JournalDirectory.create(at: temp.path + "/bob")
        let alice = ReplicaKey()
        var list = TrustList()
        list.add(TrustList.Entry(publicKey: alice.publicKey, mayHost: false))
        try list.save(to: bob)
        let first = try Self.place(Self.signedSegment(Self.events(alice.replica, 1...4, x: 0), key: alice),
                                   replica: alice.replica, seqs: 1...4, in: bob)
        let second = try Self.place(Self.signedSegment(Self.events(alice.replica, 1...4, x: 50), key: alice),
                                    replica: alice.replica, seqs: 1...4, in: bob)
        let report = Replay.check(SegmentSet.load(bob))
        let forks = report.problems.filter { $0.kind == .fork }
        #expect(forks.count == 4)
        #expect(forks.allSatisfy { $0.reason.hasPrefix("equivocation:") && $0.reason.contains(Hex.bytes(alice.publicKey)) })
        #expect(FileSystem.exists(first) && FileSystem.exists(second))
        // The same choice as any journal makes (the canonical lesser variant): deterministic.
        #expect(report.eventCount == 4)
    }

    /// An untrusted file does not move this journal's clock (its
    /// next events would land past the plausibility bound of the files replay applies, and be
    /// hidden), nor does it count as the seal of its open segment (the reset would drop their
    /// only applied copy).
    @Test func aQuarantinedFileNeitherLiftsTheClockNorStandsInForTheOpenSegment() throws {
        let temp = TemporaryDirectory("signed-untrusted-effects")
        defer { temp.remove() }
        let bob = try JournalDirectory.create(at: temp.path + "/bob")
        try TrustList().save(to: bob)
        let stranger = ReplicaID.random()
        let lifted = Self.events(stranger, 1...3, x: 0).map { event in
            Event(id: event.id, lamport: 1 << 40, wallTime: event.wallTime, payload: event.payload)
        }
        let planted = SegmentEncoder.segment(replica: stranger, events: lifted)
        try Self.place(planted, replica: stranger, seqs: 1...3, in: bob)

        // Import through sync's importer: kept, but the shared clock stays where it was.
        let counter = try SharedCounter(path: temp.path + "/clock")
        let source = temp.path + "/planted.sjs"
        try FileSystem.writeAtomically(planted, to: source)
        let other = try JournalDirectory.create(at: temp.path + "/other")
        try TrustList().save(to: other)
        _ = SegmentImporter.importSegment(at: source, replica: stranger, claimedName: nil, intoReplicas: other.replicasPath,
                                          sharedClock: counter, trust: TrustedSegments.of(other))
        #expect(counter.value == 0)
        _ = SegmentImporter.importSegment(at: source, replica: stranger, claimedName: nil, intoReplicas: temp.path + "/open-replicas",
                                          sharedClock: counter)
        #expect(counter.value == 1 << 40)

        // A writer opening bob does not follow the quarantined clock, and what it records is shown.
        do {
            let writer = try JournalWriter(directory: bob, options: WriterOptions(sealOnClose: false))
            let event = try writer.appendEvent(.clear)
            #expect(event.lamport < 1000)
            try writer.close()
        }
        #expect(Replay.check(SegmentSet.load(bob)).eventCount == 1)

        // An unsigned copy of exactly the open segment's events does not reset it.
        let own = try bob.identity()
        let open = SegmentScanner.scan(path: bob.openSegmentPath, sealed: false)
        let copy = SegmentEncoder.segment(replica: own, events: open.allEvents().events)
        try Self.place(copy, replica: own, seqs: 1...1, in: bob)
        let reopened = try JournalWriter(directory: bob, options: WriterOptions(sealOnClose: false))
        #expect(!reopened.recovery.discardedSealedCopy)
        try reopened.close()
        #expect(SegmentScanner.scan(path: bob.openSegmentPath, sealed: false).eventCount == 1)
        #expect(Replay.check(SegmentSet.load(bob)).eventCount == 1)
    }

    @Test func aHostedReplicaIsSealedByTheJournalsKeyAsItsHost() throws {
        let temp = TemporaryDirectory("signed-hosted")
        defer { temp.remove() }
        let relay = try JournalDirectory.create(at: temp.path + "/relay")
        let client = ReplicaKey()
        let writer = try HostedReplicaWriter(directory: relay, replica: client.replica)
        try writer.append(Self.events(client.replica, 1...6, x: 0))
        let name = try #require(try writer.seal())
        let scan = SegmentScanner.scan(path: relay.segmentPath(client.replica, name), sealed: true)
        let seal = try #require(scan.seal)
        #expect(seal.role == .host && seal.publicKey == relay.replicaKey()?.publicKey)
        #expect(SegmentSeal.verify(seal, contents: try #require(scan.sealedContents), replica: client.replica) == .valid)
        // The relay's own list trusts what it hosted (its own key), with no entry for it.
        try TrustList().save(to: relay)
        #expect(SegmentSet.load(relay).members.contains { $0.replica == client.replica && $0.isSealed })
    }
}
