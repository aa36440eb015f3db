import CZlib

/// How one stretch of a buffer is deflated.
///
/// A block body is columns of different kinds: runs of one byte (event kinds, references,
/// flags), integers whose repeats LZ77 finds (coordinates), bytes that only a Huffman code
/// shrinks. Deflated as one stream with one set of Huffman codes, every column pays for the
/// others' symbols, and the match search runs over runs it gains nothing on. Ending a deflate
/// block at each column gives each its own codes, and each block can be made by the method
/// that suits it. The result is an ordinary raw DEFLATE stream: a reader sees only blocks.
public struct DeflateSection: Sendable, Equatable {
    public enum Method: Sendable, Equatable {
        /// LZ77 matches and Huffman codes at a zlib level (1–9).
        case matching(level: Int32)
        /// Matches at distance 1 only (`Z_RLE`): runs of one byte, found at once.
        case runs
        /// Huffman codes alone (`Z_HUFFMAN_ONLY`): no match search at all.
        case literals

        var zlibParameters: (level: Int32, strategy: Int32) {
            switch self {
            case .matching(let level): return (level, Z_DEFAULT_STRATEGY)
            case .runs: return (1, Z_RLE)
            case .literals: return (1, Z_HUFFMAN_ONLY)
            }
        }
    }

    /// Where the section ends in the input (exclusive); it starts where the one before ended.
    public var end: Int
    public var method: Method

    public init(end: Int, method: Method) {
        self.end = end
        self.method = method
    }

    /// `sections` with each of `ranges` (in order, each within one section) made a section of
    /// its own coded by Huffman codes alone: stretches of noise, which no match shortens and
    /// which a code of their own shrinks further than one shared with the bytes around them.
    public static func carving(literals ranges: [Range<Int>], from sections: [DeflateSection]) -> [DeflateSection] {
        var result: [DeflateSection] = []
        var pending = ranges[...]
        var start = 0
        for section in sections {
            while let range = pending.first, range.upperBound <= section.end {
                pending = pending.dropFirst()
                guard range.lowerBound >= start else { continue }
                result.append(DeflateSection(end: range.lowerBound, method: section.method))
                result.append(DeflateSection(end: range.upperBound, method: .literals))
            }
            result.append(section)
            start = section.end
        }
        return result
    }

    /// Where to cut a buffer in two for two cores (`RawDeflate.compressPiece`): at the end of
    /// a section, so that no section's deflate block is split, where the work on either side
    /// is nearest even (the middle if there is one section). A byte costs about three times
    /// as much to match at a level above 1 as to code by runs or at level 1 (measured per
    /// column of the standard session: 13–26 ns against 0.8–10 ns).
    public static func seam(_ sections: [DeflateSection], count: Int) -> Int {
        guard sections.count > 1 else { return count / 2 }
        var costs: [Int] = []
        var start = 0
        for section in sections {
            let searching = if case .matching(let level) = section.method, level > 1 { true } else { false }
            costs.append((section.end - start) * (searching ? 3 : 1))
            start = section.end
        }
        let total = costs.reduce(0, +)
        var best = (end: count / 2, imbalance: Int.max)
        var before = 0
        for (section, cost) in zip(sections.dropLast(), costs) {
            before += cost
            let imbalance = abs(2 * before - total)
            if section.end > 0, section.end < count, imbalance < best.imbalance { best = (section.end, imbalance) }
        }
        return best.end
    }
}

extension RawDeflate {
    /// Compresses `input` as one raw DEFLATE stream in which every section is deflated by its
    /// method and ends a deflate block. `sections` cover the input in order (the last ends at
    /// `input.count`).
    public static func compress(_ input: [UInt8], sections: [DeflateSection]) throws(ZlibError) -> [UInt8] {
        let result = input.withUnsafeBytes { bytes in
            Result { () throws(ZlibError) in try compressPiece(bytes, range: 0..<bytes.count, sections: sections) }
        }
        return try result.get()
    }

    /// `compressPiece(_:range:level:)` by sections: the piece is the part of the sections that
    /// `range` covers, so pieces cut anywhere can be deflated at the same time and joined.
    /// The pieces must cover the input once, in order: a piece that ends at `input.count`
    /// ends the stream, so an empty one there after another that also ends there would end
    /// it twice.
    public static func compressPiece(
        _ input: UnsafeRawBufferPointer, range: Range<Int>, sections: [DeflateSection]
    ) throws(ZlibError) -> [UInt8] {
        try compressPiece(input, range: range, sections: sections, startingCapacity: nil)
    }

