import JournalFormat
import JournalPlatform
import JournalStorage

/// A journal's drawing kept up to date as events arrive: the replay a live board runs.
///
/// It is opened with a full (or snapshot-continued) replay, then takes this process's own
/// events one at a time (`applyOwn`) and the sealed segments other machines' events arrive
/// in (`readNew`, then `integrate`), at a cost that follows the new events, not the board.
/// When a new file could change what a full replay decides about events already applied
/// (an overlap: duplicates or a fork; a file that vanished; a quarantined clock), it says
/// so and the caller loads afresh: the drawing is always exactly `Replay`'s.
///
/// Opened with `keepsDrawing: false` it tracks only which events it holds (`covered`), with
/// the same decisions on forks, quarantine and reloads, and `drawing` stays empty: a relay's
/// board, which sends events and never reads a drawing, then holds memory that does not grow
/// with the board (invariant 13).
public struct LiveReplay: Sendable {
    public private(set) var drawing: LiveDrawing
    /// False: events are counted in `covered` and never folded (`drawing` stays empty).
    public let keepsDrawing: Bool
    /// Seq ranges applied, per replica.
    public private(set) var covered: [ReplicaID: SeqRanges]
    /// What the load and every integration since reported (damaged blocks left out, ignored files).
    public private(set) var problems: [Problem]
    /// The board's membership as of the last full load (nil: none was folded). A membership
    /// statement that arrives later makes `readNew` ask for a reload, which folds it.
    public private(set) var membership: Membership?
    var cursor: Cursor

    /// What `readNew` needs to know of the state: small, so that it can be copied out of a
    /// lock while the drawing goes on changing.
    public struct Cursor: Sendable {
        /// Sealed files whose events were applied ("replica/name"): they must stay.
        var applied: Set<String> = []
        /// Every sealed file already looked at (applied, or refused as damaged).
        var seen: Set<String> = []
        /// Files that were damaged or incomplete when looked at, with their identity then: a
        /// good copy under the same name (names are content hashes) is read again.
        var incomplete: [String: FileIdentity?] = [:]
        var covered: [ReplicaID: SeqRanges] = [:]
        /// A fork or a quarantined event was seen: only a full replay decides what changes.
        var exactOnlyByFullReplay = false
        /// The board's membership (when it has one): new files are judged by it as they come.
        var membership: Membership?
        /// The statements it was folded from, to fold new ones with.
        var statements: [Membership.Found] = []
    }

    /// What appeared since the cursor: decoded, not yet applied.
    public struct Increment: Sendable {
        public var events: [Event] = []
        public var problems: [Problem] = []
        var applied: [String] = []
        var seen: [String] = []
        var incomplete: [(String, FileIdentity?)] = []
        /// Applied files that are gone, each covered by a file still present.
        var retired: [String] = []
        /// Files under this board's own id that may be a seal in flight: looked at again later.
        public var deferred = 0
        /// Applying these on top would not give exactly the full replay: load afresh.
        public var needsReload = false
        /// The membership new statements give, when it changes nothing already held
        /// (`foldedWithoutReload`); nil: unchanged.
        public var membership: Membership?
        var statements: [Membership.Found] = []
        public var isEmpty: Bool { events.isEmpty && applied.isEmpty && seen.isEmpty && retired.isEmpty && !needsReload }
    }

    /// Distinct events applied (the input of the plausibility bound).
    private var distinctEvents: UInt64 = 0
    /// The plausibility limit at which an event quarantined so far would be applied.
    private var reloadAtLimit: UInt64?

    /// True once the set grew enough that a quarantined event is now plausible: only a full
    /// replay says what the drawing is then.
    public var needsReload: Bool {
        reloadAtLimit.map { ClockBound.limit(distinctEvents: distinctEvents) >= $0 } ?? false
    }

