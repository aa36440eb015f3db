/// Sets of a replica's seqs as sorted, disjoint, non-adjacent closed ranges: what a journal
/// holds, what a snapshot covers, what is missing. The one implementation of merging,
/// gap finding and counting, and of how every command spells ranges.
public struct SeqRanges: Equatable, Sendable {
    /// Sorted by lower bound; no two overlap or touch.
    public private(set) var ranges: [ClosedRange<UInt64>] = []

    public init() {}

    /// Any ranges in any order, overlapping or not.
    public init(_ ranges: some Sequence<ClosedRange<UInt64>>) {
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) { appendInOrder(range) }
        checkInvariants()
    }

    public var isEmpty: Bool { ranges.isEmpty }
    public var highest: UInt64? { ranges.last?.upperBound }

    /// The number of distinct seqs held (saturating, as a UInt64 set can hold 2^64 of them).
    public var count: UInt64 {
        ranges.reduce(0) { total, range in
            let sum = total.addingReportingOverflow(range.upperBound - range.lowerBound)
            let plusOne = sum.partialValue.addingReportingOverflow(1)
            return sum.overflow || plusOne.overflow ? .max : plusOne.partialValue
        }
    }

    public func contains(_ seq: UInt64) -> Bool {
        let index = firstIndex(endingAtOrAfter: seq)
        return index < ranges.count && ranges[index].contains(seq)
    }

    /// Whether any seq of `range` is held.
    public func intersects(_ range: ClosedRange<UInt64>) -> Bool {
        // The first held range that does not end before `range` starts is the only candidate.
        let index = firstIndex(endingAtOrAfter: range.lowerBound)
        return index < ranges.count && ranges[index].lowerBound <= range.upperBound
    }

    /// Whether every seq of `range` is held.
    public func containsAll(_ range: ClosedRange<UInt64>) -> Bool {
        let index = firstIndex(endingAtOrAfter: range.lowerBound)
        return index < ranges.count && ranges[index].lowerBound <= range.lowerBound && ranges[index].upperBound >= range.upperBound
    }

    private func firstIndex(endingAtOrAfter seq: UInt64) -> Int {
        var low = 0, high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound < seq { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Adds `range`. Constant time when it starts at or after every range held (the order
    /// blocks and names arrive in); otherwise a re-merge.
    public mutating func insert(_ range: ClosedRange<UInt64>) {
        if let last = ranges.last, range.lowerBound < last.lowerBound {
            self = SeqRanges(ranges + [range])
        } else {
            appendInOrder(range)
        }
    }

    public mutating func formUnion(_ other: SeqRanges) {
        self = SeqRanges(ranges + other.ranges)
    }

    /// The seqs held by both: one walk over the two sorted lists.
    public func intersection(_ other: SeqRanges) -> SeqRanges {
        var result = SeqRanges()
        var (i, j) = (0, 0)
        while i < ranges.count && j < other.ranges.count {
            let (a, b) = (ranges[i], other.ranges[j])
            let low = max(a.lowerBound, b.lowerBound), high = min(a.upperBound, b.upperBound)
            if low <= high { result.appendInOrder(low...high) }
            // The range that ends first can meet nothing further in the other list.
            if a.upperBound < b.upperBound { i += 1 } else { j += 1 }
        }
        return result
    }

    /// The seqs from 1 through `through` (or through the highest held) that are not held.
    public func gaps(through: UInt64? = nil) -> [ClosedRange<UInt64>] {
        var result: [ClosedRange<UInt64>] = []
        var next: UInt64 = 1
        for range in ranges {
            if range.lowerBound > next { result.append(next...(range.lowerBound - 1)) }
            if range.upperBound == .max { return result }
            next = max(next, range.upperBound + 1)
        }
        if let through, through >= next { result.append(next...through) }
        return result
    }

    private mutating func appendInOrder(_ range: ClosedRange<UInt64>) {
        if let last = ranges.last, last.upperBound == .max || range.lowerBound <= last.upperBound + 1 {
            ranges[ranges.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
        } else {
            ranges.append(range)
        }
    }

    /// Debug builds only: sorted, disjoint, non-adjacent.
    @inline(__always)
    func checkInvariants() {
        #if DEBUG
        for (before, after) in zip(ranges, ranges.dropFirst()) {
            assert(before.upperBound < .max && before.upperBound + 1 < after.lowerBound, "SeqRanges: \(ranges) not canonical")
        }
        #endif
    }

    // MARK: Spelling

    /// `1...5,9`; "none" when empty.
    public static func text(_ ranges: [ClosedRange<UInt64>]) -> String {
        if ranges.isEmpty { return "none" }
        return ranges.map { $0.lowerBound == $0.upperBound ? "\($0.lowerBound)" : "\($0.lowerBound)...\($0.upperBound)" }
            .joined(separator: ",")
    }

    /// `[[1,5],[9,9]]`.
    public static func json(_ ranges: [ClosedRange<UInt64>]) -> String {
        "[" + ranges.map { "[\($0.lowerBound),\($0.upperBound)]" }.joined(separator: ",") + "]"
    }
}
