import JournalFormat
import JournalLive
import JournalPlatform
import JournalStorage
import JournalWire

/// The replicas a board hosts for its native clients (docs/PROTOCOL.md, "Native mode"):
/// events a client named itself, stored in the board's journal under the client's replica id
/// (`HostedReplicaWriter`), so that the same events synced later from the client's own journal
/// dedup by id.
///
/// A native frame's events are checked and accepted at once (`accept`); the host's thread makes
/// them durable in rounds, `commitDelayMilliseconds` after the first event of a round: one block
/// appended and fsynced per replica, every connection's events of that replica in it. Then
/// `onDurable` gets the round (the board broadcasts and acknowledges by seq).
final class NativeHost: Sendable {
    struct Round: Sendable {
        /// Events made durable, per replica, in seq order.
        var stored: [ReplicaID: [Event]] = [:]
        /// Replicas whose events could not be stored (the reason): none of the round's is
        /// acknowledged; their connections are closed, and the clients resend.
        var failed: [ReplicaID: String] = [:]
        /// Frames each connection had in the round (they are no longer in flight).
        var frames: [Int: Int] = [:]
    }

    /// What `accept` did with a frame.
    enum Acceptance: Equatable {
        /// This many events are new; durable once their round is (`onDurable`).
        case staged(Int)
        /// Every event was held already (a resend): nothing to store.
        case allHeld
    }

    private struct Files {
        var writers: [ReplicaID: HostedReplicaWriter] = [:]
        /// Seqs this host made durable in its files (or found there at start), per replica.
        var stored = Have()
        var lastAppend: [ReplicaID: Double] = [:]
        /// When the open segment is due to be sealed: its first unsealed event's time plus a
        /// seal age drawn then (`BoardOptions.sealSpread`).
        var sealDue: [ReplicaID: Double] = [:]
    }

    private struct State {
        /// Seqs accepted (waiting for their round, or stored), per replica.
        var accepted = Have()
        /// Replicas whose client sent an event that differs from the journal's under its id (why).
        var forks: [ReplicaID: String] = [:]
        var pending: [ReplicaID: [Event]] = [:]
        var frames: [Int: Int] = [:]
        /// Replicas this host took on while open, that the board held nothing of before.
        var newReplicas: Set<ReplicaID> = []
        var commitScheduled = false
        var closed = false
    }

    private let board: Board
    private let commitDelayMilliseconds: Int
    private let maxNewReplicas: Int
    private let thread = WorkerThread()
    /// Held while a hosted file is written or sealed, and while a reader of this process scans
    /// them (`scan`): such a reader sees fsynced bytes only, and `stored` as it matches them.
    private let files = Locked(Files())
    private let state = Locked(State())
    private let onDurable = Locked<(@Sendable (Round) -> Void)?>(nil)

    init(board: Board, commitDelayMilliseconds: Int, maxNewReplicas: Int) {
        self.board = board
        self.commitDelayMilliseconds = commitDelayMilliseconds
        self.maxNewReplicas = maxNewReplicas
    }

    /// Who gets each round once durable (the board: broadcast, acks).
    func start(onDurable handler: @escaping @Sendable (Round) -> Void) {
        onDurable.withLock { $0 = handler }
    }

    /// Takes over the hosted open segments a previous run left (a crash, or a close that could
    /// not seal): their events are durable, so they count as stored (held: a resend of one is a
    /// duplicate), and they are sealed, as ordinary segments that sync publishes. One that
    /// cannot be opened (damaged before its tail) is left as it is: readers still read it, and
    /// a native client of that replica is told why its events cannot be stored.
    /// Before the board takes connections.
    func recoverLeftovers() {
        let directory = board.directory
        let found = files.withLock { files -> Have in
            var found = Have()
            for (replica, _) in directory.hostedSegments() {
                guard let writer = try? HostedReplicaWriter(directory: directory, replica: replica) else { continue }
                if let seqs = writer.openSeqs { found.insert(replica, seqs) }
                try? writer.close()
            }
            files.stored.formUnion(found)
            return found
        }
        state.withLock { $0.accepted.formUnion(found) }
    }

    // MARK: Accepting

