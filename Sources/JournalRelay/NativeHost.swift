import JournalCommit
import JournalFormat
import JournalLive
import JournalPlatform
import JournalStorage
import JournalWire

/// The protocol side of the replicas a board hosts for its native clients (docs/PROTOCOL.md,
/// "Native mode"): which events a client may have stored under its own id, and what the
/// relay acknowledges. The files are the board's (`HostedReplicas`): its committer stores a
/// frame's events in the board's next group commit, and the board publishes the round
/// (`JournalActivity.hosted`), which the relay board passes to `settle` and then broadcasts
/// and acknowledges.
final class NativeHost: Sendable {
    /// What `accept` did with a frame.
    enum Acceptance: Equatable {
        /// This many events are new; durable once their round is (`JournalActivity.hosted`).
        case staged(Int)
        /// Every event was held already (a resend): nothing to store.
        case allHeld
    }

    private struct State {
        /// Seqs accepted (waiting for their round, or stored), per replica.
        var accepted = Have()
        /// Accepted events not yet durable, per replica and seq: a different event under one
        /// of these ids is a second writer.
        var waiting: [ReplicaID: [UInt64: Event]] = [:]
        /// Each replica's events of its last stored round: a client that names a seq again (a
        /// reloaded page whose catch-up was read just before its old tab's last round was
        /// stored) is told, not acknowledged as if the event were its own.
        var recent: [ReplicaID: [UInt64: Event]] = [:]
        /// Replicas whose client sent an event that differs from the journal's under its id (why).
        var forks: [ReplicaID: String] = [:]
        /// Replicas this host took on while open, that the board held nothing of before (taken
        /// on: their later frames are not counted again against the limit).
        var newReplicas: Set<ReplicaID> = []
        var closed = false
    }

    private let board: Board
    private let maxNewReplicas: Int
    private let state = Locked(State())

    init(board: Board, maxNewReplicas: Int) {
        self.board = board
        self.maxNewReplicas = maxNewReplicas
    }

    /// Takes over the hosted open segments a previous run left (a crash, or a close that could
    /// not seal): their events are durable, so they count as held (a resend of one is a
    /// duplicate), and they are sealed, as ordinary segments that sync publishes. One that
    /// cannot be opened (damaged before its tail) is left as it is: readers still read it, and
    /// a native client of that replica is told why its events cannot be stored.
    /// Before the board takes connections.
    func recoverLeftovers() {
        let found = Have(board.recoverHostedLeftovers())
        state.withLock { $0.accepted.formUnion(found) }
    }

    /// A round of the board's group commit is over: events that could not be stored are not
    /// held, and neither is what was accepted after them (it would follow a hole); their
    /// replica's connections are closed and the clients resend.
    func settle(_ round: HostedRound) {
        let stored = round.failed.isEmpty ? Have() : Have(board.hostedStored)
        state.withLock { state in
            for (replica, events) in round.stored {
                state.recent[replica] = Dictionary(events.map { ($0.id.seq, $0) }, uniquingKeysWith: { first, _ in first })
                guard var waiting = state.waiting[replica] else { continue }
                for event in events { waiting[event.id.seq] = nil }
                state.waiting[replica] = waiting.isEmpty ? nil : waiting
            }
            for replica in round.failed.keys {
                state.accepted.replace(replica, with: stored[replica])
                state.waiting[replica] = nil
                // Staged after the failed events: they would follow a hole (and be broadcast,
                // then stored and broadcast again when the client resends). Under this lock, so
                // that nothing accepted meanwhile slips through.
                board.unstageHosted(replica)
            }
        }
    }

    // MARK: Accepting

