import JournalCommit
import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage

/// Two-way sync of a journal with a target, and one-way merges from other journals.
///
/// Cost follows new data: both sides are compared by listing names and sizes (a segment's
/// version 2 name is its seq range and the SHA-256 of its bytes, so equal names mean equal
/// bytes); only files the other side lacks are read, verified and copied, and every local
/// file is verified again just before it is published. Files whose name does not say what
/// they hold (conflict copies, version 1 names) and refused files are remembered in
/// `local/sync-cache`, keyed by what identifies their bytes.
public struct SyncEngine {
    public let journal: JournalDirectory
    public var progress: ((String) -> Void)?
    /// How long a sync or merge waits for another one on the same journal before giving up
    /// with `SyncError.busy`.
    public var lockWaitSeconds: Double = 3
    /// Object stores: listings, fetches and copies go through one `rclone rcd` this process
    /// keeps running (`RcloneDaemon`) rather than an rclone process each. For a process that
    /// publishes many times a second (a relay's shared acks); a one-off sync needs no server
    /// left behind.
    public var keepsRcloneRunning = false

    public init(journal: JournalDirectory, progress: ((String) -> Void)? = nil) {
        self.journal = journal
        self.progress = progress
    }

    /// Seals what is recorded, publishes what the target lacks, imports what we lack.
    /// The target must be a shared board (it has `replicas/`) or an empty folder; `create`
    /// makes a missing or other folder a board (a mistyped path must not start a new board).
    public func sync(_ target: SyncTarget, rsh: String? = nil, seal: Bool = true, compact: Bool = true, create: Bool = false) async throws(SyncError) -> ReconcileReport {
        let started = ProcessInfoLite.monotonicSeconds()
        let lock = try SyncLock.acquire(journal, waitingUpTo: lockWaitSeconds)
        defer { lock.release() }
        var report = ReconcileReport(target: target.description)
        if seal { sealOpenSegment(&report) }
        if compact { self.compact(&report) }
        let transport = try await self.transport(to: target, rsh: rsh, staging: stagingFolder, create: create)
        defer { transport.finish() }
        try await exchange(with: transport, key: target.description, publish: true, report: &report)
        MembershipLog.pinAdoptedGenesis(journal, imported: report.imported)
        report.seconds = ProcessInfoLite.monotonicSeconds() - started
        LastSyncRecord.write(report, to: journal)
        return report
    }

    /// Imports every valid sealed segment from other journals or shared folders.
    public func merge(from sources: [String]) async throws(SyncError) -> ReconcileReport {
        let started = ProcessInfoLite.monotonicSeconds()
        let lock = try SyncLock.acquire(journal, waitingUpTo: lockWaitSeconds)
        defer { lock.release() }
        var report = ReconcileReport(target: sources.joined(separator: ", "))
        for source in sources {
            if case .objectStore(let address) = try SyncTarget(parsing: source) {
                let transport = RcloneTransport(address: address, staging: stagingFolder)
                defer { transport.finish() }
                try await exchange(with: transport, key: source, publish: false, report: &report)
                continue
            }
            try refuseSelf(source)
            let transport = try DirectoryTransport(root: source, role: .source)
            try await exchange(with: transport, key: source, publish: false, report: &report)
            if let size = FileSystem.linkStatus(FileSystem.join(source, "local/open.sjo"))?.size, size > Int64(FormatV1.fileHeaderSize) {
                report.ignored.append(Problem(.ignored, file: FileSystem.join(source, "local/open.sjo"),
                                              reason: "unsealed events of that journal's writer: run `journal sync` or `record` there to seal them"))
            }
        }
        MembershipLog.pinAdoptedGenesis(journal, imported: report.imported)
        report.seconds = ProcessInfoLite.monotonicSeconds() - started
        LastSyncRecord.write(report, to: journal)
        return report
    }

    // MARK: Steps

