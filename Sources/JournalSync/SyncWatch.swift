import Atomics
import JournalFormat
import JournalPlatform
import JournalStorage

/// Keeps a journal and a target in sync until stopped (`journal sync --watch`, or an app's
/// background sync): rounds of `SyncEngine.sync`, and between them a sleep that a new file in
/// either `replicas/` ends early.
///
/// What wakes a round: a file created, moved in, written or removed in the journal's
/// `replicas/` or its replica folders (a recorder or a live board sealed a segment), the same in
/// a folder target's `replicas/` (another machine published), or the interval passing (rsync
/// targets, network file systems whose remote changes notify nothing, an open segment to seal).
/// A burst of files is one round: after a wake the loop waits until the folders have been quiet
/// for `debounce`. A round's own imports and publications wake one more round, which finds
/// nothing and prints nothing; an idle loop then sleeps until the interval.
public final class SyncWatch: Sendable {
    public struct Options: Sendable {
        /// The longest sleep between rounds, seconds.
        public var interval: Double
        /// How long the folders must be quiet after a notification before a round starts.
        public var debounce: Double
        public var rsh: String?
        public var seal: Bool
        /// Compact before publishing (`SyncEngine.sync`).
        public var compact: Bool
        /// How long the journal's lock must stay taken before the loop says it is skipping
        /// rounds: a writer's background compaction holds it for moments.
        public var busyQuietSeconds: Double = 2
        /// Start a board at a folder target that is missing or foreign: on the first round only,
        /// so that an unmounted USB stick later is waited for, not replaced by a new board.
        public var create: Bool

        public init(interval: Double = 2, debounce: Double = 0.075, rsh: String? = nil, seal: Bool = true, compact: Bool = true, create: Bool = false) {
            self.compact = compact
            self.interval = interval
            self.debounce = debounce
            self.rsh = rsh
            self.seal = seal
            self.create = create
        }

        /// "2 s", "0.5 s", as the interval is said in messages.
        public static func wording(_ seconds: Double) -> String { SyncWatch.seconds(seconds) }
    }

    /// What a loop says as it goes. Nothing is said for a round that changed nothing.
    public enum Event: Sendable {
        /// A round sealed, published or imported something, or found problems other than the
        /// previous round's.
        case synced(ReconcileReport)
        /// Another sync, merge or compaction holds the journal's lock: rounds are skipped until
        /// it is free (said once per streak).
        case busy(pid: Int32?)
        /// A round failed in a way a later one may not (the target unreachable or unmounted, an
        /// I/O error): said once per distinct error; the loop goes on.
        case failed(SyncError)
        /// A round succeeded after `busy` or `failed`.
        case recovered
        /// Said once at the start when folders cannot be watched (inotify exhausted, not Linux):
        /// rounds run at the interval only.
        case intervalOnly(String)
    }

    public let journal: JournalDirectory
    public let target: SyncTarget
    public let options: Options
    private let watcher: FolderWatcher?
    private let watcherProblem: String?
    private let stopping = ManagedAtomic<Bool>(false)

    public init(journal: JournalDirectory, target: SyncTarget, options: Options = Options()) {
        self.journal = journal
        self.target = target
        var options = options
        options.interval = options.interval.isFinite ? max(0.05, options.interval) : 2
        options.debounce = options.debounce.isFinite ? max(0, options.debounce) : 0
        self.options = options
        // Depth 1: `replicas/` (a replica's first segment makes its folder) and each replica
        // folder. An rsync target is watched through the interval alone.
        var roots = [journal.replicasPath]
        if case .directory(let path) = target { roots.append(FileSystem.join(path, "replicas")) }
        do throws(IOError) {
            watcher = try FolderWatcher(roots: roots, depth: 1)
            watcherProblem = FolderWatcher.isNative ? nil : "this system has no file-system notifications"
        } catch {
            watcher = nil
            watcherProblem = "cannot watch folders (\(error))"
        }
    }

