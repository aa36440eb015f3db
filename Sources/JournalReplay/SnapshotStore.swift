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
        guard set.membership?.isOpen ?? true else { throw .membershipBoard(path: directory.root) }
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
        if snapshot.digest == nil { snapshot.digest = snapshot.state.finish().digest }
        let bytes = snapshot.encoded()
        guard bytes.count <= limit else { return nil }
        return try write(bytes: bytes, of: snapshot, to: directory)
    }

    static func write(_ snapshot: Snapshot, to directory: JournalDirectory) throws(IOError) -> Info {
        var snapshot = snapshot
        if snapshot.digest == nil { snapshot.digest = snapshot.state.finish().digest }
        return try write(bytes: snapshot.encoded(), of: snapshot, to: directory)
    }

    /// Writes the snapshot, then its keyframes, which name it by its header's CRC: keyframes
    /// of an earlier snapshot left beside a newer one are ignored, and removed here when the
    /// new one has none (a snapshot continued from an older one).
    private static func write(bytes: [UInt8], of snapshot: Snapshot, to directory: JournalDirectory) throws(IOError) -> Info {
        let folder = Self.folder(directory)
        try FileSystem.createDirectory(folder)
        let path = folder + "/latest.sjsnap"
        try FileSystem.writeAtomically(bytes, to: path)
        let keyframesPath = Self.keyframesPath(directory)
        if let keyframes = snapshot.keyframes, let check = Snapshot.headerCheck(of: bytes) {
            try FileSystem.writeAtomically(
                keyframes.encoded(snapshotCheck: check, replicaCount: snapshot.replicas.count), to: keyframesPath)
        } else if FileSystem.linkStatus(keyframesPath) != nil {
            try? FileSystem.remove(keyframesPath)
        }
        return Info(path: path, bytes: bytes.count, events: snapshot.eventCount)
    }

    static func keyframesPath(_ directory: JournalDirectory) -> String { folder(directory) + "/latest.sjkeys" }

    /// The keyframes made with `snapshot` (its header is enough), if they are beside it.
    static func keyframes(_ directory: JournalDirectory, for snapshot: Snapshot) -> Keyframes? {
        guard let bytes = try? FileSystem.readFile(keyframesPath(directory)) else { return nil }
        return Keyframes.decode(bytes, snapshotCheck: snapshot.headerCheck, replicaCount: snapshot.replicas.count,
                                strokes: snapshot.strokeCount, created: snapshot.state.creationOrder.count,
                                events: snapshot.eventCount)
    }

    /// The snapshot, if there is a valid one of this version. It can hold no more points than
    /// `set` has events, which bounds what decoding it may allocate.
    static func newest(_ directory: JournalDirectory, for set: SegmentSet, headerOnly: Bool = false,
                       columns: (@Sendable (Range<Int>) -> Bool)? = nil) -> Snapshot? {
        let path = folder(directory) + "/latest.sjsnap"
        // Folded under some membership, it may hold events a later statement no longer counts.
        guard set.membership?.isOpen ?? true else { return nil }
        // Folded before the trust list was last written, it may hold events the list now
        // quarantines, under names that still match (a version 1 name is only a claim).
        if let trust = FileSystem.linkStatus(directory.trustPath),
           trust.modified >= (FileSystem.linkStatus(path)?.modified ?? .max) { return nil }
        guard let bytes = try? FileSystem.readFile(path) else { return nil }
        return Snapshot.decode(bytes, maxPoints: set.blockEventCount, headerOnly: headerOnly, columns: columns)
    }
}
