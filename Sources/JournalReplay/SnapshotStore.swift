import JournalFormat
import JournalPlatform
import JournalStorage

/// Where snapshots live and when they are taken.
public enum SnapshotStore {
    /// Automatic policy: after a replay, a new snapshot is written when at least this many
    /// events were replayed beyond the newest snapshot and they are at least a quarter of the
    /// journal. Small journals replay fast enough without one.
    public static let automaticThreshold = 100_000

    public struct Info: Sendable, Equatable {
        public var path: String
        public var bytes: Int
        public var events: Int
    }

    static func folder(_ directory: JournalDirectory) -> String { directory.snapshotsPath }

    /// Replays the whole journal and writes a snapshot of it.
    @discardableResult
    public static func create(_ directory: JournalDirectory) throws(SnapshotError) -> Info {
        let set = SegmentSet.load(directory)
        var report = ReplayReport()
        report.problems = set.problems
        guard let snapshot = Replay.fullSnapshot(set, report: &report) else {
            throw .clocksOutOfOrder(path: directory.root)
        }
        // Quarantined events may become plausible as the journal grows; a snapshot would
        // keep hiding them.
        guard report.quarantinedEvents == 0 else { throw .quarantinedEvents(path: directory.root, count: report.quarantinedEvents) }
        do { return try write(snapshot, to: directory) } catch { throw .io(error) }
    }

    /// An automatic snapshot is a cache nobody asked for: it may take at most twice the room
    /// of the segments it saves replaying, or it is not written (`journal snapshot` writes one
    /// of any size on request).
    static func automaticSizeLimit(_ set: SegmentSet) -> Int { Int(set.totalBytes) * 2 }

    /// Writes the snapshot; nil when it would be larger than `atMost` bytes.
    static func write(_ snapshot: Snapshot, to directory: JournalDirectory, atMost limit: Int) throws(IOError) -> Info? {
        var snapshot = snapshot
        if snapshot.summary == nil || snapshot.strokeHashes == nil { snapshot.summarize(snapshot.state.finish()) }
        // 32 bytes a stroke outweigh a drawing of dots (120,000 one-point strokes: 3.8 MB of
        // hashes beside 2.5 MB of segments). Without them the snapshot still spares the
        // replay; a moment then decodes and hashes its whole drawing, as before them.
        let bytes = snapshot.encoded(droppingStrokeHashesOver: limit)
        guard bytes.count <= limit else { return nil }
        return try write(bytes: bytes, of: snapshot, to: directory)
    }

    static func write(_ snapshot: Snapshot, to directory: JournalDirectory) throws(IOError) -> Info {
        var snapshot = snapshot
        if snapshot.summary == nil || snapshot.strokeHashes == nil { snapshot.summarize(snapshot.state.finish()) }
        return try write(bytes: snapshot.encoded(), of: snapshot, to: directory)
    }

    /// Writes the snapshot, then its keyframes, which name it by its header's CRC: keyframes
    /// of an earlier snapshot left beside a newer one are ignored, and removed here when the
    /// new one has none (a snapshot continued from an older one).
    private static func write(bytes: [UInt8], of snapshot: Snapshot, to directory: JournalDirectory) throws(IOError) -> Info {
        let folder = Self.folder(directory)
        try FileSystem.createDirectory(folder)
        let seal = try CacheSeal.loadOrCreate(directory)
        let path = folder + "/latest.sjsnap"
        try FileSystem.writeAtomically(seal.sealed(bytes, context: snapshot.membershipFingerprint ?? []), to: path)
        try writeMembership(snapshot.membershipFingerprint, check: Snapshot.headerCheck(of: bytes), to: directory)
        let keyframesPath = Self.keyframesPath(directory)
        if let keyframes = snapshot.keyframes, let check = Snapshot.headerCheck(of: bytes) {
            try FileSystem.writeAtomically(
                seal.sealed(keyframes.encoded(snapshotCheck: check, replicaCount: snapshot.replicas.count)), to: keyframesPath)
        } else if FileSystem.linkStatus(keyframesPath) != nil {
            try? FileSystem.remove(keyframesPath)
        }
        return Info(path: path, bytes: bytes.count, events: snapshot.eventCount)
    }

    static func keyframesPath(_ directory: JournalDirectory) -> String { folder(directory) + "/latest.sjkeys" }

