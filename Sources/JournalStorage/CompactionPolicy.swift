import JournalFormat

/// Which runs of a replica's sealed files to rewrite as one (docs/FORMAT.md §16.5): size-tiered,
/// so that each event is rewritten a logarithmic number of times and a replica keeps a
/// logarithmic number of files.
///
/// Whenever `fanIn` or more adjacent files (in seq order) are of similar size (the largest at
/// most 4 times the smallest, counting files under 4,096 events as 4,096) they become one; a
/// chain that still has more than `maxFilesPerChain` files has its smallest adjacent pair
/// merged until it has no more. Merges are planned on event counts alone, and merges of merges
/// collapse into one run of the original files, so a plan writes each event at most once.
/// (Fixed tiers such as `⌊log₄(events)⌋` would never merge a relay's seals of about 1,000
/// events each: they straddle a tier boundary, and no four adjacent ones share a tier.)
public struct CompactionPolicy: Sendable, Equatable {
    public var fanIn: Int
    public var maxFilesPerChain: Int
    /// Files of at least this many events are left as they are: rewriting them costs their
    /// whole size to save a few hundred bytes.
    public var largeFileEvents: Int

    public init(fanIn: Int = 4, maxFilesPerChain: Int = 24, largeFileEvents: Int = 1 << 20) {
        self.fanIn = max(2, fanIn)
        self.maxFilesPerChain = max(1, maxFilesPerChain)
        self.largeFileEvents = largeFileEvents
    }

    public static let standard = CompactionPolicy()
    /// `journal compact`: every chain of small files becomes one file.
    public static let everything = CompactionPolicy(fanIn: 2, maxFilesPerChain: 1)

    /// Files whose event counts are within this factor of each other are of one size class.
    static let similarity = 4

    /// The size a file counts as: below `FormatV1.sealedBlockMinimumEvents` all files are alike,
    /// since their blocks are re-encoded whatever their neighbours (a relay seals files of a few
    /// events between ones of a thousand, and a size ratio alone would keep those apart).
    static func sizeClass(_ events: Int) -> Int { max(events, FormatV1.sealedBlockMinimumEvents) }

    /// The runs of `eventCounts` (the files of one chain: adjacent, in seq order) to merge,
    /// as index ranges of two or more files each.
    public func runs(eventCounts: [Int]) -> [Range<Int>] {
        var groups: [(files: Range<Int>, events: Int)] = eventCounts.indices.map { ($0..<($0 + 1), eventCounts[$0]) }
        func merge(_ span: Range<Int>) {
            let merged = (groups[span.lowerBound].files.lowerBound..<groups[span.upperBound - 1].files.upperBound,
                          groups[span].reduce(0) { $0 + $1.events })
            groups.replaceSubrange(span, with: [merged])
        }
        func isSmall(_ index: Int) -> Bool { groups[index].events < largeFileEvents / 2 }
        var changed = true
        while changed {
            changed = false
            var start = 0
            while start < groups.count {
                var end = start + 1
                var smallest = Self.sizeClass(groups[start].events), largest = smallest, events = groups[start].events
                // Adjacent files of similar size (within `similarity`), never a group of
                // `largeFileEvents` or more: a cover's size is bounded.
                while end < groups.count, isSmall(start), isSmall(end) {
                    let next = groups[end].events
                    let low = min(smallest, Self.sizeClass(next)), high = max(largest, Self.sizeClass(next))
                    guard high <= Self.similarity * low, events + next < largeFileEvents else { break }
                    (smallest, largest, events) = (low, high, events + next)
                    end += 1
                }
                if end - start >= fanIn {
                    merge(start..<end)
                    changed = true
                    break
                }
                start += 1
            }
        }
        while groups.count > maxFilesPerChain {
            var best: Int?
            for index in 0..<(groups.count - 1) where groups[index].events + groups[index + 1].events < largeFileEvents {
                let size = groups[index].events + groups[index + 1].events
                if best.map({ size < groups[$0].events + groups[$0 + 1].events }) ?? true { best = index }
            }
            guard let best else { break }
            merge(best..<(best + 2))
        }
        return groups.map(\.files).filter { $0.count > 1 }
    }
}