    /// Checks a native frame's events (of `replica`, in seq order) against what the board holds:
    /// held ones are skipped (dedup by id); each new one must follow a held seq (or be seq 1),
    /// so that a hosted replica has no hole the client did not mean. Throws the reason a frame
    /// is refused; then nothing of it is accepted.
    func accept(_ events: [Event], replica: ReplicaID, from connection: Int) throws(RelayError) -> Acceptance {
        let all = board.covered
        let covered = all[replica] ?? SeqRanges()
        let (acceptance, schedule) = try state.withLock { state throws(RelayError) -> (Acceptance, Bool) in
            guard !state.closed else { throw .closed }
            if let fork = state.forks[replica] { throw .refusedFrame(fork) }
            var held = covered
            held.formUnion(state.accepted[replica])
            // An event still waiting for its round is compared: a different one under its id
            // is a second writer of the replica (or a client that forgot what it named).
            let waiting = Dictionary((state.pending[replica] ?? []).map { ($0.id.seq, $0) }, uniquingKeysWith: { first, _ in first })
            var fresh: [Event] = []
            for event in events {
                let seq = event.id.seq
                if let earlier = waiting[seq], earlier != event {
                    throw .refusedFrame("seq \(seq) of replica \(replica.hex) differs from the event of that id the relay is storing: one replica, one writer")
                }
                guard !held.contains(seq) else { continue }
                guard seq == 1 || held.contains(seq - 1) else {
                    let next = held.ranges.first.map { $0.lowerBound == 1 ? $0.upperBound + 1 : 1 } ?? 1
                    throw .refusedFrame("seq \(seq) of replica \(replica.hex) does not follow what the relay holds "
                                        + "(\(held.isEmpty ? "nothing" : SeqRanges.text(held.ranges))): send from seq \(next), without gaps")
                }
                fresh.append(event)
                held.insert(seq...seq)
            }
            guard !fresh.isEmpty else { return (.allHeld, false) }
            if covered.isEmpty && state.accepted[replica].isEmpty && !state.newReplicas.contains(replica) {
                guard state.newReplicas.count < maxNewReplicas else {
                    throw .refusedFrame("board \(board.directory.root) took on \(state.newReplicas.count) new native replicas since it opened, its limit (--max-native-replicas); draw as a replica it holds, or later")
                }
                state.newReplicas.insert(replica)
            }
            // A clock replay would quarantine is never stored (FORMAT.md §8.9), counted on what
            // the board will hold with these events: each id once. Sealed hosted events are
            // both folded by the board and accepted here; counted twice, the bound let through
            // a clock that replay then quarantined, an acknowledged event no reader applied.
            var holds = Have(all)
            holds.formUnion(state.accepted)
            let known = holds.eventCount + UInt64(fresh.count)
            let limit = ClockBound.limit(distinctEvents: known)
            if let wild = fresh.first(where: { $0.lamport < 1 || $0.lamport > limit }) {
                throw .refusedFrame("seq \(wild.id.seq): Lamport clock \(wild.lamport) is not between 1 and \(limit) (replay would quarantine it)")
            }
            for event in fresh { state.accepted.insert(event.id) }
            state.pending[replica, default: []].append(contentsOf: fresh)
            state.frames[connection, default: 0] += 1
            let schedule = !state.commitScheduled
            state.commitScheduled = true
            return (.staged(fresh.count), schedule)
        }
        if schedule {
            let delay = commitDelayMilliseconds
            thread.submit { [weak self] in
                if delay > 0 { ProcessInfoLite.sleep(milliseconds: delay) }
                self?.commit()
            }
        }
        return acceptance
    }

    /// The events of a native frame whose ids the board holds from files this host did not
    /// write (a segment sync brought, or one a previous run sealed): dedup by id is sound only
    /// if the event under that id is the same, and anyone can put a segment of any replica in
    /// a synced folder.
    /// Records that the journal holds events of `replica` that differ from the client's under
    /// the same ids (`reason` says which): from then on this board takes nothing more of that
    /// replica, since an ack by seq would count the other events as the client's. Until the
    /// board is reopened, after a person has resolved it (`journal verify` names the fork once
    /// both copies exist).
    func recordFork(of replica: ReplicaID, _ reason: String) {
        state.withLock { state in if state.forks[replica] == nil { state.forks[replica] = reason } }
    }

    func heldFromElsewhere(_ events: [Event], replica: ReplicaID) -> [Event] {
        let covered = board.covered[replica] ?? SeqRanges()
        let hosted = state.withLock { $0.accepted.ranges[replica] } ?? SeqRanges()
        return events.filter { covered.contains($0.id.seq) && !hosted.contains($0.id.seq) }
    }

    /// The highest seq n such that every event 1…n of `replica` is durable in the board's
    /// journal (stored here, or in segments the board folded): what an ack says.
    func durablePrefix(of replica: ReplicaID) -> UInt64 {
        var held = board.covered[replica] ?? SeqRanges()
        held.formUnion(files.withLock { $0.stored[replica] })
        guard let first = held.ranges.first, first.lowerBound == 1 else { return 0 }
        return first.upperBound
    }

