#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalFormat
import JournalPlatform
import JournalStorage
import JournalTestSupport
import Testing

/// `HostedReplicaWriter`: another replica's events kept in this journal (a relay's native
/// clients), durable per append, recovered after a crash, sealed like the journal's own.
@Suite(.ownThreads) struct HostedReplicaWriterTests {
    static func events(_ replica: ReplicaID, _ seqs: ClosedRange<UInt64>) -> [Event] {
        seqs.map { seq in
            Event(id: EventID(replica: replica, seq: seq), lamport: seq + 100, wallTime: 1_700_000_000_000 + Int64(seq),
                  payload: .point(PointSample(stroke: StrokeID(UUIDBits(high: 3, low: 4)), x: Double(seq) / 3, y: 0.1,
                                              pressure: nil, t: nil, style: Style(color: RGBA(rawValue: 0xFF0000FF), width: 1))))
        }
    }

    func hostedEvents(_ directory: JournalDirectory, _ replica: ReplicaID) -> [Event] {
        SegmentSet.load(directory).members.filter { $0.replica == replica }.flatMap { member -> [Event] in
            let (events, _) = member.scan.allEvents()
            return events
        }.sorted { $0.id.seq < $1.id.seq }
    }

    @Test func appendsAreReadByEveryReaderAndSurviveAReopen() throws {
        let temp = TemporaryDirectory("hosted-append")
        defer { temp.remove() }
        let directory = try JournalDirectory.create(at: temp.path + "/j")
        let replica = ReplicaID.random()
        do {
            let writer = try HostedReplicaWriter(directory: directory, replica: replica)
            try writer.append(Self.events(replica, 1...5))
            try writer.append(Self.events(replica, 6...8))
            #expect(writer.lastOpenSeq == 8 && writer.openEvents == 8)
            // Dropped without close: what a killed relay leaves.
        }
        #expect(hostedEvents(directory, replica) == Self.events(replica, 1...8))
        #expect(directory.hostedSegments().map(\.replica) == [replica])

        let reopened = try HostedReplicaWriter(directory: directory, replica: replica)
        #expect(reopened.lastOpenSeq == 8 && reopened.bytesCut == 0)
        try reopened.append(Self.events(replica, 9...9))
        let name = try #require(try reopened.seal())
        #expect(name.firstSeq == 1 && name.lastSeq == 9 && name.identifiesContents)
        #expect(FileSystem.exists(directory.segmentPath(replica, name)))
        #expect(reopened.openEvents == 0 && reopened.lastOpenSeq == nil)
        #expect(hostedEvents(directory, replica) == Self.events(replica, 1...9))
    }

