import JournalCommit
import JournalFormat
import JournalPlatform
import JournalStorage

/// One pass of a sync's exchange with its target (`SyncEngine.exchange`): what both sides
/// hold, listed once, then three steps that each read it. `plan` decides what to fetch from
/// names, sizes and the cache alone; `fetchAndImport` verifies every byte before it lands
/// under a final name; `publishWhatTheTargetLacks` verifies each local file again just
/// before it goes out.
struct ExchangePass {
    let engine: SyncEngine
    let transport: Transport
    /// How the target is named in the report.
    let key: String
    /// A sync target is written; a merge source only read.
    let publish: Bool
    var index: LocalIndex
    var cache: SyncCache
    let guardOwn: OwnReplicaGuard?
    let sharedClock: SharedCounter?
    let trust: TrustedSegments?
    let local: TreeListing
    let localKeys: Set<String>
    let localSizes: [String: Int64]
    let remote: TreeListing
    let coverLog: CoverLog
    /// The highest seq each replica's file names reached on the target.
    var namedSeqMax: [ReplicaID: UInt64] = [:]
    /// A listed file vanished beside a cover this pass did not list.
    var coverAppeared = false
    /// The target's copies of segments this journal holds that are not their name's bytes:
    /// replaced by this journal's (verified) copies in step 3.
    var damagedThere: [TreeListing.File] = []
    /// This journal's copies of segments the target holds that are not their name's bytes (a
    /// disk error, a copy cut short): the target's copies replace them once verified (step 2).
    var damagedHere: [TreeListing.File] = []
    /// This journal's own files, by `replica/name`.
    private let localFiles: [String: TreeListing.File]
    /// Files the target held at an earlier sync (a verdict was kept for each) that its
    /// listing now lacks: one this journal publishes again was lost there.
    private let goneFromTarget: Set<String>
    /// `SyncCache`'s key for verdicts about this journal's own files (no target is named so).
    static let ownFilesKey = "(this journal)"

    private var journal: JournalDirectory { engine.journal }

    init(engine: SyncEngine, transport: Transport, key: String, publish: Bool, report: inout ReconcileReport) async throws(SyncError) {
        self.engine = engine
        self.transport = transport
        self.key = key
        self.publish = publish
        let journal = engine.journal
        index = LocalIndex.refresh(journal)
        cache = SyncCache(directory: journal)
        guardOwn = OwnReplicaGuard.current(journal, index: index)
        sharedClock = try? SharedCounter(path: journal.localPath + "/clock")
        trust = TrustedSegments.of(journal)
        local = TreeListing.scan(replicasPath: journal.replicasPath)
        let localKeys = local.segmentKeys
        self.localKeys = localKeys
        localSizes = Dictionary(local.files.map { ($0.relativePath, $0.size) }, uniquingKeysWith: { first, _ in first })
        localFiles = Dictionary(local.files.map { ($0.relativePath, $0) }, uniquingKeysWith: { first, _ in first })
        cache.prune(target: Self.ownFilesKey, listed: localKeys)
        engine.progress?("listing \(key)")
        let remote = try await transport.list()
        self.remote = remote
        // Read only when the target holds files this journal lacks: a no-op sync parses nothing.
        coverLog = remote.files.contains { !localKeys.contains($0.relativePath) } ? CoverLog.load(journal) : CoverLog()
        report.ignored += remote.ignored
        let listed = Set(remote.files.map(\.relativePath))
        goneFromTarget = cache.paths(of: key).subtracting(listed)
        cache.prune(target: key, listed: listed)
    }

    /// How a target file is named in the report.
    func shown(_ file: TreeListing.File) -> String { key + "/replicas/" + file.relativePath }

    /// What tells a target file's bytes apart, where the transport can see it.
    func identity(_ file: TreeListing.File) -> FileIdentity? {
        transport.localFolder.flatMap { FileIdentity.of(FileSystem.join($0, file.relativePath)) }
    }

