/// A sorted multiset whose insertions and removals cost O(log n + capacity) whatever order
/// elements arrive in, and little more than an append at either end. (Making or dropping a
/// chunk also moves the list of chunks, O(n / capacity); insertions make at most about four
/// chunks per `capacity` of them.)
///
/// A sorted array costs O(n) per insertion that does not land at its end: a client sending a
/// stroke whose clocks fall as its seq rises makes every point land at the front, and folding
/// 100,000 of them takes seconds. Here elements live in chunks of at most `capacity`,
/// each sorted and each after the one before; an insertion finds its chunk by binary search
/// and moves at most that chunk's elements. Each chunk takes an element at either end without
/// moving the others, so a run of falling keys costs what a run of rising ones does.
struct SortedChunks<Element: Comparable> {
    /// The chunk's elements are `front` reversed, then `back`: prepending is an append.
    struct Chunk {
        var front: [Element] = []
        var back: [Element] = []

        init(_ element: Element) { back = [element] }
        init(sorted: some Sequence<Element>) { back = Array(sorted) }

        var count: Int { front.count + back.count }
        var first: Element { front.last ?? back[0] }
        var last: Element { back.last ?? front[0] }

        subscript(index: Int) -> Element {
            get { index < front.count ? front[front.count - 1 - index] : back[index - front.count] }
            set {
                if index < front.count { front[front.count - 1 - index] = newValue } else { back[index - front.count] = newValue }
            }
        }

        /// How many elements sort before `element`.
        func rank(of element: Element) -> Int {
            var low = 0
            var high = count
            while low < high {
                let mid = (low + high) / 2
                if self[mid] < element { low = mid + 1 } else { high = mid }
            }
            return low
        }

        /// Shifts whichever side has fewer elements to move.
        mutating func insert(_ element: Element, at index: Int) {
            if index < front.count || (index == front.count && front.count <= back.count) {
                if index == 0 { front.append(element) } else { front.insert(element, at: front.count - index) }
            } else {
                if index == count { back.append(element) } else { back.insert(element, at: index - front.count) }
            }
        }

        mutating func remove(at index: Int) {
            if index < front.count { front.remove(at: front.count - 1 - index) } else { back.remove(at: index - front.count) }
        }

        /// The chunk's upper half, removed from it.
        mutating func splitOffUpperHalf() -> Chunk {
            let all = Array(front.reversed()) + back
            let half = all.count / 2
            front = []
            back = Array(all[..<half])
            return Chunk(sorted: all[half...])
        }
    }

    let capacity: Int
    private(set) var chunks: [Chunk] = []
    private(set) var count = 0

    init(capacity: Int = 256) {
        precondition(capacity >= 2, "SortedChunks: a chunk must hold at least two elements")
        self.capacity = capacity
    }

    /// Elements already in order, in chunks filled to capacity.
    init(sorted elements: some Sequence<Element>, capacity: Int = 256) {
        self.init(capacity: capacity)
        var pending: [Element] = []
        for element in elements {
            pending.append(element)
            if pending.count == capacity {
                chunks.append(Chunk(sorted: pending))
                pending.removeAll(keepingCapacity: true)
            }
        }
        if !pending.isEmpty { chunks.append(Chunk(sorted: pending)) }
        count = chunks.reduce(0) { $0 + $1.count }
        checkInvariants()
    }

    var isEmpty: Bool { count == 0 }
    var first: Element? { chunks.first?.first }
    var last: Element? { chunks.last?.last }

