import JournalFormat
import JournalKeys
import JournalPlatform

/// What a compaction did (or, in a dry run, would do).
public struct CompactionReport: Sendable {
    public struct Cover: Sendable {
        public var replica: ReplicaID
        /// The file written; nil in a dry run.
        public var name: SegmentName?
        public var seqRange: ClosedRange<UInt64>
        public var inputs: [SegmentName]
        public var events: Int
        public var bytesBefore: Int64
        public var bytesAfter: Int64
    }
    public var dryRun = false
    public var covers: [Cover] = []
    /// Files removed because a verified file covers them: every input of a cover, and files
    /// already covered (a compaction cut short, a cover that sync brought).
    public var retired: [CoverLog.Entry] = []
    /// Sealed files per replica written by this journal, before and after.
    public var filesBefore: [ReplicaID: Int] = [:]
    public var filesAfter: [ReplicaID: Int] = [:]
    public var bytesBefore: Int64 = 0
    public var bytesAfter: Int64 = 0
    /// Files left as they were, and why (damaged, sealed by another key, a fork).
    public var problems: [Problem] = []
    public var seconds = 0.0

    public init() {}
}

/// Rewrites runs of a replica's small sealed segments as one sealed segment, a *cover*, and
/// retires the files it covers (docs/FORMAT.md §16, invariant 14).
///
/// A journal compacts only replicas it writes: its own and the native replicas it hosts, with
/// the key that sealed their files, so a cover is trusted wherever its inputs were. Nothing is
/// retired before its cover is durable under its final name, has been read back and verified
/// against that name, and is known to hold exactly the retired file's events; the fact is
/// logged (`CoverLog`) before the file goes. A crash at any point leaves files whose events
/// are all still present (duplicates at worst), which the next run retires.
///
/// Runs under `SealedFilesLock` (the one sync takes): one rewriter of sealed files at a time.
public struct Compactor: Sendable {
    public let directory: JournalDirectory
    public var policy: CompactionPolicy
    /// Pairs found not to cover, shared with earlier passes of the same journal
    /// (`CompactionScheduler`); a new set by default.
    public let notCovering: NotCoveringPairs
    /// The journal's identity as its writer loaded it; read from the folder if nil.
    public let identity: JournalIdentity?

    /// A cover is never larger than this (inputs' bytes): well below the 1 GiB bound on a
    /// segment file (docs/FORMAT.md §12), and what one pass holds in memory.
    public static let maxCoverBytes: Int64 = 256 << 20

    public init(directory: JournalDirectory, policy: CompactionPolicy = .standard,
                identity: JournalIdentity? = nil, notCovering: NotCoveringPairs = NotCoveringPairs()) {
        self.directory = directory
        self.identity = identity
        self.policy = policy
        self.notCovering = notCovering
    }

    /// Plans and (unless `dryRun`) compacts every replica this journal writes. `only`: just
    /// these replicas (a writer compacting after its own seal).
    public func run(dryRun: Bool = false, only: Set<ReplicaID>? = nil) -> CompactionReport {
        let started = ProcessInfoLite.monotonicSeconds()
        var report = CompactionReport()
        report.dryRun = dryRun
        var index = LocalIndex.refresh(directory)
        var log: CoverLog?
        let trust = TrustedSegments.of(directory)
        let listing = directory.listSealed().sealed
        for (replica, signer) in writtenReplicas() where only?.contains(replica) ?? true {
            let files = listing.filter { $0.replica == replica }
            var job = ReplicaJob(directory: directory, replica: replica, signer: signer, trust: trust, policy: policy, notCovering: notCovering, dryRun: dryRun)
            job.run(files: files, index: &index, log: &log, report: &report)
        }
        if !dryRun, !report.retired.isEmpty || !report.covers.isEmpty {
            try? index.save(directory)
        }
        report.seconds = ProcessInfoLite.monotonicSeconds() - started
        return report
    }

    /// Retires the files of `replicas` (any replica, not only those it writes) that another
    /// file held here covers (`Covering.check`): what sync runs after it imported covers.
    public func retireCoveredFiles(of replicas: Set<ReplicaID>) -> CompactionReport {
        let started = ProcessInfoLite.monotonicSeconds()
        var report = CompactionReport()
        var index = LocalIndex.refresh(directory)
        var log: CoverLog?
        let trust = TrustedSegments.of(directory)
        let listing = directory.listSealed().sealed
        for replica in replicas.sorted() {
            var job = ReplicaJob(directory: directory, replica: replica, signer: nil, trust: trust, policy: policy, notCovering: notCovering, dryRun: false)
            job.compactsRuns = false
            job.run(files: listing.filter { $0.replica == replica }, index: &index, log: &log, report: &report)
        }
        if !report.retired.isEmpty { try? index.save(directory) }
        report.seconds = ProcessInfoLite.monotonicSeconds() - started
        return report
    }