    /// A file the writer cannot read may hold acknowledged events: both writers refuse to
    /// open rather than reset it (a symlink here: files are never opened through one, and the
    /// tests run as root, so permissions would not stop a read).
    @Test func anOpenSegmentThatCannotBeReadIsRefusedNeverReset() throws {
        let temp = TemporaryDirectory("open-unreadable")
        defer { temp.remove() }
        let directory = try JournalDirectory.create(at: temp.path + "/j")
        let replica = ReplicaID.random()
        do {
            let own = try JournalWriter(directory: directory, options: WriterOptions(sealOnClose: false))
            _ = try own.append(Self.events(replica, 1...1)[0].payload)
            try own.flush()
            let hosted = try HostedReplicaWriter(directory: directory, replica: replica)
            try hosted.append(Self.events(replica, 1...4))
            // Dropped without close: what a killed process leaves.
        }
        for path in [directory.openSegmentPath, directory.hostedSegmentPath(replica)] {
            let moved = temp.path + "/moved-" + FileSystem.lastComponent(of: path)
            #expect(rename(path, moved) == 0 && symlink(moved, path) == 0)
            let before = try FileSystem.readFile(moved)
            #expect {
                if path == directory.openSegmentPath {
                    _ = try JournalWriter(directory: directory)
                } else {
                    _ = try HostedReplicaWriter(directory: directory, replica: replica)
                }
            } throws: { error in
                guard case JournalError.openSegmentCorrupt(let problem) = error else { return false }
                return problem.file == path
            }
            #expect(FileSystem.linkStatus(path)?.kind == .symlink, "\(path) was replaced")
            #expect(try FileSystem.readFile(moved) == before)
        }
    }

    @Test func aTornTailIsCutAndASealedLeftoverIsReset() throws {
        let temp = TemporaryDirectory("hosted-recover")
        defer { temp.remove() }
        let directory = try JournalDirectory.create(at: temp.path + "/j")
        let replica = ReplicaID.random()
        let path = directory.hostedSegmentPath(replica)
        do {
            let writer = try HostedReplicaWriter(directory: directory, replica: replica)
            try writer.append(Self.events(replica, 1...4))
        }
        // A block cut short by a crash.
        let whole = try FileSystem.readFile(path)
        try FileSystem.writeAtomically(whole + Array(SegmentEncoder.block(Self.events(replica, 5...6)[...]).prefix(20)), to: path)
        let writer = try HostedReplicaWriter(directory: directory, replica: replica)
        #expect(writer.bytesCut == 20 && writer.lastOpenSeq == 4)
        #expect(try FileSystem.readFile(path) == whole)
        try writer.append(Self.events(replica, 5...6))

        // A crash after the seal was written, before the open segment was reset.
        let open = try FileSystem.readFile(path)
        #expect(try writer.seal() != nil)
        try FileSystem.writeAtomically(open, to: path)
        let again = try HostedReplicaWriter(directory: directory, replica: replica)
        #expect(again.openEvents == 0 && again.lastOpenSeq == nil)
        #expect(hostedEvents(directory, replica) == Self.events(replica, 1...6))
    }

    @Test func aSkipSealsFirstAndWrongEventsAreRefused() throws {
        let temp = TemporaryDirectory("hosted-skip")
        defer { temp.remove() }
        let directory = try JournalDirectory.create(at: temp.path + "/j")
        let replica = ReplicaID.random()
        let writer = try HostedReplicaWriter(directory: directory, replica: replica)
        try writer.append(Self.events(replica, 1...3))
        // Seqs 4…9 came from elsewhere (sync): a segment's seqs are dense, so 1…3 is sealed.
        let sealed = try writer.append(Self.events(replica, 10...12))
        #expect(sealed.map { "\($0.firstSeq)-\($0.lastSeq)" } == ["1-3"])
        #expect(writer.lastOpenSeq == 12 && writer.openEvents == 3)

        #expect(throws: JournalError.self) { try writer.append(Self.events(ReplicaID.random(), 13...13)) }
        #expect(throws: JournalError.self) { try writer.append([Self.events(replica, 13...13)[0], Self.events(replica, 15...15)[0]]) }
        #expect(throws: JournalError.self) { try HostedReplicaWriter(directory: directory, replica: try directory.identity()) }
        #expect(hostedEvents(directory, replica) == Self.events(replica, 1...3) + Self.events(replica, 10...12))
    }

    @Test func aPlantedHostedFileOfAnotherReplicaIsReportedNotRead() throws {
        let temp = TemporaryDirectory("hosted-planted")
        defer { temp.remove() }
        let directory = try JournalDirectory.create(at: temp.path + "/j")
        let named = ReplicaID.random()
        let inside = ReplicaID.random()
        try FileSystem.createDirectory(directory.hostedPath)
        try FileSystem.writeAtomically(SegmentEncoder.segment(replica: inside, events: Self.events(inside, 1...2)),
                                       to: directory.hostedSegmentPath(named))
        let set = SegmentSet.load(directory)
        #expect(!set.members.contains { $0.replica == inside || $0.replica == named })
        #expect(set.problems.contains { $0.reason.contains("holds replica \(inside.hex)") })
        // Its writer refuses to cut it (it is no crash leftover).
        #expect(throws: JournalError.self) { try HostedReplicaWriter(directory: directory, replica: named) }
    }

    @Test func symlinkedFoldersAreNeverWrittenThrough() throws {
        let temp = TemporaryDirectory("hosted-symlink")
        defer { temp.remove() }
        let directory = try JournalDirectory.create(at: temp.path + "/j")
        let outside = temp.path + "/outside"
        try FileSystem.createDirectory(outside)
        let replica = ReplicaID.random()
        try FileSystem.createDirectory(directory.replicasPath)
        #expect(symlink(outside, directory.replicaPath(replica)) == 0)
        #expect(throws: JournalError.self) { try HostedReplicaWriter(directory: directory, replica: replica) }
        let other = ReplicaID.random()
        #expect(symlink(outside, directory.hostedPath) == 0)
        #expect(throws: JournalError.self) { try HostedReplicaWriter(directory: directory, replica: other) }
        #expect(try FileSystem.list(outside).isEmpty)
    }

    /// A symlink planted at `replicas/<id>` (or at `replicas/`) while a writer is open: its seal
    /// is refused, not written through; the events stay durable in the open segment, and the
    /// seal goes through once the symlink is gone. Both writers (a relay's hosted replicas and
    /// its own): a seal by path would follow the symlink.
    @Test(arguments: [false, true], ["replica", "replicas"])
    func aSymlinkPlantedAfterOpeningIsNeverSealedThrough(hosted: Bool, at level: String) throws {
        let temp = TemporaryDirectory("seal-symlink")
        defer { temp.remove() }
        let directory = try JournalDirectory.create(at: temp.path + "/j")
        let outside = temp.path + "/outside"
        try FileSystem.createDirectory(outside)
        let hostedReplica = ReplicaID.random()
        let own = try JournalWriter(directory: directory, options: WriterOptions(sealOnClose: false))
        let guest = try HostedReplicaWriter(directory: directory, replica: hostedReplica)
        let replica = hosted ? hostedReplica : own.replica
        if hosted {
            try guest.append(Self.events(hostedReplica, 1...4))
        } else {
            for event in Self.events(replica, 1...4) { _ = try own.append(event.payload) }
            try own.flush()
        }
        try FileSystem.createDirectory(directory.replicasPath)
        let planted = level == "replica" ? directory.replicaPath(replica) : directory.replicasPath
        if level == "replicas" { #expect(rename(directory.replicasPath, temp.path + "/replicas-moved") == 0) }
        #expect(symlink(outside, planted) == 0)
        #expect {
            _ = hosted ? try guest.seal() : try own.seal()
        } throws: { error in
            guard case JournalError.sealFailed(let cause, _, _) = error else { return false }
            return cause.isSymbolicLink
        }
        #expect(try FileSystem.list(outside).isEmpty, "written through the symlink")
        try FileSystem.remove(planted)
        if level == "replicas" { #expect(rename(temp.path + "/replicas-moved", directory.replicasPath) == 0) }
        #expect(try (hosted ? guest.seal() : own.seal()) != nil)
        let sealed = try FileSystem.list(directory.replicaPath(replica))
        #expect(sealed.count == 1 && sealed[0].name.hasSuffix(".sjs"))
        try own.close()
        try guest.close()
    }
}
