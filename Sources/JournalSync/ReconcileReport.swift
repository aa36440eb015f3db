import JournalFormat
import JournalStorage

/// What a sync, merge or status found, per replica and per file. Nothing that was not
/// imported goes unmentioned: every such file is in `rejected` or `ignored` with its reason.
public struct ReconcileReport: Sendable {
    public struct ReplicaState: Sendable, Equatable {
        public var replica: ReplicaID
        /// Sealed segments held locally after the operation.
        public var segments = 0
        /// Seq ranges held, merged.
        public var ranges: [ClosedRange<UInt64>] = []
        /// Seq holes below the highest seq known anywhere (held, or named by a file seen).
        public var gaps: [ClosedRange<UInt64>] = []
        public var imported = 0
        public var published = 0
        /// Segment files seen again that were already held.
        public var duplicateSegments = 0
        /// Events that arrived again inside differently cut segments, counted once.
        public var duplicateEvents = 0
        /// Event seqs seen with two different contents.
        public var forks: [UInt64] = []
        /// Files of the other side not fetched: a file held here was verified to cover them.
        public var coveredSegments = 0

        public init(replica: ReplicaID) { self.replica = replica }
    }

    public var target: String
    public var replicas: [ReplicaState] = []
    /// Canonical names (`<replica>/<name>`) imported into the local journal.
    public var imported: [String] = []
    /// Events in the segments imported (a segment's event count, duplicates included).
    public var importedEvents = 0
    /// Canonical names published to the target.
    public var published: [String] = []
    /// Bytes of the segments published.
    public var publishedBytes: Int64 = 0
    /// Files that were read and refused: corrupt, incomplete (half-copied), unreadable.
    public var rejected: [Problem] = []
    /// Files never read: temporaries, placeholders, symlinks, unknown names.
    public var ignored: [Problem] = []
    /// Target folders not written to (a symlink at `replicas/` or `replicas/<id>/`), with why.
    public var notPublished: [Problem] = []
    /// This journal's segments the target does not hold intact after the sync (not sent, or
    /// there with another size): what a relay acknowledging only stored events waits for.
    public var lackingOnTarget: [String] = []
    /// Local files retired because a verified file covers them (`replica/name`), and covers
    /// written by the compaction that runs before publishing (docs/SYNC.md, "Covers").
    public var retired: [String] = []
    public var compacted: [String] = []
    /// The target's damaged copies of segments this journal holds (another size, or the same
    /// size and not their name's hash), replaced by this journal's verified copies.
    public var replacedOnTarget: [String] = []
    /// Segments the target held at an earlier sync (this journal had verified its copy there)
    /// and lacked at this one, published again: a copy lost from the target.
    public var restoredOnTarget: [String] = []
    /// This journal's damaged copies of segments the target holds (another size, or the same
    /// size and not their name's hash), replaced by the target's copies once they verified.
    public var repairedHere: [String] = []
    /// Covered files removed from the target, each once its cover was there and verified.
    public var removedFromTarget: [String] = []
    /// The open segment sealed before publishing, if any.
    public var sealed: String?
    /// Why the open segment was not sealed (e.g. a recorder holds the lock).
    public var sealSkipped: String?
    public var seconds: Double = 0
    /// Segment payload bytes read (imports, publishes, verification): 0 for a no-op sync.
    public var bytesRead: Int64 = 0

    public init(target: String) { self.target = target }

    public var nothingNew: Bool {
        imported.isEmpty && published.isEmpty && sealed == nil && retired.isEmpty && compacted.isEmpty && removedFromTarget.isEmpty
            && replacedOnTarget.isEmpty && repairedHere.isEmpty
    }
    public var hasProblems: Bool { !rejected.isEmpty || !notPublished.isEmpty || replicas.contains { !$0.forks.isEmpty } }

    public mutating func state(_ replica: ReplicaID) -> Int {
        if let index = replicas.firstIndex(where: { $0.replica == replica }) { return index }
        replicas.append(ReplicaState(replica: replica))
        return replicas.count - 1
    }
}

// MARK: - Rendering

