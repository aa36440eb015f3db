import JournalFormat
import JournalPlatform
@testable import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// Snapshots whose CRC is valid but whose contents lie: a CRC proves
/// only that some program wrote the bytes, so every index the replay trusts is validated.
@Suite(.ownThreads) struct CraftedSnapshotTests {
    func journalWithSnapshot(_ temp: TemporaryDirectory) throws -> JournalDirectory {
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        var generator = EventGenerator(seed: 21)
        let writer = try JournalWriter(directory: journal)
        for _ in 0..<20 { for event in generator.stroke(points: 12) { try writer.append(event.payload, flushingEvery: 64) } }
        try writer.close()
        try SnapshotStore.create(journal)
        // More events after the snapshot, so that opening continues from it.
        let more = try JournalWriter(directory: journal)
        for _ in 0..<3 { for event in generator.stroke(points: 12) { try more.append(event.payload) } }
        try more.close()
        return journal
    }

    func replace(_ path: String, with bytes: [UInt8]) throws {
        try FileSystem.remove(path)
        let descriptor = try FileDescriptor.open(path, .createNew)
        defer { descriptor.close() }
        try descriptor.writeAll(bytes)
    }

    @Test func aValidCRCWithOutOfRangeIndexesIsIgnoredNotTrusted() throws {
        let temp = TemporaryDirectory("crafted-snapshot")
        defer { temp.remove() }
        let journal = try journalWithSnapshot(temp)
        let path = journal.localPath + "/snapshots/latest.sjsnap"
        // Crafted by someone holding the journal's cache key: sealed, so only the checks of
        // what the snapshot says can refuse it.
        let seal = try #require(CacheSeal.load(journal))
        let opened = try #require(seal.opened(try FileSystem.readFile(path)))
        let honest = try #require(Snapshot.decode(opened))
        let full = Replay.load(journal, useSnapshots: false).drawing.digest
        #expect(Replay.load(journal).drawing.digest == full)

        var crafted: [Snapshot] = []
        var badKey = honest
        badKey.lastKey?.replica = 99
        crafted.append(badKey)
        var unsorted = honest
        unsorted.replicas = [ReplicaID(UUIDBits(high: .max, low: 1))] + honest.replicas
        crafted.append(unsorted)
        var hugeCount = honest
        hugeCount.eventCount = Int.max
        crafted.append(hugeCount)
        for snapshot in crafted {
            let bytes = snapshot.encoded()
            #expect(Snapshot.decode(bytes) == nil)
            try replace(path, with: seal.sealed(bytes))
            let (drawing, report) = Replay.load(journal)
            #expect(drawing.digest == full)
            #expect(report.eventsFromSnapshot == 0)
        }
    }

    @Test func aSnapshotOfUnorderedClocksSaysWhyInsteadOfAFakeErrno() throws {
        let temp = TemporaryDirectory("unordered-snapshot")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let replica = ReplicaID(UUIDBits(high: 5, low: 5))
        var generator = EventGenerator(seed: 22, replica: replica)
        var events = generator.stroke(points: 5)
        events[3].lamport = 1   // clocks that fall as seqs rise: no honest writer does this
        let bytes = SegmentEncoder.segment(replica: replica, events: events)
        let name = SegmentName(firstSeq: 1, lastSeq: UInt64(events.count), contents: bytes)
        try FileSystem.createDirectory(journal.replicaPath(replica))
        let descriptor = try FileDescriptor.open(journal.segmentPath(replica, name), .createNew)
        try descriptor.writeAll(bytes)
        descriptor.close()
        #expect(throws: SnapshotError.clocksOutOfOrder(path: journal.root)) { try SnapshotStore.create(journal) }
    }
}
