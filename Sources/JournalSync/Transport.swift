import JournalFormat
import JournalPlatform
import JournalStorage

/// Moves whole segment files between the local journal and a target. Implementations never
/// overwrite a file on either side, but for `replace`, and never follow symlinks.
protocol Transport {
    /// The target's `replicas/` tree, by name and size only.
    func list() async throws(SyncError) -> TreeListing
    /// Makes the given target files readable locally; returns a local path per relative path.
    func fetch(_ files: [TreeListing.File]) async throws(SyncError) -> [String: String]
    /// Sends local segment files (relative paths under the local `replicas/`) to the target.
    func publish(_ relativePaths: [String], from localReplicas: String) async throws(SyncError) -> PublishOutcome
    /// Sends local segment files over the target's damaged copies of them: a copy whose bytes
    /// are not the ones its name is the hash of (another size, or the same size and another
    /// hash), never one that holds them. The local files were verified just before.
    func replace(_ relativePaths: [String], from localReplicas: String) async throws(SyncError) -> PublishOutcome
    func finish()
    /// The target's `replicas/` folder when it is a local path this process may clean.
    var localFolder: String? { get }
    /// Whether `removeObjects` works: an object store, whose objects can be deleted by name
    /// (a folder is cleaned through `localFolder`; rsync cannot delete on condition).
    var removesObjects: Bool { get }
    /// Deletes target files (relative paths) that a verified cover in the target holds every
    /// event of (docs/SYNC.md, "Covers", rule 4).
    func removeObjects(_ relativePaths: [String]) async throws(SyncError)
}

extension Transport {
    var removesObjects: Bool { false }
    func removeObjects(_ relativePaths: [String]) async throws(SyncError) {}
}

/// What a publish sent, and where it refused to write.
struct PublishOutcome {
    /// Relative paths now on the target.
    var sent: [String] = []
    /// Folders of the target it would not write into (symlinks), with why.
    var refused: [Problem] = []
}

/// A mounted folder: read in place, written by temporary file + fsync + link + folder fsync.
///
/// The folder is shared, hence hostile: below the root the user named, `replicas/` and
/// `replicas/<id>/` are opened one component at a time without following symlinks
/// (`DirectoryHandle`), so a symlink planted there never redirects a write (invariant 8).
struct DirectoryTransport: Transport {
    let root: String
    var replicasPath: String { root + "/replicas" }
    var localFolder: String? { replicasPath }

    /// What the folder is used as: a sync target (written to; created or adopted only when
    /// asked) or a merge source (read only, never created).
    enum Role {
        case target(create: Bool)
        case source
    }

    init(root: String, role: Role) throws(SyncError) {
        let isSource: Bool
        if case .source = role { isSource = true } else { isSource = false }
        var create = false
        if case .target(let asked) = role { create = asked }
        if !FileSystem.exists(root) {
            guard create else { throw isSource ? .sourceMissing(root) : .targetMissing(root) }
            do throws(IOError) { try FileSystem.createDirectory(root) } catch { throw .io(error, doing: nil) }
        }
        guard FileSystem.isDirectory(root) else { throw .targetNotADirectory(root) }
        // A board has `replicas/` (a symlink there is reported by `list()`); an empty folder
        // is a board nobody has written to yet. Anything else is likely a mistyped path.
        let isBoard = FileSystem.linkStatus(root + "/replicas").map { $0.kind == .directory || $0.kind == .symlink } ?? false
        let isEmpty = (try? FileSystem.list(root))?.isEmpty ?? false
        if !isBoard && !(isEmpty && !isSource) && !create { throw .notABoard(root, isSource: isSource) }
        self.root = root
        if !isSource {
            do throws(IOError) {
                _ = try DirectoryHandle.open("replicas", beneath: root, create: true)
            } catch {
                // A symlinked `replicas/` is reported by `list()` and refused by `publish()`.
                if !error.isSymbolicLink { throw .io(error, doing: nil) }
            }
        }
    }

    func list() async throws(SyncError) -> TreeListing { TreeListing.scan(replicasPath: replicasPath) }

    func fetch(_ files: [TreeListing.File]) async throws(SyncError) -> [String: String] {
        Dictionary(uniqueKeysWithValues: files.map { ($0.relativePath, FileSystem.join(replicasPath, $0.relativePath)) })
    }

