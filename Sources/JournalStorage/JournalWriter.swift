import Dispatch
import JournalFormat
import JournalKeys
import JournalPlatform

/// How the writer seals. When pending events are made durable is never the writer's own
/// decision: its owner (`Committer`, `Committer.Recording`) calls `flush`, `flushInBackground`,
/// `startFlush`, `seal` or `close`, by its policy of count, age and idle time.
public struct WriterOptions: Sendable {
    /// A flush seals the open segment once it would hold this many events.
    public var sealEveryEvents: Int
    /// Seal what is open when the writer closes, so that it can be shared.
    public var sealOnClose: Bool
    /// zlib level for the small blocks of the open segment (sealing always uses level 6).
    public var openBlockCompressionLevel: Int32

    public init(sealEveryEvents: Int = 262_144, sealOnClose: Bool = true, openBlockCompressionLevel: Int32 = 1) {
        self.sealEveryEvents = max(1, sealEveryEvents)
        self.sealOnClose = sealOnClose
        self.openBlockCompressionLevel = openBlockCompressionLevel
    }
}

/// A flush `JournalWriter.startFlush` took the pending events out for.
public struct FlushTicket: Sendable {
    let job: DurableJob
    /// Every event up to this seq is in the batch.
    public let throughSeq: UInt64

    /// Writes and fsyncs the batch on the calling thread (or waits for the writer, if it
    /// needed the batch done first). Blocks: meant for a thread that does nothing else,
    /// never for the one that appends.
    public func run() { job.waitUntilDone() }
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
///
/// The writer never flushes on its own (`WriterOptions`): its owner decides when. A flush
/// started with `flushInBackground()` runs on another core: encoding and deflating a block
/// costs far more than building its events, so the caller goes on appending (or parsing)
/// while the previous batch is encoded, written and fsynced. At most one batch is in flight;
/// the next flush, `seal()`, `close()` and reading `durableSeq` wait for it. Appending alone
/// only buffers: an owner that never flushes holds every event in memory until `close()`. Nothing is acknowledged before it is durable:
/// `durableSeq` and `onDurable` report a batch only once its blocks are fsynced, and an error
/// of a batch written in the background is thrown by the next call.
public final class JournalWriter {
    public let directory: JournalDirectory
    /// This writer's replica; a copied journal folder takes a new one when opened.
    public var replica: ReplicaID { identity.replica }
    /// Who the journal is (its replica, its keys), read once when the writer opened.
    public private(set) var identity: JournalIdentity
    public let options: WriterOptions
    public private(set) var recovery = RecoveryReport()

    /// The seq the next appended event gets.
    @exclusivity(unchecked) public private(set) var nextSeq: UInt64
    /// Every event up to this seq is durable. Waits for a batch being written in the background.
    public var durableSeq: UInt64 {
        collect()
        return acknowledgedSeq
    }
    private var acknowledgedSeq: UInt64
    /// The highest Lamport clock this replica has seen or assigned.
    @exclusivity(unchecked) public private(set) var clock: UInt64
    /// Segments this writer sealed since the last `takeSealedNames()`: a live board tells its
    /// own seals from files someone else put under its replica id.
    private var sealedNames: [SegmentName] = []

    /// Called with each segment this writer sealed, once sealed (a seal in the background: once
    /// its batch is collected): its owner schedules compaction (the committer).
    public var onSealed: ((SegmentName) -> Void)?

    private func noteSealed(_ name: SegmentName) {
        sealedNames.append(name)
        onSealed?(name)
    }

    public func takeSealedNames() -> [SegmentName] {
        defer { sealedNames.removeAll() }
        return sealedNames
    }

    /// Events not yet in a sealed segment (pending or in the open one), as of the last
    /// collected flush: what a seal would publish.
    public var unsealedEvents: Int { openSegmentEvents + pending.count }

