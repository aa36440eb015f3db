import Atomics
import JournalFormat
import JournalPlatform
import JournalStorage

/// Where a board lives in an object store, as the user wrote it and as rclone names it.
///
/// `s3://bucket/path` becomes rclone's on-the-fly remote `:s3:bucket/path`, configured from
/// the environment the way AWS tools are (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_ENDPOINT_URL`, `AWS_REGION`, or rclone's own `RCLONE_S3_*`); `rclone:REMOTE:path`
/// is a remote of the user's rclone configuration (any store rclone reaches: R2, GCS, Azure…).
/// Secrets never appear here: they stay in the environment or in rclone's configuration file.
public struct ObjectStoreAddress: Equatable, Sendable {
    /// What the user typed (shown in reports).
    public let text: String
    /// The board's root as rclone names it, without a trailing slash.
    public let remote: String
    /// Whether rclone's S3 backend is configured here from the environment (`s3://`).
    public let isS3URL: Bool

    /// Nil when `text` is no object-store address at all (a folder or an rsync remote).
    public init?(parsing text: String) throws(SyncError) {
        if text.hasPrefix("s3://") {
            var path = String(text.dropFirst("s3://".count))
            while path.hasSuffix("/") { path.removeLast() }
            let bucket = path.prefix { $0 != "/" }
            guard !bucket.isEmpty else { throw .badObjectStoreAddress(text, reason: "no bucket after s3://") }
            guard !path.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == ".." || $0 == "." || $0.isEmpty }) else {
                throw .badObjectStoreAddress(text, reason: "an empty, \".\" or \"..\" part in the path")
            }
            self.text = text
            remote = ":s3:" + path
            isS3URL = true
            return
        }
        if text.hasPrefix("rclone:") {
            var rest = String(text.dropFirst("rclone:".count))
            while rest.hasSuffix("/") { rest.removeLast() }
            // Refused without being repeated: settings in an address may hold a secret.
            let shown = Self.withoutSettings(text)
            guard let colon = rest.firstIndex(of: ":"), colon != rest.startIndex else {
                throw .badObjectStoreAddress(shown, reason: "expected rclone:REMOTE:path, a remote of your rclone configuration")
            }
            // `:backend,key=value:` and `remote,key=value:` carry settings, secrets among them,
            // on the command line, where every user of the machine and every error message sees
            // them: a remote of the configuration (or s3:// and the environment) instead.
            if rest[..<colon].contains(",") {
                throw .badObjectStoreAddress(shown, reason: "settings in the address (a connection string) would put keys on the command line; name a remote of your rclone configuration, or use s3:// with the keys in the environment")
            }
            self.text = text
            remote = rest
            isS3URL = false
            return
        }
        return nil
    }

    /// `text` with every run of settings (`,key=value…` up to the next colon) shown as `,…`.
    static func withoutSettings(_ text: String) -> String {
        var shown = ""
        var hiding = false
        for character in text {
            if hiding {
                if character == ":" { hiding = false; shown.append(character) }
            } else if character == "," {
                hiding = true
                shown += ",…"
            } else {
                shown.append(character)
            }
        }
        return shown
    }

    /// Changes to rclone's environment: for `s3://`, the AWS variables mapped onto rclone's
    /// S3 backend, where rclone's own variables do not already say.
    func environment(_ lookup: (String) -> String?) -> [String: String?] {
        guard isS3URL else { return [:] }
        var changes: [String: String?] = [:]
        if lookup("RCLONE_S3_ACCESS_KEY_ID") == nil && lookup("RCLONE_S3_ENV_AUTH") == nil {
            // The AWS chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, a role.
            changes["RCLONE_S3_ENV_AUTH"] = "true"
        }
        let endpoint = lookup("RCLONE_S3_ENDPOINT") ?? lookup("AWS_ENDPOINT_URL_S3") ?? lookup("AWS_ENDPOINT_URL")
        if lookup("RCLONE_S3_ENDPOINT") == nil, let endpoint { changes["RCLONE_S3_ENDPOINT"] = endpoint }
        if lookup("RCLONE_S3_PROVIDER") == nil { changes["RCLONE_S3_PROVIDER"] = endpoint == nil ? "AWS" : "Other" }
        if lookup("RCLONE_S3_REGION") == nil, let region = lookup("AWS_REGION") ?? lookup("AWS_DEFAULT_REGION") {
            changes["RCLONE_S3_REGION"] = region
        }
        // A CA bundle means nothing to plain http, yet rclone's S3 backend refuses to start
        // when the one named cannot be loaded (seen with rclone 1.60).
        if let endpoint, endpoint.hasPrefix("http://") { changes["AWS_CA_BUNDLE"] = .some(nil) }
        return changes
    }
}

