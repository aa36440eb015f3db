import JournalFormat
import JournalPlatform

/// When the writer makes pending events durable on its own, and when it seals.
public struct WriterOptions: Sendable {
    /// Flush when this many events are pending.
    public var flushEveryEvents: Int
    /// Flush when the oldest pending event is this old (checked on each append).
    public var flushIntervalMilliseconds: Int64?
    /// Seal the open segment once it holds this many events.
    public var sealEveryEvents: Int
    /// Seal what is open when the writer closes, so that it can be shared.
    public var sealOnClose: Bool
    /// zlib level for the small blocks of the open segment (sealing always uses level 6).
    public var openBlockCompressionLevel: Int32

    public init(
        flushEveryEvents: Int = 32_768, flushIntervalMilliseconds: Int64? = 200,
        sealEveryEvents: Int = 262_144, sealOnClose: Bool = true, openBlockCompressionLevel: Int32 = 1
    ) {
        self.flushEveryEvents = max(1, flushEveryEvents)
        self.flushIntervalMilliseconds = flushIntervalMilliseconds
        self.sealEveryEvents = max(1, sealEveryEvents)
        self.sealOnClose = sealOnClose
        self.openBlockCompressionLevel = openBlockCompressionLevel
    }
}

/// What opening the writer found and repaired.
public struct RecoveryReport: Sendable, Equatable {
    /// Bytes cut from the end of the open segment (a crash tail).
    public var bytesCut: Int64 = 0
    public var tailProblem: Problem?
    /// The open segment had already been sealed before a crash and was reset: a sealed
    /// segment of this replica holds exactly its events.
    public var discardedSealedCopy = false
    /// This folder is a copy of a journal (invariant 9): the events its open segment held
    /// were sealed under the old replica id, and the writer now writes as a new one.
    public var identityChange: IdentityChange?

    public struct IdentityChange: Sendable, Equatable, CustomStringConvertible {
        public var previous: ReplicaID
        public var current: ReplicaID
        public var sealedFromCopy: SegmentName?

        public var description: String {
            "this journal folder is a copy of another (its identity file is not the one this folder was created with): "
                + "it now writes as new replica \(current.hex); events recorded before stay under \(previous.hex)"
        }
    }
}

/// Appends this journal's replica's events (invariant 2: the only writer, under an OS lock).
///
/// Events go to a pending buffer; `flush()` encodes them as one block, appends it to the open
/// segment and fsyncs: when it returns, they survive `kill -9` and power loss (invariant 5).
/// Sealing re-encodes the open segment into large blocks under its final immutable name.
public final class JournalWriter {
    public let directory: JournalDirectory
    /// This writer's replica; a copied journal folder takes a new one when opened.
    public private(set) var replica: ReplicaID
    public let options: WriterOptions
    public private(set) var recovery = RecoveryReport()

    /// The seq the next appended event gets.
    public private(set) var nextSeq: UInt64
    /// Every event up to this seq is durable.
    public private(set) var durableSeq: UInt64
    /// The highest Lamport clock this replica has seen or assigned.
    public private(set) var clock: UInt64
    /// Called with the new `durableSeq` each time a flush has made events durable.
    public var onDurable: ((UInt64) -> Void)?
    /// Set when an automatic seal failed (e.g. the disk is full): the events are durable in
    /// the open segment and recording goes on; the seal is tried again later.
    public private(set) var sealProblem: JournalError?

    /// The clock sync raises when it imports a segment, so that this writer's next event
    /// follows events that arrived while it runs (invariant 4).
    private var sharedClock: SharedCounter?
    /// Distinct events this writer knew of at open (its own and imported), for the clock
    /// plausibility bound (`ClockBound`).
    private var knownEventsAtOpen: UInt64 = 0
    private var appendedSinceOpen: UInt64 = 0
    /// After a failed automatic seal, the open segment's event count at which to try again.
    private var nextSealAttempt = 0

