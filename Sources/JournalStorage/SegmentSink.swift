import Dispatch
import JournalCompression
import JournalFormat
import JournalKeys
import JournalPlatform

/// What making one batch durable did, handed from the background to the appending thread.
struct DurableOutcome: Sendable {
    /// Every event up to this seq is fsynced (nil: nothing new became durable).
    var durableSeq: UInt64?
    /// The sink's failure after the batch (a failed write poisons it).
    var failure: IOError?
    /// Set when a seal was tried: its problem, or nil once it succeeded.
    var sealProblem: SealProblem?
    var error: JournalError?
    /// Events in the open segment after the batch, and the count at which it is sealed.
    var openSegmentEvents = 0
    var sealDueAt = 0

    /// The name of the segment this batch's seal wrote, if it sealed one.
    var sealedName: SegmentName?
    /// The batch, handed back so that the writer appends into its buffer again (a new one
    /// of a few megabytes costs page faults for every flush).
    var spentBatch: [Event]?

    struct SealProblem: Sendable { var value: JournalError? }
}

/// One batch being made durable, run by whichever thread claims it first: the writer's
/// background thread, a caller that runs its own flush (`FlushTicket.run`), or the writer
/// when it needs the sink back before either did. `outcome` is written before `done` is
/// signalled and read only after `done.wait()` returned: the semaphore orders the two
/// accesses, so they never overlap, which is what makes the unchecked Sendable safe.
final class DurableJob: @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    var outcome = DurableOutcome()
    private let work: Locked<(@Sendable () -> DurableOutcome)?>

    /// The work runs with the test's fault hook in force where the job was made
    /// (`FaultInjection`), on whichever thread claims it.
    init(_ work: @escaping @Sendable () -> DurableOutcome) {
        let hook = FaultInjection.current
        self.work = Locked(hook == nil ? work : { FaultInjection.withThreadHook(hook, work) })
    }

    /// Runs the work on this thread unless another thread claimed it; returns at once then.
    func runUnlessClaimed() {
        guard let work = work.withLock({ work in defer { work = nil }; return work }) else { return }
        outcome = work()
        done.signal()
    }

    /// Runs the work here, or waits for the thread that claimed it; leaves `done` signalled
    /// for the writer's own wait.
    func waitUntilDone() {
        runUnlessClaimed()
        done.wait()
        done.signal()
    }
}

/// The second half of a body being deflated. `piece` is written before `done` is signalled
/// and read only after `done.wait()`: never at the same time, hence the unchecked Sendable.
final class PieceJob: @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    var piece: [UInt8]?
}

/// The key that signs a sink's seals, and in which role: a journal's own replica signs as
/// itself (`.replica`); a relay's journal signs the replicas it hosts as their `.host`.
struct SealSigner: Sendable {
    var key: ReplicaKey
    var role: SealRecord.Role
}

/// The writer's files: the open segment, its blocks, sealing.
///
/// Used by one thread at a time, never by two at once: by the writer's thread while no batch
/// is in flight, and by the background job of the one batch in flight otherwise. The writer
/// hands it over by submitting the job to its `WorkerThread` (the thread's mutex orders
/// everything before the hand-off before the job) and takes it back with `DurableJob.done.wait()` (which orders everything
/// the job did before what follows the wait); it touches nothing here in between (see
/// `JournalWriter.inFlight`). That ownership protocol is why the unchecked Sendable is safe.
final class SegmentSink: @unchecked Sendable {
    let directory: JournalDirectory
    var replica: ReplicaID
    /// The open segment's path: `local/open.sjo` for the journal's own replica, a hosted
    /// replica's under `local/hosted/` (`HostedReplicaWriter`).
    let openPath: String
    let options: WriterOptions
    var openSegment: FileDescriptor?
    var openSegmentEvents = 0
    /// The format version of the open segment: new ones get the current version; one a
    /// previous build left keeps its own until it is sealed (a file has one version).
    var openSegmentVersion = FormatVersion.current
    /// Set by the first failed write, fsync or rename: after it, the open segment may end in
    /// a torn block, so appending more could bury it mid-file. Every later call refuses until
    /// the journal is reopened, which cuts the torn tail (what SQLite and LevelDB do).
    var failure: IOError?
    /// After a failed automatic seal, the open segment's event count at which to try again.
    var nextSealAttempt = 0
    /// Who signs the segments this sink seals (docs/FORMAT.md §15); nil: an unsigned journal,
    /// whose seals stay version 2.
    var signer: SealSigner?

