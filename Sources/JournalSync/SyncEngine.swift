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
        let transport: Transport
        switch target {
        case .directory(let path):
            try refuseSelf(path)
            transport = try DirectoryTransport(root: path, role: .target(create: create))
        case .rsync(let remote):
            transport = try await RsyncTransport(remote: remote, rsh: rsh, staging: stagingFolder, create: create)
        case .objectStore(let address):
            transport = RcloneTransport(address: address, staging: stagingFolder, create: create)
        }
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
    private var stagingFolder: String { journal.localPath + "/staging-" + String(ProcessInfoLite.processID) }

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
            let writer = try JournalWriter(directory: journal)
            let name = try writer.seal()
            try writer.close()
            if let name { report.sealed = name.relativePath(in: writer.replica) }
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
        let compaction = Compactor(directory: journal).run()
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

    /// One listing, fetch, import and publish. Returns whether a file vanished beside a cover
    /// this pass did not list (list again to read it), and the highest seq each replica's
    /// file names reached.
    private func exchangeOnce(
        with transport: Transport, key: String, publish: Bool, report: inout ReconcileReport
    ) async throws(SyncError) -> (coverAppeared: Bool, namedSeqMax: [ReplicaID: UInt64]) {
        var coverAppeared = false
        removeOwnTemporaries()
        report.rejected += journal.upgradeLegacyNames()
        var index = LocalIndex.refresh(journal)
        var cache = SyncCache(directory: journal)
        defer { cache.save() }
        let guardOwn = OwnReplicaGuard.current(journal, index: index)
        let sharedClock = try? SharedCounter(path: journal.localPath + "/clock")
        let trust = TrustedSegments.of(journal)
        let local = TreeListing.scan(replicasPath: journal.replicasPath)
        let localKeys = local.segmentKeys
        let localSizes = Dictionary(local.files.map { ($0.relativePath, $0.size) }, uniquingKeysWith: { first, _ in first })
        progress?("listing \(key)")
        let remote = try await transport.list()
        // Read only when the target holds files this journal lacks: a no-op sync parses nothing.
        let coverLog = remote.files.contains { !localKeys.contains($0.relativePath) } ? CoverLog.load(journal) : CoverLog()
        report.ignored += remote.ignored
        var namedSeqMax: [ReplicaID: UInt64] = [:]
        /// How a target file is named in the report.
        func shown(_ file: TreeListing.File) -> String { key + "/replicas/" + file.relativePath }

        /// What tells a target file's bytes apart, where the transport can see it.
        func identity(_ file: TreeListing.File) -> FileIdentity? {
            transport.localFolder.flatMap { FileIdentity.of(FileSystem.join($0, file.relativePath)) }
        }
        cache.prune(target: key, listed: Set(remote.files.map(\.relativePath)))

        // 1. Decide what to fetch, from names, sizes and the cache alone.
        var wanted: [TreeListing.File] = []
        for file in remote.files {
            // A merge source is read, never written, whatever it holds: only a sync target is
            // cleaned of this machine's crashed copies.
            if publish, let folder = transport.localFolder, AtomicCopy.isStale(file.name) {
                // Left by a sync of this machine that crashed mid-copy: ours to clean up (through
                // a handle, so that a folder swapped for a symlink is not followed).
                try? DirectoryHandle.open(file.replica.hex, beneath: folder).removeFile(file.name)
                continue
            }
            switch file.classification {
            case .foreign(let reason):
                report.ignored.append(Problem(.ignored, file: shown(file), replica: file.replica, reason: reason))
            case .segment(let name):
                if let guardOwn, let problem = guardOwn.refusal(replica: file.replica, name: name, path: shown(file)) {
                    report.rejected.append(problem)
                    continue
                }
                namedSeqMax[file.replica] = max(namedSeqMax[file.replica] ?? 0, name.lastSeq)
                // A file this journal retired: a file it holds was verified to hold exactly its
                // events (names are content hashes, so these are the bytes that were compared).
                if name.identifiesContents, !localKeys.contains(file.relativePath),
                   let cover = coverLog.finalCover(of: file.relativePath), localKeys.contains(cover) {
                    report.replicas[report.state(file.replica)].coveredSegments += 1
                    continue
                }
                // Only a version 2 name says which bytes a file holds; a version 1 name is
                // read like a conflict copy (its CRC-32 could be forged to match ours).
                if name.identifiesContents && localKeys.contains(file.relativePath) {
                    // Same name means same bytes, unless the other copy is damaged or partial.
                    if let held = localSizes[file.relativePath], held != file.size {
                        report.rejected.append(Problem(.incomplete, file: shown(file), replica: file.replica,
                                                       seqRange: name.firstSeq...name.lastSeq,
                                                       reason: "\(file.size) bytes where the segment has \(held): an incomplete or altered copy, left untouched"))
                    }
                    continue
                }
                fallthrough
            case .conflictCopy:
                if file.size > SegmentScanner.maxSegmentFileSize {
                    report.rejected.append(Problem(.ignored, file: shown(file), replica: file.replica,
                                                   reason: "\(file.size) bytes exceeds the segment bound of \(SegmentScanner.maxSegmentFileSize)"))
                    continue
                }
                switch cache.lookup(target: key, file: file, identity: identity(file)) {
                case .held(let canonical)? where localKeys.contains(canonical):
                    report.replicas[report.state(file.replica)].duplicateSegments += 1
                case .rejected(let kind, let reason)?:
                    report.rejected.append(Problem(kind, file: shown(file), replica: file.replica, reason: reason))
                default:
                    wanted.append(file)
                }
            }
        }

        // 2. Fetch and import, verifying every byte before it lands under a final name.
        if !wanted.isEmpty {
            progress?("fetching \(wanted.count) segment(s)")
            let paths = try await transport.fetch(wanted)
            for (number, file) in wanted.enumerated() {
                progress?("importing \(number + 1)/\(wanted.count)")
                guard let path = paths[file.relativePath], FileSystem.exists(path) else {
                    // Another machine may have cleaned the folder beside a cover (docs/SYNC.md,
                    // "Covers"): then the cover is there, and the next sync fetches it.
                    if case .segment(let name) = file.classification, let folder = transport.localFolder,
                       JournalDirectory(root: FileSystem.parent(of: folder)).listSealed(file.replica)
                           .contains(where: { Covering.covers($0.name, name) }) {
                        report.replicas[report.state(file.replica)].coveredSegments += 1
                        coverAppeared = true
                        continue
                    }
                    report.rejected.append(Problem(.unreadable, file: shown(file), replica: file.replica,
                                                   reason: "vanished before it could be copied"))
                    continue
                }
                var claimed: SegmentName? = nil
                if case .segment(let name) = file.classification { claimed = name }
                report.bytesRead += file.size
                // Taken before reading: a verdict is cached for the bytes that were read.
                let fileIdentity = identity(file)
                let outcome = SegmentImporter.importSegment(at: path, replica: file.replica, claimedName: claimed,
                                                            intoReplicas: journal.replicasPath, guardOwn: guardOwn,
                                                            sharedClock: sharedClock, trust: trust)
                switch outcome {
                case .imported(let name, let entry):
                    index.add(entry)
                    let canonical = name.relativePath(in: file.replica)
                    report.imported.append(canonical)
                    report.importedEvents += entry.eventCount
                    report.replicas[report.state(file.replica)].imported += 1
                    if claimed?.identifiesContents != true { cache.store(.held(canonical), target: key, file: file, identity: fileIdentity) }
                case .alreadyPresent(let name):
                    report.replicas[report.state(file.replica)].duplicateSegments += 1
                    cache.store(.held(name.relativePath(in: file.replica)), target: key, file: file, identity: fileIdentity)
                case .rejected(var problem):
                    problem.file = shown(file)
                    if publish, let claimed, let folder = transport.localFolder,
                       let aside = moveAsideDamagedCopy(file, name: claimed, problem: problem, folder: folder, readAs: fileIdentity) {
                        problem.reason += "; moved aside to \(aside) so that a machine holding the right bytes publishes them again"
                        report.rejected.append(problem)
                        continue
                    }
                    report.rejected.append(problem)
                    if problem.kind != .unreadable { cache.store(.rejected(problem.kind, problem.reason), target: key, file: file, identity: fileIdentity) }
                }
            }
            do throws(IOError) { try index.save(journal) } catch { throw .io(error, doing: "cannot save the local index") }
            // Files an imported cover holds are retired, and covers of equal range settle on
            // one (the smaller name): machines converge, and nothing goes back and forth.
            let touched = Set(report.imported.compactMap { ReplicaID(hex: $0.prefix(32)) })
            if !touched.isEmpty {
                let retirement = Compactor(directory: journal).retireCoveredFiles(of: touched)
                report.retired += retirement.retired.map { $0.retired.relativePath(in: $0.replica) }
            }
        }

        // 3. Publish what the target lacks, each file verified now, against its name (invariant
        //    6: never spread a damaged file; a verdict cached earlier could be about bytes that
        //    have changed since).
        if publish {
            let remoteKeys = remote.segmentKeys
            var outgoing: [String] = []
            var outgoingSizes: [String: Int64] = [:]
            // Listed again: segments just imported from conflict copies go out under their
            // canonical names too.
            let localNow = report.imported.isEmpty ? local : TreeListing.scan(replicasPath: journal.replicasPath)
            var refusedFolders = Set<String>()
            for file in localNow.files {
                guard case .segment(let name) = file.classification, name.identifiesContents,
                      !remoteKeys.contains(file.relativePath) else { continue }
                let folder = file.replica.hex
                if remote.unwritableFolders.contains(folder) {
                    // Invariant 8: a symlink where a replica folder belongs is never written through.
                    if refusedFolders.insert(folder).inserted {
                        report.notPublished.append(Problem(.ignored, file: key + "/replicas/" + folder, replica: file.replica,
                                                           reason: "not a folder (a symbolic link is never followed); nothing published there"))
                    }
                    continue
                }
                let path = FileSystem.join(journal.replicasPath, file.relativePath)
                report.bytesRead += file.size
                if let problem = SegmentImporter.verifyFile(at: path, replica: file.replica, name: name) {
                    report.rejected.append(Problem(problem.kind, file: path, offset: problem.offset, replica: file.replica,
                                                   seqRange: name.firstSeq...name.lastSeq,
                                                   reason: "this journal's copy does not verify (\(problem.reason)); not published"))
                    continue
                }
                outgoing.append(file.relativePath)
                outgoingSizes[file.relativePath] = file.size
            }
            if !outgoing.isEmpty {
                progress?("publishing \(outgoing.count) segment(s)")
                let outcome = try await transport.publish(outgoing, from: journal.replicasPath)
                report.published += outcome.sent
                report.notPublished += outcome.refused
                for relative in outcome.sent {
                    report.publishedBytes += outgoingSizes[relative] ?? 0
                    if let replica = ReplicaID(hex: relative.prefix(32)) { report.replicas[report.state(replica)].published += 1 }
                }
            }
            let remoteSizes = Dictionary(remote.files.map { ($0.relativePath, $0.size) }, uniquingKeysWith: { first, _ in first })
            let sent = Set(report.published)
            for file in localNow.files {
                guard case .segment(let name) = file.classification, name.identifiesContents,
                      !sent.contains(file.relativePath), remoteSizes[file.relativePath] != file.size else { continue }
                report.lackingOnTarget.append(file.relativePath)
            }
            if let folder = transport.localFolder {
                // Read again only if this sync retired files (it logged them).
                let log = report.retired.isEmpty ? coverLog : CoverLog.load(journal)
                removeCoveredFiles(remote, log: log, from: folder, alsoThere: Set(report.published), held: localNow.segmentKeys,
                                   shown: shown, report: &report)
            }
        }

        return (coverAppeared, namedSeqMax)
    }

    /// Removes from a shared folder the files this journal retired whose cover is there too,
    /// read and verified now (docs/SYNC.md, "Covers"). Whoever lacks the cover can still fetch
    /// it, and it holds every event of the file removed, sealed by the same key: nothing a
    /// machine could still need leaves the folder.
    private func removeCoveredFiles(
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
    private func moveAsideDamagedCopy(
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
    /// folders of syncs that are gone (`staging-<pid>` of a dead pid; `staging` of older
    /// versions). Runs under the sync lock.
    private func removeOwnTemporaries() {
        journal.removeStaleTemporaries()
        for entry in (try? FileSystem.list(journal.localPath)) ?? [] where entry.kind == .directory {
            let stale: Bool
            if entry.name == "staging" {
                stale = true
            } else if entry.name.hasPrefix("staging-"), let pid = Int32(entry.name.dropFirst("staging-".count)) {
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
