import JournalFormat

/// The one answer to "is this sealed file what its folder and name claim?", asked by
/// replay and verify (`SegmentSet`), import and publish (`SegmentImporter`) and the local
/// index. They differ only in what they do with a damaged file, which is the `policy`.
public struct SegmentVerdict: Sendable {
    public enum Policy: Sendable {
        /// Import, publish, index: a file is taken whole or not at all, and every block body
        /// is decoded first (checksums alone do not prove that a body inflates and parses).
        case wholeFile
        /// Replay and verify: blocks whose checksums verify are used even when the file as a
        /// whole is damaged, so a bad block costs its own events and no others.
        case salvageBlocks
    }

    /// The version 2 name of the file's bytes; nil when the file holds no usable events.
    public var name: SegmentName?
    /// What is wrong, first the problem that decides; empty for a valid file.
    public var problems: [Problem]
    /// The blocks the caller may use.
    public var usableBlocks: [ScannedBlock]
    /// The file is not taken at all (it is not a segment of this folder's replica, holds no
    /// block, or fails under `.wholeFile`); otherwise it counts as held, usable blocks or not.
    public var isRefused: Bool

    public var isValid: Bool { problems.isEmpty && name != nil }

    public static func judge(
        _ scan: ScannedSegment, path: String, replica: ReplicaID, claimedName: SegmentName?, policy: Policy
    ) -> SegmentVerdict {
        let claimedRange = claimedName.map { $0.firstSeq...$0.lastSeq }
        func refused(_ problem: Problem) -> SegmentVerdict {
            SegmentVerdict(name: nil, problems: [problem], usableBlocks: [], isRefused: true)
        }
        // Under salvage every problem the scan found is reported, not just the deciding one.
        func refusedWithScanProblems(or problem: Problem) -> SegmentVerdict {
            if policy == .salvageBlocks, !scan.problems.isEmpty {
                return SegmentVerdict(name: nil, problems: scan.problems, usableBlocks: [], isRefused: true)
            }
            return refused(scan.problems.first ?? problem)
        }
        guard let header = scan.header else {
            return refusedWithScanProblems(
                or: Problem(.corrupt, file: path, replica: replica, seqRange: claimedRange, reason: "segment holds no events"))
        }
        guard header.replica == replica else {
            return refused(Problem(.corrupt, file: path, offset: 0, replica: header.replica, seqRange: scan.seqRange,
                                   reason: "header names replica \(header.replica.hex) but the file is in the folder of \(replica.hex); not loaded"))
        }
        guard let range = scan.seqRange else {
            return refusedWithScanProblems(
                or: Problem(.corrupt, file: path, replica: replica, seqRange: claimedRange,
                            reason: "a sealed segment with no blocks"
                                + (claimedRange.map { " (its name promises seq \($0.lowerBound)...\($0.upperBound))" } ?? "")))
        }
        let name = SegmentName(firstSeq: range.lowerBound, lastSeq: range.upperBound, contents: scan.bytes)
        switch policy {
        case .wholeFile:
            if let problem = scan.problems.first {
                // A file that is a strict prefix of what its name promises: half-copied.
                let short = scan.problemsAreOnlyAtTail && (problem.kind == .incomplete || problem.kind == .tornTail)
                return refused(Problem(short ? .incomplete : problem.kind, file: path, offset: problem.offset,
                                       replica: replica, seqRange: problem.seqRange ?? claimedRange,
                                       reason: short ? "incomplete copy (\(problem.reason)); not imported" : problem.reason))
            }
            if let claimedName, let problem = mismatch(scan, path: path, replica: replica, claimedName: claimedName, name: name, range: range) {
                return refused(problem)
            }
            if let problem = scan.verifyBodies().first { return refused(problem) }
            return SegmentVerdict(name: name, problems: [], usableBlocks: scan.blocks, isRefused: false)

        case .salvageBlocks:
            var problems = scan.problems
            var usable = scan.blocks
            if let claimedName {
                if !Self.bytesMatch(claimedName, scan: scan, name: name) {
                    problems.append(Problem(
                        scan.problemsAreOnlyAtTail && !scan.problems.isEmpty ? .incomplete : .corrupt,
                        file: path, replica: replica, seqRange: claimedRange,
                        reason: "file checksum does not match its name; only blocks with valid checksums are used"))
                }
                if scan.problems.isEmpty, range != claimedRange {
                    // Blocks that contradict the name are not evidence of anything: none is used.
                    problems.append(Problem(
                        .corrupt, file: path, replica: replica, seqRange: range,
                        reason: "blocks hold seq \(range.lowerBound)...\(range.upperBound) but the name says \(claimedName.firstSeq)...\(claimedName.lastSeq); not loaded"))
                    usable = []
                }
            }
            return SegmentVerdict(name: problems.isEmpty ? name : nil, problems: problems, usableBlocks: usable, isRefused: false)
        }
    }

    /// Whether the file's bytes are the ones `claimed` names. A version 2 name is compared with
    /// the hash `name` already holds, so the file is hashed once.
    private static func bytesMatch(_ claimed: SegmentName, scan: ScannedSegment, name: SegmentName) -> Bool {
        claimed.identifiesContents ? claimed.check == name.check : claimed.matches(scan.bytes)
    }

    /// Whether a complete, undamaged file is the one its name claims: same seqs, same bytes.
    private static func mismatch(
        _ scan: ScannedSegment, path: String, replica: ReplicaID, claimedName: SegmentName, name: SegmentName,
        range: ClosedRange<UInt64>
    ) -> Problem? {
        let claimed = claimedName.firstSeq...claimedName.lastSeq
        if range != claimed {
            // Whole blocks of a prefix: a copy cut at a block boundary, still arriving.
            let short = range.lowerBound == claimed.lowerBound && range.upperBound < claimed.upperBound
            return Problem(short ? .incomplete : .corrupt, file: path, replica: replica, seqRange: range,
                           reason: short
                               ? "holds seq \(range.lowerBound)...\(range.upperBound) of the \(claimed.lowerBound)...\(claimed.upperBound) its name promises: an incomplete copy; not imported"
                               : "blocks hold seq \(range.lowerBound)...\(range.upperBound), the name says \(claimed.lowerBound)...\(claimed.upperBound)")
        }
        guard bytesMatch(claimedName, scan: scan, name: name) else {
            return Problem(.corrupt, file: path, replica: replica, seqRange: claimed,
                           reason: "its bytes do not match the \(claimedName.identifiesContents ? "SHA-256" : "CRC-32") in its name: a damaged or forged copy; not imported")
        }
        return nil
    }
}