    /// Of the events up to `seq`, those not yet in a sealed segment, as of the last collected
    /// flush. The open segment and the pending events are this writer's last ones, in seq
    /// order, so they are the unsealed seqs.
    public func unsealedEvents(through seq: UInt64) -> Int {
        let unsealed = UInt64(openSegmentEvents + pending.count)
        let firstUnsealed = nextSeq - unsealed
        return seq >= firstUnsealed ? Int(min(unsealed, seq - firstUnsealed + 1)) : 0
    }
    /// Called with the new `durableSeq` each time a flush has made events durable.
    public var onDurable: ((UInt64) -> Void)?
    /// Set when an automatic seal failed (e.g. the disk is full): the events are durable in
    /// the open segment and recording goes on; the seal is tried again later. A seal tried in
    /// the background shows here once its batch is collected.
    public private(set) var sealProblem: JournalError? {
        didSet { sealIsFailing = sealProblem != nil }
    }
    /// Whether `sealProblem` holds one: a check cheap enough for every line a recorder
    /// reads (reading the error itself copies it).
    public private(set) var sealIsFailing = false

    /// The clock sync raises when it imports a segment, so that this writer's next event
    /// follows events that arrived while it runs (invariant 4).
    private var sharedClock: SharedCounter?
    /// Distinct events this writer knew of at open (its own and imported), for the clock
    /// plausibility bound (`ClockBound`).
    private var knownEventsAtOpen: UInt64 = 0
    @exclusivity(unchecked) private var appendedSinceOpen: UInt64 = 0
    private var lock: FileDescriptor?
    /// The open segment and sealing. Touched by this thread only while `inFlight` is nil.
    private let sink: SegmentSink
    /// Where batches become durable, one at a time, off the appending thread.
    private let background = WorkerThread()
    /// The batch being made durable in the background, if any.
    private var inFlight: DurableJob?
    /// `sink.failure` as of the last collected batch (the sink itself may be busy).
    private var failure: IOError?
    /// An error of a background batch, thrown by the next call.
    private var deferredError: JournalError?
    // The per-event state `append` touches (with `nextSeq`, `clock`, `appendedSinceOpen`).
    // The writer is not Sendable, none of these is ever passed inout, and no access to one
    // spans a call out of the writer, so two accesses can never overlap; the runtime's
    // per-access exclusivity bookkeeping on them would be about 5% of `journal record`'s CPU.
    @exclusivity(unchecked) private var pending: [Event] = []
    /// The buffer of the last batch flushed in the background, emptied, for the next one.
    private var spareBuffer: [Event] = []
    @exclusivity(unchecked) private var pendingSince: Int64 = 0
    /// The sink's open-segment count and seal threshold as of the last collected batch.
    private var openSegmentEvents = 0
    private var sealDueAt = 0

    /// Opens (and recovers) the writer of `directory`'s replica, taking its lock.
    public init(directory: JournalDirectory, options: WriterOptions = WriterOptions()) throws(JournalError) {
        self.directory = directory
        self.options = options
        // `local/` is the writer's own: a symlink there (a folder copied with its links, or one
        // planted by anyone who can write beside the journal) would send the identity read,
        // the lock, the open segment and the index into whatever it points to, another
        // journal's own `local/` included, where this writer would take that journal's lock
        // and write under its identity.
        do { _ = try DirectoryHandle.open("local", beneath: directory.root) } catch { throw .io(error) }
        // An unreadable key refuses to write, naming the file (`JournalIdentity`).
        identity = try directory.loadIdentity()
        sink = SegmentSink(directory: directory, replica: identity.replica, options: options)
        sink.signer = identity.replicaSigner
        let lock = try Self.acquireLock(directory)
        self.lock = lock
        nextSeq = 1
        acknowledgedSeq = 0
        clock = 0
        do {
            try recover()
            try takeNewIdentityIfCopied()
            openSegmentEvents = sink.openSegmentEvents
            sealDueAt = sink.sealDueAt
            sharedClock = try? SharedCounter(path: directory.localPath + "/clock")
        } catch {
            Self.release(lock, of: directory)
            self.lock = nil
            sink.closeFiles()
            throw error
        }
    }

    deinit {
        // The lock must outlive any write in flight: another writer could otherwise open the
        // journal while this one still appends to its open segment.
        inFlight?.waitUntilDone()
        background.stop()
        sink.closeFiles()
        if let lock { Self.release(lock, of: directory) }
    }

    // MARK: Appending

