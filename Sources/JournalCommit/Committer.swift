import Dispatch
import JournalFormat
import JournalPlatform
import JournalStorage

/// The one writer of a journal folder (docs/LIVE.md, "The committer and its stream"): the
/// board's own replica and the replicas it hosts for others (`HostedReplicas`, a relay's native
/// clients), made durable by one group commit (`CommitPolicy.commitDelayMilliseconds`), sealed
/// by one policy (after a pause, at an age, at a size, or when asked: `sealNow`), compacted
/// after each seal, with one failure path. Its thread is a deadline loop
/// (`WorkerThread.submit(at:)`); what it did is reported once, as `JournalActivity` (durable
/// seqs, hosted rounds, seals, compactions), with no lock held.
///
/// Its owner (`Board`) appends through `append(_:fold:)`, whose `fold` runs under the
/// committer's lock: events are folded in the order their seqs were given. So the owner may
/// take its own lock inside `fold`, and must never call the committer while holding it.
public final class Committer: Sendable {
    package let directory: JournalDirectory
    package let replica: ReplicaID
    /// Who the journal is, read once when it opened (`JournalIdentity`): every writer and
    /// compaction of the journal seals with these keys.
    package let identity: JournalIdentity
    /// What opening the journal found and repaired (a torn tail cut, a copied folder).
    package let recovery: RecoveryReport
    /// The replicas this journal stores for others, committed and sealed here.
    let hosted: HostedReplicas
    private let options: CommitPolicy
    private let thread = WorkerThread()
    /// The journal's one compaction scheduler, stopped when the committer closes.
    private let compaction: CompactionScheduler
    private let state: Locked<State>
    private let report: @Sendable (JournalActivity) -> Void

    private struct State {
        var writer: JournalWriter?
        var durableSeq: UInt64
        var failure: JournalError?
        var commitScheduled = false
        var idleSealScheduled = false
        var lastAppend = 0.0
        /// When the oldest event not yet in a sealed segment was appended.
        var unsealedSince: Double?
        var waiters: [(seq: UInt64, notify: DurableNotice)] = []
        /// The owner reads the files (a reload): no seal starts until `resumeSeals`.
        var sealsPaused = false
        /// A seal was due while seals were paused: it runs when they resume.
        var sealDeferred = false
        /// A seal is being written: `pauseSeals` waits for it (`sealEnded`).
        var sealInFlight = false
        var sealEnded: [DispatchSemaphore] = []
        /// When the hosted files are looked at next (seal, close), if they will be.
        var hostedCheckAt: Double?
        /// A compaction was asked for: close waits for it.
        var compactionRequested = false
        /// Sealed files of the own replica written here ("replica/name"): their events are
        /// the owner's own, folded already.
        var ownSealed: Set<String> = []
        var closed = false
    }

    /// What `whenDurable` calls: every event appended before it was durable, or the journal failed.
    package typealias DurableNotice = @Sendable (Result<Void, JournalError>) -> Void

    /// Opens the journal's writer (the writer lock of the folder) and its hosted replicas.
    /// `report` hears of everything the committer does, from its thread.
    package init(directory: JournalDirectory, policy options: CommitPolicy, report: @escaping @Sendable (JournalActivity) -> Void) throws(JournalError) {
        self.directory = directory
        self.options = options
        self.report = report
        // The committer decides when to commit and seal; the writer never flushes or compacts
        // on its own.
        let writer = try JournalWriter(directory: directory, options: WriterOptions(sealEveryEvents: options.sealEveryEvents,
            sealOnClose: true))
        replica = writer.replica
        recovery = writer.recovery
        identity = writer.identity
        hosted = HostedReplicas(directory: directory, identity: identity, options: options)
        compaction = CompactionScheduler(directory: directory, identity: identity)
        state = Locked(State(writer: writer, durableSeq: writer.durableSeq))
    }

    // MARK: Appending

    /// Gives `payload` the next id, clock and wall time, queues it for the next group commit,
    /// and calls `fold` with the event under the committer's lock (the order of seqs).
    package func append(_ payload: Payload, fold: (Event) -> Void) throws(JournalError) -> Event {
        let (event, schedule) = try state.withLock { state throws(JournalError) -> (Event, Bool) in
            guard let writer = state.writer, !state.closed else { throw .closed }
            if let failure = state.failure { throw failure }
            let event = try writer.appendEvent(payload)
            fold(event)
            state.lastAppend = ProcessInfoLite.monotonicSeconds()
            if state.unsealedSince == nil { state.unsealedSince = state.lastAppend }
            let schedule = !state.commitScheduled
            state.commitScheduled = true
            return (event, schedule)
        }
        if schedule { scheduleCommit(delayed: true) }
        return event
    }

