import JournalFormat
import JournalPlatform

/// A cache of what is known about this journal's sealed segments, so that opening a writer
/// or syncing reads no segment payload it has read before (docs/SYNC.md, "`local/index`").
///
/// It is only a cache: every entry is checked against the directory listing (name and size)
/// when loaded, entries for vanished files are dropped, files it does not know are scanned
/// and added, and a missing or unreadable index is rebuilt by scanning every segment.
public struct LocalIndex: Sendable {
    public struct Entry: Sendable, Equatable {
        public var replica: ReplicaID
        public var name: SegmentName
        public var size: Int64
        public var eventCount: Int
        public var maxLamport: UInt64
        /// False if the file did not verify when it was scanned.
        public var valid: Bool
    }

    public private(set) var entries: [String: Entry] = [:]
    /// Segments scanned during this load (new or changed since the index was written).
    public private(set) var scannedCount = 0
    /// The index file was missing or unreadable and was rebuilt from the segments.
    public private(set) var rebuilt = false

    static let header = "strokejournal-index v1"

    public var maxLamport: UInt64 { entries.values.filter(\.valid).map(\.maxLamport).max() ?? 0 }

    /// Distinct event ids the valid segments hold (overlapping copies counted once).
    public var distinctEvents: UInt64 {
        var ranges: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        for entry in entries.values where entry.valid { ranges[entry.replica, default: []].append(entry.name.firstSeq...entry.name.lastSeq) }
        return ClockBound.distinctEvents(Array(ranges.values))
    }

    /// The highest seq any segment of `replica` claims by its name, damaged ones included: a
    /// writer must never reuse a seq, even one whose only copy is unreadable.
    public func lastSeq(of replica: ReplicaID) -> UInt64 {
        entries.values.filter { $0.replica == replica }.map(\.name.lastSeq).max() ?? 0
    }

    public func contains(_ replica: ReplicaID, _ name: SegmentName) -> Bool {
        entries[Self.key(replica, name)] != nil
    }

    static func key(_ replica: ReplicaID, _ name: SegmentName) -> String { name.relativePath(in: replica) }

    /// The index as last saved, without listing the journal's folders (nil: none, or one that
    /// does not parse). For a writer that only adds the file it just sealed: its cost must not
    /// grow with the number of replicas (a relay seals hosted replicas every few seconds, and
    /// listing thousands of replica folders each time held up every catch-up). Entries for
    /// files that changed since are reconciled by the next `refresh`, as after any crash.
    public static func stored(_ directory: JournalDirectory) -> LocalIndex? {
        guard let bytes = try? FileSystem.readFile(directory.localPath + "/index"), let parsed = parse(bytes) else { return nil }
        var index = LocalIndex()
        index.entries = parsed
        return index
    }

    /// Loads the index, reconciles it with the directory listing, and saves it if it changed.
    public static func refresh(_ directory: JournalDirectory) -> LocalIndex {
        var index = LocalIndex()
        let path = directory.localPath + "/index"
        var stored: [String: Entry] = [:]
        if let bytes = try? FileSystem.readFile(path), let parsed = parse(bytes) {
            stored = parsed
        } else {
            index.rebuilt = true
        }
        var changed = index.rebuilt
        let listing = directory.listSealed().sealed
        for file in listing {
            let key = Self.key(file.replica, file.name)
            if let known = stored[key], known.size == file.size {
                index.entries[key] = known
                continue
            }
            index.entries[key] = scanEntry(file)
            index.scannedCount += 1
            changed = true
        }
        if index.entries.count != stored.count { changed = true }
        index.checkCoverage(of: listing)
        if changed && FileSystem.isDirectory(directory.localPath) {
            try? index.save(to: path)
        }
        return index
    }

    /// Debug builds only: the index holds exactly the sealed files listed, each under the
    /// replica and name it was listed with.
    func checkCoverage(of listing: [JournalDirectory.SealedFile]) {
        #if DEBUG
        let listed = Set(listing.map { Self.key($0.replica, $0.name) })
        assert(Set(entries.keys) == listed, "local index: \(entries.count) entries for \(listed.count) listed files")
        for (key, entry) in entries { assert(Self.key(entry.replica, entry.name) == key, "local index: entry under a wrong key") }
        #endif
    }

    /// Records a segment this process has just written or imported and verified.
    public mutating func add(_ entry: Entry) {
        entries[Self.key(entry.replica, entry.name)] = entry
    }

    /// Forgets a segment this process has just retired (`Compactor`).
    public mutating func remove(_ replica: ReplicaID, _ name: SegmentName) {
        entries.removeValue(forKey: Self.key(replica, name))
    }

    public func save(_ directory: JournalDirectory) throws(IOError) {
        try save(to: directory.localPath + "/index")
    }

    func save(to path: String) throws(IOError) {
        var text = Self.header + "\n"
        for key in entries.keys.sorted() {
            let entry = entries[key]!
            text += "\(entry.replica.hex) \(entry.name.fileName) \(entry.size) \(entry.eventCount) \(entry.maxLamport) \(entry.valid ? 1 : 0)\n"
        }
        try FileSystem.writeAtomically(Array(text.utf8), to: path)
    }

    static func scanEntry(_ file: JournalDirectory.SealedFile) -> Entry {
        let scan = SegmentScanner.scan(path: file.path, sealed: true)
        // Decoding every body (once per file: the result is cached) makes the clock come from
        // events that verified, not from a frame's claim.
        let valid: Bool
        switch SegmentImporter.verify(scan, path: file.path, replica: file.replica, claimedName: file.name) {
        case .success: valid = true
        case .failure: valid = false
        }
        return Entry(replica: file.replica, name: file.name, size: file.size,
                     eventCount: scan.eventCount, maxLamport: valid ? scan.maxLamport : 0, valid: valid)
    }

    public static func entry(for scan: ScannedSegment, replica: ReplicaID, name: SegmentName) -> Entry {
        Entry(replica: replica, name: name, size: Int64(scan.bytes.count), eventCount: scan.eventCount,
              maxLamport: scan.maxLamport, valid: true)
    }

    static func parse(_ bytes: [UInt8]) -> [String: Entry]? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
        guard lines.first.map(String.init) == header else { return nil }
        var result: [String: Entry] = [:]
        for line in lines.dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count == 6,
                  let replica = ReplicaID(hex: fields[0]),
                  let name = SegmentName(fileName: String(fields[1])),
                  let size = Int64(fields[2]), let count = Int(fields[3]), let lamport = UInt64(fields[4]),
                  fields[5] == "0" || fields[5] == "1"
            else { return nil }
            result[key(replica, name)] = Entry(replica: replica, name: name, size: size, eventCount: count,
                                               maxLamport: lamport, valid: fields[5] == "1")
        }
        return result
    }
}