    /// Ends the loop after the round in progress (its lock released as usual); safe from any
    /// thread, a signal handler's queue included.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        watcher?.stop()
    }

    public var isStopped: Bool { stopping.load(ordering: .acquiring) }

    /// Runs rounds until `stop()` (or until the task is cancelled, which stops it the same
    /// way); returns then. Throws only what no later round can mend: the journal gone, rsync
    /// missing, a target that is not a board or is this journal, a missing folder target at the
    /// first round (a typo, unless `create`).
    public func run(_ say: (Event) -> Void) async throws(SyncError) {
        // Through a Result: the handler's `operation` is not typed-throws.
        let outcome: Result<Void, SyncError> = await withTaskCancellationHandler {
            do throws(SyncError) {
                try await rounds(say)
                return .success(())
            } catch {
                return .failure(error)
            }
        } onCancel: {
            stop()
        }
        try outcome.get()
    }

    private func rounds(_ say: (Event) -> Void) async throws(SyncError) {
        if let watcherProblem {
            say(.intervalOnly("\(watcherProblem): syncing every \(Self.seconds(options.interval))"))
        }
        var engine = SyncEngine(journal: journal)
        // A held lock is a skipped round, retried at the next one, not a wait.
        engine.lockWaitSeconds = 0
        var succeeded = false
        var lastFailure: String?
        var wasBusy = false
        var busySince: Double?
        var lastProblems: Set<String> = []
        var futileWakes = 0
        var wokenByChange = false
        // What the folders looked like before and after the last round, if it succeeded and
        // changed nothing there; and when it ran.
        var settled: [String]?
        var lastRound = -Double.infinity
        while !isStopped {
            let before = fingerprint()
            if !wokenByChange, let before, let settled, before == settled,
               ProcessInfoLite.monotonicSeconds() - lastRound < max(options.interval, Self.fullRoundEvery) {
                // Nothing a round would act on has changed since the last one began: skip it.
                wokenByChange = await pause(futileWakes: 0)
                continue
            }
            lastRound = ProcessInfoLite.monotonicSeconds()
            settled = nil
            var progressed = false
            do throws(SyncError) {
                let report = try await engine.sync(target, rsh: options.rsh, seal: options.seal, compact: options.compact,
                                                   create: options.create && !succeeded)
                succeeded = true
                // Settled only if the round itself changed nothing there: else what it made
                // (a board created, a segment published) could be undone before the next
                // look and leave the folders as this round found them.
                if let before, fingerprint() == before { settled = before }
                if wasBusy || lastFailure != nil { say(.recovered) }
                wasBusy = false
                busySince = nil
                lastFailure = nil
                let problems = Self.problems(of: report)
                progressed = !report.nothingNew
                if progressed || (problems != lastProblems && !problems.isEmpty) { say(.synced(report)) }
                lastProblems = problems
            } catch {
                if case .busy(let pid) = error {
                    // Said once the lock stays taken: a writer's compaction holds it for moments.
                    let now = ProcessInfoLite.monotonicSeconds()
                    if busySince == nil { busySince = now }
                    if !wasBusy, now - (busySince ?? now) >= options.busyQuietSeconds {
                        say(.busy(pid: pid))
                        wasBusy = true
                    }
                    // The holder is often brief (a writer's background compaction, started by
                    // the very seal that woke this loop): try again soon, not at the interval.
                    try? await Task.sleep(nanoseconds: 250_000_000)
                    wokenByChange = true
                    continue
                } else {
                    if isFatal(error, firstRound: !succeeded) { throw error }
                    if error.description != lastFailure { say(.failed(error)) }
                    lastFailure = error.description
                }
            }
            if isStopped { break }
            // Something keeps writing into a watched folder without giving a round anything to
            // do (a target refusing every write, a tool rewriting a file): space such rounds out.
            futileWakes = wokenByChange && !progressed ? futileWakes + 1 : 0
            wokenByChange = await pause(futileWakes: futileWakes)
        }
    }

    /// Sleeps until a notification (then until quiet) or the interval; true if woken by a change.
    private func pause(futileWakes: Int) async -> Bool {
        guard let watcher else {
            // No notifications: sleep in slices, so that `stop` is seen within a quarter second.
            let end = ProcessInfoLite.monotonicSeconds() + options.interval
            while !isStopped, ProcessInfoLite.monotonicSeconds() < end {
                let slice = min(0.25, end - ProcessInfoLite.monotonicSeconds())
                try? await Task.sleep(nanoseconds: UInt64(max(0, slice) * 1e9))
            }
            return false
        }
        // Folders that appeared since (the first replica folder, a target that was mounted).
        watcher.rescan()
        guard await watcher.next(timeoutSeconds: options.interval) == .changed else { return false }
        let spacing = futileWakes < 2 ? 0 : min(options.interval, 0.1 * Double(1 << min(futileWakes - 1, 10)))
        let start = ProcessInfoLite.monotonicSeconds()
        // A burst is one round: wait until quiet for `debounce`, but not more than a second (or
        // the spacing of futile rounds, if longer): a folder written into without pause must
        // still be synced.
        let latest = start + max(1, spacing)
        var quietUntil = start + max(options.debounce, spacing)
        while true {
            let now = ProcessInfoLite.monotonicSeconds()
            guard now < quietUntil else { break }
            let outcome = await watcher.next(timeoutSeconds: quietUntil - now)
            if outcome == .stopped { break }
            if outcome == .changed { quietUntil = min(latest, max(quietUntil, ProcessInfoLite.monotonicSeconds() + options.debounce)) }
        }
        return true
    }

    /// A round at least this often even when nothing seems to have changed: a file rewritten
    /// in place on a network file system changes no folder's modification time, and damaged
    /// copies are moved aside only once they have sat for a minute.
    static let fullRoundEvery = 60.0

    /// What changes when a round has something to do, read with a few `stat`s instead of a
    /// round's listings and caches: each `replicas/` folder and each replica folder in it
    /// (adding, removing or renaming a file changes its folder's modification time, on NFS and
    /// SMB as well, where notifications from other machines never come), and the open segment
    /// (events to seal). Nil for an rsync or object-store target: only a round can look there.
    private func fingerprint() -> [String]? {
        if case .directory = target {} else { return nil }
        var parts: [String] = []
        func folder(_ path: String) {
            guard let info = FileSystem.linkStatus(path) else {
                parts.append(path + " missing")
                return
            }
            parts.append("\(path) \(info.kind) \(info.inode) \(info.modified)")
            for entry in (try? FileSystem.list(path)) ?? [] {
                parts.append("  \(entry.name) \(entry.kind) \(entry.inode) \(entry.modified) \(entry.size)")
            }
        }
        folder(journal.replicasPath)
        if case .directory(let path) = target { folder(FileSystem.join(path, "replicas")) }
        if let open = FileSystem.linkStatus(journal.openSegmentPath) { parts.append("open \(open.inode) \(open.size) \(open.modified)") }
        return parts
    }

    private func isFatal(_ error: SyncError, firstRound: Bool) -> Bool {
        // A journal whose folder went away (deleted, unmounted) has nothing left to sync.
        if !journal.isJournal || !FileSystem.isDirectory(journal.replicasPath) { return true }
        switch error {
        case .rsyncMissing, .rcloneMissing, .badObjectStoreAddress, .sameJournal, .notABoard, .targetNotADirectory, .sourceMissing: return true
        case .targetMissing: return firstRound
        case .busy, .io, .rsyncFailed, .rcloneFailed: return false
        }
    }

    /// What a round reported as wrong, as comparable text.
    static func problems(of report: ReconcileReport) -> Set<String> {
        var problems = Set(report.rejected.map(\.description) + report.notPublished.map(\.description))
        for state in report.replicas where !state.forks.isEmpty {
            problems.insert("fork \(state.replica.hex) \(state.forks)")
        }
        return problems
    }

    // MARK: Wording

    /// One line for a round: "sealed 1, published 1 (34 KB), imported 2 (1,204 events) in 0.04 s".
    public static func summary(of report: ReconcileReport) -> String {
        var parts: [String] = []
        if report.sealed != nil { parts.append("sealed 1") }
        if !report.published.isEmpty { parts.append("published \(report.published.count) (\(bytes(report.publishedBytes)))") }
        if !report.imported.isEmpty {
            parts.append("imported \(report.imported.count) (\(grouped(report.importedEvents)) \(report.importedEvents == 1 ? "event" : "events"))")
        }
        let problems = report.rejected.count + report.notPublished.count
        if problems > 0 { parts.append(Wording.counted(problems, "file") + " not taken") }
        let forks = report.replicas.reduce(0) { $0 + $1.forks.count }
        if forks > 0 { parts.append(Wording.counted(forks, "forked seq", plural: "forked seqs")) }
        if parts.isEmpty { parts.append("nothing new") }
        return parts.joined(separator: ", ") + " in " + seconds(report.seconds)
    }

    /// "1,204".
    static func grouped(_ value: some BinaryInteger) -> String {
        let digits = Array(String(value.magnitude))
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { text.append(",") }
            text.append(digit)
        }
        return (value < 0 ? "-" : "") + text
    }

    /// "512 B", "34 KB", "1.5 MB" (powers of 1024, as `ls -h`).
    static func bytes(_ count: Int64) -> String {
        if count < 1024 { return "\(count) B" }
        if count < 1024 * 1024 { return "\((count + 512) / 1024) KB" }
        let tenths = (count * 10 + 512 * 1024) / (1024 * 1024)
        return "\(tenths / 10).\(tenths % 10) MB"
    }

    /// "0.04 s", "2 s".
    static func seconds(_ value: Double) -> String {
        let hundredths = Int((max(0, value) * 100).rounded())
        if hundredths % 100 == 0 { return "\(hundredths / 100) s" }
        let fraction = hundredths % 100
        if fraction % 10 == 0 { return "\(hundredths / 100).\(fraction / 10) s" }
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction) s"
    }
}
