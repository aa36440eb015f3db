@testable import JournalReplay
import JournalTestSupport
import Testing

/// `SortedChunks` against a plain sorted array: the same elements in the same order, the same
/// ranks, whatever order elements arrive in and whatever the chunk capacity.
@Suite(.ownThreads) struct SortedChunksTests {
    /// Where `element` goes in a sorted array (before any equal element).
    static func rank(_ element: Int, in sorted: [Int]) -> Int {
        sorted.firstIndex { !($0 < element) } ?? sorted.count
    }

    enum Operation {
        case insert
        case remove
        case replace(with: Int)
    }

    /// Applies `operations` to both and compares them after every one.
    static func compare(_ operations: [(Int, Operation)], capacity: Int, note: String) {
        var chunks = SortedChunks<Int>(capacity: capacity)
        var reference: [Int] = []
        for (step, (element, operation)) in operations.enumerated() {
            switch operation {
            case .insert:
                chunks.insert(element)
                reference.insert(element, at: rank(element, in: reference))
            case .remove:
                let held = reference.firstIndex(of: element)
                #expect(chunks.remove(element) == (held != nil), "\(note) step \(step)")
                if let held { reference.remove(at: held) }
            case .replace(let new):
                chunks.replace(element, with: new)
                if let held = reference.firstIndex(of: element) { reference.remove(at: held) }
                reference.insert(new, at: rank(new, in: reference))
            }
            chunks.checkInvariants()
            #expect(chunks.count == reference.count)
            #expect(chunks.first == reference.first && chunks.last == reference.last)
            if step % 13 == 0 || step == operations.count - 1 {
                #expect(Array(chunks) == reference, "\(note) step \(step)")
                for probe in [element - 1, element, element + 1, Int.min, Int.max] {
                    #expect(chunks.rank(of: probe) == rank(probe, in: reference), "\(note) step \(step) probe \(probe)")
                }
            }
        }
    }

    @Test(arguments: [2, 3, 4, 7, 16, 256])
    func randomInsertsRemovesAndReplacementsMatchASortedArray(capacity: Int) {
        for seed in 1...6 as ClosedRange<UInt64> {
            var random = SeededGenerator(seed: seed * 1_000 + UInt64(capacity))
            // A small range, so that duplicates and removals of held elements are common.
            let range = 0...Int.random(in: 20...400, using: &random)
            let operations = (0..<600).map { _ -> (Int, Operation) in
                let element = Int.random(in: range, using: &random)
                switch Int.random(in: 0..<8, using: &random) {
                case 0, 1: return (element, .remove)
                // Mostly a small move (in place when no element lies between), sometimes far.
                case 2: return (element, .replace(with: element + Int.random(in: -3...3, using: &random)))
                case 3: return (element, .replace(with: Int.random(in: range, using: &random)))
                default: return (element, .insert)
                }
            }
            Self.compare(operations, capacity: capacity, note: "capacity \(capacity) seed \(seed)")
        }
    }

    /// Rising, falling, alternating ends, and a rising run that lands just below one chunk (the
    /// order that would make a chunk per element if a full chunk's neighbour were not used).
    @Test(arguments: [2, 4, 5, 64])
    func orderedArrivalsMatchASortedArray(capacity: Int) {
        let count = 700
        let patterns: [(String, [Int])] = [
            ("rising", Array(0..<count)),
            ("falling", Array((0..<count).reversed())),
            ("alternating", (0..<count).map { $0 % 2 == 0 ? $0 : -$0 }),
            ("below a chunk", Array(count..<(count + capacity)) + Array(0..<count)),
            ("sawtooth", (0..<count).map { ($0 % 37) * 1_000 - $0 }),
        ]
        for (name, elements) in patterns {
            Self.compare(elements.map { ($0, .insert) }, capacity: capacity, note: "\(name), capacity \(capacity)")
            // Insertions only: a chunk below half full sits only next to ones at least half
            // full, so there are O(n / capacity) chunks whatever the order.
            var chunks = SortedChunks<Int>(capacity: capacity)
            for element in elements { chunks.insert(element) }
            let half = capacity / 2
            #expect(chunks.chunks.count <= 2 * (chunks.count / half) + 1, "\(name), capacity \(capacity): \(chunks.chunks.count) chunks")
            for (left, right) in zip(chunks.chunks, chunks.chunks.dropFirst()) {
                #expect(left.count >= half || right.count >= half, "\(name), capacity \(capacity)")
            }
        }
    }

    @Test func buildingFromSortedElementsMatchesInserting() {
        var random = SeededGenerator(seed: 77)
        let elements = (0..<1_000).map { _ in Int.random(in: 0...300, using: &random) }.sorted()
        for capacity in [2, 3, 10, 256] {
            var built = SortedChunks(sorted: elements, capacity: capacity)
            built.checkInvariants()
            #expect(Array(built) == elements)
            // Further insertions into chunks that start full.
            var reference = elements
            for _ in 0..<200 {
                let element = Int.random(in: -10...310, using: &random)
                built.insert(element)
                reference.insert(element, at: Self.rank(element, in: reference))
            }
            built.checkInvariants()
            #expect(Array(built) == reference, "capacity \(capacity)")
        }
        #expect(Array(SortedChunks<Int>(sorted: [])) == [])
    }
}