    private var lock: FileDescriptor?
    private var openSegment: FileDescriptor?
    /// Set by the first failed write, fsync or rename: after it, the open segment may end in
    /// a torn block, so appending more could bury it mid-file. Every later call refuses until
    /// the journal is reopened, which cuts the torn tail (what SQLite and LevelDB do).
    private var failure: IOError?
    private var openSegmentEvents = 0
    private var pending: [Event] = []
    private var pendingSince: Int64 = 0

    /// Opens (and recovers) the writer of `directory`'s replica, taking its lock.
    public init(directory: JournalDirectory, options: WriterOptions = WriterOptions()) throws(JournalError) {
        self.directory = directory
        self.options = options
        replica = try directory.identity()
        let lock = try Self.acquireLock(directory)
        self.lock = lock
        nextSeq = 1
        durableSeq = 0
        clock = 0
        do {
            try recover()
            try takeNewIdentityIfCopied()
            sharedClock = try? SharedCounter(path: directory.localPath + "/clock")
        } catch {
            lock.close()
            self.lock = nil
            openSegment?.close()
            openSegment = nil
            throw error
        }
    }

    deinit {
        openSegment?.close()
        lock?.close()
    }

    // MARK: Appending

    /// Appends one event and returns its id. Durable only after the next flush.
    @discardableResult
    public func append(_ payload: Payload) throws(JournalError) -> EventID {
        guard lock != nil else { throw .closed }
        if let failure { throw .writerFailed(failure) }
        do { try payload.validate() } catch { throw .invalidEvent(error) }
        guard nextSeq < FormatV1.maxSeq, clock + 1 < FormatV1.maxLamport else {
            throw .clockExhausted(seq: nextSeq, lamport: clock)
        }
        let now = ProcessInfoLite.wallClockMilliseconds()
        if pending.isEmpty { pendingSince = now }
        if let seen = sharedClock?.value, seen > clock { observe(lamport: seen) }
        appendedSinceOpen += 1
        clock += 1
        let id = EventID(replica: replica, seq: nextSeq)
        pending.append(Event(id: id, lamport: clock, wallTime: now, payload: payload))
        nextSeq += 1
        if pending.count >= options.flushEveryEvents
            || (options.flushIntervalMilliseconds.map { now - pendingSince >= $0 } ?? false) {
            try flush()
        }
        return id
    }

    /// Raises the clock past events seen from other replicas (invariant 4), up to the
    /// plausibility bound: a clock beyond it belongs to an event replay quarantines, and
    /// following it would let one crafted file exhaust this writer (docs/FORMAT.md §8.9).
    public func observe(lamport: UInt64) {
        let limit = ClockBound.limit(distinctEvents: knownEventsAtOpen + appendedSinceOpen)
        let plausible = min(lamport, limit, FormatV1.maxLamport - 2)
        if plausible > clock { clock = plausible }
    }

    /// Makes every appended event durable: one block appended to the open segment, fsynced.
    public func flush() throws(JournalError) {
        try writePending()
        if openSegmentEvents >= max(options.sealEveryEvents, nextSealAttempt) {
            // What was appended is durable now; a seal that cannot be written (a full disk)
            // must not stop recording: the open segment keeps growing and sealing is retried.
            do {
                try seal()
                sealProblem = nil
                nextSealAttempt = 0
            } catch {
                guard case .sealFailed = error else { throw error }
                sealProblem = error
                nextSealAttempt = openSegmentEvents + max(1, options.sealEveryEvents / 8)
            }
        }
    }

    private func writePending() throws(JournalError) {
        guard lock != nil else { throw .closed }
        if let failure { throw .writerFailed(failure) }
        guard !pending.isEmpty else { return }
        guard let openSegment else { throw .closed }
        var start = 0
        while start < pending.count {
            let end = min(start + FormatV1.sealedBlockTargetEvents, pending.count)
            // A large block is written at the sealing level, so that sealing can copy it as is.
            let level = end - start >= FormatV1.sealedBlockMinimumEvents ? SegmentEncoder.compressionLevel : options.openBlockCompressionLevel
            let block = SegmentEncoder.block(pending[start..<end], level: level)
            do { try openSegment.writeAll(block) } catch { throw poison(error) }
            start = end
        }
        do { try openSegment.sync() } catch { throw poison(error) }
        durableSeq = pending.last!.id.seq
        openSegmentEvents += pending.count
        pending.removeAll(keepingCapacity: true)
        onDurable?(durableSeq)
    }