    /// Step 1: what to fetch, decided from names, sizes and the cache alone.
    mutating func plan(_ report: inout ReconcileReport) -> [TreeListing.File] {
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
                    // Same name means same bytes, unless one copy is damaged or partial. This
                    // journal's, checked first: the target's copy replaces it (step 2).
                    if isDamagedHere(file.relativePath, name: name, report: &report) {
                        damagedHere.append(file)
                        continue
                    }
                    // The target's: a sync target gets this journal's copy over it (step 3), a
                    // merge source is only told.
                    if let held = localSizes[file.relativePath], held != file.size {
                        if publish {
                            damagedThere.append(file)
                        } else {
                            report.rejected.append(Problem(.incomplete, file: shown(file), replica: file.replica,
                                                           seqRange: name.firstSeq...name.lastSeq,
                                                           reason: "\(file.size) bytes where the segment has \(held): an incomplete or altered copy, left untouched"))
                        }
                    } else if publish, isDamagedSameSize(file, name: name, report: &report) {
                        damagedThere.append(file)
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
        return wanted
    }

    /// Whether this journal's copy of a segment is not its name's bytes: read and hashed once
    /// per version of the file (`SyncCache` under `ownFilesKey`; files this journal sealed,
    /// imported or published are checked then), so a sync reads each file once, not each time.
    private mutating func isDamagedHere(_ relativePath: String, name: SegmentName, report: inout ReconcileReport) -> Bool {
        guard let file = localFiles[relativePath] else { return false }
        let path = FileSystem.join(journal.replicasPath, relativePath)
        let fileIdentity = FileIdentity.of(path)
        if case .held? = cache.lookup(target: Self.ownFilesKey, file: file, identity: fileIdentity) { return false }
        report.bytesRead += file.size
        guard SegmentImporter.verifyFile(at: path, replica: file.replica, name: name) != nil else {
            cache.store(.held(relativePath), target: Self.ownFilesKey, file: file, identity: fileIdentity)
            return false
        }
        return true
    }

    /// Step 2 for `damagedHere`: the target's copies, fetched, verified against their names,
    /// and put in place of this journal's damaged ones (temporary, fsync, rename). One that
    /// does not verify changes nothing (it is damaged too: `journal verify` still names ours).
    mutating func repairDamagedHere(_ report: inout ReconcileReport) async throws(SyncError) {
        guard !damagedHere.isEmpty else { return }
        engine.progress?("repairing \(damagedHere.count) damaged segment(s) of this journal")
        let paths = try await transport.fetch(damagedHere)
        for file in damagedHere {
            guard case .segment(let name) = file.classification, let path = paths[file.relativePath] else { continue }
            report.bytesRead += file.size
            if let problem = SegmentImporter.verifyFile(at: path, replica: file.replica, name: name) {
                report.rejected.append(Problem(problem.kind, file: shown(file), replica: file.replica, seqRange: name.firstSeq...name.lastSeq,
                                               reason: "this journal's copy is damaged and so is the target's (\(problem.reason)): not repaired"))
                continue
            }
            do throws(IOError) {
                let bytes = try FileSystem.readFile(path)
                try DirectoryHandle.open(file.replica.hex, beneath: journal.replicasPath).replaceFileAtomically(name: name.fileName, bytes: bytes)
            } catch {
                throw .io(error, doing: "cannot repair \(file.relativePath) with the target's copy")
            }
            report.repairedHere.append(file.relativePath)
            rememberOwnIntact([file.relativePath])
        }
    }

    /// Whether the target's copy of a segment this journal holds, of the same size, is damaged.
    /// A folder's copy is read and verified against its name; an object store's MD5 (its
    /// listing's) is compared with this journal's copy's. Either is done once per version of
    /// the target's file (`SyncCache`, by what identifies its bytes); a store that reports no
    /// MD5 is compared by size only.
    private mutating func isDamagedSameSize(_ file: TreeListing.File, name: SegmentName, report: inout ReconcileReport) -> Bool {
        if let folder = transport.localFolder {
            guard let fileIdentity = identity(file) else { return false }
            if case .held? = cache.lookup(target: key, file: file, identity: fileIdentity) { return false }
            report.bytesRead += file.size
            guard SegmentImporter.verifyFile(at: FileSystem.join(folder, file.relativePath), replica: file.replica, name: name) != nil else {
                cache.store(.held(file.relativePath), target: key, file: file, identity: fileIdentity)
                return false
            }
            return true
        }
        guard let storeMD5 = file.storeMD5 else { return false }
        if case .held? = cache.lookup(target: key, file: file, identity: nil) { return false }
        // This journal's copy was verified against its name just before (`isDamagedHere`).
        guard let ours = try? ObjectHash.md5(ofFileAt: FileSystem.join(journal.replicasPath, file.relativePath)) else { return false }
        report.bytesRead += file.size
        guard ours == storeMD5 else { return true }
        cache.store(.held(file.relativePath), target: key, file: file, identity: nil)
        return false
    }

    /// Step 2: fetches `wanted` and imports it, verifying every byte before it lands under a
    /// final name.
    mutating func fetchAndImport(_ wanted: [TreeListing.File], _ report: inout ReconcileReport) async throws(SyncError) {
        engine.progress?("fetching \(wanted.count) segment(s)")
        let paths = try await transport.fetch(wanted)
        for (number, file) in wanted.enumerated() {
            engine.progress?("importing \(number + 1)/\(wanted.count)")
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
                // An object store cannot be looked at without listing it: list again (the
                // cover, if that is why, is read in the next pass).
                if transport.removesObjects { coverAppeared = true }
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
                rememberOwnIntact([canonical])
                report.importedEvents += entry.eventCount
                report.replicas[report.state(file.replica)].imported += 1
                // Known as held there, whatever its name: verified as read, and should the target
                // lose it later, sending it back counts as restoring it (`restoredOnTarget`), on a
                // machine that only ever fetched it too.
                cache.store(.held(canonical), target: key, file: file, identity: fileIdentity)
            case .alreadyPresent(let name):
                report.replicas[report.state(file.replica)].duplicateSegments += 1
                cache.store(.held(name.relativePath(in: file.replica)), target: key, file: file, identity: fileIdentity)
            case .rejected(var problem):
                problem.file = shown(file)
                if publish, let claimed, let folder = transport.localFolder,
                   let aside = engine.moveAsideDamagedCopy(file, name: claimed, problem: problem, folder: folder, readAs: fileIdentity) {
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
            let retirement = Committer.retireCovered(journal, of: touched)
            report.retired += retirement.retired.map { $0.retired.relativePath(in: $0.replica) }
        }
    }

    /// Step 3: publishes what the target lacks, each file verified now, against its name
    /// (invariant 6: never spread a damaged file; a verdict cached earlier could be about bytes
    /// that have changed since).
    mutating func publishWhatTheTargetLacks(_ report: inout ReconcileReport) async throws(SyncError) {
        let remoteKeys = remote.segmentKeys
        var outgoing: [String] = []
        var outgoingSizes: [String: Int64] = [:]
        // Listed again: segments just imported from conflict copies go out under their
        // canonical names too.
        let localNow = report.imported.isEmpty && report.repairedHere.isEmpty ? local : TreeListing.scan(replicasPath: journal.replicasPath)
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
            report.bytesRead += file.size
            if let refusal = engine.refusalToPublish(file, name: name) {
                report.rejected.append(refusal)
                continue
            }
            outgoing.append(file.relativePath)
            outgoingSizes[file.relativePath] = file.size
            rememberOwnIntact([file.relativePath])
        }
        if !outgoing.isEmpty {
            engine.progress?("publishing \(outgoing.count) segment(s)")
            let outcome = try await transport.publish(outgoing, from: journal.replicasPath)
            rememberIntact(outcome.sent)
            report.published += outcome.sent
            report.restoredOnTarget += outcome.sent.filter(goneFromTarget.contains)
            report.notPublished += outcome.refused
            for relative in outcome.sent {
                report.publishedBytes += outgoingSizes[relative] ?? 0
                if let replica = ReplicaID(hex: relative.prefix(32)) { report.replicas[report.state(replica)].published += 1 }
            }
        }
        try await replaceDamagedCopies(&report)
        let remoteSizes = Dictionary(remote.files.map { ($0.relativePath, $0.size) }, uniquingKeysWith: { first, _ in first })
        let sent = Set(report.published).union(report.replacedOnTarget)
        let stillDamaged = Set(damagedThere.map(\.relativePath)).subtracting(report.replacedOnTarget)
        for file in localNow.files {
            guard case .segment(let name) = file.classification, name.identifiesContents, !sent.contains(file.relativePath),
                  remoteSizes[file.relativePath] != file.size || stillDamaged.contains(file.relativePath) else { continue }
            report.lackingOnTarget.append(file.relativePath)
        }
        // Read again only if this sync retired files (it logged them).
        let log = report.retired.isEmpty ? coverLog : CoverLog.load(journal)
        if let folder = transport.localFolder {
            engine.removeCoveredFiles(remote, log: log, from: folder, alsoThere: Set(report.published), held: localNow.segmentKeys,
                               shown: shown, report: &report)
        } else if transport.removesObjects {
            await removeCoveredObjects(log: log, held: localNow.segmentKeys, sent: sent, report: &report)
        }
    }

    /// Rule 4 of docs/SYNC.md ("Covers") on an object store: an object this journal retired
    /// whose final cover it holds is deleted once the store's copy of that cover is known to
    /// be sound — this journal's copy verified against its name now, and the store's either
    /// sent by this sync (verified before it went) or listed with the same MD5. A store
    /// without MD5s keeps its covered objects (they cost bytes and fetches, never events).
    /// A deletion that fails is left for the next sync.
    private func removeCoveredObjects(log coverLog: CoverLog, held: Set<String>, sent: Set<String>, report: inout ReconcileReport) async {
        guard !coverLog.isEmpty else { return }
        let listed = Dictionary(remote.files.map { ($0.relativePath, $0) }, uniquingKeysWith: { first, _ in first })
        var sound: [String: Bool] = [:]
        var removable: [TreeListing.File] = []
        for file in remote.files {
            guard case .segment(let name) = file.classification, name.identifiesContents,
                  let cover = coverLog.finalCover(of: file.relativePath), cover != file.relativePath,
                  held.contains(cover), !held.contains(file.relativePath)
            else { continue }
            let verified = sound[cover] ?? isSoundInStore(cover, replica: file.replica, listed: listed[cover], sent: sent.contains(cover))
            sound[cover] = verified
            if verified { removable.append(file) }
        }
        guard !removable.isEmpty else { return }
        do throws(SyncError) {
            try await transport.removeObjects(removable.map(\.relativePath))
            report.removedFromTarget += removable.map(shown)
        } catch {
            engine.progress?("covered objects left in the store for the next sync: \(error)")
        }
    }

    private func isSoundInStore(_ cover: String, replica: ReplicaID, listed: TreeListing.File?, sent: Bool) -> Bool {
        guard let name = SegmentName(fileName: String(cover.dropFirst(33))),
              SegmentImporter.verifyFile(at: FileSystem.join(journal.replicasPath, cover), replica: replica, name: name) == nil
        else { return false }
        if sent { return true }
        guard let listed, let md5 = listed.storeMD5 else { return false }
        return (try? ObjectHash.md5(ofFileAt: FileSystem.join(journal.replicasPath, cover))) == md5
    }

    /// This journal's copies, each verified now, over the target's damaged ones (`damagedThere`).
    private mutating func replaceDamagedCopies(_ report: inout ReconcileReport) async throws(SyncError) {
        var replacing: [String] = []
        for file in damagedThere where !remote.unwritableFolders.contains(file.replica.hex) {
            guard case .segment(let name) = file.classification else { continue }
            let path = FileSystem.join(journal.replicasPath, file.relativePath)
            report.bytesRead += localSizes[file.relativePath] ?? 0
            guard SegmentImporter.verifyFile(at: path, replica: file.replica, name: name) == nil else { continue }
            replacing.append(file.relativePath)
        }
        guard !replacing.isEmpty else { return }
        engine.progress?("replacing \(replacing.count) damaged segment(s)")
        let outcome = try await transport.replace(replacing, from: journal.replicasPath)
        rememberIntact(outcome.sent)
        report.replacedOnTarget += outcome.sent
        report.notPublished += outcome.refused
    }

    /// Files just written to a folder target from verified copies: known intact as they are
    /// now, so the next sync does not read them back to check them (`isDamagedSameSize`).
    private mutating func rememberIntact(_ relativePaths: [String]) {
        guard let folder = transport.localFolder else { return }
        remember(relativePaths, in: folder, as: key)
    }

    /// This journal's files just verified (imported, repaired, about to be published): known
    /// intact as they are now, so `isDamagedHere` does not read them again.
    private mutating func rememberOwnIntact(_ relativePaths: [String]) {
        remember(relativePaths, in: journal.replicasPath, as: Self.ownFilesKey)
    }

    private mutating func remember(_ relativePaths: [String], in folder: String, as cacheKey: String) {
        for relative in relativePaths {
            let path = FileSystem.join(folder, relative)
            guard let status = FileSystem.linkStatus(path), let replica = ReplicaID(hex: relative.prefix(32)) else { continue }
            let name = String(relative.dropFirst(33))
            let file = TreeListing.File(replica: replica, relativePath: relative, name: name, size: status.size, modified: status.modified,
                                        classification: FileClassifier.classify(name))
            cache.store(.held(relative), target: cacheKey, file: file, identity: FileIdentity.of(path))
        }
    }
}