    /// Where this process's transfers land before they are verified: per process, so that even
    /// a sync that does not hold the lock (an older version) never shares, or deletes, another's.
    var stagingFolder: String { journal.localPath + "/staging-" + String(ProcessInfoLite.processID) }

    /// How `target` is written: a folder, rsync, or an object store through rclone.
    func transport(to target: SyncTarget, rsh: String?, staging: String, create: Bool) async throws(SyncError) -> Transport {
        switch target {
        case .directory(let path):
            try refuseSelf(path)
            return try DirectoryTransport(root: path, role: .target(create: create))
        case .rsync(let remote):
            return try await RsyncTransport(remote: remote, rsh: rsh, staging: staging, create: create)
        case .objectStore(let address):
            return RcloneTransport(address: address, staging: staging, create: create, keepsRcloneRunning: keepsRcloneRunning)
        }
    }

    private func refuseSelf(_ path: String) throws(SyncError) {
        let here = FileSystem.linkStatus(journal.replicasPath)
        let there = FileSystem.linkStatus(path + "/replicas")
        if let here, let there, here.inode == there.inode, here.inode != 0 { throw .sameJournal(path) }
    }

    private func sealOpenSegment(_ report: inout ReconcileReport) {
        // Nothing recorded since the last seal: do not even take the lock (a no-op sync
        // must not touch a single file).
        guard let size = FileSystem.linkStatus(journal.openSegmentPath)?.size, size > Int64(FormatV1.fileHeaderSize) else { return }
        do {
            if let sealed = try Committer.sealLeftover(journal) { report.sealed = sealed.name.relativePath(in: sealed.replica) }
        } catch {
            switch error {
            case .locked(_, let holder):
                report.sealSkipped = "a recorder (\(holder)) holds the writer lock: publishing only what it has sealed"
            default:
                report.sealSkipped = "could not seal the open segment: \(error)"
            }
        }
    }

    /// Compacts what this journal writes before publishing (under the lock this sync holds), so
    /// that a target receives covers rather than runs of small files (docs/SYNC.md, "Covers").
    private func compact(_ report: inout ReconcileReport) {
        guard journal.isJournal else { return }
        let compaction = Committer.compact(journal)
        report.compacted += compaction.covers.compactMap { cover in cover.name.map { $0.relativePath(in: cover.replica) } }
        report.retired += compaction.retired.map { $0.retired.relativePath(in: $0.replica) }
    }

    /// `exchangeOnce`, again while the target changed under it: a file that vanished from the
    /// listing beside the cover that replaced it (another machine compacted meanwhile) is read
    /// through that cover in the next pass, not left for the next sync. A sync that ends
    /// holds every event the target held when it began: what a revocation's cut is taken from.
    private func exchange(with transport: Transport, key: String, publish: Bool, report: inout ReconcileReport) async throws(SyncError) {
        var namedSeqMax: [ReplicaID: UInt64] = [:]
        for _ in 0..<3 {
            let pass = try await exchangeOnce(with: transport, key: key, publish: publish, report: &report)
            namedSeqMax.merge(pass.namedSeqMax, uniquingKeysWith: max)
            guard pass.coverAppeared else { break }
        }
        summarise(&report, namedSeqMax: namedSeqMax)
    }

    /// One listing, then its three steps (`ExchangePass`): plan what to fetch, fetch and import
    /// it, publish what the target lacks. Returns whether a file vanished beside a cover this
    /// pass did not list (list again to read it), and the highest seq each replica's file
    /// names reached.
    private func exchangeOnce(
        with transport: Transport, key: String, publish: Bool, report: inout ReconcileReport
    ) async throws(SyncError) -> (coverAppeared: Bool, namedSeqMax: [ReplicaID: UInt64]) {
        removeOwnTemporaries()
        report.rejected += journal.upgradeLegacyNames()
        var pass = try await ExchangePass(engine: self, transport: transport, key: key, publish: publish, report: &report)
        defer { pass.cache.save() }
        let wanted = pass.plan(&report)
        if !wanted.isEmpty { try await pass.fetchAndImport(wanted, &report) }
        try await pass.repairDamagedHere(&report)
        if publish { try await pass.publishWhatTheTargetLacks(&report) }
        return (pass.coverAppeared, pass.namedSeqMax)
    }