    /// Appends one event and returns its id. Durable only after the next flush.
    @discardableResult
    public func append(_ payload: Payload) throws(JournalError) -> EventID {
        try appendEvent(payload).id
    }

    /// Appends one event and returns it as recorded (id, clock, wall time): what a live
    /// board folds at once. Durable only after the next flush. `arrivedAt` (ms since 1970)
    /// is when the event reached the caller, for one that read many at once (a chunk of
    /// input); the clock is read now without it.
    @discardableResult
    public func appendEvent(_ payload: Payload, arrivedAt: Int64? = nil) throws(JournalError) -> Event {
        try checkAppendable()
        do { try payload.validate() } catch { throw .invalidEvent(error) }
        guard nextSeq < FormatV1.maxSeq, clock + 1 < FormatV1.maxLamport else {
            throw .clockExhausted(seq: nextSeq, lamport: clock)
        }
        let now = arrivedAt ?? ProcessInfoLite.wallClockMilliseconds()
        if pending.isEmpty { pendingSince = now }
        if let seen = sharedClock?.value, seen > clock { observe(lamport: seen) }
        appendedSinceOpen += 1
        clock += 1
        let event = Event(id: EventID(replica: replica, seq: nextSeq), lamport: clock, wallTime: Event.wallTime(at: now), payload: payload)
        pending.append(event)
        nextSeq += 1
        return event
    }

    /// Appends `payloads` as events that arrived together: one clock reading (or `arrivedAt`)
    /// for all of them, as `journal record` stamps the lines of one read. All or nothing: a
    /// payload that fails validation appends none of them. Returns the seqs they got (empty
    /// for no payloads).
    @discardableResult
    public func append(contentsOf payloads: ArraySlice<Payload>, arrivedAt: Int64? = nil) throws(JournalError) -> Range<UInt64> {
        guard lock != nil else { throw .closed }
        try Self.validate(payloads)
        return try append(validated: payloads, arrivedAt: arrivedAt)
    }

    /// Every payload checked as `append` checks one (`Payload.validate`), before any is
    /// appended: what makes a batch all or nothing.
    package static func validate(_ payloads: ArraySlice<Payload>) throws(JournalError) {
        for payload in payloads {
            do { try payload.validate() } catch { throw .invalidEvent(error) }
        }
    }

    @discardableResult
    public func append(contentsOf payloads: [Payload], arrivedAt: Int64? = nil) throws(JournalError) -> Range<UInt64> {
        try append(contentsOf: payloads[...], arrivedAt: arrivedAt)
    }

    /// `append(contentsOf:)` of payloads the caller has validated (`Payload.validate`).
    package func append(validated payloads: ArraySlice<Payload>, arrivedAt: Int64?) throws(JournalError) -> Range<UInt64> {
        try checkAppendable()
        let count = UInt64(payloads.count)
        guard count > 0 else { return nextSeq..<nextSeq }
        if let seen = sharedClock?.value, seen > clock { observe(lamport: seen) }
        guard count < FormatV1.maxSeq, nextSeq <= FormatV1.maxSeq - count, clock < FormatV1.maxLamport - count else {
            throw .clockExhausted(seq: nextSeq, lamport: clock)
        }
        let now = arrivedAt ?? ProcessInfoLite.wallClockMilliseconds()
        if pending.isEmpty { pendingSince = now }
        let wallTime = Event.wallTime(at: now)
        let first = nextSeq
        // No reserveCapacity here: it allocates exactly what it is asked for, so a caller
        // appending batch after batch without a flush would copy the pending events each time.
        for payload in payloads {
            clock += 1
            pending.append(Event(id: EventID(replica: replica, seq: nextSeq), lamport: clock, wallTime: wallTime, payload: payload))
            nextSeq += 1
        }
        appendedSinceOpen += count
        return first..<nextSeq
    }

    /// Events appended and not yet handed to a flush.
    public var pendingEvents: Int { pending.count }
    /// The wall time (ms) the oldest pending event was appended at; meaningless while none is.
    public var oldestPendingWallTime: Int64 { pendingSince }