    /// Raises the journal's clock past `lamport` (invariant 4: what is recorded next follows
    /// what was seen).
    package func observe(lamport: UInt64) {
        state.withLock { $0.writer?.observe(lamport: lamport) }
    }

    /// Every own event up to this seq is durable.
    package var durableSeq: UInt64 { state.withLock { $0.durableSeq } }
    /// Why the journal stopped recording, or nil.
    package var failure: JournalError? { state.withLock { $0.failure } }

    // MARK: Durability

    /// Calls `notify` once every event appended before this call is durable (at once, on this
    /// thread, if they are), or with the failure that stopped them; otherwise on the committer
    /// thread right after the fsync, with no lock held (keep it short).
    package func whenDurable(_ notify: @escaping DurableNotice) {
        let (now, schedule) = state.withLock { state -> (Result<Void, JournalError>?, Bool) in
            if let failure = state.failure { return (.failure(failure), false) }
            let target = (state.writer?.nextSeq ?? 1) - 1
            guard state.durableSeq < target else { return (.success(()), false) }
            state.waiters.append((target, notify))
            let schedule = !state.commitScheduled
            state.commitScheduled = true
            return (nil, schedule)
        }
        if let now { notify(now) }
        if schedule { scheduleCommit(delayed: false) }
    }

    /// Seals every durable event recorded before the call, own and hosted (`Board.sealNow`).
    /// Events a pen adds meanwhile belong to the next seal: counted, they failed every round of
    /// a relay whose clients never paused.
    package func sealNow() async -> SealFailure? {
        if state.withLock({ $0.closed }) { return .journal(.closed) }
        let recorded = state.withLock { ($0.writer?.nextSeq ?? 1) - 1 }
        return await withCheckedContinuation { (continuation: CheckedContinuation<SealFailure?, Never>) in
            // Behind the commits queued before: what they make durable is sealed too.
            thread.submit { [weak self] in
                guard let self else { return continuation.resume(returning: .journal(.closed)) }
                self.commit(seal: true)
                let sealed = self.hosted.sealOpen()
                self.afterHostedSeals(sealed)
                // A seal can be put off (the owner reading the files) or fail without stopping
                // the journal (a full disk): then something durable is still unsealed, and
                // whoever asked must not take this seal for one.
                let (failure, ownUnsealed) = self.state.withLock { ($0.failure, $0.writer?.unsealedEvents(through: recorded) ?? 0) }
                if let failure { return continuation.resume(returning: .journal(failure)) }
                let hostedUnsealed = self.hosted.unsealedEvents()
                if ownUnsealed + hostedUnsealed > 0 {
                    return continuation.resume(returning: .stillUnsealed(own: ownUnsealed, hosted: hostedUnsealed))
                }
                continuation.resume(returning: nil)
            }
        }
    }

    private func scheduleCommit(delayed: Bool) {
        let delay = delayed ? options.commitDelayMilliseconds : 0
        let job: @Sendable () -> Void = { [weak self] in self?.commit(seal: false) }
        // A deadline on the committer's loop, not a sleep on it: a seal due meanwhile runs.
        if delay == 0 || !thread.submit(after: Double(delay) / 1000, job) { thread.submit(job) }
    }