    /// The drawing of `directory` by a full replay, or continued from its newest snapshot,
    /// with `extra` (this process's events the files may not hold yet) applied on top.
    /// Without `hostedSegments`, the open segments of replicas the journal hosts are left out
    /// (a relay's board: its host writes them, and folds them in only once sealed).
    public static func load(
        _ directory: JournalDirectory, useSnapshots: Bool = true, extra: [Event] = [], hostedSegments: Bool = true,
        keepsDrawing: Bool = true
    ) -> (LiveReplay, ReplayReport) {
        let set = SegmentSet.load(directory, hosted: hostedSegments ? nil : ([], []))
        guard keepsDrawing else {
            var report = ReplayReport()
            report.problems = set.problems
            // Every event decoded and checked as a replay does, none kept.
            Replay.forEachUniqueEvent(set, report: &report) { _ in }
            var live = LiveReplay(set: set, directory: directory, drawing: LiveDrawing(), keepsDrawing: false, report: report)
            var ignored: [DrawingChange] = []
            for event in extra where live.covered[event.id.replica]?.contains(event.id.seq) != true {
                _ = live.applyOwn(event, changes: &ignored)
            }
            return (live, report)
        }
        var (live, report) = load(set, directory: directory, useSnapshots: useSnapshots, orderFree: false)
        var ignored: [DrawingChange] = []
        for event in extra where live.covered[event.id.replica]?.contains(event.id.seq) != true {
            guard live.applyOwn(event, changes: &ignored) == .applied else {
                // It sorts inside a stroke's loaded points: fold everything one event at a time.
                (live, report) = load(set, directory: directory, useSnapshots: false, orderFree: true)
                for event in extra where live.covered[event.id.replica]?.contains(event.id.seq) != true {
                    _ = live.applyOwn(event, changes: &ignored)
                }
                break
            }
            ignored.removeAll(keepingCapacity: true)
        }
        return (live, report)
    }

    private static func load(_ set: SegmentSet, directory: JournalDirectory, useSnapshots: Bool, orderFree: Bool) -> (LiveReplay, ReplayReport) {
        var drawing: LiveDrawing
        var report = ReplayReport()
        report.problems = set.problems
        var merge = OrderedMerge(set: set)
        if !orderFree, useSnapshots, let snapshot = SnapshotStore.newest(directory, for: set),
           let (_, continued, next) = Replay.continueFrom(snapshot, set: set) {
            // Strokes the snapshot held have no last key: everything in it precedes its last.
            drawing = LiveDrawing(loading: next.state, replicas: next.replicas, floor: next.lastKey)
            report = continued
        } else if !orderFree, merge.run(report: &report) != nil {
            drawing = LiveDrawing(loading: merge.state, replicas: set.replicas, floor: merge.lastKey)
        } else {
            // Clocks out of order (or a point to place inside a loaded stroke): fold one event
            // at a time; every point keeps its key.
            report = ReplayReport()
            report.problems = set.problems
            drawing = LiveDrawing()
            var ignored: [DrawingChange] = []
            Replay.forEachUniqueEvent(set, report: &report) { event in
                drawing.apply(event, changes: &ignored)
                ignored.removeAll(keepingCapacity: true)
            }
        }
        let live = LiveReplay(set: set, directory: directory, drawing: drawing, keepsDrawing: true, report: report)
        return (live, report)
    }

