import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

@Suite(.ownThreads) struct CompactionSchedulerTests {
    static func name(_ first: UInt64) -> SegmentName {
        SegmentName(firstSeq: first, lastSeq: first + 9, contents: Array("segment \(first)".utf8))
    }

    @Test func pairsFoundNotToCoverAreForgottenOldestFirstBeyondTheCapacity() {
        let pairs = NotCoveringPairs(capacity: 3)
        let replica = ReplicaID(UUIDBits(high: 1, low: 2))
        let cover = Self.name(1)
        for first in [11, 21, 31, 41, 51] as [UInt64] { pairs.insert(cover, Self.name(first), replica: replica) }
        #expect(pairs.count == 3)
        #expect(!pairs.contains(cover, Self.name(11), replica: replica))
        #expect(!pairs.contains(cover, Self.name(21), replica: replica))
        #expect(pairs.contains(cover, Self.name(51), replica: replica))
        // A pair already there takes no second place (and evicts nothing).
        pairs.insert(cover, Self.name(51), replica: replica)
        #expect(pairs.contains(cover, Self.name(31), replica: replica))
        #expect(pairs.count == 3)
    }

    @Test func aRequestedPassCompactsTheReplicaAndIsReported() throws {
        let temp = TemporaryDirectory("scheduler")
        defer { temp.remove() }
        let journal = try CompactionTests.journalOfSmallSegments(temp.path + "/j", files: 40, perFile: 25)
        #expect(journal.listSealed().sealed.count == 40, "a writer on its own never compacts")
        let digest = Replay.load(journal).drawing.digest
        let scheduler = CompactionScheduler(directory: journal)
        let heard = Locked<[CompactionReport]>([])
        scheduler.request(try journal.identity()) { report in heard.withLock { $0.append(report) } }
        scheduler.waitUntilIdle()
        #expect(heard.withLock { $0.count } == 1)
        #expect(heard.withLock { $0.first?.covers.isEmpty } == false)
        #expect(journal.listSealed().sealed.count < 40)
        #expect(Replay.load(journal).drawing.digest == digest)
        scheduler.stop()
    }

    @Test func aStoppedSchedulerStartsNothing() throws {
        let temp = TemporaryDirectory("scheduler-stopped")
        defer { temp.remove() }
        let journal = try CompactionTests.journalOfSmallSegments(temp.path + "/j", files: 40, perFile: 25)
        let scheduler = CompactionScheduler(directory: journal)
        scheduler.stop()
        let heard = Locked(0)
        scheduler.request(try journal.identity()) { _ in heard.withLock { $0 += 1 } }
        // Refused at the call, not later: nothing is queued to wait for.
        #expect(!scheduler.isBusy)
        #expect(journal.listSealed().sealed.count == 40)
        #expect(heard.withLock { $0 } == 0)
    }
}
