import JournalFormat
import JournalPlatform

/// Every segment of a journal (or of a shared folder), scanned and checked against its name
/// and folder, with every problem found. The input of replay, verify and stats.
public struct SegmentSet: Sendable {
    public struct Member: Sendable {
        public var scan: ScannedSegment
        public var replica: ReplicaID
        /// The canonical name, for sealed segments; nil for the open segment.
        public var name: SegmentName?
        /// The file's verdict found problems (blocks may still be salvaged from it).
        public var isDamaged = false
        public var isSealed: Bool { name != nil }
    }

    public var members: [Member] = []
    public var problems: [Problem] = []
    /// Files skipped because an identical copy (same replica and name) was already taken.
    public var duplicateFiles = 0
    /// The journal's trust list (invariant 12): sealed files it does not accept are
    /// quarantined by `add(sealed:)`. Nil: an open journal, or a shared folder.
    public var trust: TrustedSegments?
    /// The membership statements found (version 4 files), signatures checked; folded into
    /// `membership` by `load`.
    public var statements: [Membership.Found] = []
    /// Who may draw, folded from `statements` (invariant 16). Nil for a set built file by file
    /// by its caller (no membership is judged); open (`isOpen`) for a board without a genesis.
    /// When not open it decides which sealed files count, and replay which seqs.
    public var membership: Membership?
    /// The journal has a trust list, and this board's membership decided instead of it.
    public var trustListOverridden = false

    public init() {}

    /// Loads the sealed segments under `replicasPath` and, if given, an open segment.
    ///
    /// The open segment is read first: a writer that seals meanwhile moves its events into a
    /// sealed file, which the listing after it finds (the events are then read twice and
    /// counted as duplicates). Listed first, they could be in neither: a running writer's
    /// acknowledged events missing from one read.
    ///
    /// `hosted`: open segments of replicas the journal hosts (`HostedReplicaWriter`), scanned
    /// by the caller before this call for the same reason (their seals move events into
    /// sealed files too).
    public static func load(
        replicasPath: String, openSegmentPath: String? = nil, hosted: [ScannedSegment] = [], trust: TrustedSegments? = nil,
        pin: Membership.Pin? = nil
    ) -> SegmentSet {
        var set = loadFiles(replicasPath: replicasPath, openSegmentPath: openSegmentPath, hosted: hosted, trust: trust)
        let membership = Membership.fold(set.statements, pin: pin)
        if !membership.isOpen, trust != nil {
            // Membership decides what counts, not the local list (invariant 16): read again
            // without it, so that nothing the list quarantined is missing.
            set = loadFiles(replicasPath: replicasPath, openSegmentPath: openSegmentPath, hosted: hosted, trust: nil)
            set.trustListOverridden = true
        }
        set.apply(membership)
        return set
    }

    private static func loadFiles(
        replicasPath: String, openSegmentPath: String?, hosted: [ScannedSegment], trust: TrustedSegments?
    ) -> SegmentSet {
        var set = SegmentSet()
        set.trust = trust
        var open: [Member] = []
        if let openSegmentPath, FileSystem.exists(openSegmentPath) {
            let scan = SegmentScanner.scan(path: openSegmentPath, sealed: false)
            set.problems.append(contentsOf: scan.problems)
            if let replica = scan.replica { open.append(Member(scan: scan, replica: replica, name: nil)) }
        }
        for scan in hosted {
            if let replica = scan.replica { open.append(Member(scan: scan, replica: replica, name: nil)) }
        }
        var listing = JournalDirectory.listSealed(replicasPath: replicasPath)
        set.problems.append(contentsOf: listing.ignored)
        var seen = Set<String>()
        // A compaction retires files only once their cover has its final name (docs/FORMAT.md
        // §16.2), but one listing is no snapshot: it may miss both a cover linked while it ran
        // and an input removed before it got there. So the folder is listed again after the
        // files were read, until a listing shows nothing new; a listed file gone before it was
        // read is then covered by a file a later listing finds.
        for round in 0..<4 {
            for file in listing.sealed {
                let key = file.name.relativePath(in: file.replica)
                if !seen.insert(key).inserted {
                    if round == 0 { set.duplicateFiles += 1 }
                    continue
                }
                let problemsBefore = set.problems.count
                set.add(sealed: file)
                if set.problems.count > problemsBefore, set.problems[problemsBefore].kind == .unreadable,
                   !FileSystem.exists(file.path) {
                    set.problems.removeSubrange(problemsBefore...)
                }
            }
            listing = JournalDirectory.listSealed(replicasPath: replicasPath)
            guard listing.sealed.contains(where: { !seen.contains($0.name.relativePath(in: $0.replica)) }) else { break }
        }
        set.members.append(contentsOf: open)
        return set
    }