    /// The open segment's event count at which a flush seals it.
    var sealDueAt: Int { max(options.sealEveryEvents, nextSealAttempt) }

    init(directory: JournalDirectory, replica: ReplicaID, options: WriterOptions, openPath: String? = nil) {
        self.directory = directory
        self.replica = replica
        self.options = options
        self.openPath = openPath ?? directory.openSegmentPath
    }

    func closeFiles() {
        openSegment?.close()
        openSegment = nil
    }

    /// Appends `batch` as blocks and fsyncs; then, if asked, seals once the open segment
    /// is full (or, with `sealNow`, whatever it holds). Never throws: the outcome carries
    /// what the writer reports.
    func makeDurable(_ batch: [Event], sealIfDue: Bool, sealNow: Bool = false) -> DurableOutcome {
        var outcome = DurableOutcome()
        do throws(JournalError) {
            if !batch.isEmpty {
                try writeBlocks(batch)
                outcome.durableSeq = batch[batch.count - 1].id.seq
            }
            if (sealIfDue && openSegmentEvents >= sealDueAt) || (sealNow && openSegmentEvents > 0) {
                // What was appended is durable now; a seal that cannot be written (a full disk)
                // must not stop recording: the open segment keeps growing and sealing is retried.
                do {
                    outcome.sealedName = try seal()
                    outcome.sealProblem = .init(value: nil)
                    nextSealAttempt = 0
                } catch {
                    guard case .sealFailed = error else { throw error }
                    outcome.sealProblem = .init(value: error)
                    nextSealAttempt = openSegmentEvents + max(1, options.sealEveryEvents / 8)
                }
            }
        } catch {
            outcome.error = error
        }
        outcome.failure = failure
        outcome.openSegmentEvents = openSegmentEvents
        outcome.sealDueAt = sealDueAt
        return outcome
    }

    private func writeBlocks(_ batch: [Event]) throws(JournalError) {
        if let failure { throw .writerFailed(failure) }
        guard let openSegment else { throw .closed }
        var start = 0
        while start < batch.count {
            let end = min(start + FormatV1.sealedBlockTargetEvents, batch.count)
            // A large block is written at the sealing level, so that sealing can copy it as is.
            let level = end - start >= FormatV1.sealedBlockMinimumEvents ? SegmentEncoder.compressionLevel : options.openBlockCompressionLevel
            let block = Self.block(batch[start..<end], level: level, version: openSegmentVersion)
            do { try openSegment.writeAll(block) } catch { throw poison(error) }
            start = end
        }
        do { try openSegment.sync() } catch { throw poison(error) }
        openSegmentEvents += batch.count
    }

    /// Bodies at least this large are deflated in two halves at once.
    static let parallelDeflateMinimum = 128 * 1024
    /// The level of a halved body's coordinates and tables where the sealing level 6 was
    /// asked for (its other parts are coded by runs or at level 1: `EncodedBody`). Deflate is
    /// most of a bulk flush's cost. Measured on 300,000-point sessions of each precision
    /// (docs/PERFORMANCE.md, "Deflate by part"), against halves at level 5 each deflated as
    /// one stream: 0.971–0.994× the bytes, and `journal record` 0.86× the CPU.
    static let halvedSealingLevel: Int32 = 4

    /// One block frame, like `SegmentEncoder.block`, but a large body is deflated in two
    /// pieces on two cores: deflate is most of a flush's cost, and the second piece need not
    /// wait for the first (`RawDeflate.compressPiece`). The pieces meet at the end of a part
    /// (`DeflateSection.seam`); the frame is an ordinary one.
    static func block(_ events: ArraySlice<Event>, level: Int32, version: UInt16) -> [UInt8] {
        let encoded = SegmentEncoder.body(events, version: version)
        let body = encoded.bytes
        var maxLamport: UInt64 = 0
        for event in events where event.lamport > maxLamport { maxLamport = event.lamport }
        let firstSeq = events[events.startIndex].id.seq
        guard body.count >= parallelDeflateMinimum else {
            return SegmentEncoder.frame(body: encoded, eventCount: events.count, firstSeq: firstSeq, maxLamport: maxLamport, level: level)
        }
        let level = level == SegmentEncoder.compressionLevel ? halvedSealingLevel : level
        let sections = encoded.deflateSections(level: level)
        let half = DeflateSection.seam(sections, count: body.count)
        let second = PieceJob()
        // A leaf job (it waits on nothing), so one shared thread serves every writer.
        WorkerThread.shared.submit {
            second.piece = body.withUnsafeBytes { try? RawDeflate.compressPiece($0, range: half..<body.count, sections: sections) }
            second.done.signal()
        }
        let first = body.withUnsafeBytes { try? RawDeflate.compressPiece($0, range: 0..<half, sections: sections) }
        second.done.wait()
        guard let first, let rest = second.piece else {
            // A piece refused (zlib could not allocate its state, or ran out of room twice):
            // the body deflated as one stream on this thread instead.
            return SegmentEncoder.frame(body: body, eventCount: events.count, firstSeq: firstSeq, maxLamport: maxLamport, level: level)
        }
        return SegmentEncoder.frame(compressed: first + rest, rawCount: body.count, eventCount: events.count,
                                    firstSeq: firstSeq, maxLamport: maxLamport)
    }

