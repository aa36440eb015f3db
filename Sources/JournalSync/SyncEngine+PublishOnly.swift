import JournalFormat
import JournalPlatform
import JournalStorage

extension SyncEngine {
    /// What `publishOnly` did.
    public struct PublishReport: Sendable {
        /// Files now on the target (paths relative to `replicas/`).
        public var published: [String] = []
        /// Files it would not send: a local copy that does not verify against its name, or a
        /// target folder it may not write into.
        public var notPublished: [Problem] = []
        /// Files gone from this journal since they were named (compaction retired them into a
        /// cover, which holds their events): nothing to send.
        public var vanished: [String] = []
    }

    /// Sends these sealed files of this journal (paths relative to `replicas/`) to `target`,
    /// each verified against its name just before (invariant 6), and nothing else: the target
    /// is not listed, nothing is fetched, retired or repaired, and the sync lock is not taken.
    /// The files are sealed and named by their hash, so a copy already there holds the same
    /// bytes and is left alone. A relay's shared-ack round uses it between the full syncs that
    /// do the rest: only `sync` finds out what the target lacks or holds damaged.
    public func publishOnly(_ relativePaths: [String], to target: SyncTarget, rsh: String? = nil) async throws(SyncError) -> PublishReport {
        var report = PublishReport()
        var outgoing: [String] = []
        for relative in relativePaths {
            let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, let replica = ReplicaID(hex: parts[0]),
                  case .segment(let name) = FileClassifier.classify(String(parts[1])), name.identifiesContents
            else {
                report.notPublished.append(Problem(.ignored, file: relative, reason: "not a sealed segment of replicas/; not published"))
                continue
            }
            let path = FileSystem.join(journal.replicasPath, relative)
            guard FileSystem.exists(path) else {
                report.vanished.append(relative)
                continue
            }
            if let problem = SegmentImporter.verifyFile(at: path, replica: replica, name: name) {
                report.notPublished.append(Problem(problem.kind, file: path, offset: problem.offset, replica: replica,
                                                   seqRange: name.firstSeq...name.lastSeq,
                                                   reason: "this journal's copy does not verify (\(problem.reason)); not published"))
                continue
            }
            outgoing.append(relative)
        }
        guard !outgoing.isEmpty else { return report }
        // A staging folder of its own: a full sync of this journal in this process may be
        // running beside it, and removes its own when it ends.
        let suffix = ProcessInfoLite.randomBytes(4).map { String($0, radix: 16) }.joined()
        let transport = try await transport(to: target, rsh: rsh, staging: stagingFolder + "-" + suffix, create: false)
        defer { transport.finish() }
        let outcome = try await transport.publish(outgoing, from: journal.replicasPath)
        report.published = outcome.sent
        report.notPublished += outcome.refused
        return report
    }
}
