import JournalFormat
import JournalPlatform

/// `local/covers`: which sealed files this journal found to be covered, and by which file
/// (docs/FORMAT.md §16.3). An entry says "every event of `retired` is, byte for byte, the event
/// of the same id in `cover`" and is written, fsynced, before `retired` is removed.
///
/// Local and a cache: losing it costs a second verification (sync reads a covered file it
/// meets again and compares it once more), never an event. Readers use it to tell a
/// compaction from a file that vanished (`LiveReplay`), sync to skip covered files by name.
public struct CoverLog: Sendable {
    public struct Entry: Sendable, Equatable {
        public var replica: ReplicaID
        public var retired: SegmentName
        public var cover: SegmentName
        public init(replica: ReplicaID, retired: SegmentName, cover: SegmentName) {
            self.replica = replica
            self.retired = retired
            self.cover = cover
        }
    }

    static let fileName = "covers"
    static let header = "strokejournal-covers v1"
    /// Beyond this many entries the file is rewritten with the newest half: an entry forgotten
    /// costs one verification if its file is met again.
    static let rewriteAbove = 20_000

    /// "replica/retired name" → "replica/cover name".
    public private(set) var coverOf: [String: String] = [:]
    private(set) var lineCount = 0
    /// Retired keys in the order their lines were written: a rewrite keeps the newest.
    private var order: [String] = []

    public init() {}

    public static func path(_ directory: JournalDirectory) -> String { directory.localPath + "/" + fileName }

    /// The log as stored; lines that do not parse (a torn last line) are skipped.
    public static func load(_ directory: JournalDirectory) -> CoverLog {
        var log = CoverLog()
        guard let bytes = try? FileSystem.readFile(path(directory)) else { return log }
        // Read on every sync: parsed as bytes (a String-based parse takes 25 µs a line).
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
            if let (retired, cover) = parse(bytes[start..<end]) {
                log.coverOf[retired] = cover
                log.order.append(retired)
                log.lineCount += 1
            }
            start = end + 1
        }
        return log
    }

    /// `<replica> <retired> <cover>` as two keys ("replica/name"), or nil for any other line.
    private static func parse(_ line: ArraySlice<UInt8>) -> (String, String)? {
        let hexLength = 32, nameLength = 78
        guard line.count == hexLength + 2 + 2 * nameLength else { return nil }
        let base = line.startIndex
        let replica = line[base..<(base + hexLength)]
        let retired = line[(base + hexLength + 1)..<(base + hexLength + 1 + nameLength)]
        let cover = line[(base + hexLength + 2 + nameLength)...]
        guard line[base + hexLength] == UInt8(ascii: " "), line[base + hexLength + 1 + nameLength] == UInt8(ascii: " "),
              replica.allSatisfy(Hex.isLowercaseHexDigit), isVersion2Name(retired), isVersion2Name(cover)
        else { return nil }
        let folder = String(decoding: replica, as: UTF8.self) + "/"
        return (folder + String(decoding: retired, as: UTF8.self), folder + String(decoding: cover, as: UTF8.self))
    }

    private static let suffix = Array(".sjs".utf8)

    /// `<20 digits>-<20 digits>-<32 lowercase hex>.sjs` (docs/FORMAT.md §2.1, name version 2).
    private static func isVersion2Name(_ name: ArraySlice<UInt8>) -> Bool {
        for (offset, byte) in name.enumerated() {
            switch offset {
            case 0..<20, 21..<41: guard Hex.isDecimalDigit(byte) else { return false }
            case 20, 41: guard byte == UInt8(ascii: "-") else { return false }
            case 42..<74: guard Hex.isLowercaseHexDigit(byte) else { return false }
            default: guard byte == suffix[offset - 74] else { return false }
            }
        }
        return true
    }

    public var isEmpty: Bool { coverOf.isEmpty }

    /// The last file in the chain of covers from `key` ("replica/name"): a cover may itself have
    /// been covered since. Nil if `key` is not recorded as covered.
    public func finalCover(of key: String) -> String? {
        var current = key
        var steps = 0
        while let next = coverOf[current], steps < 64 {
            current = next
            steps += 1
        }
        return steps == 0 ? nil : current
    }

    /// Appends `entries` and fsyncs: the caller removes the retired files only after this returns.
    public mutating func append(_ entries: [Entry], to directory: JournalDirectory) throws(IOError) {
        guard !entries.isEmpty else { return }
        for entry in entries {
            let key = entry.retired.relativePath(in: entry.replica)
            coverOf[key] = entry.cover.relativePath(in: entry.replica)
            order.append(key)
        }
        lineCount += entries.count
        let path = Self.path(directory)
        if lineCount > Self.rewriteAbove {
            try rewriteNewest(Self.rewriteAbove / 2, to: path)
            return
        }
        let descriptor = try FileDescriptor.open(path, .readWrite)
        defer { descriptor.close() }
        let size = try descriptor.size()
        var text = size == 0 ? Self.header + "\n" : ""
        // A torn last line (a crash mid-append) must not swallow the first new one.
        if size > 0, try descriptor.read(count: 1, at: size - 1) != [UInt8(ascii: "\n")] { text += "\n" }
        for entry in entries { text += Self.line(entry) }
        try descriptor.seekToEnd()
        try descriptor.writeAll(Array(text.utf8))
        try descriptor.sync()
    }

    private static func line(_ entry: Entry) -> String {
        "\(entry.replica.hex) \(entry.retired.fileName) \(entry.cover.fileName)\n"
    }

    /// Keeps the newest `count` entries (those just appended among them): the files a sync
    /// or a live board is likeliest to meet again.
    private mutating func rewriteNewest(_ count: Int, to path: String) throws(IOError) {
        var kept: [String] = []
        var seen = Set<String>()
        for key in order.reversed() where kept.count < count && seen.insert(key).inserted { kept.append(key) }
        kept.reverse()
        coverOf = Dictionary(uniqueKeysWithValues: kept.compactMap { key in coverOf[key].map { (key, $0) } })
        order = kept
        lineCount = kept.count
        var text = Self.header + "\n"
        for retired in kept {
            guard let cover = coverOf[retired] else { continue }
            let replica = retired.prefix(32)
            text += "\(replica) \(retired.dropFirst(33)) \(cover.dropFirst(33))\n"
        }
        try FileSystem.writeAtomically(Array(text.utf8), to: path)
    }
}