    /// The replicas whose sealed files this journal writes, with the signer of those files:
    /// its own (as itself) and those it hosts (as their host); unsigned without a key.
    /// A key that is there and cannot be read seals no cover (the writers refuse it too): its
    /// replicas wait, uncompacted, until it can be read.
    func writtenReplicas() -> [(ReplicaID, SealSigner?)] {
        guard let identity = identity ?? (try? directory.loadIdentity()) else { return [] }
        var result: [(ReplicaID, SealSigner?)] = [(identity.replica, identity.replicaSigner)]
        guard let hostSigner = try? identity.hostSigner() else { return result }
        for (replica, _) in directory.hostedSegments() where replica != identity.replica {
            result.append((replica, hostSigner))
        }
        return result
    }
}

/// One replica's compaction.
private struct ReplicaJob {
    let directory: JournalDirectory
    let replica: ReplicaID
    let signer: SealSigner?
    let trust: TrustedSegments?
    let policy: CompactionPolicy
    let notCovering: NotCoveringPairs
    let dryRun: Bool
    /// False: only files already covered are retired; no cover is written.
    var compactsRuns = true

    mutating func run(files listed: [JournalDirectory.SealedFile], index: inout LocalIndex, log: inout CoverLog?, report: inout CompactionReport) {
        var files = listed.filter { $0.name.identifiesContents }
        report.filesBefore[replica] = listed.count
        report.bytesBefore += listed.reduce(0) { $0 + $1.size }
        // 1. Files another file covers: a cover whose inputs are still here (a run cut short),
        //    or one sync brought. The widest cover wins; of equal ranges the smaller name.
        //    A cover that fails the check (a fork, a forged or quarantined file) does not block
        //    the next candidate, and is not checked again by this journal's later passes.
        var redundant: [(file: JournalDirectory.SealedFile, covers: [JournalDirectory.SealedFile])] = []
        for file in files {
            let covers = files.filter { candidate in
                Covering.covers(candidate.name, file.name)
                    && index.entries[candidate.name.relativePath(in: replica)]?.valid != false
                    && !notCovering.contains(candidate.name, file.name, replica: replica)
            }
            if !covers.isEmpty { redundant.append((file, covers.sorted { Covering.widerFirst($0.name, $1.name) })) }
        }
        var removed = Set<SegmentName>()
        for (file, covers) in redundant where !dryRun {
            for cover in covers where !removed.contains(cover.name) {
                if retireCovered(file, by: cover, index: &index, log: &log, report: &report) {
                    removed.insert(file.name)
                    break
                }
            }
        }
        // In a dry run, what would be retired; otherwise what was (a file whose every cover
        // failed the check stays, and may still be compacted with its neighbours).
        let gone = dryRun ? Set(redundant.map(\.file.name)) : removed
        files.removeAll { gone.contains($0.name) }
        // 2. Chains: adjacent files (each starts right after the one before) that verified.
        files.sort { $0.name.firstSeq < $1.name.firstSeq }
        var chains: [[JournalDirectory.SealedFile]] = []
        for file in files {
            let entry = index.entries[file.name.relativePath(in: replica)]
            guard entry?.valid == true else { chains.append([]); continue }
            if let last = chains.last?.last, last.name.lastSeq &+ 1 == file.name.firstSeq {
                chains[chains.count - 1].append(file)
            } else {
                chains.append([file])
            }
        }
        for chain in chains where chain.count > 1 && compactsRuns {
            let counts = chain.map { index.entries[$0.name.relativePath(in: replica)]?.eventCount ?? 0 }
            for run in policy.runs(eventCounts: counts) {
                compact(Array(chain[run]), index: &index, log: &log, report: &report)
            }
        }
        let after = dryRun ? [] : directory.listSealed(replica)
        report.filesAfter[replica] = dryRun
            ? listed.count - report.covers.filter { $0.replica == replica }.reduce(0) { $0 + $1.inputs.count - 1 } - gone.count
            : after.count
        report.bytesAfter += dryRun
            ? listed.reduce(0) { $0 + $1.size } - report.covers.filter { $0.replica == replica }.reduce(0) { $0 + $1.bytesBefore }
            : after.reduce(0) { $0 + $1.size }
    }