    /// Flushes, then moves the open segment's events into a sealed, immutable segment.
    /// Returns its name, or nil if nothing was open.
    @discardableResult
    public func seal() throws(JournalError) -> SegmentName? {
        if let failure { throw .writerFailed(failure) }
        try writePending()
        guard openSegmentEvents > 0 else { return nil }
        let scan = SegmentScanner.scan(path: directory.openSegmentPath, sealed: false)
        guard scan.problems.isEmpty, let range = scan.seqRange, let header = scan.header, header.replica == replica else {
            throw .openSegmentCorrupt(scan.problems.first
                ?? Problem(.corrupt, file: directory.openSegmentPath, reason: "no events to seal"))
        }
        // Large blocks were already compressed at the sealing level when flushed: copy them.
        // Runs of small blocks (frequent flushes) are re-encoded into large ones.
        var bytes = header.encoded()
        var smallRun: [Event] = []
        for block in scan.blocks {
            if block.frame.eventCount >= FormatV1.sealedBlockMinimumEvents {
                bytes += SegmentEncoder.blocks(smallRun[...])
                smallRun.removeAll()
                bytes += scan.bytes[block.offset..<(block.offset + block.frame.totalLength)]
                continue
            }
            let decoded = scan.bytes.withUnsafeBytes { buffer -> Result<[Event], SegmentFormatError> in
                let frameBytes = UnsafeRawBufferPointer(rebasing: buffer[block.offset..<(block.offset + block.frame.totalLength)])
                do throws(SegmentFormatError) {
                    return .success(try BlockDecoder.events(frame: block.frame, frameBytes: frameBytes, replica: replica))
                } catch {
                    return .failure(error)
                }
            }
            switch decoded {
            case .success(let events): smallRun += events
            case .failure(let error):
                throw .openSegmentCorrupt(Problem(.corrupt, file: directory.openSegmentPath, offset: Int64(block.offset),
                                                  replica: replica, seqRange: block.seqRange, reason: error.description))
            }
        }
        bytes += SegmentEncoder.blocks(smallRun[...])
        let name = SegmentName(firstSeq: range.lowerBound, lastSeq: range.upperBound, contents: bytes)
        let folder = directory.replicaPath(replica)
        let finalPath = FileSystem.join(folder, name.fileName)
        var index = LocalIndex.refresh(directory)
        do {
            // Writing the sealed copy touches nothing the open segment holds: if it fails,
            // every event is still durable there and the writer can go on appending.
            if !FileSystem.isDirectory(folder) {
                try FileSystem.createDirectory(folder)
                try FileSystem.syncDirectory(directory.replicasPath)
            }
            try FileSystem.writeAtomically(bytes, to: finalPath)
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

    private func poison(_ error: IOError) -> JournalError {
        if failure == nil { failure = error }
        return .io(error)
    }

    /// Flushes, seals if the options say so, and releases the lock.
    public func close() throws(JournalError) {
        guard lock != nil else { return }
        if let failure {
            // Nothing more can be made durable; release the lock so that a reopen recovers.
            openSegment?.close()
            openSegment = nil
            lock?.close()
            lock = nil
            throw .writerFailed(failure)
        }
        defer {
            openSegment?.close()
            openSegment = nil
            lock?.close()
            lock = nil
        }
        try writePending()
        if options.sealOnClose {
            // A seal that cannot be written leaves every event durable in the open segment;
            // the caller is told (`sealFailed`), and the next writer or sync seals it.
            try seal()
        }
    }

    // MARK: Opening and recovery

    private static func acquireLock(_ directory: JournalDirectory) throws(JournalError) -> FileDescriptor {
        let lock: FileDescriptor
        do { lock = try FileDescriptor.open(directory.lockPath, .readWrite) } catch { throw .io(error) }
        do throws(IOError) {
            // A few short retries: another process may hold a copy of a just-closed lock
            // descriptor for the instant between its fork and exec.
            var attempt = 0
            while true {
                do throws(IOError) {
                    try lock.tryLockExclusive()
                    break
                } catch {
                    attempt += 1
                    guard error.isWouldBlock, attempt < 25 else { throw error }
                    ProcessInfoLite.sleep(milliseconds: 10)
                }
            }
        } catch {
            let holder = (try? FileSystem.readFile(directory.lockPath)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            lock.close()
            guard error.isWouldBlock else { throw .io(error) }
            let trimmed = holder.split(separator: "\n").first.map(String.init) ?? "unknown process"
            throw .locked(path: directory.lockPath, holder: trimmed)
        }
        do {
            // Who holds the lock, for the message another process prints. Informational only:
            // the flock is what excludes, and it dies with the process.
            try lock.truncate(to: 0)
            try lock.writeAll(Array("pid \(ProcessInfoLite.processID)\n".utf8))
        } catch {
            lock.close()
            throw .io(error)
        }
        return lock
    }

    private func recover() throws(JournalError) {
        // The clock must exceed everything this replica has seen (invariant 4); the local
        // index remembers each segment's highest clock so that this reads only new files.
        let index = LocalIndex.refresh(directory)
        var sealedLastSeq = index.lastSeq(of: replica)
        knownEventsAtOpen = index.distinctEvents
        observe(lamport: index.maxLamport)
        removeStaleTemporaries()

        let openPath = directory.openSegmentPath
        if !FileSystem.exists(openPath) {
            do { try createOpenSegment() } catch { throw .io(error) }
        } else {
            let scan = SegmentScanner.scan(path: openPath, sealed: false)
            if scan.header == nil || scan.header?.replica != replica {
                // The header is written and fsynced before any block, so only a file no longer
                // than a header can be a crash leftover; anything longer is damage or a
                // foreign file, and cutting it could destroy acknowledged events.
                guard scan.bytes.count <= FormatV1.fileHeaderSize else {
                    throw .openSegmentCorrupt(scan.problems.first ?? Problem(
                        .corrupt, file: openPath, offset: 0, replica: scan.header?.replica,
                        reason: "the open segment belongs to replica \(scan.header?.replica.hex ?? "?"), not \(replica.hex)"))
                }
                recovery.bytesCut = Int64(scan.bytes.count)
                recovery.tailProblem = scan.problems.first
                do { try resetOpenSegment() } catch { throw .io(error) }
            } else {
                if !scan.problems.isEmpty {
                    guard scan.problemsAreOnlyAtTail else { throw .openSegmentCorrupt(scan.problems[0]) }
                    recovery.bytesCut = Int64(scan.bytes.count - scan.validPrefixLength)
                    recovery.tailProblem = scan.problems.first
                }
                knownEventsAtOpen += UInt64(scan.eventCount)
                observe(lamport: scan.maxLamport)
                if let range = scan.seqRange, Self.isSealed(scan, range: range, replica: replica, index: index, directory: directory) {
                    // Crash after sealing but before the open segment was reset: a sealed
                    // segment holds exactly these events. Nothing else may reset it: names
                    // are only claims, and acknowledged events outrank them.
                    recovery.discardedSealedCopy = true
                    do { try resetOpenSegment() } catch { throw .io(error) }
                } else {
                    do {
                        let descriptor = try FileDescriptor.open(openPath, .readWrite)
                        if recovery.bytesCut > 0 {
                            try descriptor.truncate(to: Int64(scan.validPrefixLength))
                            try descriptor.sync()
                        }
                        try descriptor.seekToEnd()
                        openSegment = descriptor
                    } catch {
                        throw .io(error)
                    }
                    openSegmentEvents = scan.eventCount
                    sealedLastSeq = max(sealedLastSeq, scan.seqRange?.upperBound ?? 0)
                }
            }
        }
        nextSeq = sealedLastSeq + 1
        durableSeq = sealedLastSeq
    }

    /// Whether a sealed segment of this replica holds exactly the open segment's events: the
    /// seal of this very segment, written before a crash that came before the reset.
    private static func isSealed(
        _ open: ScannedSegment, range: ClosedRange<UInt64>, replica: ReplicaID, index: LocalIndex, directory: JournalDirectory
    ) -> Bool {
        let candidates = index.entries.values.filter {
            $0.replica == replica && $0.valid && $0.name.firstSeq == range.lowerBound && $0.name.lastSeq == range.upperBound
        }
        guard !candidates.isEmpty else { return false }
        let (events, problems) = open.allEvents()
        guard problems.isEmpty else { return false }
        for candidate in candidates {
            let sealed = SegmentScanner.scan(path: directory.segmentPath(replica, candidate.name), sealed: true)
            let (sealedEvents, sealedProblems) = sealed.allEvents()
            if sealedProblems.isEmpty && sealed.problems.isEmpty && sealedEvents == events { return true }
        }
        return false
    }

    /// A copied journal folder takes a new replica id before it writes (invariant 9). The
    /// events its open segment holds were acknowledged by the original's writer: they are
    /// sealed under the original id first, so that a copy made to move a journal loses none.
    private func takeNewIdentityIfCopied() throws(JournalError) {
        switch IdentityAnchor.check(directory) {
        case .same: return
        case .unanchored:
            do { try IdentityAnchor.record(directory) } catch { throw .io(error) }
        case .copied:
            let previous = replica
            let sealedFromCopy = openSegmentEvents > 0 ? try seal() : nil
            let fresh = ReplicaID.random()
            do {
                try FileSystem.writeAtomically(Array((fresh.hex + "\n").utf8), to: directory.identityPath)
                replica = fresh
                try IdentityAnchor.record(directory)
                try resetOpenSegment()
            } catch {
                throw poison(error)
            }
            nextSeq = 1
            durableSeq = 0
            recovery.identityChange = RecoveryReport.IdentityChange(previous: previous, current: fresh, sealedFromCopy: sealedFromCopy)
        }
    }

    private func createOpenSegment() throws(IOError) {
        try FileSystem.createDirectory(directory.localPath)
        let descriptor = try FileDescriptor.open(directory.openSegmentPath, .readWrite)
        try descriptor.truncate(to: 0)
        try descriptor.writeAll(SegmentHeader(replica: replica).encoded())
        try descriptor.sync()
        try FileSystem.syncDirectory(directory.localPath)
        openSegment = descriptor
        openSegmentEvents = 0
    }

    /// Replaces the open segment by an empty one atomically, so that a crash leaves either the
    /// old (already sealed, discarded on next open) or the new file.
    private func resetOpenSegment() throws(IOError) {
        openSegment?.close()
        openSegment = nil
        try FileSystem.writeAtomically(SegmentHeader(replica: replica).encoded(), to: directory.openSegmentPath)
        let descriptor = try FileDescriptor.open(directory.openSegmentPath, .readWrite)
        try descriptor.seekToEnd()
        openSegment = descriptor
        openSegmentEvents = 0
    }

    private func removeStaleTemporaries() {
        directory.removeStaleTemporaries()
        // Fixed-name temporaries of versions before unique temporaries: harmless now, but
        // clutter. Only a writer (this one holds the lock) ever wrote them.
        for leftover in ["index.tmp", "replica.tmp", "open.sjo.new", "sync-cache.tmp", "snapshots/latest.sjsnap.tmp"] {
            try? FileSystem.remove(FileSystem.join(directory.localPath, leftover))
        }
        let folder = directory.replicaPath(replica)
        guard let entries = try? FileSystem.list(folder) else { return }
        // `.tmp-<name>.sjs` is a seal an older version did not finish (the lock says no one
        // else seals here); `.tmp-<name>.<host>.<pid>[.<random>]` is a crashed process's.
        for entry in entries where entry.kind == .file
            && ((entry.name.hasPrefix(".tmp-") && entry.name.hasSuffix(".sjs")) || AtomicCopy.isStale(entry.name)) {
            try? FileSystem.remove(FileSystem.join(folder, entry.name))
        }
    }
}