/// An object store, through the real `rclone` binary (Debian's `rclone`), as rsync is driven
/// for remotes: no S3 signing of our own. Pulls into a local staging folder (verified before
/// import); pushes with `--ignore-existing`, so an object is never replaced.
///
/// What rclone 1.60 cannot do, and why it is safe anyway (docs/SYNC.md, "Object storage"):
/// it has no conditional create (If-None-Match), so two machines may both upload one name in
/// the same instant, which is harmless because a segment's name is the SHA-256 of its bytes;
/// and it cannot list after a marker, so a listing costs one request per 1,000 objects of the
/// board, which compaction keeps few.
struct RcloneTransport: Transport {
    let address: ObjectStoreAddress
    let staging: String
    let create: Bool
    /// Listings, fetches and copies go through an `rclone rcd` this process keeps running
    /// (`RcloneDaemon`) instead of an rclone process each: for a process that publishes many
    /// times a second.
    let keepsRcloneRunning: Bool
    let environment: [String: String?]
    var localFolder: String? { nil }

    /// `environment`: the changes rclone's environment gets from this process's (tests name a
    /// store's keys there); by default, what `address` needs from this process's own.
    init(address: ObjectStoreAddress, staging: String, create: Bool = false, keepsRcloneRunning: Bool = false,
         environment: [String: String?]? = nil) {
        self.address = address
        self.staging = staging
        self.create = create
        self.keepsRcloneRunning = keepsRcloneRunning
        // No `rclone version` probe: a missing rclone shows at the first run (status 127), and
        // a no-op sync, one listing, stays one child process.
        self.environment = environment ?? address.environment { ProcessInfoLite.environment($0) }
    }

    var remoteReplicas: String { address.remote + "/replicas" }

    /// Every call: one attempt (a sync is retried by the user or by `--watch`), a store that
    /// accepts connections and never answers (a frozen gateway) given up on in about 40 s
    /// (rclone waits 5 minutes for a silent connection, and again at each retry: a sync hung
    /// for over 5), and rclone's statistics off, so that standard output is the listing alone.
    private var common: [String] {
        ["--retries", "1", "--low-level-retries", "1", "--contimeout", "10s", "--timeout", "10s", "--stats", "0"]
    }

    /// The options a kept server (`RcloneDaemon`) runs with: the same bounds as every call here.
    var daemonFlags: [String] { common }

    func list() async throws(SyncError) -> TreeListing {
        // The MD5 is the object's ETag for anything rclone sent in one part (segments are far
        // below its 200 MiB multipart cutoff): no request per object.
        if let listing = try await listThroughDaemon() { return listing }
        let arguments = ["lsf", "-R", "--fast-list", "--csv", "--format", "sph", "--hash", "MD5"] + common + [remoteReplicas + "/"]
        let result = try await run(arguments)
        if result.status != 0 {
            // rclone says "directory not found" (status 3) for a bucket that does not exist; a
            // path inside an existing bucket lists as empty.
            if result.status == 3 && result.messages.contains("directory not found") {
                if create { return TreeListing() }
                throw .targetMissing(address.text)
            }
            throw failure(arguments, result)
        }
        return try await checked(Self.parseListing(result.outputText, shownAs: address.text + "/replicas/"))
    }

    /// `listing`, once an empty one is known to be a new board (`checkIsNewBoard`).
    func checked(_ listing: TreeListing) async throws(SyncError) -> TreeListing {
        if listing.files.isEmpty && listing.ignored.isEmpty && !create { try await checkIsNewBoard() }
        return listing
    }

    /// An empty `replicas/` is a new board only where nothing else is stored: anything else
    /// there is most likely a mistyped path.
    private func checkIsNewBoard() async throws(SyncError) {
        let arguments = ["lsf", "--max-depth", "1", "--csv", "--format", "p"] + common + [address.remote + "/"]
        let result = try await run(arguments)
        guard result.status == 0 else {
            if result.status == 3 && result.messages.contains("directory not found") { throw .targetMissing(address.text) }
            throw failure(arguments, result)
        }
        let entries = Self.csvRecords(result.outputText).compactMap(\.first).filter { $0 != "replicas/" }
        if !entries.isEmpty { throw .notABoard(address.text, isSource: false) }
    }