    /// Makes what is pending durable (and seals, when asked or when the open segment is full),
    /// then wakes the waiters. The committer decides every seal (the writer's own policy is
    /// off), so that it knows which sealed files under its id are its own, and so that no seal
    /// renames the open segment while the owner reads the files.
    private func commit(seal requested: Bool) {
        var failed = DueWaiters()
        let (ticket, sealing) = state.withLock { state -> (FlushTicket?, Bool) in
            if !requested { state.commitScheduled = false }
            guard let writer = state.writer, state.failure == nil else { return (nil, false) }
            var seal = requested || writer.unsealedEvents >= options.sealEveryEvents
            if seal && state.sealsPaused {
                seal = false
                state.sealDeferred = true
            }
            do throws(JournalError) {
                let ticket = try writer.startFlush(seal: seal, sealWhenFull: false)
                if ticket != nil && seal { state.sealInFlight = true }
                return (ticket, seal && ticket != nil)
            } catch {
                state.failure = error
                failed = Self.dueWaiters(&state)
                return (nil, false)
            }
        }
        failed.notifyAll()
        // The fsync (and a seal) happen here, with the lock free: appends go on meanwhile.
        ticket?.run()
        // The hosted replicas' events of the same window: one group commit for the folder.
        let hostedCommit = hosted.hasStaged ? hosted.commitStaged() : nil
        if let hostedCommit { finishHosted(hostedCommit.round, sealed: hostedCommit.sealed) }
        guard let ticket else { return }
        var due = DueWaiters()
        let (again, idle, sealed, durable) = state.withLock { state -> (Bool, Bool, [SealedSegment], UInt64) in
            guard let writer = state.writer else { return (false, false, [], 0) }
            var sealEnded: [DispatchSemaphore] = []
            if sealing {
                state.sealInFlight = false
                swap(&sealEnded, &state.sealEnded)
            }
            defer { for waiter in sealEnded { waiter.signal() } }
            do throws(JournalError) {
                try writer.finishFlush(ticket)
                state.durableSeq = max(state.durableSeq, ticket.throughSeq)
                // Events appended while the seal ran are in the next open segment.
                if sealing { state.unsealedSince = writer.unsealedEvents > 0 ? ProcessInfoLite.monotonicSeconds() : nil }
            } catch {
                state.failure = error
            }
            // Known as own before the seal counts as ended (`ownSealedFiles`).
            let names = writer.takeSealedNames()
            for name in names { state.ownSealed.insert(name.relativePath(in: replica)) }
            due = Self.dueWaiters(&state)
            // Events appended during the flush, with a waiter: commit them without delay.
            let again = !state.waiters.isEmpty && !state.commitScheduled
            if again { state.commitScheduled = true }
            let idle = options.sealAfterIdleMilliseconds != nil && !state.idleSealScheduled && !sealing
            if idle { state.idleSealScheduled = true }
            return (again, idle, names.map { SealedSegment(replica: replica, name: $0) }, state.failure == nil ? state.durableSeq : 0)
        }
        due.notifyAll()
        if durable > 0 { report(.durable(throughSeq: durable)) }
        if again { scheduleCommit(delayed: false) }
        if idle, let wait = options.sealAfterIdleMilliseconds { scheduleIdleSeal(after: wait) }
        if !sealed.isEmpty {
            report(.sealed(sealed))
            requestCompaction(of: replica)
        }
    }

    /// Waiters whose events are durable (or failed), taken out under the lock and notified
    /// after it: a notice may append, flush or lock other things.
    private struct DueWaiters {
        var notices: [DurableNotice] = []
        var outcome: Result<Void, JournalError> = .success(())

        func notifyAll() {
            for notify in notices { notify(outcome) }
        }
    }

    private static func dueWaiters(_ state: inout State) -> DueWaiters {
        if let failure = state.failure {
            defer { state.waiters.removeAll() }
            return DueWaiters(notices: state.waiters.map(\.notify), outcome: .failure(failure))
        }
        let durable = state.durableSeq
        var due = DueWaiters()
        state.waiters.removeAll { waiter in
            guard waiter.seq <= durable else { return false }
            due.notices.append(waiter.notify)
            return true
        }
        return due
    }

    // MARK: The seal policy

    /// Seals the open segment after a pause in drawing, or once its oldest event is
    /// `sealAfterMilliseconds` old, so that sync can publish it: a deadline on the committer's
    /// loop, moved on while drawing goes on.
    private func scheduleIdleSeal(after idleMilliseconds: Int) {
        let idle = Double(idleMilliseconds) / 1000
        let maxAge = options.drawSealAge()
        thread.submit { [weak self] in self?.idleSealCheck(idle: idle, maxAge: maxAge) }
    }