    /// The state after a load of `set` that gave `drawing` and `report`.
    private init(set: SegmentSet, directory: JournalDirectory, drawing: LiveDrawing, keepsDrawing: Bool, report: ReplayReport) {
        var cursor = Cursor()
        for summary in report.replicas { cursor.covered[summary.replica] = SeqRanges(summary.ranges) }
        for member in set.members {
            if let name = member.name { cursor.applied.insert(name.relativePath(in: member.replica)) }
        }
        cursor.seen = cursor.applied
        // Membership files were folded (`membership`); only a new one asks for a reload.
        for found in set.statements where found.file.hasPrefix(directory.replicasPath + "/") {
            cursor.seen.insert(String(found.file.dropFirst(directory.replicasPath.count + 1)))
        }
        // Files refused whole or in part: a good copy under the same name is read again.
        for problem in set.problems where problem.kind != .tornTail {
            let file = problem.file
            guard file.hasPrefix(directory.replicasPath + "/") else { continue }
            let key = String(file.dropFirst(directory.replicasPath.count + 1))
            cursor.seen.insert(key)
            cursor.incomplete[key] = FileIdentity.of(file)
        }
        cursor.exactOnlyByFullReplay = !report.forks.isEmpty || report.quarantinedEvents > 0
        if let membership = set.membership, !membership.isOpen {
            cursor.membership = membership
            cursor.statements = set.statements
        }
        self.membership = set.membership
        self.drawing = drawing
        self.keepsDrawing = keepsDrawing
        covered = cursor.covered
        problems = report.problems
        self.cursor = cursor
        distinctEvents = ClockBound.distinctEvents(cursor.covered.values.map(\.ranges))
        reloadAtLimit = report.lowestQuarantinedClock
    }

    /// What `readNew` needs, copied out (the coverage is filled in here rather than kept
    /// twice, which would copy it on every event applied).
    public var readCursor: Cursor {
        var copy = cursor
        copy.covered = covered
        return copy
    }

    /// Applies an event this process's writer just assigned (it follows every event seen).
    public mutating func applyOwn(_ event: Event, changes: inout [DrawingChange]) -> LiveDrawing.Outcome {
        let outcome = keepsDrawing ? drawing.apply(event, changes: &changes) : .applied
        if outcome == .applied { cover(event) }
        return outcome
    }

    private mutating func cover(_ event: Event) {
        covered[event.id.replica, default: SeqRanges()].insert(event.id.seq...event.id.seq)
        distinctEvents += 1
    }

