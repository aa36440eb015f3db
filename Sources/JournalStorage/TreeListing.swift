import JournalFormat
import JournalPlatform

/// Every file under a `replicas/` tree (a journal's, a shared folder's, an rsync staging
/// folder's), classified by name. Symlinks are never followed; nothing is read.
public struct TreeListing: Sendable {
    public struct File: Sendable, Equatable {
        public var replica: ReplicaID
        /// Path relative to the `replicas/` folder: `<replica-hex>/<name>`.
        public var relativePath: String
        public var name: String
        public var size: Int64
        public var modified: Int64
        public var classification: FileClassification
        /// The MD5 of the bytes (32 lowercase hex digits) where the store reports one (an S3
        /// object's ETag, through rclone), so that a copy damaged without changing its size is
        /// found without fetching it; nil in a folder's listing, read from the disk instead.
        public var storeMD5: String?

        public init(replica: ReplicaID, relativePath: String, name: String, size: Int64, modified: Int64,
                    classification: FileClassification, storeMD5: String? = nil) {
            self.replica = replica
            self.relativePath = relativePath
            self.name = name
            self.size = size
            self.modified = modified
            self.classification = classification
            self.storeMD5 = storeMD5
        }
    }

    public var files: [File] = []
    /// Entries that are not even in a replica folder, or not regular files.
    public var ignored: [Problem] = []
    /// Replica folder names (`<replica-hex>`) taken by something that is not a folder, such
    /// as a symlink: nothing may be written there (invariant 8).
    public var unwritableFolders: Set<String> = []

    public init() {}

    public static func scan(replicasPath: String) -> TreeListing {
        var listing = TreeListing()
        let top: [FileSystem.Entry]
        do {
            top = try FileSystem.list(replicasPath)
        } catch {
            // A symlinked `replicas/` is reported like any other symlink, never followed.
            if error.isSymbolicLink {
                listing.ignored.append(Problem(.ignored, file: replicasPath, reason: IOError.symbolicLinkReason))
            } else if !error.isNotFound {
                listing.ignored.append(Problem(.unreadable, file: replicasPath, reason: error.description))
            }
            return listing
        }
        for entry in top {
            let folder = FileSystem.join(replicasPath, entry.name)
            guard entry.kind == .directory, let replica = ReplicaID(hex: entry.name) else {
                let reason: String
                if ReplicaID(hex: entry.name) != nil { listing.unwritableFolders.insert(entry.name) }
                if entry.kind == .symlink { reason = "symbolic link: never followed" }
                else if case .foreign(let why) = FileClassifier.classify(entry.name) { reason = why }
                else { reason = "not a replica folder (expected 32 lowercase hex digits)" }
                listing.ignored.append(Problem(.ignored, file: folder, reason: reason))
                continue
            }
            let children: [FileSystem.Entry]
            do {
                children = try FileSystem.list(folder)
            } catch {
                listing.ignored.append(Problem(.unreadable, file: folder, replica: replica, reason: error.description))
                continue
            }
            for child in children {
                let path = FileSystem.join(folder, child.name)
                let classification = FileClassifier.classify(child.name)
                switch child.kind {
                case .file:
                    listing.files.append(File(replica: replica, relativePath: FileSystem.join(entry.name, child.name), name: child.name,
                                              size: child.size, modified: child.modified, classification: classification))
                case .symlink:
                    listing.ignored.append(Problem(.ignored, file: path, replica: replica, reason: "symbolic link: never followed"))
                case .directory:
                    let reason: String
                    if case .foreign(let why) = classification, why != "not a segment name", why != "a hidden file" { reason = why }
                    else { reason = "a directory where a segment file was expected" }
                    listing.ignored.append(Problem(.ignored, file: path, replica: replica, reason: reason))
                case .other:
                    listing.ignored.append(Problem(.ignored, file: path, replica: replica, reason: "not a regular file"))
                }
            }
        }
        return listing
    }

    /// Canonical segments, by `<replica-hex>/<name>`.
    public var segmentKeys: Set<String> {
        Set(files.compactMap { file in
            if case .segment = file.classification { return file.relativePath } else { return nil }
        })
    }

    /// Segments whose name is the hash of their bytes (version 2 names), by
    /// `<replica-hex>/<name>`: what a copy elsewhere under the same name must equal.
    public var contentNamedSegmentKeys: Set<String> {
        Set(files.compactMap { file in
            guard case .segment(let name) = file.classification, name.identifiesContents else { return nil }
            return file.relativePath
        })
    }
}
