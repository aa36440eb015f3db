/// Which runs of a replica's sealed files to rewrite as one (docs/FORMAT.md §16.4): size-tiered,
/// so that each event is rewritten a logarithmic number of times and a replica keeps a
/// logarithmic number of files.
///
/// A file's tier is `⌊log₄(events)⌋`. Whenever `fanIn` adjacent files (in seq order) share a
/// tier they become one file of a higher tier; a chain that still has more than
/// `maxFilesPerChain` files has its smallest adjacent pair merged until it has no more. Merges
/// are planned on event counts alone, and merges of merges collapse into one run of the
/// original files, so a plan writes each event at most once.
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

    static func tier(_ events: Int) -> Int {
        var tier = 0
        var size = max(1, events)
        while size >= 4 { size /= 4; tier += 1 }
        return tier
    }

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
                let tier = Self.tier(groups[start].events)
                var events = groups[start].events
                // Never a group of `largeFileEvents` or more: a cover's size is bounded.
                while end < groups.count, isSmall(end), isSmall(start), Self.tier(groups[end].events) == tier,
                      events + groups[end].events < largeFileEvents {
                    events += groups[end].events
                    end += 1
                }
                if end - start >= fanIn {
                    merge(start..<end)
                    changed = true
                    break
                }
                start = end
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
