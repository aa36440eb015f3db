import JournalFormat
import JournalPlatform
import JournalStorage

/// How a recording commits: a stream read as fast as it comes (`journal record`), not a pen.
public struct RecordingOptions: Sendable {
    /// Hand the pending events to a flush once this many are pending.
    public var flushEveryEvents: Int
    /// ...or once the oldest of them is this old (checked on each append, and while the
    /// input is idle).
    public var flushIntervalMilliseconds: Int64?
    /// Seal the open segment once it holds this many events.
    public var sealEveryEvents: Int
    /// Seal what is open at close, so that sync can publish it.
    public var sealOnClose: Bool
    /// Compact after each seal (and once at open: a compaction killed mid-way is finished).
    public var automaticCompaction: Bool

    public init(flushEveryEvents: Int = 32_768, flushIntervalMilliseconds: Int64? = 200, sealEveryEvents: Int = 262_144,
                 sealOnClose: Bool = true, automaticCompaction: Bool = true) {
        self.flushEveryEvents = max(1, flushEveryEvents)
        self.flushIntervalMilliseconds = flushIntervalMilliseconds
        self.sealEveryEvents = max(1, sealEveryEvents)
        self.sealOnClose = sealOnClose
        self.automaticCompaction = automaticCompaction
    }
}

extension Committer {
    /// The committer of a journal that one thread records into at full speed (`journal
    /// record`, an app importing a batch; a drawing app holds a `Board`): the same ownership as a live board's (the writer, when to flush and seal,
    /// compaction, durability notices) without its thread, its group-commit delay or its
    /// locks. Each flush is encoded, written and fsynced on the writer's background thread
    /// while the caller goes on appending; at most one is in flight.
    public final class Recording {
        public let options: RecordingOptions
        private let writer: JournalWriter
        private let compaction: CompactionScheduler
        private var compactionRequested = false
        private var closed = false

        /// Opens (and recovers) the journal's writer, taking its lock. `durable` hears each new
        /// durable seq, on the recording thread.
        public init(directory: JournalDirectory, options: RecordingOptions = RecordingOptions(),
                    durable: ((UInt64) -> Void)? = nil) throws(JournalError) {
            self.options = options
            // The writer flushes and seals only when told: this type decides.
            writer = try JournalWriter(
                directory: directory, options: WriterOptions(sealEveryEvents: options.sealEveryEvents, sealOnClose: options.sealOnClose))
            compaction = CompactionScheduler(directory: directory, identity: writer.identity)
            writer.onDurable = durable
            let replica = writer.replica
            if options.automaticCompaction {
                writer.onSealed = { [compaction, weak self] _ in
                    self?.compactionRequested = true
                    compaction.request(replica)
                }
                // What a compaction killed mid-way left (a cover beside the files it covers)
                // is finished by the next open (docs/FORMAT.md §16.2).
                compaction.request(replica)
                compactionRequested = true
            }
        }

        deinit { compaction.stop() }

        public var replica: ReplicaID { writer.replica }
        public var recovery: RecoveryReport { writer.recovery }
        /// The seq the next event gets.
        public var nextSeq: UInt64 { writer.nextSeq }
        /// Why the last automatic seal failed (the events are durable in the open segment).
        public var sealProblem: JournalError? { writer.sealProblem }
        /// Whether `sealProblem` holds one, without copying it.
        public var sealIsFailing: Bool { writer.sealIsFailing }

        /// Appends one event; it is durable after a later flush (by count, by age, idle, close).
        /// `arrivedAt` (ms since 1970): when the caller read it, if it read many at once
        /// (`NDJSONReader.arrivedAtMilliseconds`); the clock now otherwise.
        @discardableResult
        public func append(_ payload: Payload, arrivedAt: Int64? = nil) throws(JournalError) -> EventID {
            let event = try writer.appendEvent(payload, arrivedAt: arrivedAt)
            try flushIfDue(at: event.wallTime)
            return event.id
        }

        /// Appends `payloads` as events that arrived together (one clock reading, or
        /// `arrivedAt`, for all): an app importing a batch, or a reader handing on what one read
        /// gave. All or nothing: a payload that fails validation appends none of them. Flushes
        /// as `append` does, by count and by age, between the events that fill a flush.
        /// Returns the seqs the events got.
        @discardableResult
        public func append(contentsOf payloads: ArraySlice<Payload>, arrivedAt: Int64? = nil) throws(JournalError) -> Range<UInt64> {
            try JournalWriter.validate(payloads)
            let now = arrivedAt ?? ProcessInfoLite.wallClockMilliseconds()
            let first = writer.nextSeq
            var start = payloads.startIndex
            while start < payloads.endIndex {
                let end = min(payloads.endIndex, start + max(1, options.flushEveryEvents - writer.pendingEvents))
                try writer.append(validated: payloads[start..<end], arrivedAt: now)
                start = end
                try flushIfDue(at: now)
            }
            return first..<writer.nextSeq
        }

        @discardableResult
        public func append(contentsOf payloads: [Payload], arrivedAt: Int64? = nil) throws(JournalError) -> Range<UInt64> {
            try append(contentsOf: payloads[...], arrivedAt: arrivedAt)
        }

        /// Hands what is pending to a flush once there is a flush's worth (by count), or once
        /// the oldest of it is old enough at `now` (by age).
        private func flushIfDue(at now: Int64) throws(JournalError) {
            if writer.pendingEvents >= options.flushEveryEvents
                || (options.flushIntervalMilliseconds.map { now - writer.oldestPendingWallTime >= $0 } ?? false) {
                try writer.flushInBackground()
            }
        }

        /// The input has nothing to give for now: what is pending must not wait in memory for
        /// the next line, so it is made durable now. A failure resurfaces on the next append.
        public func inputIsIdle() {
            guard writer.pendingEvents > 0 else { return }
            try? writer.flush()
        }

        /// Makes every event appended so far durable before returning (fsynced).
        public func flush() throws(JournalError) {
            try writer.flush()
        }

        /// Makes everything durable and seals the open segment now (what sync does with the
        /// open segment a recorder left): the new sealed segment's name, nil when nothing was
        /// open.
        public func seal() throws(JournalError) -> SegmentName? {
            try writer.seal()
        }

        /// Makes everything durable, seals if the options say so, releases the lock, and waits
        /// for the compactions asked for: a journal recorded is left compacted, not half way.
        public func close() throws(JournalError) {
            guard !closed else { return }
            closed = true
            defer {
                if compactionRequested { compaction.waitUntilIdle() }
                compaction.stop()
            }
            try writer.close()
        }
    }
}
