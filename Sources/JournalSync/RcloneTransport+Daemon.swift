import JournalFormat
import JournalPlatform
import JournalStorage

/// The same listings, fetches and copies as `RcloneTransport`'s rclone processes, asked of the
/// `rclone rcd` this process keeps (`RcloneDaemon`) when `keepsRcloneRunning`: the same lists of
/// files and the same options, given as its `_filter` and `_config`. Each returns nil (or false)
/// when there is no server to ask (none yet: one starts) or it did not answer (it is then put
/// aside), and the caller runs rclone itself: a dead or starting server costs a process, never
/// a round.
extension RcloneTransport {
    private enum Answer {
        case done(JSONValue)
        case failed(status: Int, message: String)
    }

    /// Asks the server `operation`; nil when there is none or it did not answer.
    private func ask(_ operation: String, _ request: JSONObject) async -> Answer? {
        guard keepsRcloneRunning, let daemon = RcloneDaemons.daemon(environment: environment, flags: daemonFlags) else { return nil }
        do {
            return .done(try await daemon.call(operation, request.text))
        } catch {
            switch error {
            case .unreachable:
                RcloneDaemons.retire(daemon)
                return nil
            case .failed(let status, let message):
                return .failed(status: status, message: message)
            }
        }
    }

    /// rclone's failure, as `failure` words a process's.
    private func failure(_ what: String, status: Int, message: String) -> SyncError {
        .rcloneFailed(command: "rclone rc " + what, status: Int32(status), output: Self.explained(message, address: address, endpoint: endpoint))
    }

    /// Absolute: the server's working folder is this process's when it started, which a path
    /// must not depend on; and a relative `name:rest` would read as a remote's.
    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileSystem.join(FileSystem.currentDirectory, path)
    }

    /// `sync/copy` of the files named in `list` (one a line) from `source` to `destination`.
    private static func copy(_ list: String, from source: String, to destination: String, _ config: JSONObject) -> JSONObject {
        var filter = JSONObject()
        filter.add("FilesFromRaw", strings: [absolute(list)])
        var request = JSONObject()
        request.add("srcFs", source)
        request.add("dstFs", destination)
        request.add("_filter", raw: filter.text)
        request.add("_config", raw: config.text)
        return request
    }

    /// `rclone lsf -R --fast-list` with sizes and MD5s, as `operations/list`.
    func listThroughDaemon() async throws(SyncError) -> TreeListing? {
        var options = JSONObject()
        options.add("recurse", raw: "true")
        options.add("filesOnly", raw: "true")
        options.add("showHash", raw: "true")
        options.add("hashTypes", strings: ["MD5"])
        options.add("noModTime", raw: "true")
        options.add("noMimeType", raw: "true")
        var config = JSONObject()
        config.add("UseListR", raw: "true")
        var request = JSONObject()
        request.add("fs", remoteReplicas + "/")
        request.add("remote", "")
        request.add("opt", raw: options.text)
        request.add("_config", raw: config.text)
        switch await ask("operations/list", request) {
        case nil:
            return nil
        case .failed(let status, let message):
            // As a process's status 3: no bucket (a path inside an existing bucket lists as empty).
            if message.contains("directory not found") {
                if create { return TreeListing() }
                throw .targetMissing(address.text)
            }
            throw failure("operations/list \(remoteReplicas)/", status: status, message: message)
        case .done(let answer):
            let shown = address.text + "/replicas/"
            let records = answer["list"]?.elements.map { entry -> [String] in
                guard let path = entry["Path"]?.text, let size = entry["Size"]?.text else { return ["an entry without a path or size"] }
                // rclone 1.60 names the hash "md5" here (and "MD5" on its command line).
                let md5 = entry["Hashes"]?["md5"]?.text ?? entry["Hashes"]?["MD5"]?.text ?? ""
                return [size, entry["IsDir"]?.isTrue == true ? path + "/" : path, md5]
            }
            guard let records else {
                var listing = TreeListing()
                listing.ignored.append(Problem(.ignored, file: shown, reason: "rclone's answer held no list"))
                return listing
            }
            return try await checked(Self.listing(of: records, shownAs: shown))
        }
    }

    /// `rclone copy --files-from-raw LIST --no-traverse --max-transfer …` into staging, as
    /// `sync/copy`. False when the server was not asked or did not answer.
    func fetchThroughDaemon(_ list: String, bound: Int64) async throws(SyncError) -> Bool {
        var config = JSONObject()
        config.add("NoTraverse", raw: "true")
        config.add("MaxTransfer", raw: String(bound))
        config.add("Transfers", raw: "16")
        config.add("Checkers", raw: "16")
        config.add("BufferSize", raw: String(1 << 20))
        switch await ask("sync/copy", Self.copy(list, from: remoteReplicas, to: Self.absolute(staging), config)) {
        case nil: return false
        case .done: return true
        case .failed(let status, let message):
            // As a process's status 8 (over the bound) or a vanished object: what did arrive
            // is still verified.
            if message.lowercased().contains("max transfer") || Self.isPartialFetch(message) { return true }
            throw failure("sync/copy (from \(remoteReplicas) to \(staging))", status: status, message: message)
        }
    }

    /// `rclone copy --files-from-raw LIST --ignore-existing` (or `--ignore-times` when
    /// `replacing`) `--no-traverse`, as `sync/copy`. False when the server was not asked or did
    /// not answer.
    func pushThroughDaemon(_ list: String, from localReplicas: String, replacing: Bool) async throws(SyncError) -> Bool {
        var config = JSONObject()
        config.add("NoTraverse", raw: "true")
        config.add(replacing ? "IgnoreTimes" : "IgnoreExisting", raw: "true")
        switch await ask("sync/copy", Self.copy(list, from: Self.absolute(localReplicas), to: remoteReplicas, config)) {
        case nil: return false
        case .done: return true
        case .failed(let status, let message):
            throw failure("sync/copy (from \(localReplicas) to \(remoteReplicas)\(replacing ? ", replacing" : ""))", status: status, message: message)
        }
    }
}

extension RcloneTransport {
    /// A fetch whose failure is only that some objects were gone or unreadable.
    static func isPartialFetch(_ messages: String) -> Bool {
        messages.contains("not found") || messages.contains("NoSuchKey")
    }
}