    /// The chunk `element` belongs in: the first whose last element is not below it, else the
    /// last chunk. Chunks must not be empty.
    private func chunkIndex(for element: Element) -> Int {
        var low = 0
        var high = chunks.count - 1
        while low < high {
            let mid = (low + high) / 2
            if chunks[mid].last < element { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Inserts before any equal elements.
    mutating func insert(_ element: Element) {
        count += 1
        guard !chunks.isEmpty else {
            chunks.append(Chunk(element))
            return
        }
        // Either end first: runs of rising or falling keys need no search.
        let chunk: Int
        let index: Int
        if element < chunks[0].first {
            (chunk, index) = (0, 0)
        } else if chunks[chunks.count - 1].last < element {
            (chunk, index) = (chunks.count - 1, chunks[chunks.count - 1].count)
        } else {
            chunk = chunkIndex(for: element)
            index = chunks[chunk].rank(of: element)
        }
        defer { checkChunks(around: chunk) }
        if chunks[chunk].count < capacity {
            chunks[chunk].insert(element, at: index)
        } else if index == 0, chunk > 0, chunks[chunk - 1].count < capacity {
            // Between two chunks: the one before has room at its end.
            chunks[chunk - 1].insert(element, at: chunks[chunk - 1].count)
        } else if index == 0 {
            // A new chunk only when the one before is full too: a run of insertions between two
            // chunks fills a chunk rather than making one per element.
            chunks.insert(Chunk(element), at: chunk)
        } else if index == chunks[chunk].count {
            // Past the last element (only the last chunk has room to the right of its last).
            chunks.insert(Chunk(element), at: chunk + 1)
        } else {
            let upper = chunks[chunk].splitOffUpperHalf()
            chunks.insert(upper, at: chunk + 1)
            let lowerCount = chunks[chunk].count
            if index <= lowerCount {
                chunks[chunk].insert(element, at: index)
            } else {
                chunks[chunk + 1].insert(element, at: index - lowerCount)
            }
        }
    }

    /// The chunk and index in it of an element equal to `element`.
    private func position(of element: Element) -> (chunk: Int, index: Int)? {
        guard !chunks.isEmpty else { return nil }
        if chunks[0].first == element { return (0, 0) }
        let chunk = chunkIndex(for: element)
        let index = chunks[chunk].rank(of: element)
        guard index < chunks[chunk].count, chunks[chunk][index] == element else { return nil }
        return (chunk, index)
    }

    /// Removes one element equal to `element`; false if there is none.
    @discardableResult
    mutating func remove(_ element: Element) -> Bool {
        guard let (chunk, index) = position(of: element) else { return false }
        count -= 1
        if chunks[chunk].count == 1 {
            chunks.remove(at: chunk)
        } else {
            chunks[chunk].remove(at: index)
        }
        checkChunks(around: chunk)
        return true
    }

    /// Replaces one element equal to `old` by `new` (inserts `new` if there is none). In place
    /// when `new` sorts where `old` was: a stroke whose clocks fall changes its creation key
    /// with every point, nearly always without passing another stroke's.
    mutating func replace(_ old: Element, with new: Element) {
        guard let (chunk, index) = position(of: old) else {
            insert(new)
            return
        }
        let before = index > 0 ? chunks[chunk][index - 1] : chunk > 0 ? chunks[chunk - 1].last : nil
        let after = index + 1 < chunks[chunk].count ? chunks[chunk][index + 1]
            : chunk + 1 < chunks.count ? chunks[chunk + 1].first : nil
        if before.map({ !(new < $0) }) ?? true, after.map({ !($0 < new) }) ?? true {
            chunks[chunk][index] = new
            checkChunks(around: chunk)
        } else {
            remove(old)
            insert(new)
        }
    }

    /// How many elements sort before `element`: its index in the sorted order if it is held.
    /// O(n / capacity): it adds up the chunks before.
    func rank(of element: Element) -> Int {
        guard !chunks.isEmpty else { return 0 }
        let chunk = chunkIndex(for: element)
        var before = 0
        for index in 0..<chunk { before += chunks[index].count }
        return before + chunks[chunk].rank(of: element)
    }

    /// Debug builds only: every chunk non-empty and within capacity, elements in order within
    /// and across chunks, `count` their number. O(n): for tests and construction.
    func checkInvariants() {
        #if DEBUG
        var total = 0
        var previous: Element?
        for chunk in chunks {
            assert(chunk.count > 0 && chunk.count <= capacity, "SortedChunks: a chunk of \(chunk.count) (capacity \(capacity))")
            for index in 0..<chunk.count {
                if let previous { assert(!(chunk[index] < previous), "SortedChunks: elements out of order") }
                previous = chunk[index]
            }
            total += chunk.count
        }
        assert(total == count, "SortedChunks: count \(count) but \(total) elements held")
        #endif
    }

    /// Debug builds only: the invariants where a mutation happened (the chunk and its
    /// neighbours), so that checking stays O(capacity) per change.
    @inline(__always)
    private func checkChunks(around chunk: Int) {
        #if DEBUG
        let range = Swift.max(0, chunk - 1)..<Swift.min(chunks.count, chunk + 2)
        var previous: Element?
        for index in range {
            let current = chunks[index]
            assert(current.count > 0 && current.count <= capacity, "SortedChunks: a chunk of \(current.count) (capacity \(capacity))")
            for position in 0..<current.count {
                if let previous { assert(!(current[position] < previous), "SortedChunks: elements out of order") }
                previous = current[position]
            }
        }
        #endif
    }
}

extension SortedChunks: Sequence {
    struct Iterator: IteratorProtocol {
        let chunks: [Chunk]
        var chunk = 0
        var index = 0

        mutating func next() -> Element? {
            while chunk < chunks.count {
                if index < chunks[chunk].count {
                    defer { index += 1 }
                    return chunks[chunk][index]
                }
                chunk += 1
                index = 0
            }
            return nil
        }
    }

    func makeIterator() -> Iterator { Iterator(chunks: chunks) }
    var underestimatedCount: Int { count }
}

extension SortedChunks: Sendable where Element: Sendable {}
extension SortedChunks.Chunk: Sendable where Element: Sendable {}