extension ReconcileReport {
    public var text: String {
        var lines: [String] = []
        if let sealed { lines.append("sealed the open segment as \(sealed)") }
        if let sealSkipped { lines.append("note: \(sealSkipped)") }
        lines.append("\(target): imported \(Wording.counted(imported.count, "segment")), published \(Wording.counted(published.count, "segment"))"
            + (nothingNew ? " (nothing new)" : ""))
        if !compacted.isEmpty { lines.append("compacted: wrote \(Wording.counted(compacted.count, "cover")) of runs of small segments") }
        if !retired.isEmpty { lines.append("retired \(Wording.counted(retired.count, "segment")) that a verified file covers") }
        if !restoredOnTarget.isEmpty {
            lines.append("published again \(Wording.counted(restoredOnTarget.count, "segment")) that \(target) had held and lost")
        }
        if !replacedOnTarget.isEmpty {
            lines.append("replaced \(Wording.counted(replacedOnTarget.count, "damaged copy", plural: "damaged copies")) in \(target) with this journal's verified segments")
        }
        if !repairedHere.isEmpty {
            lines.append("repaired \(Wording.counted(repairedHere.count, "damaged segment")) of this journal with \(target)'s verified copies")
        }
        if !removedFromTarget.isEmpty { lines.append("removed \(Wording.counted(removedFromTarget.count, "covered segment")) from \(target), each beside its verified cover") }
        for state in replicas.sorted(by: { $0.replica < $1.replica }) {
            var line = "  replica \(state.replica.hex.prefix(12))…  \(Wording.counted(state.segments, "segment")), seq \(SeqRanges.text(state.ranges))"
            if state.imported > 0 { line += ", +\(state.imported) imported" }
            if state.published > 0 { line += ", +\(state.published) published" }
            if state.duplicateSegments > 0 { line += ", \(Wording.counted(state.duplicateSegments, "duplicate file"))" }
            if state.coveredSegments > 0 { line += ", \(Wording.counted(state.coveredSegments, "covered file")) skipped" }
            if state.duplicateEvents > 0 { line += ", \(Wording.counted(state.duplicateEvents, "duplicate event")) absorbed" }
            if !state.gaps.isEmpty { line += ", MISSING seq \(SeqRanges.text(state.gaps))" }
            if !state.forks.isEmpty { line += ", FORKED seq \(state.forks.prefix(5).map(String.init).joined(separator: ","))" + (state.forks.count > 5 ? "…" : "") }
            lines.append(line)
        }
        for problem in rejected { lines.append("  not imported: \(problem)") }
        for problem in notPublished { lines.append("  not published: \(problem)") }
        for problem in ignored { lines.append("  ignored: \(problem.file): \(problem.reason)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Stable keys; arrays sorted; numbers plain. Documented in docs/SYNC.md.
    public var json: String {
        var object = JSONObject()
        object.add("target", target)
        object.add("nothingNew", nothingNew)
        object.add("sealed", sealed)
        object.add("sealSkipped", sealSkipped)
        object.add("imported", strings: imported.sorted())
        object.add("importedEvents", importedEvents)
        object.add("published", strings: published.sorted())
        object.add("publishedBytes", publishedBytes)
        object.add("replicas", objects: replicas.sorted { $0.replica < $1.replica }.map { state in
            var entry = JSONObject()
            entry.add("replica", state.replica.hex)
            entry.add("segments", state.segments)
            entry.add("ranges", raw: SeqRanges.json(state.ranges))
            entry.add("gaps", raw: SeqRanges.json(state.gaps))
            entry.add("imported", state.imported)
            entry.add("published", state.published)
            entry.add("duplicateSegments", state.duplicateSegments)
            entry.add("duplicateEvents", state.duplicateEvents)
            entry.add("coveredSegments", state.coveredSegments)
            entry.add("forks", raw: JSONText.array(state.forks.map(String.init)))
            return entry
        })
        object.add("compacted", strings: compacted.sorted())
        object.add("retired", strings: retired.sorted())
        object.add("removedFromTarget", strings: removedFromTarget.sorted())
        object.add("replacedOnTarget", strings: replacedOnTarget.sorted())
        object.add("restoredOnTarget", strings: restoredOnTarget.sorted())
        object.add("repairedHere", strings: repairedHere.sorted())
        object.add("rejected", objects: rejected.map(\.json))
        object.add("ignored", objects: ignored.map(\.json))
        object.add("notPublished", objects: notPublished.map(\.json))
        object.add("bytesRead", bytesRead)
        object.add("milliseconds", Int((seconds * 1000).rounded()))
        return object.text + "\n"
    }
}