    /// Moves the open segment's events (all written already) into a sealed, immutable segment.
    @discardableResult
    func seal() throws(JournalError) -> SegmentName? {
        if let failure { throw .writerFailed(failure) }
        guard openSegmentEvents > 0 else { return nil }
        let scan = SegmentScanner.scan(path: openPath, sealed: false)
        if let problem = scan.problems.first, problem.kind == .unreadable {
            // Not damage: the file could not be read now (no descriptor left, an I/O error).
            // Every event is still durable in it; the seal is tried again later. Reported as
            // damage, it stopped a relay's board for good, with `verify` finding nothing.
            throw .sealFailed(IOError.damaged("read", path: openPath, reason: problem.reason),
                              neededBytes: FileSystem.linkStatus(openPath)?.size ?? 0, available: FileSystem.availableBytes(directory.root))
        }
        guard scan.problems.isEmpty, let range = scan.seqRange, let header = scan.header, header.replica == replica else {
            throw .openSegmentCorrupt(scan.problems.first
                ?? Problem(.corrupt, file: openPath, reason: "no events to seal"))
        }
        // A version 3 (7) file codes its bodies as version 2 (6) does, so only a version 2 or 6
        // open segment can be sealed signed with its blocks copied as they are.
        let signer = FormatVersion.signed(bodyCoding: header.version) != nil ? self.signer : nil
        // Large blocks were already compressed at the sealing level when flushed: copy them.
        // Runs of small blocks (frequent flushes) are re-encoded into large ones.
        var builder = SealedSegmentBuilder(replica: replica, bodyVersion: header.version, signer: signer)
        if let problem = builder.add(scan) { throw .openSegmentCorrupt(problem) }
        let bytes = builder.finish()
        let name = SegmentName(firstSeq: range.lowerBound, lastSeq: range.upperBound, contents: bytes)
        var index = LocalIndex.stored(directory) ?? LocalIndex.refresh(directory)
        do {
            // Writing the sealed copy touches nothing the open segment holds: if it fails,
            // every event is still durable there and the writer can go on appending.
            // `replicas/` is shared: a symlink planted at `replicas/` or `replicas/<id>` after
            // the writer opened is refused here, never written through (by path, the seal
            // followed one planted while a relay ran).
            let folder = try DirectoryHandle.open("replicas/" + replica.hex, beneath: directory.root, create: true)
            try folder.replaceFileAtomically(name: name.fileName, bytes: bytes)
        } catch {
            throw .sealFailed(error, neededBytes: Int64(bytes.count), available: FileSystem.availableBytes(directory.root))
        }
        do {
            try resetOpenSegment()
            index.add(LocalIndex.Entry(replica: replica, name: name, size: Int64(bytes.count), eventCount: scan.eventCount,
                                       maxLamport: scan.maxLamport, valid: true))
            try index.save(directory)
        } catch {
            throw poison(error)
        }
        return name
    }

    /// Takes over the open segment a recovery scanned: cuts a torn tail (`cut`: to its valid
    /// prefix) and appends after what stays.
    /// What `recoverOpenSegment` found and did.
    struct OpenSegmentRecovery {
        /// The open segment as it was, when its header named this replica (nil: it was
        /// missing, or a header-only leftover that was reset).
        var scan: ScannedSegment?
        /// Bytes cut from its end (a crash tail), and the problem found there.
        var bytesCut: Int64 = 0
        var tailProblem: Problem?
        /// A sealed segment held exactly its events (a crash between a seal and the reset):
        /// it was reset.
        var discardedSealedCopy = false
        /// The last seq it holds now (nil: none).
        var lastSeq: UInt64?
    }