    /// Hands the pending events to the background once the previous batch is durable, so
    /// that at most one batch is ever unacknowledged in flight (memory stays bounded); seals
    /// first when the open segment would be full. For an owner that decides when to flush (the
    /// committer's recording: its writer's options flush nothing on their own).
    public func flushInBackground() throws(JournalError) {
        collect()
        try throwDeferred()
        if let failure { throw .writerFailed(failure) }
        if openSegmentEvents + pending.count >= sealDueAt {
            // This flush seals: done before returning, so that the sealed segment exists (and
            // can be synced) once append returns.
            return try writePending(sealIfDue: true)
        }
        let batch = pending
        pending = spareBuffer
        spareBuffer = []
        pending.reserveCapacity(min(batch.count, FormatV1.sealedBlockTargetEvents))
        let sink = self.sink
        let job = DurableJob {
            var outcome = sink.makeDurable(batch, sealIfDue: true)
            outcome.spentBatch = batch
            return outcome
        }
        inFlight = job
        // The writer's own thread (`WorkerThread` says why not Dispatch or the pool).
        background.submit { job.runUnlessClaimed() }
    }

    // MARK: Flushing without waiting (for callers that must never block on disk)

    /// Takes every appended event out for a flush and returns at once: the caller runs the
    /// ticket (write, fsync) on a thread of its own, with whatever guards the writer released,
    /// then hands it back to `finishFlush`. Run there rather than on the writer's background
    /// thread: a board commits every few milliseconds, and one hand-off less per commit is
    /// CPU a loaded relay lacks. With `seal`, the open segment is sealed after the flush
    /// (what a live board does when its user pauses, so that sync can publish the strokes);
    /// without `sealWhenFull`, a full open segment is not sealed by the policy either (the
    /// caller decides every seal).
    /// Returns nil when nothing is pending and no seal was asked for. A batch still in
    /// flight from an earlier call is waited for first.
    public func startFlush(seal: Bool = false, sealWhenFull: Bool = true) throws(JournalError) -> FlushTicket? {
        guard lock != nil else { throw .closed }
        collect()
        try throwDeferred()
        if let failure { throw .writerFailed(failure) }
        guard !pending.isEmpty || (seal && openSegmentEvents > 0) else { return nil }
        let batch = pending
        pending = []
        let sink = self.sink
        // Whoever needs the sink first runs it: the ticket's thread, or this writer (`collect`).
        let job = DurableJob { sink.makeDurable(batch, sealIfDue: sealWhenFull, sealNow: seal) }
        inFlight = job
        return FlushTicket(job: job, throughSeq: nextSeq - 1)
    }

    /// Takes in what a started flush did: `durableSeq`, a seal's problem, its error (thrown).
    public func finishFlush(_ ticket: FlushTicket) throws(JournalError) {
        if inFlight === ticket.job { collect() }
        try throwDeferred()
    }

    /// Waits for the batch in flight, if any, and takes in what it did.
    private func collect() {
        guard let job = inFlight else { return }
        job.runUnlessClaimed()
        job.done.wait()
        inFlight = nil
        apply(job.outcome)
        if var spent = job.outcome.spentBatch {
            // Its job's closure may hold it a moment longer; emptying it then costs a new
            // buffer, as not recycling would.
            job.outcome.spentBatch = nil
            spent.removeAll(keepingCapacity: true)
            spareBuffer = spent
        }
        if let error = job.outcome.error, deferredError == nil { deferredError = error }
    }

    private func apply(_ outcome: DurableOutcome) {
        failure = outcome.failure
        openSegmentEvents = outcome.openSegmentEvents
        sealDueAt = outcome.sealDueAt
        if let problem = outcome.sealProblem { sealProblem = problem.value }
        if let name = outcome.sealedName { noteSealed(name) }
        if let seq = outcome.durableSeq {
            acknowledgedSeq = seq
            onDurable?(seq)
        }
    }

    /// Why nothing can be appended now, if anything: closed, a failure a background flush
    /// left, or a failed writer.
    private func checkAppendable() throws(JournalError) {
        guard lock != nil else { throw .closed }
        try throwDeferred()
        if let failure { throw .writerFailed(failure) }
    }

    private func throwDeferred() throws(JournalError) {
        guard let error = deferredError else { return }
        deferredError = nil
        throw error
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
        try writePending(sealIfDue: true)
    }

