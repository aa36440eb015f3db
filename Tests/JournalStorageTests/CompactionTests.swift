#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalFormat
import JournalKeys
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

@Suite(.ownThreads) struct CompactionTests {
    static func point(_ stroke: StrokeID, _ x: Double) -> Payload {
        .point(PointSample(stroke: stroke, x: x, y: x / 2, pressure: 0.5, t: x / 100, style: Style(color: RGBA(rawValue: 0x3366FFFF), width: 2.5)))
    }

    /// A journal whose own replica holds `files` sealed segments of `perFile` events each.
    static func journalOfSmallSegments(_ path: String, files: Int, perFile: Int, keyed: Bool = true) throws -> JournalDirectory {
        let journal = keyed ? try JournalDirectory.create(at: path)
                            : try JournalDirectory.create(at: path, replica: ReplicaID(UUIDBits(high: 7, low: 7)))
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealEveryEvents: perFile))
        for file in 0..<files {
            let stroke = StrokeID(UUIDBits(high: 1, low: UInt64(file)))
            for index in 0..<(perFile - 1) { try writer.append(point(stroke, Double(index)), flushingEvery: perFile) }
            try writer.append(.end(stroke), flushingEvery: perFile)
        }
        try writer.close()
        return journal
    }

    static func events(_ journal: JournalDirectory) -> [Event] {
        let set = SegmentSet.load(journal)
        var events: [Event] = []
        var report = ReplayReport()
        Replay.forEachUniqueEvent(set, report: &report) { events.append($0) }
        return events
    }

    @Test func aRunOfSmallSegmentsBecomesOneFileHoldingExactlyTheirEvents() throws {
        let temp = TemporaryDirectory("compact")
        defer { temp.remove() }
        let journal = try Self.journalOfSmallSegments(temp.path + "/j", files: 40, perFile: 25)
        #expect(journal.listSealed().sealed.count == 40)
        let before = Self.events(journal)
        let digestBefore = Replay.load(journal).drawing.digest
        let bytesBefore = journal.listSealed().sealed.reduce(0) { $0 + $1.size }

        let report = Compactor(directory: journal, policy: .everything).run()
        #expect(report.problems.isEmpty)
        #expect(report.covers.count == 1)
        #expect(report.covers.first?.inputs.count == 40)
        let after = journal.listSealed().sealed
        #expect(after.count == 1)
        #expect(after.first.map { ($0.name.firstSeq, $0.name.lastSeq) } ?? (0, 0) == (1, 1000))
        #expect(after.reduce(0) { $0 + $1.size } < bytesBefore)
        #expect(Self.events(journal) == before)
        #expect(Replay.load(journal).drawing.digest == digestBefore)
        // Sealed by the journal's own key, so a trust list accepts it.
        let scan = SegmentScanner.scan(path: after[0].path, sealed: true)
        #expect(scan.seal?.publicKey == journal.replicaKey()?.publicKey)
        #expect(Replay.check(SegmentSet.load(journal)).problems.isEmpty)
        // Every retired file is logged with its cover.
        let log = CoverLog.load(journal)
        #expect(log.coverOf.count == 40)
        #expect(Set(log.coverOf.values) == [after[0].name.relativePath(in: after[0].replica)])
        // A second run finds nothing to do.
        let again = Compactor(directory: journal, policy: .everything).run()
        #expect(again.covers.isEmpty && again.retired.isEmpty)
    }

    @Test func anUnsignedJournalCompactsIntoAnUnsignedFile() throws {
        let temp = TemporaryDirectory("compact-open")
        defer { temp.remove() }
        let journal = try Self.journalOfSmallSegments(temp.path + "/j", files: 6, perFile: 10, keyed: false)
        let before = Self.events(journal)
        let report = Compactor(directory: journal, policy: .everything).run()
        #expect(report.problems.isEmpty && report.covers.count == 1)
        let after = journal.listSealed().sealed
        #expect(after.count == 1)
        #expect(SegmentScanner.scan(path: after[0].path, sealed: true).seal == nil)
        #expect(Self.events(journal) == before)
    }

    @Test func aDryRunChangesNothing() throws {
        let temp = TemporaryDirectory("compact-dry")
        defer { temp.remove() }
        let journal = try Self.journalOfSmallSegments(temp.path + "/j", files: 8, perFile: 10)
        let names = Set(journal.listSealed().sealed.map(\.name))
        let report = Compactor(directory: journal, policy: .everything).run(dryRun: true)
        #expect(report.covers.count == 1 && report.covers[0].name == nil && report.covers[0].inputs.count == 8)
        #expect(Set(journal.listSealed().sealed.map(\.name)) == names)
        #expect(CoverLog.load(journal).isEmpty)
    }

    @Test func theStandardPolicyKeepsFewFilesAndRewritesEachEventFewTimes() {
        let policy = CompactionPolicy.standard
        // 1,000 seals of 300 events, compacted after each seal as a writer does.
        var files: [Int] = []
        var written = 0
        for _ in 0..<1000 {
            files.append(300)
            for run in policy.runs(eventCounts: files).reversed() {
                let merged = files[run].reduce(0, +)
                written += merged
                files.replaceSubrange(run, with: [merged])
            }
            #expect(files.count <= policy.maxFilesPerChain)
        }
        #expect(files.reduce(0, +) == 300_000)
        #expect(files.count <= 16)
        // Each event is rewritten a bounded number of times, not once per seal (small groups
        // are rewritten more: below 4,096 events every file counts as 4,096).
        #expect(written <= 300_000 * 12)
        #expect(CompactionPolicy.everything.runs(eventCounts: [5, 9, 700, 3]) == [0..<4])
        #expect(policy.runs(eventCounts: [5]) == [])
        // A relay's seals of about 1,000 events each (they straddle 4⁵ = 1,024) are merged.
        #expect(policy.runs(eventCounts: [987, 1038, 1167, 960, 1046, 1123]) == [0..<6])
        // A relay's seals: a few events between ones of a thousand; all of them merge.
        #expect(policy.runs(eventCounts: [892, 1034, 19, 981, 1126, 6, 1182]) == [0..<7])
        // Sizes far apart are not: a small file is never rewritten into a much larger one.
        #expect(policy.runs(eventCounts: [100_000, 300, 300, 300]) == [])
        // A cover stays below `largeFileEvents`: no run is planned that would cross it.
        let big = CompactionPolicy.everything
        #expect(big.runs(eventCounts: [600_000, 600_000]) == [])
        for run in big.runs(eventCounts: Array(repeating: 262_144, count: 40)) {
            #expect(run.count * 262_144 < big.largeFileEvents)
        }
    }

    @Test func filesACoverAlreadyHoldsAreRetiredOnTheNextRun() throws {
        // A compaction cut short after its cover was written: cover and inputs side by side.
        let temp = TemporaryDirectory("compact-leftover")
        defer { temp.remove() }
        let journal = try Self.journalOfSmallSegments(temp.path + "/j", files: 5, perFile: 20)
        let inputs = journal.listSealed().sealed
        let saved = try inputs.map { ($0.name.fileName, try FileSystem.readFile($0.path)) }
        _ = Compactor(directory: journal, policy: .everything).run()
        let folder = journal.replicaPath(inputs[0].replica)
        for (name, bytes) in saved { try FileSystem.writeAtomically(bytes, to: folder + "/" + name) }
        #expect(journal.listSealed().sealed.count == 6)
        let before = Self.events(journal)

        let report = Compactor(directory: journal).run()
        #expect(report.retired.count == 5)
        #expect(report.problems.isEmpty)
        #expect(journal.listSealed().sealed.count == 1)
        #expect(Self.events(journal) == before)
    }

    @Test func aFileWithOtherEventsUnderCoveredIdsIsKeptAsAFork() throws {
        let temp = TemporaryDirectory("compact-fork")
        defer { temp.remove() }
        let journal = try Self.journalOfSmallSegments(temp.path + "/j", files: 3, perFile: 10, keyed: false)
        let replica = try journal.identity()
        _ = Compactor(directory: journal, policy: .everything).run()
        // Another variant of seqs 11...20 (a forged or cloned file), unsigned like the journal.
        let stroke = StrokeID(UUIDBits(high: 9, low: 9))
        let forged = (11...20).map { seq in
            Event(id: EventID(replica: replica, seq: UInt64(seq)), lamport: UInt64(seq), wallTime: 0, payload: Self.point(stroke, Double(seq)))
        }
        let bytes = SegmentEncoder.segment(replica: replica, events: forged)
        let name = SegmentName(firstSeq: 11, lastSeq: 20, contents: bytes)
        try FileSystem.writeAtomically(bytes, to: journal.segmentPath(replica, name))

        let report = Compactor(directory: journal).run()
        #expect(report.retired.isEmpty)
        #expect(report.problems.contains { $0.kind == .fork })
        #expect(FileSystem.exists(journal.segmentPath(replica, name)))
    }

    @Test(.enabled(if: FaultInjection.isCompiled, "the fault hook is built only by `swift test --traits FaultInjection`"))
    func aFailureBeforeTheInputsAreRemovedLosesNothing() throws {
        let temp = TemporaryDirectory("compact-fault")
        defer { temp.remove() }
        let journal = try Self.journalOfSmallSegments(temp.path + "/j", files: 6, perFile: 15)
        let before = Self.events(journal)
        let replicaFolder = journal.replicaPath(try journal.identity())
        // Every step of a compaction that can fail, failed in turn: the events stay whole.
        for operation in [FaultInjection.Operation.write, .fsync, .link, .remove, .syncDirectory] {
            let report = FaultInjection.$hook.withValue({ op, path in op == operation && path.hasPrefix(replicaFolder) ? EIO : nil }) {
                Compactor(directory: journal, policy: .everything).run()
            }
            #expect(!report.problems.isEmpty || report.covers.isEmpty, "\(operation)")
            #expect(Self.events(journal) == before, "\(operation)")
        }
        // And the next run without faults finishes the job.
        _ = Compactor(directory: journal, policy: .everything).run()
        #expect(journal.listSealed().sealed.count == 1)
        #expect(Self.events(journal) == before)
    }
}

