import JournalFormat
import JournalStorage
import JournalTestSupport
import Testing

/// The one verdict on a sealed file, under both policies: the same facts, different use.
@Suite(.ownThreads) struct SegmentVerdictTests {
    let damage = SegmentDamageTests()

    private func name(_ bytes: [UInt8], _ events: [Event]) -> SegmentName {
        SegmentName(firstSeq: events.first!.id.seq, lastSeq: events.last!.id.seq, contents: bytes)
    }

    @Test func aValidFileIsValidUnderBothPolicies() {
        let segment = damage.threeBlockSegment()
        let scan = SegmentScanner.scan(bytes: segment.bytes, path: "a.sjs", sealed: true)
        let claimed = name(segment.bytes, segment.events)
        for policy in [SegmentVerdict.Policy.wholeFile, .salvageBlocks] {
            let verdict = SegmentVerdict.judge(scan, path: "a.sjs", replica: segment.replica, claimedName: claimed, policy: policy)
            #expect(verdict.isValid && !verdict.isRefused, "\(policy)")
            #expect(verdict.name == claimed && verdict.usableBlocks.count == 3, "\(policy)")
        }
    }

    @Test func aDamagedMiddleBlockIsRefusedWholeOrSalvagedAroundIt() {
        let segment = damage.threeBlockSegment()
        let claimed = name(segment.bytes, segment.events)
        let broken = Damage.flipByte(segment.bytes, at: segment.starts[1] + 40)
        let scan = SegmentScanner.scan(bytes: broken, path: "b.sjs", sealed: true)

        let whole = SegmentVerdict.judge(scan, path: "b.sjs", replica: segment.replica, claimedName: claimed, policy: .wholeFile)
        #expect(whole.isRefused && !whole.isValid && whole.usableBlocks.isEmpty)
        #expect(whole.problems.count == 1)

        let salvage = SegmentVerdict.judge(scan, path: "b.sjs", replica: segment.replica, claimedName: claimed, policy: .salvageBlocks)
        #expect(!salvage.isRefused && !salvage.isValid)
        #expect(salvage.usableBlocks.map(\.offset) == [segment.starts[0], segment.starts[2]])
        // The scan's own problem and the name mismatch are both reported.
        #expect(salvage.problems.count == 2)
        #expect(salvage.problems.contains { $0.reason.contains("does not match its name") })
    }

    @Test func aFileInAnotherReplicasFolderIsRefusedUnderBothPolicies() {
        let segment = damage.threeBlockSegment()
        let scan = SegmentScanner.scan(bytes: segment.bytes, path: "c.sjs", sealed: true)
        let stranger = ReplicaID(UUIDBits(high: 1, low: 2))
        for policy in [SegmentVerdict.Policy.wholeFile, .salvageBlocks] {
            let verdict = SegmentVerdict.judge(scan, path: "c.sjs", replica: stranger, claimedName: nil, policy: policy)
            #expect(verdict.isRefused && verdict.usableBlocks.isEmpty, "\(policy)")
            #expect(verdict.problems.first?.reason.contains("header names replica") == true, "\(policy)")
        }
    }

    @Test func blocksThatContradictTheNameAreNeverUsed() {
        let segment = damage.threeBlockSegment()
        let scan = SegmentScanner.scan(bytes: segment.bytes, path: "d.sjs", sealed: true)
        let lying = SegmentName(firstSeq: 1, lastSeq: UInt64(segment.events.count + 5), contents: segment.bytes)
        let salvage = SegmentVerdict.judge(scan, path: "d.sjs", replica: segment.replica, claimedName: lying, policy: .salvageBlocks)
        #expect(salvage.usableBlocks.isEmpty && !salvage.isValid)
        let whole = SegmentVerdict.judge(scan, path: "d.sjs", replica: segment.replica, claimedName: lying, policy: .wholeFile)
        // A prefix of what the name promises: still arriving, not damaged.
        #expect(whole.isRefused && whole.problems.first?.kind == .incomplete)
    }
}