    /// Reads the sealed segments that appeared in `directory` since `cursor`: the disk work
    /// of an integration, done outside any lock. `own` is this process's replica: its files
    /// named in `ownSealed` hold events `applyOwn` already applied; another file under its id
    /// that overlaps them is a fork (or a forgery), unless a seal is in flight
    /// (`ownSealInFlight`), whose file is then looked at again later.
    public static func readNew(_ directory: JournalDirectory, after cursor: Cursor, own: ReplicaID?,
                               ownSealed: Set<String> = [], ownSealInFlight: Bool = false) -> Increment {
        var increment = Increment()
        let listing = JournalDirectory.listSealed(replicasPath: directory.replicasPath)
        var present = Set<String>()
        var fresh = SegmentSet()
        // New segments are judged as a full load would judge them: by the board's membership
        // when it has one (a new statement asks for a reload below), else by the trust list.
        if let membership = cursor.membership {
            fresh.membership = membership
        } else {
            fresh.trust = TrustedSegments.of(directory)
        }
        var keys: [String] = []
        for file in listing.sealed {
            let key = file.name.relativePath(in: file.replica)
            guard present.insert(key).inserted else { continue }
            if cursor.seen.contains(key) {
                // Seen whole: nothing new can be under this name. Seen damaged or incomplete:
                // read again once the file changed.
                guard let before = cursor.incomplete[key], FileIdentity.of(file.path) != before else { continue }
            }
            let problemsBefore = fresh.problems.count
            let membersBefore = fresh.members.count
            fresh.add(sealed: file)
            if fresh.problems.count > problemsBefore { increment.incomplete.append((key, FileIdentity.of(file.path))) }
            if fresh.members.count > membersBefore { keys.append(key) } else { increment.seen.append(key) }
        }
        // A file folded earlier is gone. Retired by a compaction or a sync, its events are
        // all in its cover (`CoverLog`), and nothing changes; otherwise the event set shrank,
        // and only a replay says what the drawing of the new set is.
        let vanished = cursor.applied.subtracting(present)
        var covers = CoverLookup(directory: directory, needed: !vanished.isEmpty)
        for key in vanished {
            guard let cover = covers.finalCover(of: key), present.contains(cover) else {
                increment.needsReload = true
                return increment
            }
            increment.retired.append(key)
        }
        // A membership statement can change what counts anywhere in the drawing; one that
        // only admits keys this board holds nothing of (a new member) changes nothing held.
        if !fresh.statements.isEmpty {
            guard let folded = foldedWithoutReload(cursor, adding: fresh.statements, directory: directory, listing: listing) else {
                increment.needsReload = true
                return increment
            }
            increment.membership = folded
            increment.statements = fresh.statements
        }
        guard !cursor.exactOnlyByFullReplay || (keys.isEmpty && increment.seen.isEmpty) else {
            increment.needsReload = true
            return increment
        }
        increment.problems = fresh.problems
        var newRanges: [ReplicaID: SeqRanges] = [:]
        var members: [SegmentSet.Member] = []
        for (member, key) in zip(fresh.members, keys) {
            let held = cursor.covered[member.replica] ?? SeqRanges()
            var overlaps = false
            var inside = true
            for block in member.scan.blocks {
                let range = block.seqRange
                if held.intersects(range) { overlaps = true }
                if !held.containsAll(range) { inside = false }
            }
            if overlaps && inside && covers.explains(key, seqs: member.scan.seqRange, applied: cursor.applied, own: member.replica == own) {
                // A cover of files applied already, or a file such a cover holds: the same
                // events, verified when it was logged.
                increment.seen.append(key)
                increment.applied.append(key)
                continue
            }
            if overlaps {
                if member.replica == own && inside {
                    if ownSealed.contains(key) {
                        increment.seen.append(key)
                        increment.applied.append(key)
                        continue
                    }
                    if ownSealInFlight {
                        increment.deferred += 1
                        continue
                    }
                }
                increment.needsReload = true
                return increment
            }
            for block in member.scan.blocks { newRanges[member.replica, default: SeqRanges()].insert(block.seqRange) }
            members.append(member)
            increment.seen.append(key)
            increment.applied.append(key)
        }
        fresh.members = members
        guard !members.isEmpty else { return increment }
        // The clock bound of the whole set, old events and new (`ClockBound`).
        var all = cursor.covered
        for (replica, ranges) in newRanges { all[replica, default: SeqRanges()].formUnion(ranges) }
        let limit = ClockBound.limit(distinctEvents: ClockBound.distinctEvents(all.values.map(\.ranges)))
        var report = ReplayReport()
        for replica in fresh.replicas {
            var stream = ReplicaStream(set: fresh, replica: replica, plausibilityLimit: limit)
            while let batch = stream.next(report: &report) {
                increment.events.append(contentsOf: batch.events(replica: replica))
            }
        }
        increment.problems += report.problems
        if !report.forks.isEmpty || report.quarantinedEvents > 0 { increment.needsReload = true }
        return increment
    }

    /// The membership `cursor`'s statements and `new` ones fold into, if it counts exactly
    /// what the old one counted of everything this board holds: the same board and hosts, no
    /// new problem, and admitted seqs changed only for replicas of which the journal holds no
    /// event (none applied, no sealed file, no hosted one). Nil: only a full load says.
    private static func foldedWithoutReload(
        _ cursor: Cursor, adding new: [Membership.Found], directory: JournalDirectory, listing: JournalDirectory.Listing
    ) -> Membership? {
        guard let old = cursor.membership, !old.isOpen else { return nil }
        let folded = Membership.fold(cursor.statements + new, pin: directory.boardPin())
        guard folded.board == old.board, folded.problems.count == old.problems.count else { return nil }
        func hosts(_ membership: Membership) -> Set<[UInt8]> { Set(membership.members.keys.filter(membership.mayHost)) }
        guard hosts(folded) == hosts(old) else { return nil }
        let replicas = Set(folded.members.values.map(\.replica)).union(old.members.values.map(\.replica))
        let changed = replicas.filter { folded.admitted($0) != old.admitted($0) }
        guard !changed.isEmpty else { return folded }
        let withFiles = Set(listing.sealed.map(\.replica))
        for replica in changed {
            if cursor.covered[replica]?.isEmpty == false || withFiles.contains(replica)
                || FileSystem.linkStatus(directory.hostedSegmentPath(replica)) != nil {
                return nil
            }
        }
        return folded
    }