    // MARK: Durability (the host's thread)

    private func commit() {
        let (pending, frames) = state.withLock { state -> ([ReplicaID: [Event]], [Int: Int]) in
            state.commitScheduled = false
            defer {
                state.pending = [:]
                state.frames = [:]
            }
            return (state.pending, state.frames)
        }
        guard !pending.isEmpty else { return }
        var round = Round(frames: frames)
        let directory = board.directory
        files.withLock { files in
            for (replica, events) in pending.sorted(by: { $0.key < $1.key }) {
                var stored: [Event] = []
                do throws(JournalError) {
                    let writer: HostedReplicaWriter
                    if let open = files.writers[replica] {
                        writer = open
                    } else {
                        writer = try HostedReplicaWriter(directory: directory, replica: replica)
                        files.writers[replica] = writer
                    }
                    // Accepted events may skip seqs the board got from elsewhere: one run each.
                    var start = 0
                    while start < events.count {
                        var end = start + 1
                        while end < events.count && events[end].id.seq == events[end - 1].id.seq + 1 { end += 1 }
                        let run = Array(events[start..<end])
                        try writer.append(run)
                        stored += run
                        files.stored.insert(replica, run[0].id.seq...run[run.count - 1].id.seq)
                        start = end
                    }
                    let now = ProcessInfoLite.monotonicSeconds()
                    files.lastAppend[replica] = now
                    if writer.openEvents == 0 {
                        files.sealDue[replica] = nil
                    } else if files.sealDue[replica] == nil {
                        files.sealDue[replica] = now + board.options.drawSealAge()
                    }
                } catch {
                    // Reopened on next use: the recovery cuts what a failed write left.
                    files.writers[replica] = nil
                    round.failed[replica] = "board \(directory.root): events of replica \(replica.hex) could not be stored: \(error)"
                }
                if !stored.isEmpty { round.stored[replica] = stored }
            }
        }
        if !round.failed.isEmpty {
            // What was not stored is not held, and neither is what was accepted after it (it
            // would follow a hole): the replica's connections are closed; the clients resend.
            let stored = files.withLock { $0.stored }
            state.withLock { state in
                for replica in round.failed.keys {
                    state.accepted.replace(replica, with: stored[replica])
                    state.pending[replica] = nil
                }
            }
        }
        if let newest = round.stored.values.joined().map(\.lamport).max() { board.observe(lamport: newest) }
        onDurable.withLock { $0 }?(round)
    }

    /// Seals the hosted open segments idle for `idleSeconds`, or unsealed for their seal age
    /// (the board's `sealAfterMilliseconds`, spread), so that sync publishes them as the board's
    /// own. A seal that fails (a full disk) leaves the events durable in the open segment: tried
    /// again next time.
    func sealIdle(idleSeconds: Double) {
        thread.submit { [files] in
            files.withLock { files in
                let now = ProcessInfoLite.monotonicSeconds()
                for (replica, writer) in files.writers {
                    let idle = now - (files.lastAppend[replica] ?? 0) >= idleSeconds
                    if writer.openEvents > 0 {
                        let old = now >= (files.sealDue[replica] ?? .infinity)
                        guard idle || old else { continue }
                        guard (try? writer.seal()) != nil else { continue }
                        files.sealDue[replica] = nil
                    }
                    // A replica that paused holds no descriptor (its writer opens again on its
                    // next frame): a client naming a new replica on each connection piled up
                    // one open segment per replica until the board closed, and the relay ran
                    // out of descriptors.
                    if idle {
                        try? writer.close()
                        files.writers[replica] = nil
                        files.lastAppend[replica] = nil
                    }
                }
            }
        }
    }

    // MARK: Reading

    /// The hosted open segments as they are now, every byte of them fsynced (their writer is
    /// excluded meanwhile).
    func scan() -> (scans: [ScannedSegment], problems: [Problem]) {
        let directory = board.directory
        return files.withLock { _ in directory.scanHostedSegments() }
    }

    /// Seqs accepted: stored, or to be stored and sent by this host (a superset of what any
    /// read of the journal finds of hosted events, taken after the read).
    var accepted: Have { state.withLock { $0.accepted } }

    /// Stores what is accepted, seals every hosted segment and stops the thread. Before the
    /// board closes: its writer lock covers the hosted files.
    func close() async {
        state.withLock { $0.closed = true }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            thread.submit { [weak self] in
                self?.commit()
                self?.files.withLock { files in
                    for writer in files.writers.values { try? writer.close() }
                    files.writers = [:]
                }
                continuation.resume()
            }
        }
        thread.stop()
    }
}