    /// Appends to `local/covers`, read first if this run has not read it yet (most runs
    /// retire nothing, and a sync with nothing to do should not parse it).
    private func appendToLog(_ entries: [CoverLog.Entry], log: inout CoverLog?) throws(IOError) {
        var loaded = log ?? CoverLog.load(directory)
        try loaded.append(entries, to: directory)
        log = loaded
    }

    /// Rewrites `run` as one file; inputs that cannot be part of it split the run.
    private mutating func compact(_ run: [JournalDirectory.SealedFile], index: inout LocalIndex, log: inout CoverLog?, report: inout CompactionReport) {
        var scans: [(file: JournalDirectory.SealedFile, scan: ScannedSegment)] = []
        func finishPiece() {
            if scans.count > 1 { write(scans, index: &index, log: &log, report: &report) }
            scans.removeAll()
        }
        for file in run {
            let scan = SegmentScanner.scan(path: file.path, sealed: true)
            if let problem = unusable(scan, file: file) {
                report.problems.append(problem)
                finishPiece()
                continue
            }
            if let first = scans.first?.scan.header?.version, first != scan.header?.version { finishPiece() }
            scans.append((file, scan))
        }
        finishPiece()
    }

    /// Why `scan` cannot be an input of a cover this journal seals, if it cannot.
    private func unusable(_ scan: ScannedSegment, file: JournalDirectory.SealedFile) -> Problem? {
        func refused(_ reason: String) -> Problem {
            Problem(.ignored, file: file.path, replica: replica, seqRange: file.name.firstSeq...file.name.lastSeq,
                    reason: "not compacted: " + reason)
        }
        if case .failure(let problem) = SegmentImporter.verify(scan, path: file.path, replica: replica, claimedName: file.name) {
            return refused("it does not verify (\(problem.reason))")
        }
        if let trust, let quarantine = trust.judge(scan, path: file.path, replica: replica) {
            return refused("quarantined (\(quarantine.reason))")
        }
        guard let header = scan.header else { return refused("no header") }
        if let signer {
            guard let seal = scan.seal, seal.publicKey == signer.key.publicKey, seal.role == signer.role,
                  FormatVersion.signed(bodyCoding: header.version) != nil
            else { return refused("sealed by another key or role than this journal's, which would have to vouch for the cover") }
            // A forged seal naming this journal's key would otherwise come out of the cover signed.
            guard Covering.sealVerifies(scan, replica: replica) else { return refused("its seal's signature does not verify") }
        } else if scan.seal != nil {
            return refused("a signed file in a journal without a key (it could not sign the cover)")
        }
        return nil
    }

