import JournalFormat
import JournalPlatform
import JournalStorage

/// The replicas a board stores for others (a relay's native clients: docs/PROTOCOL.md,
/// "Native mode"), under their own ids (`HostedReplicaWriter`), so that the same events
/// synced later from the client's own journal dedup by id.
///
/// It holds no thread and no timer of its own: the board's committer commits its staged
/// events in the same group commit as the board's own, and seals and closes its files by the
/// board's seal policy (`Board`, "the committer"). One writer per folder, one failure path.
final class HostedReplicas: Sendable {
    private struct Files {
        var writers: [ReplicaID: HostedReplicaWriter] = [:]
        /// Seqs made durable in the hosted files (or found there at start), per replica.
        var stored: [ReplicaID: SeqRanges] = [:]
        var lastAppend: [ReplicaID: Double] = [:]
        /// When the open segment is due to be sealed: its first unsealed event's time plus a
        /// seal age drawn then (`CommitPolicy.sealSpread`).
        var sealDue: [ReplicaID: Double] = [:]
    }

    private struct Staged {
        var events: [ReplicaID: [Event]] = [:]
        var batches: [Int: Int] = [:]
        /// The board is closing: nothing more is staged.
        var closed = false
    }

    let directory: JournalDirectory
    /// The journal's identity as its committer loaded it: the host key seals every hosted file.
    let identity: JournalIdentity
    private let options: CommitPolicy
    /// Held while a hosted file is written or sealed, and while a reader of this process scans
    /// them (`scan`): such a reader sees fsynced bytes only, and `stored` as it matches them.
    private let files = Locked(Files())
    private let staged = Locked(Staged())

    init(directory: JournalDirectory, identity: JournalIdentity, options: CommitPolicy) {
        self.directory = directory
        self.identity = identity
        self.options = options
    }

    /// Seqs durable in the hosted files, per replica.
    var stored: [ReplicaID: SeqRanges] { files.withLock { $0.stored } }

    /// The hosted open segments as they are now, every byte of them fsynced (their writer is
    /// excluded meanwhile).
    func scan() -> (scans: [ScannedSegment], problems: [Problem]) {
        files.withLock { [directory] _ in directory.scanHostedSegments() }
    }

    /// Takes over the hosted open segments a previous run left (a crash, or a close that could
    /// not seal): their events are durable, so they count as stored, and they are sealed, as
    /// ordinary segments that sync publishes. One that cannot be opened (damaged before its
    /// tail) is left as it is: readers still read it. Returns what was found.
    func recoverLeftovers() -> (found: [ReplicaID: SeqRanges], sealed: [ReplicaID]) {
        files.withLock { [directory] files in
            var found: [ReplicaID: SeqRanges] = [:]
            var sealed: [ReplicaID] = []
            for (replica, _) in directory.hostedSegments() {
                guard let writer = try? HostedReplicaWriter(directory: directory, replica: replica, identity: identity)
                else { continue }
                if let seqs = writer.openSeqs {
                    found[replica, default: SeqRanges()].insert(seqs)
                    sealed.append(replica)
                }
                try? writer.close()
            }
            for (replica, seqs) in found { files.stored[replica, default: SeqRanges()].formUnion(seqs) }
            return (found, sealed)
        }
    }

    /// Queues `events` (of `replica`, in seq order, checked by the caller) for the next group
    /// commit, as one batch of `submitter`'s. Returns true when nothing was staged before (the
    /// caller asks the board for a commit).
    func stage(_ events: [Event], of replica: ReplicaID, from submitter: Int) throws(JournalError) -> Bool {
        try staged.withLock { staged throws(JournalError) in
            guard !staged.closed else { throw .closed }
            let first = staged.events.isEmpty && staged.batches.isEmpty
            staged.events[replica, default: []].append(contentsOf: events)
            staged.batches[submitter, default: 0] += 1
            return first
        }
    }

    /// Drops what is staged of `replica` (its batches still settle with the next round): events
    /// accepted after a round of the replica failed would follow a hole.
    func unstage(_ replica: ReplicaID) {
        staged.withLock { _ = $0.events.removeValue(forKey: replica) }
    }

    var hasStaged: Bool { staged.withLock { !$0.events.isEmpty || !$0.batches.isEmpty } }

