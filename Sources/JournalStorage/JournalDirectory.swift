import JournalFormat
import JournalKeys
import JournalPlatform

/// A journal on disk (docs/FORMAT.md, "Files and names"):
///
///     <root>/replicas/<replica-hex>/<first>-<last>-<sha>.sjs   sealed segments: synced
///     <root>/local/replica                                     this journal's replica id
///     <root>/local/writer.lock                                 flock(2) of the writer
///     <root>/local/open.sjo                                    the open segment
///
/// A shared folder has the same `replicas/` tree and no `local/`.
public struct JournalDirectory: Sendable {
    public let root: String

    /// `root` "" is the current folder (as `-C ""` is for git): never "/", which `"" + "/local"`
    /// would otherwise name.
    public init(root: String) {
        var trimmed = root.isEmpty ? "." : root
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.root = trimmed
    }

    public var replicasPath: String { root + "/replicas" }
    public var localPath: String { root + "/local" }
    public var identityPath: String { localPath + "/replica" }
    public var lockPath: String { localPath + "/writer.lock" }
    public var openSegmentPath: String { localPath + "/open.sjo" }
    /// Local cache of folded states (JournalReplay's `SnapshotStore`).
    public var snapshotsPath: String { localPath + "/snapshots" }
    public func replicaPath(_ replica: ReplicaID) -> String { FileSystem.join(replicasPath, replica.hex) }
    public func segmentPath(_ replica: ReplicaID, _ name: SegmentName) -> String {
        FileSystem.join(replicaPath(replica), name.fileName)
    }

    public var isJournal: Bool { FileSystem.exists(identityPath) }

    /// Creates a journal. Without `replica`, it gets a fresh key (`local/replica.key`) and the
    /// replica id that key names, and signs the segments it seals (invariant 12); with one,
    /// it is an unsigned journal of that id.
    @discardableResult
    public static func create(at root: String, replica given: ReplicaID? = nil) throws(JournalError) -> JournalDirectory {
        let directory = JournalDirectory(root: root)
        guard !directory.isJournal else { throw .alreadyAJournal(path: root) }
        // A journal inside another one would be read as a stray folder of the outer journal.
        if let outer = enclosing(FileSystem.parent(of: absolute(root))) { throw .insideAJournal(path: root, journal: outer.root) }
        var anotherWon = false
        do throws(IOError) {
            try FileSystem.createDirectory(directory.replicasPath)
            try FileSystem.createDirectory(directory.localPath)
        } catch {
            throw .io(error)
        }
        // The key before the identity: `local/replica` is what makes the folder a journal.
        let replica: ReplicaID
        if let given { replica = given } else { replica = try directory.takeCreationKey().replica }
        do throws(IOError) {
            // Published with link(2), never over an existing identity: of two processes creating
            // one journal at once (two relays' first connections to a board), one wins and the
            // other opens what it made. A rename would let the second replace the first's
            // identity after the first anchored it, and the journal would take itself for a copy.
            do throws(IOError) {
                try DirectoryHandle.open(directory.localPath, followingSymlink: false)
                    .writeNewFileAtomically(name: "replica", bytes: Array((replica.hex + "\n").utf8))
            } catch where error.isExists {
                anotherWon = true
            }
            if !anotherWon {
                // Anchored at once: a copy made before any writer opened this journal is a copy too.
                try IdentityAnchor.record(directory)
                try FileSystem.syncDirectory(directory.root)
            }
        } catch {
            throw .io(error)
        }
        if anotherWon { throw .alreadyAJournal(path: root) }
        return directory
    }

    public static func open(at root: String) throws(JournalError) -> JournalDirectory {
        let directory = JournalDirectory(root: root)
        guard directory.isJournal else { throw .notAJournal(path: root) }
        return directory
    }

    /// Whether `root` is a real folder (not a symlink) holding nothing but what `create` makes
    /// before the identity: at most an empty `replicas/` and a `local/` with nothing but
    /// temporaries (the identity's, half written) and the key. An empty folder is one too.
    public var isUnfinishedCreation: Bool {
        guard !isJournal, FileSystem.linkStatus(root)?.kind == .directory,
              let entries = try? FileSystem.list(root) else { return false }
        for entry in entries {
            switch (entry.name, entry.kind) {
            case ("replicas", .directory):
                guard let replicas = try? FileSystem.list(replicasPath), replicas.isEmpty else { return false }
            case ("local", .directory):
                guard let local = try? FileSystem.list(localPath),
                      local.allSatisfy({ $0.kind == .file && ($0.name.hasPrefix(".tmp-") || $0.name == Self.keyFileName) })
                else { return false }
            default:
                return false
            }
        }
        return true
    }

    public func identity() throws(JournalError) -> ReplicaID {
        let bytes: [UInt8]
        do { bytes = try FileSystem.readFile(identityPath) } catch { throw .io(error) }
        let text = String(decoding: bytes.prefix(64), as: UTF8.self)
        let trimmed = text.hasSuffix("\n") ? String(text.dropLast()) : text
        guard let replica = ReplicaID(hex: trimmed) else {
            throw .badIdentity(path: identityPath, reason: "expected 32 hex digits, found \(trimmed.debugDescription)")
        }
        return replica
    }

    /// Deletes the temporaries under `local/` and `local/snapshots/` that processes of this
    /// host left behind when they died mid-write (`FileSystem.isStaleTemporary`). Called when
    /// a journal is opened for writing and when a sync starts.
    public func removeStaleTemporaries() {
        for folder in [localPath, snapshotsPath] { FileSystem.removeStaleTemporaries(in: folder) }
    }

    /// One sealed segment found under `replicas/`.
    public struct SealedFile: Sendable, Hashable {
        public var replica: ReplicaID
        public var name: SegmentName
        public var path: String
        public var size: Int64
    }

    /// What is under `replicas/`: sealed segments, and every other entry with why it was skipped.
    public struct Listing: Sendable {
        public var sealed: [SealedFile] = []
        public var ignored: [Problem] = []

        public init(sealed: [SealedFile] = [], ignored: [Problem] = []) {
            self.sealed = sealed
            self.ignored = ignored
        }
    }

    public func listSealed() -> Listing {
        Self.listSealed(replicasPath: replicasPath)
    }

    /// The sealed files of one replica (its folder alone is listed).
    public func listSealed(_ replica: ReplicaID) -> [SealedFile] {
        let folder = replicaPath(replica)
        guard let entries = try? FileSystem.list(folder) else { return [] }
        return entries.compactMap { entry in
            guard entry.kind == .file, let name = SegmentName(fileName: entry.name) else { return nil }
            return SealedFile(replica: replica, name: name, path: folder + "/" + entry.name, size: entry.size)
        }
    }

    /// Lists a `replicas/` tree without following symlinks. Only `<32 hex>/<canonical name>`
    /// regular files count; the rest is reported, never read.
    public static func listSealed(replicasPath: String) -> Listing {
        let tree = TreeListing.scan(replicasPath: replicasPath)
        var listing = Listing(sealed: [], ignored: tree.ignored)
        for file in tree.files {
            let path = FileSystem.join(replicasPath, file.relativePath)
            switch file.classification {
            case .segment(let name):
                listing.sealed.append(SealedFile(replica: file.replica, name: name, path: path, size: file.size))
            case .conflictCopy:
                listing.ignored.append(Problem(.ignored, file: path, replica: file.replica,
                                               reason: "a sync tool's conflict copy: `journal sync` or `merge` from its folder imports it"))
            case .foreign(let reason):
                listing.ignored.append(Problem(.ignored, file: path, replica: file.replica, reason: reason))
            }
        }
        return listing
    }
}