    private mutating func write(_ inputs: [(file: JournalDirectory.SealedFile, scan: ScannedSegment)],
                                index: inout LocalIndex, log: inout CoverLog?, report: inout CompactionReport) {
        let first = inputs[0].file.name.firstSeq
        let last = inputs[inputs.count - 1].file.name.lastSeq
        let bytesBefore = inputs.reduce(Int64(0)) { $0 + $1.file.size }
        let events = inputs.reduce(0) { $0 + $1.scan.eventCount }
        var cover = CompactionReport.Cover(replica: replica, name: nil, seqRange: first...last, inputs: inputs.map(\.file.name),
                                           events: events, bytesBefore: bytesBefore, bytesAfter: 0)
        guard bytesBefore <= Compactor.maxCoverBytes else {
            report.problems.append(Problem(.ignored, file: inputs[0].file.path, replica: replica, seqRange: first...last,
                                           reason: "not compacted: \(bytesBefore) bytes would exceed the cover bound of \(Compactor.maxCoverBytes)"))
            return
        }
        guard !dryRun else {
            report.covers.append(cover)
            return
        }
        let version = inputs[0].scan.header?.version ?? FormatVersion.current
        var builder = SealedSegmentBuilder(replica: replica, bodyVersion: FormatVersion.bodyCoding(version), signer: signer,
                                           copyingBlocksOf: FormatV1.sealedBlockTargetEvents / 2)
        for input in inputs {
            if let problem = builder.add(input.scan) {
                report.problems.append(problem)
                return
            }
        }
        let bytes = builder.finish()
        let name = SegmentName(firstSeq: first, lastSeq: last, contents: bytes)
        let path = directory.segmentPath(replica, name)
        // Verified before anything is logged: the cover holds exactly the inputs' events.
        let built = SegmentScanner.scan(bytes: bytes, path: path, sealed: true)
        guard case .success = SegmentImporter.verify(built, path: path, replica: replica, claimedName: name),
              Covering.sameEvents(inputs.map(\.scan), as: built, over: first...last) else {
            report.problems.append(Problem(.corrupt, file: path, replica: replica, seqRange: first...last,
                                           reason: "the cover built does not hold exactly its inputs' events; nothing retired"))
            return
        }
        let entries = inputs.map { CoverLog.Entry(replica: replica, retired: $0.file.name, cover: name) }
        do throws(IOError) {
            // Logged before the cover appears: a reader that finds it next to its inputs knows
            // what it is (`LiveReplay`), and a crash here leaves a log entry for a file that
            // does not exist, which nothing trusts.
            try appendToLog(entries, log: &log)
            let folder = try DirectoryHandle.open("replicas/" + replica.hex, beneath: directory.root)
            do { try folder.writeNewFileAtomically(name: name.fileName, bytes: bytes) } catch where error.isExists {}
            // Read back: what is on disk under the name is what was verified. If it is not,
            // the file is no cover (its inputs stay) and must not be left to be taken for one.
            if let problem = SegmentImporter.verifyFile(at: path, replica: replica, name: name) {
                report.problems.append(problem)
                try? folder.removeFile(name.fileName)
                return
            }
            for input in inputs { try folder.removeFile(input.file.name.fileName) }
            try folder.sync()
        } catch {
            report.problems.append(Problem(.unreadable, file: path, replica: replica, seqRange: first...last,
                                           reason: "compaction stopped: \(error); every event is still in the files present"))
            return
        }
        for input in inputs { index.remove(replica, input.file.name) }
        index.add(LocalIndex.entry(for: built, replica: replica, name: name))
        cover.name = name
        cover.bytesAfter = Int64(bytes.count)
        report.covers.append(cover)
        report.retired += entries
    }

    /// Retires `file`, which `cover` covers by range, once it is shown to hold the same events.
    private func retireCovered(_ file: JournalDirectory.SealedFile, by cover: JournalDirectory.SealedFile,
                               index: inout LocalIndex, log: inout CoverLog?, report: inout CompactionReport) -> Bool {
        switch Covering.check(file, by: cover, trust: trust) {
        case .failure(let problem):
            report.problems.append(problem)
            notCovering.insert(cover.name, file.name, replica: replica)
            return false
        case .success(let entry):
            do throws(IOError) {
                try appendToLog([entry], log: &log)
                let folder = try DirectoryHandle.open("replicas/" + replica.hex, beneath: directory.root)
                try folder.removeFile(file.name.fileName)
                try folder.sync()
            } catch {
                report.problems.append(Problem(.unreadable, file: file.path, replica: replica, reason: "not retired: \(error)"))
                return false
            }
            index.remove(replica, file.name)
            report.retired.append(entry)
            return true
        }
    }
}

/// The rules of covering (docs/FORMAT.md §16.1), shared by compaction and sync.
public enum Covering {
    /// Whether a file named `cover` may cover one named `file` of the same replica: its range
    /// contains the other's and is wider, or equal with a smaller name (a total order, so two
    /// machines holding two covers of the same events keep the same one).
    public static func covers(_ cover: SegmentName, _ file: SegmentName) -> Bool {
        guard cover != file, cover.identifiesContents, file.identifiesContents,
              cover.firstSeq <= file.firstSeq, file.lastSeq <= cover.lastSeq else { return false }
        if cover.firstSeq == file.firstSeq && cover.lastSeq == file.lastSeq { return cover.fileName < file.fileName }
        return true
    }

    /// Whether a file's seal record, if it has one, verifies (an unsigned file passes).
    static func sealVerifies(_ scan: ScannedSegment, replica: ReplicaID) -> Bool {
        guard let seal = scan.seal else { return true }
        guard let contents = scan.sealedContents else { return false }
        return SegmentSeal.verify(seal, contents: contents, replica: replica) == .valid
    }

    /// Orders candidate covers: wider range first, then smaller name.
    static func widerFirst(_ a: SegmentName, _ b: SegmentName) -> Bool {
        let widthA = a.lastSeq - a.firstSeq, widthB = b.lastSeq - b.firstSeq
        return widthA != widthB ? widthA > widthB : a.fileName < b.fileName
    }