    /// `startingCapacity`: the output room of the first try (zlib's bound when nil), for the
    /// tests of a try that runs out of room.
    package static func compressPiece(
        _ input: UnsafeRawBufferPointer, range: Range<Int>, sections: [DeflateSection], startingCapacity: Int?
    ) throws(ZlibError) -> [UInt8] {
        precondition(range.lowerBound >= 0 && range.upperBound <= input.count, "piece outside its input")
        precondition(sections.last?.end == input.count, "sections must cover the input")
        var parts: [(range: Range<Int>, method: DeflateSection.Method)] = []
        var start = 0
        for section in sections {
            precondition(section.end >= start, "sections out of order")
            let lower = max(start, range.lowerBound), upper = min(section.end, range.upperBound)
            if lower < upper { parts.append((lower..<upper, section.method)) }
            start = section.end
        }
        // An empty piece is still a stream (the empty final block, or nothing but a flush).
        if parts.isEmpty { parts = [(range, sections.last?.method ?? .matching(level: 6))] }

        let base = input.baseAddress?.assumingMemoryBound(to: Bytef.self)
        let last = range.upperBound == input.count
        // Each block end adds at most a few bytes over what one stream would take, and the
        // sync flush of a piece that is not the last its empty stored block. Should zlib still
        // want more room, the piece is deflated again into twice as much, not given up.
        var capacity = startingCapacity
        for _ in 0..<2 {
            if let output = try deflateParts(base, range: range, parts: parts, last: last, capacity: &capacity) { return output }
        }
        throw .internalFailure(code: Z_BUF_ERROR)
    }

    /// One try at a piece: its bytes, or nil if `capacity` (zlib's bound plus slack when nil)
    /// was too small, which is then doubled for the next try.
    private static func deflateParts(
        _ base: UnsafePointer<Bytef>?, range: Range<Int>, parts: [(range: Range<Int>, method: DeflateSection.Method)],
        last: Bool, capacity: inout Int?
    ) throws(ZlibError) -> [UInt8]? {
        let box = StreamBox()
        var current = parts[0].method
        let initial = current.zlibParameters
        let initCode = czlib_deflate_init_raw_strategy(box.stream, initial.level, initial.strategy)
        guard initCode == Z_OK else { throw .internalFailure(code: initCode) }
        defer { deflateEnd(box.stream) }
        let windowStart = max(0, range.lowerBound - 32 * 1024)
        if let base, windowStart < range.lowerBound {
            let code = deflateSetDictionary(box.stream, base + windowStart, uInt(range.lowerBound - windowStart))
            guard code == Z_OK else { throw .internalFailure(code: code) }
        }
        let size = capacity ?? Int(deflateBound(box.stream, uLong(range.count))) + 16 * parts.count + 16
        capacity = 2 * size
        var output = [UInt8](repeating: 0, count: size)
        let outcome: Int32 = output.withUnsafeMutableBufferPointer { outBuf in
            box.stream.pointee.next_out = outBuf.baseAddress
            box.stream.pointee.avail_out = uInt(outBuf.count)
            for (index, part) in parts.enumerated() {
                if part.method != current {
                    // Every earlier part was ended with Z_BLOCK, so nothing is left pending
                    // that the new parameters would have to flush.
                    let parameters = part.method.zlibParameters
                    let code = deflateParams(box.stream, parameters.level, parameters.strategy)
                    guard code == Z_OK else { return code }
                    current = part.method
                }
                box.stream.pointee.next_in = base.map { UnsafeMutablePointer(mutating: $0 + part.range.lowerBound) }
                box.stream.pointee.avail_in = uInt(part.range.count)
                let final = index == parts.count - 1
                let code = deflate(box.stream, final ? (last ? Z_FINISH : Z_SYNC_FLUSH) : Z_BLOCK)
                if final && last {
                    guard code == Z_STREAM_END else { return code == Z_OK ? Z_BUF_ERROR : code }
                } else {
                    // A flush that filled the output may not have finished: out of room.
                    guard code == Z_OK, box.stream.pointee.avail_in == 0, box.stream.pointee.avail_out > 0 else {
                        return code == Z_OK ? Z_BUF_ERROR : code
                    }
                }
            }
            return Z_OK
        }
        if outcome == Z_BUF_ERROR { return nil }
        guard outcome == Z_OK else { throw .internalFailure(code: outcome) }
        output.removeSubrange(Int(box.stream.pointee.total_out)...)
        return output
    }
}