    func publish(_ relativePaths: [String], from localReplicas: String) async throws(SyncError) -> PublishOutcome {
        try write(relativePaths, from: localReplicas, replacing: false)
    }

    func replace(_ relativePaths: [String], from localReplicas: String) async throws(SyncError) -> PublishOutcome {
        try write(relativePaths, from: localReplicas, replacing: true)
    }

    private func write(_ relativePaths: [String], from localReplicas: String, replacing: Bool) throws(SyncError) -> PublishOutcome {
        var outcome = PublishOutcome()
        guard !relativePaths.isEmpty else { return outcome }
        let refusal = IOError.symbolicLinkReason + "; nothing published there"
        let replicas: DirectoryHandle
        do throws(IOError) {
            replicas = try DirectoryHandle.open("replicas", beneath: root, create: true)
        } catch {
            guard error.isSymbolicLink else { throw .io(error, doing: "cannot publish to \(root)") }
            outcome.refused.append(Problem(.ignored, file: replicasPath, reason: refusal))
            return outcome
        }
        var folders: [String: DirectoryHandle] = [:]
        var refusedFolders = Set<String>()
        for relative in relativePaths {
            // Segment keys are always `<replica-hex>/<name>`.
            let parts = relative.split(separator: "/").map(String.init)
            guard parts.count == 2, !refusedFolders.contains(parts[0]) else { continue }
            do throws(IOError) {
                let folder: DirectoryHandle
                if let open = folders[parts[0]] {
                    folder = open
                } else {
                    do throws(IOError) {
                        folder = try replicas.openOrCreateSubdirectory(parts[0])
                    } catch {
                        guard error.isSymbolicLink else { throw error }
                        refusedFolders.insert(parts[0])
                        outcome.refused.append(Problem(.ignored, file: FileSystem.join(replicasPath, String(parts[0])),
                                                       replica: ReplicaID(hex: parts[0]), reason: refusal))
                        continue
                    }
                    folders[parts[0]] = folder
                }
                let bytes = try FileSystem.readFile(FileSystem.join(localReplicas, relative))
                if replacing {
                    try folder.replaceFileAtomically(name: parts[1], bytes: bytes)
                } else {
                    try folder.writeNewFileAtomically(name: parts[1], bytes: bytes)
                }
                outcome.sent.append(relative)
            } catch {
                // Someone published it meanwhile: same name, hence same bytes.
                if error.isExists { continue }
                throw .io(error, doing: "cannot publish \(relative) to \(root)")
            }
        }
        return outcome
    }

    func finish() {}
}

/// Anything the real `rsync` binary reaches. Pulls into a local staging folder (verified
/// before import), pushes with `--ignore-existing` so nothing is ever replaced.
struct RsyncTransport: Transport {
    let remote: String
    let rsh: String?
    let staging: String
    let capabilities: Capabilities
    var localFolder: String? { nil }

    struct Capabilities {
        var fsync = false
        var mkpath = false
    }

    /// Whether a remote that is not a board yet may become one (`--create`).
    let create: Bool

    init(remote: String, rsh: String?, staging: String, create: Bool = false) async throws(SyncError) {
        var base = remote
        while base.hasSuffix("/") && base.count > 1 { base.removeLast() }
        self.remote = base
        self.rsh = rsh
        self.staging = staging
        self.create = create
        capabilities = try await Self.probe()
    }

    static func probe() async throws(SyncError) -> Capabilities {
        let result: ChildProcess.Result
        do { result = try await run(["--version"]) } catch { throw .rsyncMissing }
        guard result.status == 0 else { throw .rsyncMissing }
        // "rsync  version 3.2.7  protocol version 31"
        let words = result.outputText.split(whereSeparator: { $0 == " " || $0 == "\n" })
        var capabilities = Capabilities()
        if let index = words.firstIndex(of: "version"), index + 1 < words.count {
            let parts = words[index + 1].split(separator: ".").compactMap { Int($0) }
            let version = (parts.count > 0 ? parts[0] : 0) * 10_000 + (parts.count > 1 ? parts[1] : 0) * 100 + (parts.count > 2 ? parts[2] : 0)
            capabilities.mkpath = version >= 30203
            capabilities.fsync = version >= 30204
        }
        return capabilities
    }