    /// Waits for the background, then writes what is pending on this thread.
    private func writePending(sealIfDue: Bool) throws(JournalError) {
        guard lock != nil else { throw .closed }
        collect()
        try throwDeferred()
        if let failure { throw .writerFailed(failure) }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        let outcome = sink.makeDurable(batch, sealIfDue: sealIfDue)
        apply(outcome)
        if let error = outcome.error { throw error }
    }

    /// Flushes, then moves the open segment's events into a sealed, immutable segment.
    /// Returns its name, or nil if nothing was open.
    @discardableResult
    public func seal() throws(JournalError) -> SegmentName? {
        collect()
        try throwDeferred()
        if let failure { throw .writerFailed(failure) }
        try writePending(sealIfDue: false)
        defer {
            failure = sink.failure
            openSegmentEvents = sink.openSegmentEvents
            sealDueAt = sink.sealDueAt
        }
        let name = try sink.seal()
        if let name { noteSealed(name) }
        return name
    }

    /// Flushes, seals if the options say so, and releases the lock.
    public func close() throws(JournalError) {
        guard lock != nil else { return }
        collect()
        defer { background.stop() }
        if let failure {
            // Nothing more can be made durable; release the lock so that a reopen recovers.
            sink.closeFiles()
            if let lock { Self.release(lock, of: directory) }
            lock = nil
            if let error = deferredError {
                deferredError = nil
                throw error
            }
            throw .writerFailed(failure)
        }
        defer {
            sink.closeFiles()
            if let lock { Self.release(lock, of: directory) }
            lock = nil
        }
        try writePending(sealIfDue: false)
        if options.sealOnClose {
            // A seal that cannot be written leaves every event durable in the open segment;
            // the caller is told (`sealFailed`), and the next writer or sync seals it.
            try seal()
        }
    }

    // MARK: Opening and recovery

    /// Lock files whose lock a writer of this process holds.
    private static let locksHeldHere = Locked<Set<String>>([])

    private static func release(_ lock: FileDescriptor, of directory: JournalDirectory) {
        lock.close()
        _ = locksHeldHere.withLock { $0.remove(directory.lockPath) }
    }

    /// The lock file names this process (its last holder wrote our pid) and no writer of this
    /// process holds it: the flock that refuses us is a forked child's copy of a descriptor a
    /// writer here already closed.
    private static func heldByAForkOfThisProcess(_ directory: JournalDirectory) -> Bool {
        guard !locksHeldHere.withLock({ $0.contains(directory.lockPath) }),
              let holder = try? FileSystem.readFile(directory.lockPath) else { return false }
        return String(decoding: holder, as: UTF8.self) == "pid \(ProcessInfoLite.processID)\n"
    }