    /// Applies what `readNew` found. False when the caller must load afresh instead (the
    /// state is then partly updated and must be dropped).
    public mutating func integrate(_ increment: Increment, changes: inout [DrawingChange]) -> Bool {
        var applied: [Event] = []
        return integrate(increment, changes: &changes, applied: &applied)
    }

    /// `integrate`, also collecting in `applied` the events it applied (those it did not hold).
    public mutating func integrate(_ increment: Increment, changes: inout [DrawingChange], applied: inout [Event]) -> Bool {
        guard !increment.needsReload else { return false }
        for event in increment.events {
            // Own events a concurrent append already applied (only ours can be: others'
            // overlaps were refused by `readNew`).
            if covered[event.id.replica]?.contains(event.id.seq) == true { continue }
            if keepsDrawing {
                guard drawing.apply(event, changes: &changes) == .applied else { return false }
            }
            cover(event)
            applied.append(event)
        }
        cursor.applied.subtract(increment.retired)
        cursor.seen.subtract(increment.retired)
        cursor.applied.formUnion(increment.applied)
        cursor.seen.formUnion(increment.seen)
        for (key, identity) in increment.incomplete { cursor.incomplete[key] = identity }
        for key in increment.applied where !increment.incomplete.contains(where: { $0.0 == key }) {
            cursor.incomplete.removeValue(forKey: key)
        }
        problems += increment.problems
        if let folded = increment.membership {
            membership = folded
            cursor.membership = folded
            cursor.statements += increment.statements
        }
        return !needsReload
    }
}

/// What `local/covers` says about files a live replay meets, read only when needed.
struct CoverLookup {
    let directory: JournalDirectory
    private var log: CoverLog?

    init(directory: JournalDirectory, needed: Bool) {
        self.directory = directory
        if needed { log = CoverLog.load(directory) }
    }

    mutating func finalCover(of key: String) -> String? {
        if log == nil { log = CoverLog.load(directory) }
        return log?.finalCover(of: key)
    }

    /// Whether the new file `key`, all of whose seqs are applied, holds nothing but events
    /// already applied: it is recorded as covered by an applied file; or it is the final cover
    /// of applied files whose ranges span all of `seqs`; or, for this process's own replica
    /// (whose events it applied as it wrote them), all the files logged as its inputs span them.
    mutating func explains(_ key: String, seqs: ClosedRange<UInt64>?, applied appliedFiles: Set<String>, own: Bool) -> Bool {
        guard let seqs else { return false }
        if let cover = finalCover(of: key), appliedFiles.contains(cover) { return true }
        guard let log, !log.isEmpty else { return false }
        // The inputs logged for `key`: those applied here, and all of them (for this process's
        // own replica, whose events it applied as it wrote them).
        var applied: [ClosedRange<UInt64>] = []
        var all: [ClosedRange<UInt64>] = []
        for (retired, cover) in log.coverOf where cover == key || log.finalCover(of: retired) == key {
            guard let name = SegmentName(fileName: String(retired.dropFirst(33))) else { continue }
            all.append(name.firstSeq...name.lastSeq)
            if appliedFiles.contains(retired) { applied.append(name.firstSeq...name.lastSeq) }
        }
        // A cover holds exactly its inputs' events only over the seqs its inputs span: a file
        // that also holds other seqs (sync retires for any file that covers) is read.
        return SeqRanges(own ? all : applied).containsAll(seqs)
    }
}