    /// Removes from a shared folder the files this journal retired whose cover is there too,
    /// read and verified now (docs/SYNC.md, "Covers"). Whoever lacks the cover can still fetch
    /// it, and it holds every event of the file removed, sealed by the same key: nothing a
    /// machine could still need leaves the folder.
    func removeCoveredFiles(
        _ remote: TreeListing, log coverLog: CoverLog, from folder: String, alsoThere published: Set<String>, held: Set<String>,
        shown: (TreeListing.File) -> String, report: inout ReconcileReport
    ) {
        guard !coverLog.isEmpty else { return }
        let there = remote.segmentKeys.union(published)
        var verified: [String: Bool] = [:]
        for file in remote.files {
            guard case .segment(let name) = file.classification, name.identifiesContents,
                  let cover = coverLog.finalCover(of: file.relativePath), cover != file.relativePath,
                  there.contains(cover), held.contains(cover), !held.contains(file.relativePath),
                  let coverName = SegmentName(fileName: String(cover.dropFirst(33)))
            else { continue }
            let sound = verified[cover] ?? (SegmentImporter.verifyFile(at: FileSystem.join(folder, cover), replica: file.replica, name: coverName) == nil)
            verified[cover] = sound
            guard sound else { continue }
            do throws(IOError) {
                let directory = try DirectoryHandle.open(file.replica.hex, beneath: folder)
                try directory.removeFile(file.name)
                try directory.sync()
                report.removedFromTarget.append(shown(file))
            } catch {
                continue
            }
        }
    }

    /// Per-replica holdings and gaps from names, plus dups and forks where imported segments
    /// overlap ones already held (decoding only those).
    private func summarise(_ report: inout ReconcileReport, namedSeqMax: [ReplicaID: UInt64]) {
        let listing = journal.listSealed()
        var byReplica: [ReplicaID: [JournalDirectory.SealedFile]] = [:]
        for file in listing.sealed { byReplica[file.replica, default: []].append(file) }
        let importedKeys = Set(report.imported)
        for (replica, files) in byReplica {
            let slot = report.state(replica)
            report.replicas[slot].segments = files.count
            let sorted = files.sorted { $0.name < $1.name }
            let held = SeqRanges(sorted.map { $0.name.firstSeq...$0.name.lastSeq })
            report.replicas[slot].ranges = held.ranges
            report.replicas[slot].gaps = held.gaps(through: max(held.highest ?? 0, namedSeqMax[replica] ?? 0))

            // Overlaps that involve a newly imported file: decode just those.
            let fresh = sorted.filter { importedKeys.contains($0.name.relativePath(in: replica)) }
            let freshNames = Set(fresh.map(\.name))
            func overlap(_ a: JournalDirectory.SealedFile, _ b: JournalDirectory.SealedFile) -> Bool {
                a.name != b.name && a.name.firstSeq <= b.name.lastSeq && b.name.firstSeq <= a.name.lastSeq
            }
            // Every file in an overlap where at least one side arrived in this run.
            let overlapping = sorted.filter { file in
                sorted.contains { other in
                    overlap(file, other) && (freshNames.contains(file.name) || freshNames.contains(other.name))
                }
            }
            guard !overlapping.isEmpty else { continue }
            var set = SegmentSet()
            for file in overlapping { set.add(sealed: file) }
            var replay = ReplayReport()
            Replay.forEachUniqueEvent(set, report: &replay) { _ in }
            report.replicas[slot].duplicateEvents += replay.duplicateEvents
            report.replicas[slot].forks += replay.forks.map(\.seq)
        }
        report.replicas.removeAll { state in
            state.segments == 0 && state.imported == 0 && state.published == 0 && state.duplicateSegments == 0
        }
    }