    var remoteReplicas: String { remote + "/replicas/" }

    private var common: [String] {
        var arguments = ["-r", "--no-h", "-s"]
        if let rsh { arguments += ["-e", rsh] }
        return arguments
    }

    func list() async throws(SyncError) -> TreeListing {
        let arguments = common + ["--list-only", remoteReplicas]
        let result: ChildProcess.Result
        do { result = try await Self.run(arguments) } catch { throw .rsyncMissing }
        if result.status != 0 {
            // No replicas/ folder: an empty folder is a board nobody has pushed to yet; a
            // missing or non-empty one is a mistyped path unless `--create` says otherwise.
            if result.messages.contains("No such file or directory") && result.status == 23 {
                try await checkIsNewBoard()
                return TreeListing()
            }
            throw .rsyncFailed(command: "rsync " + arguments.joined(separator: " "), status: result.status, output: result.messages)
        }
        return Self.parseListing(result.outputText, remote: remoteReplicas)
    }

    private func checkIsNewBoard() async throws(SyncError) {
        guard !create else { return }
        let arguments = common + ["--list-only", remote + "/"]
        let result: ChildProcess.Result
        do { result = try await Self.run(arguments) } catch { throw .rsyncMissing }
        if result.status != 0 {
            if result.messages.contains("No such file or directory") { throw .targetMissing(remote) }
            throw .rsyncFailed(command: "rsync " + arguments.joined(separator: " "), status: result.status, output: result.messages)
        }
        let entries = result.outputText.split(separator: "\n").filter { line in
            let fields = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: true)
            return fields.count == 5 && fields[4] != "."
        }
        if !entries.isEmpty { throw .notABoard(remote, isSource: false) }
    }

    static func parseListing(_ output: String, remote: String) -> TreeListing {
        var listing = TreeListing()
        for line in output.split(separator: "\n") {
            // "-rw-r--r--          3628 2026/11/22 00:10:00 <path>"
            let fields = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: true)
            guard fields.count == 5, let mode = fields[0].first else { continue }
            let path = String(fields[4])
            if path == "." { continue }
            let size = Int64(fields[1].filter(\.isNumber)) ?? 0
            let stamp = Int64((fields[2] + fields[3]).filter(\.isNumber)) ?? 0
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            if parts.count == 1, ReplicaID(hex: parts[0]) != nil {
                if mode == "d" { continue }
                listing.unwritableFolders.insert(path)
                listing.ignored.append(Problem(.ignored, file: remote + path,
                                               reason: mode == "l" ? "symbolic link: never followed" : "a replica folder that is not a folder"))
                continue
            }
            if mode == "d" {
                listing.ignored.append(Problem(.ignored, file: remote + path, reason: "a directory where a segment file or replica folder was expected"))
                continue
            }
            guard parts.count == 2, let replica = ReplicaID(hex: parts[0]) else {
                listing.ignored.append(Problem(.ignored, file: remote + path, reason: "not inside a replica folder"))
                continue
            }
            guard mode == "-" else {
                listing.ignored.append(Problem(.ignored, file: remote + path, replica: replica,
                                               reason: mode == "l" ? "symbolic link: never followed" : "not a regular file"))
                continue
            }
            let name = String(parts[1])
            listing.files.append(TreeListing.File(replica: replica, relativePath: path, name: name, size: size,
                                                  modified: stamp, classification: FileClassifier.classify(name)))
        }
        return listing
    }

    func fetch(_ files: [TreeListing.File]) async throws(SyncError) -> [String: String] {
        guard !files.isEmpty else { return [:] }
        let list = try writeFileList(files.map(\.relativePath), named: ".files-from", in: staging)
        let arguments = common + ["--size-only", "--max-size=\(SegmentScanner.maxSegmentFileSize)",
                                  "--files-from=" + list, remoteReplicas, staging + "/"]
        let result: ChildProcess.Result
        do { result = try await Self.run(arguments) } catch { throw .rsyncMissing }
        // 23/24: some files vanished or could not be read; what did arrive is still verified.
        guard result.status == 0 || result.status == 23 || result.status == 24 else {
            throw .rsyncFailed(command: "rsync " + arguments.joined(separator: " "), status: result.status, output: result.messages)
        }
        return Dictionary(uniqueKeysWithValues: files.map { ($0.relativePath, FileSystem.join(staging, $0.relativePath)) })
    }

    func publish(_ relativePaths: [String], from localReplicas: String) async throws(SyncError) -> PublishOutcome {
        try await push(relativePaths, from: localReplicas, replacing: false)
    }

    func replace(_ relativePaths: [String], from localReplicas: String) async throws(SyncError) -> PublishOutcome {
        try await push(relativePaths, from: localReplicas, replacing: true)
    }

    private func push(_ relativePaths: [String], from localReplicas: String, replacing: Bool) async throws(SyncError) -> PublishOutcome {
        guard !relativePaths.isEmpty else { return PublishOutcome() }
        let list = try writeFileList(relativePaths, named: ".push-list", in: staging)
        // --ignore-existing: a segment already there is never replaced; no --inplace, no --delete.
        // Replacing a damaged copy: --checksum, since a same-size damaged copy passes rsync's
        // size-and-time check (the new file still arrives by temporary and rename).
        var arguments = common + (replacing ? ["--checksum"] : ["--ignore-existing"]) + ["--files-from=" + list]
        if capabilities.fsync { arguments.append("--fsync") }
        if capabilities.mkpath { arguments.append("--mkpath") }
        arguments += [localReplicas + "/", remoteReplicas]
        let result: ChildProcess.Result
        do { result = try await Self.run(arguments) } catch { throw .rsyncMissing }
        if result.status == 0 { return PublishOutcome(sent: relativePaths) }
        // A replica folder swapped for a symlink after the listing: rsync (3.2.5 and later)
        // refuses to write through it. That is a refusal to report, not a failed sync.
        if result.status == 23, let refusedPaths = Self.symlinkRefusals(in: result.messages, sending: relativePaths) {
            var outcome = PublishOutcome(sent: relativePaths.filter { !refusedPaths.contains($0) })
            let folders = Set(refusedPaths.map { String($0.prefix { $0 != "/" }) })
            for folder in folders.sorted() {
                outcome.refused.append(Problem(.ignored, file: remoteReplicas + folder, replica: ReplicaID(hex: folder),
                                               reason: IOError.symbolicLinkReason + "; nothing published there"))
            }
            return outcome
        }
        throw .rsyncFailed(command: "rsync " + arguments.joined(separator: " "), status: result.status, output: result.messages)
    }

    /// The paths rsync would not write because a folder on the way is a symlink, when that is
    /// the only complaint in its messages; nil when anything else went wrong too.
    static func symlinkRefusals(in messages: String, sending relativePaths: [String]) -> Set<String>? {
        var refused = Set<String>()
        for line in messages.split(separator: "\n") {
            if line.hasPrefix("rsync error: some files/attrs were not transferred") { continue }
            guard line.contains("Too many levels of symbolic links") || line.contains("Not a directory"),
                  let open = line.firstIndex(of: "\""), let close = line[line.index(after: open)...].firstIndex(of: "\"")
            else { return nil }
            let quoted = line[line.index(after: open)..<close]
            guard let relative = relativePaths.first(where: { quoted.hasSuffix("/" + $0) }) else { return nil }
            refused.insert(relative)
        }
        return refused.isEmpty ? nil : refused
    }

    func finish() {
        FileSystem.removeTree(staging)
    }

    /// Runs rsync; no shell in between.
    static func run(_ arguments: [String]) async throws(SyncError) -> ChildProcess.Result {
        let result: ChildProcess.Result
        do { result = try await ChildProcess.run("rsync", arguments) } catch { throw .io(error, doing: "cannot run rsync") }
        if result.status == 127 { throw .rsyncMissing }
        return result
    }
}

/// Writes the relative paths a transfer tool takes (`--files-from`), one a line, as `name` in
/// the staging folder (made if missing); returns its path.
func writeFileList(_ paths: [String], named name: String, in staging: String) throws(SyncError) -> String {
    let list = staging + "/" + name
    do throws(IOError) {
        try FileSystem.createDirectory(staging)
        try FileSystem.writeAtomically(Array((paths.joined(separator: "\n") + "\n").utf8), to: list)
    } catch {
        throw .io(error, doing: "cannot prepare the staging folder \(staging)")
    }
    return list
}
