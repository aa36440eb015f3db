import JournalFormat
import Testing

/// `StrokeIDAllocator`: distinct ids of the documented shape, that a block stores for a
/// fraction of what random ids cost.
struct StrokeIDAllocatorTests {
    @Test func idsAreDistinctVersion8UUIDsCountingFromOne() throws {
        var allocator = StrokeIDAllocator(prefix: 0x0123_4567_89AB_CDEF)
        let ids = (0..<1000).map { _ in allocator.next() }
        #expect(Set(ids).count == 1000)
        #expect(ids[0].uuidString == "01234567-89AB-8DEF-8000-000000000001")
        #expect(ids[999].uuidString == "01234567-89AB-8DEF-8000-0000000003E8")
        for id in ids {
            #expect(id.bits.high >> 12 & 0xF == 8)   // version 8
            #expect(id.bits.low >> 62 == 0b10)       // variant 1
            #expect(StrokeID(uuidString: id.uuidString) == id)
        }
        var other = StrokeIDAllocator(prefix: 0x0123_4567_89AB_CDEE)
        #expect(other.next() != ids[0])
        var random1 = StrokeIDAllocator(), random2 = StrokeIDAllocator()
        #expect(random1.next() != random2.next())
    }

    /// 400 strokes of 20 points, the same points and styles under both kinds of ids: the
    /// allocator's cost at most a quarter of random ids' 16 bytes a stroke.
    @Test func aBlockStoresAllocatedIdsForAFractionOfRandomOnes() throws {
        func block(_ newID: () -> StrokeID) -> Int {
            let replica = ReplicaID(UUIDBits(high: 7, low: 7))
            var events: [Event] = []
            let style = Style(color: RGBA(red: 10, green: 20, blue: 30), width: 2)
            for stroke in 0..<400 {
                let id = newID()
                for point in 0..<20 {
                    let x = Double(stroke % 40 * 25 + point), y = Double(stroke / 40 * 30) + Double(point % 5) / 4
                    let seq = UInt64(events.count + 1)
                    events.append(Event(id: EventID(replica: replica, seq: seq), lamport: seq, wallTime: 1_700_000_000_000,
                                        payload: .point(PointSample(stroke: id, x: x, y: y, style: style))))
                }
            }
            return SegmentEncoder.block(events[...]).count
        }
        var allocator = StrokeIDAllocator(prefix: 42)
        let allocated = block { allocator.next() }
        let random = block { StrokeID() }
        let savedPerStroke = Double(random - allocated) / 400
        #expect(savedPerStroke >= 12, "random \(random) bytes, allocated \(allocated) bytes")
    }
}