    /// Checks a native frame's events (of `replica`, in seq order) against what the board holds:
    /// held ones are skipped (dedup by id); each new one must follow a held seq (or be seq 1),
    /// so that a hosted replica has no hole the client did not mean. Throws the reason a frame
    /// is refused; then nothing of it is accepted.
    /// `willStage` hears how many events are about to be staged, under this host's lock and
    /// before the board's committer can settle them.
    func accept(_ events: [Event], replica: ReplicaID, from connection: Int,
                willStage: (Int) -> Void = { _ in }) throws(RelayError) -> Acceptance {
        let all = board.covered
        let covered = all[replica] ?? SeqRanges()
        var needsCommit = false
        let acceptance = try state.withLock { state throws(RelayError) -> Acceptance in
            guard !state.closed else { throw .closed }
            if let fork = state.forks[replica] { throw .refusedFrame(fork) }
            var held = covered
            held.formUnion(state.accepted[replica])
            if let first = events.first?.id.seq, let missing = Self.hole(below: first, in: held) {
                // An ack by seq can never pass a hole, so the client would wait for ever (hearing
                // the same ack as a sign of life): events it was acknowledged for that the
                // board lacks, most likely a copy the store lost before any node put it back.
                // Only the client may still hold them.
                throw .refusedFrame("seqs \(missing.lowerBound)-\(missing.upperBound) of replica \(replica.hex) are missing from the board "
                                    + "below the events it holds after them (a copy the shared store lost?): send from seq \(missing.lowerBound), without gaps")
            }
            // An event still waiting for its round is compared: a different one under its id
            // is a second writer of the replica (or a client that forgot what it named).
            let waiting = state.waiting[replica] ?? [:]
            let recent = state.recent[replica] ?? [:]
            var fresh: [Event] = []
            for event in events {
                let seq = event.id.seq
                if let earlier = waiting[seq], earlier != event {
                    throw .refused(Refusal(.replicaConflict, "native frame refused: seq \(seq) of replica \(replica.hex) differs from the event of that id the relay is storing: one replica, one writer"))
                }
                if let stored = recent[seq], stored != event {
                    throw .refused(Refusal(.replicaConflict, "native frame refused: seq \(seq) of replica \(replica.hex) differs from the event of that id the relay stored just now: one replica, one writer (catch up again: it is in the catch-up now)"))
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
            guard !fresh.isEmpty else { return .allHeld }
            if covered.isEmpty && state.accepted[replica].isEmpty && !state.newReplicas.contains(replica) {
                // Over the board's life, not per opening: a board reopened ten times used to
                // take on ten allowances (2,401 replicas; a new client's catch-up went from
                // 0.05 s to 18 s). Every replica the board holds counts, hosted or synced in.
                var replicas = Set(all.keys)
                replicas.formUnion(state.accepted.ranges.keys)
                guard replicas.count < maxNewReplicas else {
                    throw .refused(Refusal(.nativeLimit, "native frame refused: board \(FileSystem.lastComponent(of: board.directory.root)) holds \(replicas.count) replicas, its limit for taking on a new native one (--max-native-replicas); draw as a replica it holds"))
                }
                state.newReplicas.insert(replica)
            }
            // A clock replay would quarantine is never stored (FORMAT.md §8.9), counted on what
            // the board will hold with these events: each id once. Sealed hosted events are
            // both folded by the board and accepted here; counted twice, the bound would let
            // through a clock that replay then quarantines: an acknowledged event no reader applies.
            var holds = Have(all)
            holds.formUnion(state.accepted)
            let known = holds.eventCount + UInt64(fresh.count)
            let limit = ClockBound.limit(distinctEvents: known)
            if let wild = fresh.first(where: { $0.lamport < 1 || $0.lamport > limit }) {
                throw .refusedFrame("seq \(wild.id.seq): Lamport clock \(wild.lamport) is not between 1 and \(limit) (replay would quarantine it)")
            }
            // Counted by the connection before the round can settle it.
            willStage(fresh.count)
            // Into the board's next group commit; under this lock, so that what is accepted and
            // what is staged never disagree. The commit is asked for after it (one may run on
            // this thread, and its round is settled here).
            do throws(JournalError) {
                needsCommit = try board.stageHosted(fresh, of: replica, from: connection)
            } catch {
                throw .closed
            }
            for event in fresh {
                state.accepted.insert(event.id)
                state.waiting[replica, default: [:]][event.id.seq] = event
            }
            return .staged(fresh.count)
        }
        if needsCommit { board.commitHostedSoon() }
        return acceptance
    }

    /// The seqs missing below `first` where the board holds what comes after them: a frame
    /// starting at `first` follows (or repeats) held events, yet 1…`first`-1 is not all held.
    /// Nil where nothing below is missing, or where `first` does not follow what is held (the
    /// frame is refused for that, with the same request).
    static func hole(below first: UInt64, in held: SeqRanges) -> ClosedRange<UInt64>? {
        guard first > 1, held.contains(first - 1) || held.contains(first) else { return nil }
        let prefixEnd = held.ranges.first.map { $0.lowerBound == 1 ? $0.upperBound : 0 } ?? 0
        guard prefixEnd + 1 < first else { return nil }
        let nextHeld = held.ranges.first { $0.lowerBound > prefixEnd + 1 }?.lowerBound ?? first
        return (prefixEnd + 1)...(nextHeld - 1)
    }

    /// Records that the journal holds events of `replica` that differ from the client's under
    /// the same ids (`reason` says which): from then on this board takes nothing more of that
    /// replica, since an ack by seq would count the other events as the client's. Until the
    /// board is reopened, after a person has resolved it (`journal verify` names the fork once
    /// both copies exist).
    func recordFork(of replica: ReplicaID, _ reason: String) {
        state.withLock { state in if state.forks[replica] == nil { state.forks[replica] = reason } }
    }

    /// The events of a native frame whose ids the board holds from files this host did not
    /// write (a segment sync brought, or one a previous run sealed): dedup by id is sound only
    /// if the event under that id is the same, and anyone can put a segment of any replica in
    /// a synced folder.
    func heldFromElsewhere(_ events: [Event], replica: ReplicaID) -> [Event] {
        let covered = board.covered[replica] ?? SeqRanges()
        let hosted = state.withLock { $0.accepted.ranges[replica] } ?? SeqRanges()
        return events.filter { covered.contains($0.id.seq) && !hosted.contains($0.id.seq) }
    }

    /// The highest seq n such that every event 1…n of `replica` is durable in the board's
    /// journal (stored here, or in segments the board folded): what an ack says.
    func durablePrefix(of replica: ReplicaID) -> UInt64 {
        var held = board.covered[replica] ?? SeqRanges()
        held.formUnion(board.hostedStored[replica] ?? SeqRanges())
        guard let first = held.ranges.first, first.lowerBound == 1 else { return 0 }
        return first.upperBound
    }

    // MARK: Reading

    /// The hosted open segments as they are now, every byte of them fsynced (their writer is
    /// excluded meanwhile).
    func scan() -> (scans: [ScannedSegment], problems: [Problem]) { board.scanHosted() }

    /// Seqs accepted: stored, or to be stored and sent by this host (a superset of what any
    /// read of the journal finds of hosted events, taken after the read).
    var accepted: Have { state.withLock { $0.accepted } }

    /// Accepts nothing more. What was accepted is stored, and every hosted segment sealed, by
    /// the board's close.
    func close() {
        state.withLock { $0.closed = true }
    }
}