    /// Stores what is staged: one append and fsync per replica. On the committer only.
    func commitStaged() -> (round: HostedRound, sealed: [SealedSegment]) {
        let taken = staged.withLock { staged -> Staged in
            defer { staged = Staged(closed: staged.closed) }
            return staged
        }
        var round = HostedRound(batches: taken.batches)
        var sealed: [SealedSegment] = []
        guard !taken.events.isEmpty else { return (round, sealed) }
        files.withLock { [directory, options] files in
            for (replica, events) in taken.events.sorted(by: { $0.key < $1.key }) {
                var stored: [Event] = []
                do throws(JournalError) {
                    let writer: HostedReplicaWriter
                    if let open = files.writers[replica] {
                        writer = open
                    } else {
                        writer = try HostedReplicaWriter(
                            directory: directory, replica: replica, identity: identity, sealEveryEvents: options.sealEveryEvents)
                        files.writers[replica] = writer
                    }
                    // Accepted events may skip seqs the board got from elsewhere: one run each.
                    var start = 0
                    while start < events.count {
                        var end = start + 1
                        while end < events.count && events[end].id.seq == events[end - 1].id.seq + 1 { end += 1 }
                        let run = Array(events[start..<end])
                        sealed += try writer.append(run).map { SealedSegment(replica: replica, name: $0) }
                        stored += run
                        files.stored[replica, default: SeqRanges()].insert(run[0].id.seq...run[run.count - 1].id.seq)
                        start = end
                    }
                    let now = ProcessInfoLite.monotonicSeconds()
                    files.lastAppend[replica] = now
                    if writer.openEvents == 0 {
                        files.sealDue[replica] = nil
                    } else if files.sealDue[replica] == nil {
                        files.sealDue[replica] = now + options.drawSealAge()
                    }
                } catch {
                    // Reopened on next use: the recovery cuts what a failed write left.
                    files.writers[replica] = nil
                    files.sealDue[replica] = nil
                    round.failed[replica] = "board \(directory.root): events of replica \(replica.hex) could not be stored: \(error)"
                }
                if !stored.isEmpty { round.stored[replica] = stored }
            }
        }
        return (round, sealed)
    }

    /// Seals the open segments that are due (idle for `sealAfterIdleMilliseconds`, or older than
    /// their seal age), so that sync publishes them, and closes the files of replicas that
    /// paused (a replica that paused holds no descriptor: otherwise a client naming a new replica
    /// on each connection piles up one open segment per replica until the board closes, and the
    /// relay runs out of descriptors). A seal that fails (a full disk) leaves the events durable in
    /// the open segment: tried again at the next deadline. Returns the sealed files and when to
    /// look again (nil: no file is open). On the committer only.
    func sealDue(now: Double) -> (sealed: [SealedSegment], next: Double?) {
        let idle = Double(options.sealAfterIdleMilliseconds ?? 1000) / 1000
        return files.withLock { files in
            var sealed: [SealedSegment] = []
            var next: Double?
            func wake(at time: Double) { next = min(next ?? time, time) }
            for (replica, writer) in files.writers {
                let idleAt = (files.lastAppend[replica] ?? 0) + idle
                if writer.openEvents > 0 {
                    let due = min(idleAt, files.sealDue[replica] ?? .infinity)
                    guard due <= now else {
                        wake(at: due)
                        continue
                    }
                    guard let name = try? writer.seal() else {
                        // Failed (a full disk): again after another pause's length, not in a loop.
                        wake(at: now + max(idle, 0.1))
                        continue
                    }
                    sealed.append(SealedSegment(replica: replica, name: name))
                    files.sealDue[replica] = nil
                }
                if idleAt <= now {
                    try? writer.close()
                    files.writers[replica] = nil
                    files.lastAppend[replica] = nil
                } else {
                    wake(at: idleAt)
                }
            }
            return (sealed, next)
        }
    }

    /// Seals every hosted open segment that holds events now, keeping its file open for what
    /// comes next (`Board.sealNow`). On the committer only.
    func sealOpen() -> [SealedSegment] {
        files.withLock { files in
            var sealed: [SealedSegment] = []
            for (replica, writer) in files.writers where writer.openEvents > 0 {
                guard let name = try? writer.seal() else { continue }
                sealed.append(SealedSegment(replica: replica, name: name))
                files.sealDue[replica] = nil
            }
            return sealed
        }
    }

    /// Events in hosted files not yet sealed: in the files this board writes, and in any other
    /// hosted file on disk with events (one a failed write left, which the next use recovers).
    func unsealedEvents() -> Int {
        files.withLock { files in
            var count = files.writers.values.reduce(0) { $0 + $1.openEvents }
            for (replica, path) in directory.hostedSegments() where files.writers[replica] == nil {
                if let size = FileSystem.linkStatus(path)?.size, size > Int64(FormatV1.fileHeaderSize) { count += 1 }
            }
            return count
        }
    }

    /// Stops staging (every later `stage` throws `.closed`) and stores what was staged.
    func closeStaging() -> (round: HostedRound, sealed: [SealedSegment]) {
        staged.withLock { $0.closed = true }
        return commitStaged()
    }

    /// Seals every open hosted segment and closes its file (the board is closing; its writer
    /// lock covers these files, so before the board's own writer closes).
    func closeAll() -> [SealedSegment] {
        files.withLock { files in
            var sealed: [SealedSegment] = []
            for (replica, writer) in files.writers {
                if let name = try? writer.seal() { sealed.append(SealedSegment(replica: replica, name: name)) }
                try? writer.close()
            }
            files.writers = [:]
            return sealed
        }
    }
}