    private func idleSealCheck(idle: Double, maxAge: Double) {
        enum Next: Sendable { case wait(Double), seal, done }
        let next = state.withLock { state -> Next in
            guard !state.closed, (state.writer?.unsealedEvents ?? 0) > 0 || state.unsealedSince != nil else {
                state.idleSealScheduled = false
                return .done
            }
            let now = ProcessInfoLite.monotonicSeconds()
            let since = state.unsealedSince ?? now
            let due = min(state.lastAppend + idle, since + maxAge)
            guard due <= now else { return .wait(due) }
            state.idleSealScheduled = false
            return .seal
        }
        switch next {
        case .done: return
        case .seal: commit(seal: true)
        case .wait(let due):
            let queued = thread.submit(at: due) { [weak self] in self?.idleSealCheck(idle: idle, maxAge: maxAge) }
            if !queued { state.withLock { $0.idleSealScheduled = false } }
        }
    }

    /// Waits for a seal in flight, then keeps seals from starting until `resumeSeals`: the
    /// owner reads the files meanwhile (a seal renames the open segment, and a load that listed
    /// the sealed files before the rename and opened the open segment after it would miss those
    /// events). Blocks its thread while a seal ends.
    package func pauseSeals() {
        while true {
            let sealEnded = state.withLock { state -> DispatchSemaphore? in
                guard !state.sealInFlight else {
                    let waiter = DispatchSemaphore(value: 0)
                    state.sealEnded.append(waiter)
                    return waiter
                }
                state.sealsPaused = true
                return nil
            }
            guard let sealEnded else { return }
            sealEnded.wait()
        }
    }

    /// Lets seals start again, and runs the one that fell due meanwhile.
    package func resumeSeals() {
        let sealNow = state.withLock { state -> Bool in
            state.sealsPaused = false
            defer { state.sealDeferred = false }
            return state.sealDeferred && !state.closed
        }
        if sealNow { thread.submit { [weak self] in self?.commit(seal: true) } }
    }

    /// The own replica's sealed files written here, and whether a seal is being written now
    /// (its file is then not yet among them): what the owner's reader skips as its own.
    package func ownSealedFiles() -> (names: Set<String>, sealInFlight: Bool) {
        state.withLock { ($0.ownSealed, $0.sealInFlight) }
    }

    // MARK: Hosted replicas

    /// Stores `events` of a hosted replica in the next group commit, as one batch of
    /// `submitter`'s; the round is reported as `.hosted` once durable (or failed).
    package func host(_ events: [Event], of replica: ReplicaID, from submitter: Int) throws(JournalError) {
        if try hosted.stage(events, of: replica, from: submitter) { commitHostedSoon() }
    }

    /// The first step of `host`, for a caller that stages under a lock of its own. Returns
    /// true when the caller must then call `commitHostedSoon()`, after releasing that lock.
    package func stageHosted(_ events: [Event], of replica: ReplicaID, from submitter: Int) throws(JournalError) -> Bool {
        try hosted.stage(events, of: replica, from: submitter)
    }

    /// Drops what is staged of `replica` (its batches still settle with the next round).
    package func unstageHosted(_ replica: ReplicaID) { hosted.unstage(replica) }

    /// Seqs durable in the hosted files, per replica.
    package var hostedStored: [ReplicaID: SeqRanges] { hosted.stored }

    /// The hosted open segments as they are now, every byte of them fsynced.
    package func scanHosted() -> (scans: [ScannedSegment], problems: [Problem]) { hosted.scan() }

    /// The second step of `host`, for a caller that stages (`stageHosted`) under a lock of
    /// its own: called after that lock is released, when staging returned true.
    package func commitHostedSoon() {
        let schedule = state.withLock { state -> Bool in
            defer { state.commitScheduled = true }
            return !state.commitScheduled
        }
        if schedule { scheduleCommit(delayed: true) }
    }

    /// Takes over hosted open segments a previous run left, sealing them. Returns the seqs
    /// found in them: durable, so held.
    package func recoverHostedLeftovers() -> [ReplicaID: SeqRanges] {
        let (found, sealed) = hosted.recoverLeftovers()
        for replica in sealed { requestCompaction(of: replica) }
        return found
    }

