import JournalFormat
import JournalIngest

/// What one side holds of a board: per replica, the seq ranges of the events it has. An
/// event's id is its replica and seq, so this says exactly which events a side lacks: the
/// client sends its own in `hello`, the relay answers with its own in `caughtUp`.
///
/// On the wire: `{"<32 hex>":[[1,120],[130,200]],…}`, each range `[first,last]` inclusive,
/// `1 ≤ first ≤ last`; replicas in any order, each at most once; ranges in any order,
/// overlapping or not (they are merged).
public struct Have: Equatable, Sendable {
    /// Never holds an empty `SeqRanges`: a replica whose events one holds none of is absent.
    public private(set) var ranges: [ReplicaID: SeqRanges]

    public init(_ ranges: [ReplicaID: SeqRanges] = [:]) {
        self.ranges = ranges.filter { !$0.value.isEmpty }
    }

    public var isEmpty: Bool { ranges.isEmpty }

    public subscript(replica: ReplicaID) -> SeqRanges { ranges[replica] ?? SeqRanges() }

    public func contains(_ id: EventID) -> Bool { ranges[id.replica]?.contains(id.seq) ?? false }

    /// The number of events held (saturating).
    public var eventCount: UInt64 {
        ranges.values.reduce(UInt64(0)) { total, ranges in
            let (sum, overflow) = total.addingReportingOverflow(ranges.count)
            return overflow ? .max : sum
        }
    }

    public mutating func insert(_ id: EventID) { ranges[id.replica, default: SeqRanges()].insert(id.seq...id.seq) }

    public mutating func insert(_ replica: ReplicaID, _ seqs: ClosedRange<UInt64>) { ranges[replica, default: SeqRanges()].insert(seqs) }

    public mutating func formUnion(_ other: Have) {
        for (replica, theirs) in other.ranges { ranges[replica, default: SeqRanges()].formUnion(theirs) }
    }

    /// Whether every event `other` holds is held here.
    public func containsAll(_ other: Have) -> Bool {
        other.ranges.allSatisfy { replica, theirs in
            let mine = self[replica]
            return theirs.ranges.allSatisfy { mine.containsAll($0) }
        }
    }

    public mutating func remove(_ replica: ReplicaID) { ranges[replica] = nil }

    public mutating func replace(_ replica: ReplicaID, with seqs: SeqRanges) { ranges[replica] = seqs.isEmpty ? nil : seqs }

    /// The same holding with at most `count` ranges per replica: the longest ones (the others
    /// count as not held).
    public func keepingLongest(_ count: Int) -> Have {
        var kept = self
        for (replica, seqs) in ranges where seqs.ranges.count > count {
            let longest = seqs.ranges.sorted { $0.upperBound - $0.lowerBound > $1.upperBound - $1.lowerBound }.prefix(max(0, count))
            kept.replace(replica, with: SeqRanges(longest))
        }
        return kept
    }

    /// The largest part of this holding whose `json` is at most `maxBytes` long: the longest
    /// `WireLimits.helloRangesPerReplica` ranges of each replica (what a relay honours), then
    /// replicas dropped, those with the fewest events first, until it fits. A hello naming
    /// everything a client holds would outgrow the relay's frame limit once a board has 1,700
    /// replicas, and the client would be refused on every reconnection, its unacknowledged
    /// frames never resent; naming less only costs events the client then drops by id.
    public func fitting(jsonBytes maxBytes: Int) -> Have {
        var kept = keepingLongest(WireLimits.helloRangesPerReplica)
        // `{}`, then per replica `"<32 hex>":<ranges>` and a comma.
        let sizes = kept.ranges.mapValues { 32 + 3 + SeqRanges.json($0.ranges).utf8.count + 1 }
        var total = 2 + sizes.values.reduce(0, +)
        guard total > maxBytes else { return kept }
        for replica in kept.ranges.keys.sorted(by: { (kept[$0].count, $0) < (kept[$1].count, $1) }) {
            guard total > maxBytes else { break }
            kept.ranges[replica] = nil
            total -= sizes[replica] ?? 0
        }
        return kept
    }

    /// Every seq of `replica`, held or ever to be written.
    public mutating func insertAll(of replica: ReplicaID) { ranges[replica] = SeqRanges([1...UInt64.max]) }

    /// The JSON object, replicas sorted (one spelling for one value).
    public var json: String {
        var out = "{"
        for (index, replica) in ranges.keys.sorted().enumerated() {
            if index > 0 { out += "," }
            out += "\"" + replica.hex + "\":" + SeqRanges.json(ranges[replica]!.ranges)
        }
        return out + "}"
    }

    /// Reads the JSON object `json` (nothing else around it).
    public init(parsing json: String) throws(WireError) {
        do {
            self = try JSONScanner.scanning(json) { scanner throws(LineError) in
                let have = try Have(reading: &scanner)
                try scanner.expectEnd("the have map")
                return have
            }
        } catch {
            throw WireError(error.reason)
        }
    }

    init(reading reader: inout JSONScanner) throws(LineError) {
        var ranges: [ReplicaID: SeqRanges] = [:]
        try reader.object("the have map") { key, reader throws(LineError) in
            guard let replica = ReplicaID(hex: key) else {
                throw LineError(reason: "have: key \(JSONText.quoted(key, limit: 40)) is not a replica id (32 lowercase hex digits)")
            }
            guard ranges[replica] == nil else { throw LineError(reason: "have: replica \(replica.hex) appears twice") }
            var held: [ClosedRange<UInt64>] = []
            try reader.array("the ranges of replica \(replica.hex)") { reader throws(LineError) in
                let what = "a range of replica \(replica.hex)"
                try reader.expect(UInt8(ascii: "["), "\(what) ([first,last])")
                let first = try reader.unsignedInteger("the first seq of \(what)")
                try reader.expect(UInt8(ascii: ","), "',' in \(what) ([first,last])")
                let last = try reader.unsignedInteger("the last seq of \(what)")
                try reader.expect(UInt8(ascii: "]"), "']' closing \(what) ([first,last])")
                guard first >= 1, first <= last else {
                    throw LineError(reason: "have: [\(first),\(last)] of replica \(replica.hex) is not a range [first,last] with 1 ≤ first ≤ last")
                }
                held.append(first...last)
            }
            ranges[replica] = SeqRanges(held)
        }
        self.init(ranges)
    }
}