    /// Whether `file` may be retired for `cover`: both verify whole, were sealed by the same
    /// key in the same role (or are both unsigned), the cover is applied under `trust`, and
    /// the file's events are exactly the cover's over its range. The log entry if so.
    public static func check(_ file: JournalDirectory.SealedFile, by cover: JournalDirectory.SealedFile,
                             trust: TrustedSegments?) -> Result<CoverLog.Entry, Problem> {
        let replica = file.replica
        func kept(_ reason: String) -> Result<CoverLog.Entry, Problem> {
            .failure(Problem(.ignored, file: file.path, replica: replica, seqRange: file.name.firstSeq...file.name.lastSeq,
                             reason: "kept beside \(cover.name.fileName), which covers its seqs: " + reason))
        }
        guard covers(cover.name, file.name), cover.replica == replica else { return kept("not a cover of it") }
        let fileScan = SegmentScanner.scan(path: file.path, sealed: true)
        let coverScan = SegmentScanner.scan(path: cover.path, sealed: true)
        guard case .success = SegmentImporter.verify(fileScan, path: file.path, replica: replica, claimedName: file.name) else {
            return kept("it does not verify")
        }
        guard case .success = SegmentImporter.verify(coverScan, path: cover.path, replica: replica, claimedName: cover.name) else {
            return kept("the cover does not verify")
        }
        if let trust, trust.judge(coverScan, path: cover.path, replica: replica) != nil { return kept("the cover is quarantined") }
        guard fileScan.seal?.publicKey == coverScan.seal?.publicKey, fileScan.seal?.role == coverScan.seal?.role else {
            return kept("sealed by another key than the cover, so a machine that trusts one may not trust the other")
        }
        // Checked whatever the trust list says: a journal without one still must not retire a
        // signed file for a cover whose seal only names the same key (a machine that trusts
        // that key would quarantine the cover and lose the events).
        guard sealVerifies(fileScan, replica: replica), sealVerifies(coverScan, replica: replica) else {
            return kept("a seal's signature does not verify")
        }
        guard sameEvents([fileScan], as: coverScan, over: file.name.firstSeq...file.name.lastSeq) else {
            return .failure(Problem(.fork, file: file.path, replica: replica, seqRange: file.name.firstSeq...file.name.lastSeq,
                                    reason: "kept: its events differ from those of \(cover.name.fileName) for the same ids"))
        }
        return .success(CoverLog.Entry(replica: replica, retired: file.name, cover: cover.name))
    }

    /// Whether the events of `inputs` (in seq order) are, id by id and bit for bit, the events
    /// of `cover` over `range`, and `range` is exactly what the inputs hold.
    static func sameEvents(_ inputs: [ScannedSegment], as cover: ScannedSegment, over range: ClosedRange<UInt64>) -> Bool {
        var theirs = EventCursor(cover)
        var expected = range.lowerBound
        for input in inputs {
            var ours = EventCursor(input)
            while let event = ours.next() {
                guard event.id.seq == expected else { return false }
                var match: Event?
                while let candidate = theirs.next() {
                    if candidate.id.seq < expected { continue }
                    match = candidate
                    break
                }
                guard let match, identical(event, match) else { return false }
                expected += 1
            }
            if ours.failed { return false }
        }
        return !theirs.failed && expected == range.upperBound + 1
    }

    /// Every field, doubles by bit pattern, as `Event ==` compares them (widths too, through
    /// `Style ==`; the width check below repeats that).
    static func identical(_ a: Event, _ b: Event) -> Bool {
        guard a == b else { return false }
        if case .point(let x) = a.payload, case .point(let y) = b.payload {
            return x.style.width.bitPattern == y.style.width.bitPattern
        }
        return true
    }
}

/// The events of one scanned segment in seq order, one block decoded at a time.
struct EventCursor {
    private let scan: ScannedSegment
    private var blockIndex = 0
    private var buffer: [Event] = []
    private var position = 0
    private(set) var failed = false

    init(_ scan: ScannedSegment) { self.scan = scan }

    mutating func next() -> Event? {
        while position == buffer.count {
            guard !failed, blockIndex < scan.blocks.count, let replica = scan.replica else { return nil }
            let block = scan.blocks[blockIndex]
            blockIndex += 1
            let decoded = scan.bytes.withUnsafeBytes { bytes -> [Event]? in
                let frame = UnsafeRawBufferPointer(rebasing: bytes[block.offset..<(block.offset + block.frame.totalLength)])
                return try? BlockDecoder.events(frame: block.frame, frameBytes: frame, replica: replica)
            }
            guard let decoded else {
                failed = true
                return nil
            }
            buffer = decoded
            position = 0
        }
        defer { position += 1 }
        return buffer[position]
    }
}