    /// A complete file in a shared folder whose bytes do not match its version 2 name can never
    /// be imported, and a machine holding the right bytes never looks at it again (it holds the
    /// name): the name is dead until someone moves the file. Sync moves it aside, renamed, never
    /// deleted, so that holders publish the right bytes at their next sync. Only when the name
    /// proves the bytes are wrong (SHA-256, not a short copy still arriving), the file has not
    /// changed since it was read, and it has not been written for a minute.
    func moveAsideDamagedCopy(
        _ file: TreeListing.File, name: SegmentName, problem: Problem, folder: String, readAs: FileIdentity?
    ) -> String? {
        guard name.identifiesContents, problem.kind == .corrupt, let readAs else { return nil }
        let path = FileSystem.join(folder, file.relativePath)
        let ageNanoseconds = ProcessInfoLite.wallClockMilliseconds() * 1_000_000 - file.modified
        guard ageNanoseconds > 60_000_000_000, FileIdentity.of(path) == readAs else { return nil }
        let aside = FileClassifier.damagedPrefix + file.name + "." + ProcessInfoLite.hostName + "." + String(ProcessInfoLite.processID)
        let target = FileSystem.join(folder, file.replica.hex, aside)
        do throws(IOError) {
            try FileSystem.rename(path, to: target)
            try FileSystem.syncDirectory(FileSystem.join(folder, file.replica.hex))
        } catch {
            return nil
        }
        return aside
    }

    /// Temporaries this machine left in its own journal by crashing mid-copy, and staging
    /// folders of syncs and publishes that are gone (`staging-<pid>` and `staging-<pid>-<hex>`
    /// of a dead pid; `staging` of older versions). Runs under the sync lock.
    private func removeOwnTemporaries() {
        journal.removeStaleTemporaries()
        for entry in (try? FileSystem.list(journal.localPath)) ?? [] where entry.kind == .directory {
            let stale: Bool
            if entry.name == "staging" {
                stale = true
            } else if entry.name.hasPrefix("staging-"),
                      let pid = entry.name.dropFirst("staging-".count).split(separator: "-").first.flatMap({ Int32($0) }) {
                stale = !ProcessInfoLite.isAlive(pid)
            } else {
                stale = false
            }
            if stale { FileSystem.removeTree(FileSystem.join(journal.localPath, entry.name)) }
        }
        guard let folders = try? FileSystem.list(journal.replicasPath) else { return }
        for folder in folders where folder.kind == .directory {
            let path = FileSystem.join(journal.replicasPath, folder.name)
            guard let files = try? FileSystem.list(path) else { continue }
            for file in files where file.kind == .file && AtomicCopy.isStale(file.name) {
                try? FileSystem.remove(FileSystem.join(path, file.name))
            }
        }
    }
}

/// One sync or merge per journal at a time, and none during a compaction: `SealedFilesLock`
/// (an exclusive `flock(2)` on `local/sync.lock`, never stale), waited for up to a few seconds.
struct SyncLock {
    let held: SealedFilesLock

    static func acquire(_ journal: JournalDirectory, waitingUpTo seconds: Double) throws(SyncError) -> SyncLock {
        let lock: SealedFilesLock?
        do { lock = try SealedFilesLock.acquire(journal, waitingUpTo: seconds) } catch {
            throw .io(error, doing: "cannot lock \(SealedFilesLock.path(journal))")
        }
        guard let lock else {
            let holder = (try? FileSystem.readFile(SealedFilesLock.path(journal))).map { String(decoding: $0.prefix(64), as: UTF8.self) } ?? ""
            throw .busy(pid: pid(in: holder))
        }
        return SyncLock(held: lock)
    }

    func release() { held.release() }

    static func pid(in text: String) -> Int32? {
        guard let line = text.split(separator: "\n").first, line.hasPrefix("pid ") else { return nil }
        return Int32(line.dropFirst(4))
    }
}