    private static func acquireLock(_ directory: JournalDirectory) throws(JournalError) -> FileDescriptor {
        let lock: FileDescriptor
        do { lock = try FileDescriptor.open(directory.lockPath, .readWrite) } catch { throw .io(error) }
        do throws(IOError) {
            // Retries: a child process between its fork and its exec holds a copy of every
            // descriptor of its parent, lock descriptors included (close-on-exec closes them
            // only at the exec). Another process's child: a few short retries. A lock that this
            // process's pid holds while no writer of this process does can only be such a
            // copy, and goes with the child's exec: waited for as long as that takes on a busy
            // machine (it took over 250 ms while tests spawned rsync beside a writer).
            var attempt = 0
            while true {
                do throws(IOError) {
                    try lock.tryLockExclusive()
                    break
                } catch {
                    attempt += 1
                    guard error.isWouldBlock else { throw error }
                    if attempt >= 25 {
                        guard attempt < 3000, heldByAForkOfThisProcess(directory) else { throw error }
                    }
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
            _ = locksHeldHere.withLock { $0.insert(directory.lockPath) }
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
        observe(lamport: Self.highestAppliedClock(index, directory: directory))
        removeStaleTemporaries()

        let found = try sink.recoverOpenSegment(what: "the open segment", index: { index }, directory: directory)
        recovery.bytesCut = found.bytesCut
        recovery.tailProblem = found.tailProblem
        recovery.discardedSealedCopy = found.discardedSealedCopy
        if let scan = found.scan {
            knownEventsAtOpen += UInt64(scan.eventCount)
            observe(lamport: scan.maxLamport)
        }
        sealedLastSeq = max(sealedLastSeq, found.lastSeq ?? 0)
        nextSeq = sealedLastSeq + 1
        acknowledgedSeq = sealedLastSeq
    }

    /// The highest clock among the sealed segments this journal applies: every valid one in an
    /// open journal; under a trust list only those it accepts (newest first, so usually one
    /// file is read). A quarantined file's clock would lift this writer's events past the
    /// plausibility bound replay computes from the files it applies, and hide them.
    static func highestAppliedClock(_ index: LocalIndex, directory: JournalDirectory) -> UInt64 {
        guard let trust = TrustedSegments.of(directory) else { return index.maxLamport }
        for entry in index.entries.values.filter(\.valid).sorted(by: { $0.maxLamport > $1.maxLamport }) {
            let path = directory.segmentPath(entry.replica, entry.name)
            let scan = SegmentScanner.scan(path: path, sealed: true)
            if scan.problems.isEmpty, trust.judge(scan, path: path, replica: entry.replica) == nil { return entry.maxLamport }
        }
        return 0
    }

    /// Whether a sealed segment of this replica holds exactly the open segment's events: the
    /// seal of this very segment, written before a crash that came before the reset. In a
    /// journal with a key only a file its key sealed counts: an unsigned copy of the same
    /// events (anyone who saw them can make one) would be quarantined under a trust list, and
    /// the reset would have dropped their only applied copy.
    static func isSealed(
        _ open: ScannedSegment, range: ClosedRange<UInt64>, replica: ReplicaID, key: ReplicaKey?, index: LocalIndex, directory: JournalDirectory
    ) -> Bool {
        let candidates = index.entries.values.filter {
            $0.replica == replica && $0.valid && $0.name.firstSeq == range.lowerBound && $0.name.lastSeq == range.upperBound
        }
        guard !candidates.isEmpty else { return false }
        let (events, problems) = open.allEvents()
        guard problems.isEmpty else { return false }
        for candidate in candidates {
            let sealed = SegmentScanner.scan(path: directory.segmentPath(replica, candidate.name), sealed: true)
            if let key {
                guard let seal = sealed.seal, seal.publicKey == key.publicKey, let contents = sealed.sealedContents,
                      SegmentSeal.verify(seal, contents: contents, replica: replica) == .valid else { continue }
            }
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
            let sealedFromCopy = sink.openSegmentEvents > 0 ? try seal() : nil
            // A copy gets a key of its own: the original's key signs the original's replica only.
            let previousKey = identity.key
            let key = ReplicaKey()
            let fresh = key.replica
            do {
                // What this folder sealed before the copy was sealed by the original's key: a
                // trust list here goes on applying it (a moved journal keeps its own history).
                // Listed before the new key is written, so that a crash between cannot lose it.
                if let previousKey, var list = try? TrustList.load(directory),
                   list.entry(for: previousKey.publicKey) == nil {
                    list.add(TrustList.Entry(publicKey: previousKey.publicKey, mayHost: true,
                                             label: "this journal before it was copied (replica \(previous.hex))"))
                    try list.save(to: directory)
                }
                try directory.writeKeyFile(key, replacing: true)
                try FileSystem.writeAtomically(Array((fresh.hex + "\n").utf8), to: directory.identityPath)
                identity = identity.changed(to: key)
                sink.replica = fresh
                sink.signer = identity.replicaSigner
                try IdentityAnchor.record(directory)
                try sink.resetOpenSegment()
            } catch {
                let thrown = sink.poison(error)
                failure = sink.failure
                throw thrown
            }
            nextSeq = 1
            acknowledgedSeq = 0
            recovery.identityChange = RecoveryReport.IdentityChange(previous: previous, current: fresh, sealedFromCopy: sealedFromCopy)
        }
    }

    private func removeStaleTemporaries() {
        directory.removeStaleTemporaries()
        // Fixed-name temporaries that older versions wrote (before unique temporaries):
        // harmless, but clutter. Only a writer (this one holds the lock) ever wrote them.
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