    /// Opens the open segment a previous run left (or creates it): a leftover no longer than
    /// a header (written and fsynced before any block) is reset; a torn tail is cut; one that
    /// a sealed segment already holds exactly is reset; damage before the tail, or a file of
    /// another replica longer than a header, is refused, since cutting it could destroy
    /// acknowledged events. `what` names the file in errors; `index` is asked only when a
    /// sealed copy may exist.
    func recoverOpenSegment(what: String, index: () -> LocalIndex, directory: JournalDirectory) throws(JournalError) -> OpenSegmentRecovery {
        var recovery = OpenSegmentRecovery()
        guard FileSystem.linkStatus(openPath) != nil else {
            do { try createOpenSegment() } catch { throw .io(error) }
            return recovery
        }
        let scan = SegmentScanner.scan(path: openPath, sealed: false)
        // Unread is not empty: a file that could not be read (a symlink, no permission, an
        // I/O error, past the size bound) may hold acknowledged events; never reset it.
        if let problem = scan.problems.first, problem.kind == .unreadable || problem.kind == .ignored {
            throw .openSegmentCorrupt(problem)
        }
        guard scan.header != nil, scan.replica == replica else {
            guard scan.bytes.count <= FormatV1.fileHeaderSize else {
                throw .openSegmentCorrupt(scan.problems.first ?? Problem(
                    .corrupt, file: openPath, offset: 0, replica: scan.replica,
                    reason: "\(what) belongs to replica \(scan.replica?.hex ?? "?"), not \(replica.hex)"))
            }
            recovery.bytesCut = Int64(scan.bytes.count)
            recovery.tailProblem = scan.problems.first
            do { try resetOpenSegment() } catch { throw .io(error) }
            return recovery
        }
        recovery.scan = scan
        if !scan.problems.isEmpty {
            guard scan.problemsAreOnlyAtTail else { throw .openSegmentCorrupt(scan.problems[0]) }
            recovery.bytesCut = Int64(scan.bytes.count - scan.validPrefixLength)
            recovery.tailProblem = scan.problems.first
        }
        if let range = scan.seqRange, JournalWriter.isSealed(scan, range: range, replica: replica, key: signer?.key, index: index(), directory: directory) {
            // Nothing else may reset it: names are only claims, and acknowledged events
            // outrank them.
            recovery.discardedSealedCopy = true
            do { try resetOpenSegment() } catch { throw .io(error) }
            return recovery
        }
        do { try adoptOpenSegment(scan, cut: recovery.bytesCut > 0) } catch { throw .io(error) }
        recovery.lastSeq = scan.seqRange?.upperBound
        return recovery
    }

    func adoptOpenSegment(_ scan: ScannedSegment, cut: Bool) throws(IOError) {
        let descriptor = try FileDescriptor.open(openPath, .readWrite)
        if cut {
            try descriptor.truncate(to: Int64(scan.validPrefixLength))
            try descriptor.sync()
        }
        try descriptor.seekToEnd()
        openSegment = descriptor
        openSegmentEvents = scan.eventCount
        openSegmentVersion = scan.header?.version ?? FormatVersion.current
    }

    func poison(_ error: IOError) -> JournalError {
        if failure == nil { failure = error }
        return .io(error)
    }

    func createOpenSegment() throws(IOError) {
        let folder = FileSystem.parent(of: openPath)
        try FileSystem.createDirectory(folder)
        let descriptor = try FileDescriptor.open(openPath, .readWrite)
        try descriptor.truncate(to: 0)
        try descriptor.writeAll(SegmentHeader(replica: replica).encoded())
        try descriptor.sync()
        try FileSystem.syncDirectory(folder)
        openSegment = descriptor
        openSegmentEvents = 0
        openSegmentVersion = FormatVersion.current
    }

    /// Replaces the open segment by an empty one atomically, so that a crash leaves either the
    /// old (already sealed, discarded on next open) or the new file.
    func resetOpenSegment() throws(IOError) {
        openSegment?.close()
        openSegment = nil
        try FileSystem.writeAtomically(SegmentHeader(replica: replica).encoded(), to: openPath)
        let descriptor = try FileDescriptor.open(openPath, .readWrite)
        try descriptor.seekToEnd()
        openSegment = descriptor
        openSegmentEvents = 0
        openSegmentVersion = FormatVersion.current
    }

}