@Suite(.ownThreads) struct CoverCheckTests {
    @Test func aCoverWhoseSealOnlyNamesTheKeyRetiresNothing() throws {
        // A stranger plants a wider file over a signed replica's seqs, with a seal record that
        // names the replica's key but carries no valid signature. A journal without a trust
        // list imports it; it must still never retire the signed files for it.
        let temp = TemporaryDirectory("compact-forged-seal")
        defer { temp.remove() }
        let journal = try CompactionTests.journalOfSmallSegments(temp.path + "/j", files: 3, perFile: 10)
        let replica = try journal.identity()
        let key = try #require(journal.replicaKey())
        var events = CompactionTests.events(journal)
        let last = try #require(events.last)
        events.append(Event(id: EventID(replica: replica, seq: last.id.seq + 1), lamport: last.lamport + 1, wallTime: 0,
                            payload: .end(StrokeID(UUIDBits(high: 66, low: 66)))))
        let contents = SegmentHeader(replica: replica, version: FormatV3.version).encoded()
            + SegmentEncoder.blocks(events[...], version: FormatV2.version)
        let forged = contents + SealRecord(role: .replica, publicKey: key.publicKey, signature: [UInt8](repeating: 7, count: 64)).encoded()
        let name = SegmentName(firstSeq: 1, lastSeq: last.id.seq + 1, contents: forged)
        try FileSystem.writeAtomically(forged, to: journal.segmentPath(replica, name))

        let report = Compactor(directory: journal).run()
        #expect(report.retired.allSatisfy { $0.cover != name })
        #expect(report.problems.contains { $0.reason.contains("signature") })
        // The signed files, or a cover of them sealed by the journal's key, still hold every event.
        let signed = journal.listSealed().sealed.filter { $0.name != name }
        #expect(signed.reduce(0) { $0 + SegmentScanner.scan(path: $1.path, sealed: true).eventCount } == 30)
    }
}