    /// The keyframes made with `snapshot` (its header is enough), if they are beside it.
    static func keyframes(_ directory: JournalDirectory, for snapshot: Snapshot) -> Keyframes? {
        guard let file = try? FileSystem.readFile(keyframesPath(directory)),
              let bytes = CacheSeal.load(directory)?.opened(file) else { return nil }
        return Keyframes.decode(bytes, snapshotCheck: snapshot.headerCheck, replicaCount: snapshot.replicas.count,
                                strokes: snapshot.strokeCount, created: snapshot.state.creationOrder.count,
                                events: snapshot.eventCount)
    }

    /// The snapshot, if there is a valid one of this version. It can hold no more points than
    /// `set` has events, which bounds what decoding it may allocate.
    static func newest(_ directory: JournalDirectory, for set: SegmentSet, headerOnly: Bool = false,
                       columns: SnapshotChunks.Wanted? = nil) -> Snapshot? {
        newestFile(directory, for: set)?.decode(headerOnly: headerOnly, columns: columns)
    }

    /// The newest snapshot's bytes, read and their seal checked once, for a caller that decodes
    /// its header first and then its chunks (a moment: the file is 4 MB on the 2 M-point
    /// session, and reading and opening it took 12–14 ms).
    static func newestFile(_ directory: JournalDirectory, for set: SegmentSet) -> OpenedSnapshot? {
        let path = folder(directory) + "/latest.sjsnap"
        // Folded before the trust list was last written, it may hold events the list now
        // quarantines, under names that still match (a version 1 name is only a claim).
        if let trust = FileSystem.linkStatus(directory.trustPath),
           trust.modified >= (FileSystem.linkStatus(path)?.modified ?? .max) { return nil }
        // Sealed with the fingerprint of the membership it was folded under: folded under
        // another (or under one, for a board that now has none), it may count events this one
        // does not, or miss some it does, and its seal does not open with this one's.
        guard let file = try? FileSystem.readFile(path),
              let bytes = CacheSeal.load(directory)?.opened(file, context: set.membership?.fingerprint ?? []) else { return nil }
        guard membership(directory, check: Snapshot.headerCheck(of: bytes)) == set.membership?.fingerprint else { return nil }
        return OpenedSnapshot(bytes: bytes, maxPoints: set.blockEventCount)
    }

    /// A snapshot file whose seal and membership were checked, not yet decoded.
    struct OpenedSnapshot {
        let bytes: [UInt8]
        let maxPoints: Int

        func decode(headerOnly: Bool = false, columns: SnapshotChunks.Wanted? = nil) -> Snapshot? {
            Snapshot.decode(bytes, maxPoints: maxPoints, headerOnly: headerOnly, columns: columns)
        }
    }

    // MARK: The membership a snapshot was folded under

    static let membershipHeader = "strokejournal-snapshot-membership v1"
    static func membershipPath(_ directory: JournalDirectory) -> String { folder(directory) + "/latest.members" }

    /// `latest.members`: the header CRC of the snapshot it goes with and the fingerprint of the
    /// membership that snapshot was folded under; removed for a snapshot of an open board.
    private static func writeMembership(_ fingerprint: [UInt8]?, check: UInt32?, to directory: JournalDirectory) throws(IOError) {
        let path = membershipPath(directory)
        guard let fingerprint, let check else {
            if FileSystem.linkStatus(path) != nil { try FileSystem.remove(path) }
            return
        }
        try FileSystem.writeAtomically(Array("\(membershipHeader)\n\(Hex.checksum(check)) \(Hex.bytes(fingerprint))\n".utf8), to: path)
    }

    /// The fingerprint stored for the snapshot whose header CRC is `check`; nil when none is
    /// (a snapshot of an open board, or a file of another snapshot).
    static func membership(_ directory: JournalDirectory, check: UInt32?) -> [UInt8]? {
        guard let check, let bytes = try? FileSystem.readFile(membershipPath(directory)) else { return nil }
        let lines = String(decoding: bytes.prefix(256), as: UTF8.self).split(separator: "\n")
        guard lines.count == 2, lines[0] == Substring(membershipHeader) else { return nil }
        let fields = lines[1].split(separator: " ")
        guard fields.count == 2, fields[0] == Substring(Hex.checksum(check)), let fingerprint = Hex.decode(fields[1]) else { return nil }
        return fingerprint
    }
}