    /// Looks at the hosted files when the next of them is due to be sealed or closed.
    private func scheduleHostedCheck(at due: Double) {
        let schedule = state.withLock { state -> Bool in
            guard !state.closed, state.hostedCheckAt.map({ due < $0 }) ?? true else { return false }
            state.hostedCheckAt = due
            return true
        }
        guard schedule else { return }
        let queued = thread.submit(at: due) { [weak self] in
            guard let self else { return }
            let now = ProcessInfoLite.monotonicSeconds()
            let scheduled = self.state.withLock { state -> Bool in
                // Superseded by an earlier check, or closed: that one (or close) does it.
                guard !state.closed, let at = state.hostedCheckAt, at <= now else { return false }
                state.hostedCheckAt = nil
                return true
            }
            guard scheduled else { return }
            let (sealed, next) = self.hosted.sealDue(now: now)
            self.afterHostedSeals(sealed)
            if let next { self.scheduleHostedCheck(at: next) }
        }
        // Refused (closing, or no thread could start): a later check may ask again.
        if !queued { state.withLock { $0.hostedCheckAt = nil } }
    }

    private func afterHostedSeals(_ sealed: [SealedSegment]) {
        guard !sealed.isEmpty else { return }
        report(.sealed(sealed))
        for replica in Set(sealed.map(\.replica)) { requestCompaction(of: replica) }
    }

    /// A hosted round is durable (or failed): the clock follows it (invariant 4), it is
    /// reported, and the files' next seal or close is scheduled.
    private func finishHosted(_ round: HostedRound, sealed: [SealedSegment]) {
        if let newest = round.stored.values.joined().map(\.lamport).max() { observe(lamport: newest) }
        report(.hosted(round))
        afterHostedSeals(sealed)
        if !round.stored.isEmpty {
            let (more, next) = hosted.sealDue(now: ProcessInfoLite.monotonicSeconds())
            afterHostedSeals(more)
            if let next { scheduleHostedCheck(at: next) }
        }
    }

    // MARK: Compaction

    /// After a seal, and once at open: the committer is the folder's one compaction scheduler.
    package func requestCompaction(of replica: ReplicaID) {
        guard options.automaticCompaction else { return }
        state.withLock { $0.compactionRequested = true }
        compaction.request(replica) { [report] compaction in
            guard !compaction.covers.isEmpty || !compaction.retired.isEmpty else { return }
            report(.compacted(compaction))
        }
    }

    // MARK: Closing

    /// Behind every commit already queued: stores what hosted replicas staged and seals their
    /// files (while the writer lock still covers them), makes everything durable, seals the open
    /// segment and releases the writer lock; every later append fails with `.closed`. Waits for
    /// a compaction it asked for, so a journal closed is left compacted, not half way.
    package func close() async -> Result<Void, JournalError> {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, JournalError>, Never>) in
            thread.submit { [weak self] in
                guard let self else { return continuation.resume(returning: .success(())) }
                continuation.resume(returning: self.closeNow())
            }
        }
        thread.stop()
        return result
    }

    private func closeNow() -> Result<Void, JournalError> {
        let last = hosted.closeStaging()
        if !last.round.isEmpty { finishHosted(last.round, sealed: last.sealed) }
        afterHostedSeals(hosted.closeAll())
        var due = DueWaiters(), failed = DueWaiters()
        var sealedAtClose: [SegmentName] = []
        let outcome = state.withLock { state -> Result<Void, JournalError> in
            guard let writer = state.writer else { return .success(()) }
            state.closed = true
            var outcome: Result<Void, JournalError> = .success(())
            do throws(JournalError) { try writer.close() } catch { outcome = .failure(error) }
            sealedAtClose = writer.takeSealedNames()
            // Known as own, as every seal of `commit`: the owner's last look at the files (woken
            // by the report below) must not take the file sealed at close for someone else's
            // and load the whole journal again while it closes.
            for name in sealedAtClose { state.ownSealed.insert(name.relativePath(in: replica)) }
            // A seal that could not be written (a full disk) leaves every event durable in the
            // open segment: the waiters' events are safe; close still says why.
            var durable = true
            if case .failure(let error) = outcome, case .sealFailed = error {} else if case .failure = outcome { durable = false }
            if durable { state.durableSeq = writer.nextSeq - 1 }
            state.writer = nil
            due = Self.dueWaiters(&state)
            if case .failure(let error) = outcome {
                if state.failure == nil { state.failure = error }
                failed = Self.dueWaiters(&state)
            }
            return outcome
        }
        due.notifyAll()
        failed.notifyAll()
        if !sealedAtClose.isEmpty {
            report(.sealed(sealedAtClose.map { SealedSegment(replica: replica, name: $0) }))
            requestCompaction(of: replica)
        }
        if state.withLock({ $0.compactionRequested }) { compaction.waitUntilIdle() }
        compaction.stop()
        return outcome
    }
}