    /// Parses `rclone lsf -R --csv --format sph --hash MD5`: one record per object or folder,
    /// size, path and MD5 (folders end in "/" and have size -1; the MD5 is empty where the
    /// store does not know it). Names are quoted where they hold a comma, a quote or a line
    /// break, so a crafted key cannot pose as another line.
    static func parseListing(_ output: String, shownAs shown: String) -> TreeListing {
        listing(of: csvRecords(output), shownAs: shown)
    }

    /// Records of size, path and MD5 (or size and path), as rclone lists them.
    static func listing(of records: [[String]], shownAs shown: String) -> TreeListing {
        var listing = TreeListing()
        for record in records {
            guard record.count == 2 || record.count == 3, let size = Int64(record[0]) else {
                listing.ignored.append(Problem(.ignored, file: shown, reason: "a listing line rclone should not print: \(record.joined(separator: ",").debugDescription)"))
                continue
            }
            let path = record[1]
            if path.hasSuffix("/") { continue }
            // Lists of files for rclone are one name a line: a name with a control character
            // (rclone shows a line break as "␊", but a remote may not) could name others.
            if path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                listing.ignored.append(Problem(.ignored, file: shown + path.debugDescription, reason: "a control character in the name"))
                continue
            }
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, let replica = ReplicaID(hex: parts[0]) else {
                listing.ignored.append(Problem(.ignored, file: shown + path, reason: "not inside a replica folder"))
                continue
            }
            let name = String(parts[1])
            let md5 = record.count == 3 ? record[2].lowercased() : ""
            listing.files.append(TreeListing.File(replica: replica, relativePath: path, name: name, size: size,
                                                  modified: 0, classification: FileClassifier.classify(name),
                                                  storeMD5: ObjectHash.isMD5(md5) ? md5 : nil))
        }
        return listing
    }

    /// RFC 4180 records: fields split at commas, a quoted field may hold commas, doubled
    /// quotes and line breaks.
    static func csvRecords(_ text: String) -> [[String]] {
        var records: [[String]] = []
        var fields: [String] = []
        var field: [UInt8] = []
        var quoted = false
        var bytes = Array(text.utf8).makeIterator()
        var pending: UInt8? = nil
        func endField() { fields.append(String(decoding: field, as: UTF8.self)); field = [] }
        while let byte = pending ?? bytes.next() {
            pending = nil
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    let next = bytes.next()
                    if next == UInt8(ascii: "\"") { field.append(byte) } else { quoted = false; pending = next }
                } else {
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): quoted = true
            case UInt8(ascii: ","): endField()
            case UInt8(ascii: "\n"):
                if fields.isEmpty && field.isEmpty { continue }
                endField()
                records.append(fields)
                fields = []
            case UInt8(ascii: "\r"): break
            default: field.append(byte)
            }
        }
        if !field.isEmpty || !fields.isEmpty {
            endField()
            records.append(fields)
        }
        return records
    }

    func fetch(_ files: [TreeListing.File]) async throws(SyncError) -> [String: String] {
        guard !files.isEmpty else { return [:] }
        let list = try writeFileList(files.map(\.relativePath), named: ".files-from", in: staging)
        // --no-traverse: the staging folder is new, so nothing there needs listing. rclone
        // takes no size filter beside a list of files, so --max-transfer bounds the whole: an
        // object replaced by a huge one since the listing cannot fill this disk.
        let listedBytes = files.reduce(Int64(0)) { $0 + max($1.size, 0) }
        let fetched = Dictionary(uniqueKeysWithValues: files.map { ($0.relativePath, FileSystem.join(staging, $0.relativePath)) })
        if try await fetchThroughDaemon(list, bound: listedBytes + 1 << 20) { return fetched }
        // Sixteen objects at a time (rclone's four made adopting a board of 238 small objects
        // from a local S3 take 2.9 s, sixteen 0.9 s), each read ahead by 1 MiB at most so that
        // the many are no more memory than rclone's default four.
        let arguments = ["copy", "--files-from-raw", list, "--no-traverse", "--max-transfer", "\(listedBytes + 1 << 20)B",
                         "--transfers", "16", "--checkers", "16", "--buffer-size", "1M"]
            + common + [remoteReplicas, staging]
        let result = try await run(arguments)
        // Some objects vanished, could not be read or went over the bound (status 8): what
        // did arrive is still verified, and what did not is fetched by a later sync.
        if result.status != 0 && result.status != 8 && !Self.isPartialFetch(result.messages) {
            throw failure(arguments, result)
        }
        return fetched
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
        if try await pushThroughDaemon(list, from: localReplicas, replacing: replacing) { return PublishOutcome(sent: relativePaths) }
        // --ignore-existing: an object already there is never replaced (its name says its bytes);
        // replacing a damaged one, --ignore-times sends ours whatever its size, date or hash
        // (a copy damaged in place can keep all three of its metadata).
        // --no-traverse: each file is looked up by name rather than listing the whole board.
        let arguments = ["copy", "--files-from-raw", list] + (replacing ? ["--ignore-times"] : ["--ignore-existing"]) + ["--no-traverse"] + common
            + [localReplicas, remoteReplicas]
        let result = try await run(arguments)
        guard result.status == 0 else { throw failure(arguments, result) }
        return PublishOutcome(sent: relativePaths)
    }

    var removesObjects: Bool { true }

    func removeObjects(_ relativePaths: [String]) async throws(SyncError) {
        guard !relativePaths.isEmpty else { return }
        let list = try writeFileList(relativePaths, named: ".remove-list", in: staging)
        // Only the listed objects: a filter, never a pattern, and nothing but files.
        let arguments = ["delete", "--files-from-raw", list] + common + [remoteReplicas]
        let result = try await run(arguments)
        guard result.status == 0 else { throw failure(arguments, result) }
    }

    func finish() {
        FileSystem.removeTree(staging)
    }

    private func failure(_ arguments: [String], _ result: ChildProcess.Result) -> SyncError {
        .rcloneFailed(command: "rclone " + arguments.joined(separator: " "), status: result.status,
                      output: Self.explained(result.messages, address: address, endpoint: endpoint))
    }

    var endpoint: String? { (environment["RCLONE_S3_ENDPOINT"] ?? nil) ?? ProcessInfoLite.environment("RCLONE_S3_ENDPOINT") }

    /// rclone's messages as a person needs them: without the date and time each starts with,
    /// without its notice that no configuration file exists (s3:// needs none; every error
    /// began with it), and after a first line that says in words what the known failures mean.
    static func explained(_ messages: String, address: ObjectStoreAddress, endpoint: String?) -> String {
        let lines = messages.split(separator: "\n").map { line -> Substring in
            let words = line.split(separator: " ", maxSplits: 2)
            return words.count == 3 && words[0].contains("/") && words[1].contains(":") ? words[2] : line
        }.filter { !($0.contains("Config file") && $0.contains("not found")) }
        let text = lines.joined(separator: "\n")
        let store = endpoint.map { "the store at \($0)" } ?? "the store"
        let hint: String? =
            if text.contains("NoCredentialProviders") || text.contains("LoadCustomCABundleError") || text.contains("no valid providers") {
                address.isS3URL
                    ? "no credentials for \(address.text): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_ENDPOINT_URL for a store other than AWS)"
                    : "no credentials for \(address.text): the rclone remote's configuration has none that work"
            } else if text.contains("InvalidAccessKeyId") || text.contains("SignatureDoesNotMatch") || text.contains("AccessDenied") {
                "\(store) refused the credentials (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the remote's keys)"
            } else if text.contains("connection refused") || text.contains("no such host") || text.contains("i/o timeout") {
                "nothing answers at \(store): is it running, and is the address (AWS_ENDPOINT_URL) right?"
            } else {
                nil
            }
        return hint.map { $0 + "\n" + text } ?? text
    }

    /// rclone processes this process has run (the tests' way to see what a kept server saved).
    static let processesRun = ManagedAtomic<Int>(0)

    /// Runs rclone; no shell in between.
    private func run(_ arguments: [String]) async throws(SyncError) -> ChildProcess.Result {
        Self.processesRun.wrappingIncrement(ordering: .relaxed)
        let result: ChildProcess.Result
        do { result = try await ChildProcess.run("rclone", arguments, environment: environment) } catch {
            throw .io(error, doing: "cannot run rclone")
        }
        if result.status == 127 { throw .rcloneMissing }
        return result
    }
}
