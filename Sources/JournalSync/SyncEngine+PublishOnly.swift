import JournalFormat
import JournalPlatform
import JournalStorage

extension SyncEngine {
    /// What `publishOnly` did.
    public struct PublishReport: Sendable {
        /// This journal's sealed segments under content names when it looked (paths relative
        /// to `replicas/`).
        public var sealed: Set<String> = []
        /// Files now on the target.
        public var published: [String] = []
        /// Files it would not send: a local copy that does not verify against its name, or a
        /// target folder it may not write into.
        public var notPublished: [Problem] = []
    }

    /// Sends this journal's sealed segments that are not in `known` to `target`, each verified
    /// against its name just before (invariant 6), and nothing else: the target is not listed,
    /// nothing is fetched, retired or repaired. The files are named by their hash, so a copy
    /// already there holds the same bytes and is left alone. Under the sync lock, as a sync:
    /// a compaction cannot retire a file between the listing here and its copy. A relay's
    /// shared-ack round uses it between the whole syncs that do the rest: only `sync` finds
    /// out what the target lacks or holds damaged.
    public func publishOnly(excluding known: Set<String>, to target: SyncTarget, rsh: String? = nil) async throws(SyncError) -> PublishReport {
        let lock = try SyncLock.acquire(journal, waitingUpTo: lockWaitSeconds)
        defer { lock.release() }
        var report = PublishReport()
        var outgoing: [String] = []
        let listing = TreeListing.scan(replicasPath: journal.replicasPath)
        report.sealed = listing.contentNamedSegmentKeys
        for file in listing.files where report.sealed.contains(file.relativePath) && !known.contains(file.relativePath) {
            guard case .segment(let name) = file.classification else { continue }
            if let refusal = refusalToPublish(file, name: name) {
                report.notPublished.append(refusal)
                continue
            }
            outgoing.append(file.relativePath)
        }
        guard !outgoing.isEmpty else { return report }
        // A staging folder of its own: a sync of this journal by another process of this
        // machine may be running beside it, and removes its own when it ends.
        let suffix = ProcessInfoLite.randomBytes(4).map { String($0, radix: 16) }.joined()
        let transport = try await transport(to: target, rsh: rsh, staging: stagingFolder + "-" + suffix, create: false)
        defer { transport.finish() }
        let outcome = try await transport.publish(outgoing, from: journal.replicasPath)
        report.published = outcome.sent
        report.notPublished += outcome.refused
        return report
    }

    /// Why this journal's own file `file` (named `name`) must not go out: its bytes do not
    /// verify against its name now (invariant 6: never spread a damaged file; a verdict cached
    /// earlier could be about bytes that have changed since). Nil when it may be published.
    func refusalToPublish(_ file: TreeListing.File, name: SegmentName) -> Problem? {
        let path = FileSystem.join(journal.replicasPath, file.relativePath)
        guard let problem = SegmentImporter.verifyFile(at: path, replica: file.replica, name: name) else { return nil }
        return Problem(problem.kind, file: path, offset: problem.offset, replica: file.replica, seqRange: name.firstSeq...name.lastSeq,
                       reason: "this journal's copy does not verify (\(problem.reason)); not published")
    }
}