    /// A journal's segments: sealed, its open segment, and the open segments of replicas it
    /// hosts (`hosted`: as scanned by the caller, who may have to exclude their writer
    /// meanwhile; nil: scanned here).
    public static func load(_ directory: JournalDirectory, hosted: (scans: [ScannedSegment], problems: [Problem])? = nil) -> SegmentSet {
        let isJournal = directory.isJournal
        let hosted = hosted ?? (isJournal ? directory.scanHostedSegments() : ([], []))
        var set = load(replicasPath: directory.replicasPath,
                       openSegmentPath: isJournal ? directory.openSegmentPath : nil, hosted: hosted.scans,
                       trust: isJournal ? TrustedSegments.of(directory) : nil, pin: isJournal ? directory.boardPin() : nil)
        set.problems.append(contentsOf: hosted.problems)
        return set
    }

    /// Scans one sealed file and checks that it is what its folder and name claim.
    public mutating func add(sealed file: JournalDirectory.SealedFile) {
        var scan = SegmentScanner.scan(path: file.path, sealed: true)
        let verdict = SegmentVerdict.judge(scan, path: file.path, replica: file.replica, claimedName: file.name, policy: .salvageBlocks)
        problems.append(contentsOf: verdict.problems)
        guard !verdict.isRefused else { return }
        if let version = scan.header?.version, FormatVersion.membership.contains(version) {
            // Membership statements, not drawing events: each carries its own signature, so
            // no trust list or seal is asked about them.
            let read = MembershipLog.statements(of: scan, blocks: verdict.usableBlocks, replica: file.replica)
            statements += read.found
            problems += read.problems
            return
        }
        if let membership, !membership.isOpen {
            if let quarantine = membership.judge(scan, path: file.path, replica: file.replica, damaged: !verdict.problems.isEmpty) {
                problems.append(quarantine)
                return
            }
        } else if let trust {
            // A damaged file's seal proves nothing about the blocks salvage would keep (a forger
            // could damage a file on purpose to skip the check): under a list it is not applied.
            let quarantine = verdict.problems.isEmpty
                ? trust.judge(scan, path: file.path, replica: file.replica)
                : Problem(.quarantined, file: file.path, replica: file.replica, seqRange: scan.seqRange,
                          reason: "damaged (above), so no seal can vouch for its blocks: under a trust list none is applied")
            if let quarantine {
                problems.append(quarantine)
                return
            }
        }
        scan.blocks = verdict.usableBlocks
        members.append(Member(scan: scan, replica: file.replica, name: file.name, isDamaged: !verdict.problems.isEmpty))
    }

    /// Takes `membership` as this set's: under a genesis, sealed files it does not accept are
    /// quarantined now (`add(sealed:)` judges later files itself).
    public mutating func apply(_ membership: Membership) {
        self.membership = membership
        problems += membership.problems
        guard !membership.isOpen else { return }
        members = members.filter { member in
            guard member.isSealed,
                  let quarantine = membership.judge(member.scan, path: member.scan.path, replica: member.replica, damaged: member.isDamaged)
            else { return true }
            problems.append(quarantine)
            return false
        }
    }

    public var replicas: [ReplicaID] { Array(Set(members.map(\.replica))).sorted() }

    /// The clock plausibility limit of this set (`ClockBound`): from the distinct seqs its
    /// valid blocks hold, before anything is decoded.
    public var plausibilityLimit: UInt64 {
        var ranges: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        for member in members {
            for block in member.scan.blocks { ranges[member.replica, default: []].append(block.seqRange) }
        }
        return ClockBound.limit(distinctEvents: ClockBound.distinctEvents(Array(ranges.values)))
    }
    public var totalBytes: Int64 { members.reduce(0) { $0 + Int64($1.scan.bytes.count) } }
    /// Events in every block of every member, copies counted each time they are stored.
    public var blockEventCount: Int {
        members.reduce(0) { total, member in member.scan.blocks.reduce(total) { $0 + $1.frame.eventCount } }
    }
}
