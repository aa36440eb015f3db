import JournalFormat
import JournalPlatform

/// Copies verified sealed segments into a journal's `replicas/` tree under their canonical
/// names: temporary name in the target folder, fsync, link to the final name (which never
/// replaces an existing file), fsync the folder.
public enum SegmentImporter {
    public enum Outcome: Equatable, Sendable {
        case imported(SegmentName, LocalIndex.Entry)
        /// A file with that canonical name (hence those exact bytes) is already held.
        case alreadyPresent(SegmentName)
        case rejected(Problem)
    }

    /// Verifies the file at `path` (header, every block checksum, seq range, every body, and
    /// the whole file against its name when it carries a canonical one) and imports it into
    /// `replicasPath` under its version 2 name. `claimedName` is nil for copies under foreign
    /// names (e.g. Syncthing conflict copies): their name is computed from their contents.
    /// `guardOwn` refuses segments of the importing journal's own replica beyond what its
    /// writer has assigned (see `OwnReplicaGuard`).
    public static func importSegment(
        at path: String, replica: ReplicaID, claimedName: SegmentName?, intoReplicas replicasPath: String,
        guardOwn: OwnReplicaGuard? = nil, sharedClock: SharedCounter? = nil
    ) -> Outcome {
        if let claimedName, claimedName.identifiesContents,
           FileSystem.exists(replicasPath + "/" + replica.hex + "/" + claimedName.fileName) {
            return .alreadyPresent(claimedName)
        }
        let scan = SegmentScanner.scan(path: path, sealed: true)
        switch verify(scan, path: path, replica: replica, claimedName: claimedName) {
        case .failure(let problem): return .rejected(problem)
        case .success(let name):
            if let guardOwn, let problem = guardOwn.refusal(replica: replica, name: name, path: path) { return .rejected(problem) }
            // Before the file lands under its name: a writer appending from then on follows it.
            sharedClock?.raise(to: scan.maxLamport)
            return write(scan, name: name, replica: replica, replicasPath: replicasPath)
        }
    }

    /// The version 2 name of a complete, valid segment, or the problem that disqualifies it.
    /// This is the one verdict on "is this sealed file what it claims": import, publish and
    /// the local index all ask it.
    public static func verify(
        _ scan: ScannedSegment, path: String, replica: ReplicaID, claimedName: SegmentName?
    ) -> Result<SegmentName, Problem> {
        let claimedRange = claimedName.map { $0.firstSeq...$0.lastSeq }
        if let problem = scan.problems.first {
            // A canonical file that is a strict prefix of what its name promises: half-copied.
            let short = scan.problemsAreOnlyAtTail && (problem.kind == .incomplete || problem.kind == .tornTail)
            return .failure(Problem(short ? .incomplete : problem.kind, file: path, offset: problem.offset,
                                    replica: replica, seqRange: problem.seqRange ?? claimedRange,
                                    reason: short ? "incomplete copy (\(problem.reason)); not imported" : problem.reason))
        }
        guard let header = scan.header, let range = scan.seqRange else {
            return .failure(Problem(.corrupt, file: path, replica: replica, seqRange: claimedRange, reason: "segment holds no events"))
        }
        guard header.replica == replica else {
            return .failure(Problem(.corrupt, file: path, offset: 0, replica: header.replica, seqRange: range,
                                    reason: "header names replica \(header.replica.hex) but the file is in the folder of \(replica.hex)"))
        }
        let name = SegmentName(firstSeq: range.lowerBound, lastSeq: range.upperBound, contents: scan.bytes)
        if let claimedName {
            let claimed = claimedName.firstSeq...claimedName.lastSeq
            if range != claimed {
                // Whole blocks of a prefix: a copy cut at a block boundary, still arriving.
                let short = range.lowerBound == claimed.lowerBound && range.upperBound < claimed.upperBound
                return .failure(Problem(short ? .incomplete : .corrupt, file: path, replica: replica, seqRange: range,
                                        reason: short
                                            ? "holds seq \(range.lowerBound)...\(range.upperBound) of the \(claimed.lowerBound)...\(claimed.upperBound) its name promises: an incomplete copy; not imported"
                                            : "blocks hold seq \(range.lowerBound)...\(range.upperBound), the name says \(claimed.lowerBound)...\(claimed.upperBound)"))
            }
            let matches = claimedName.identifiesContents ? claimedName.check == name.check : claimedName.matches(scan.bytes)
            guard matches else {
                return .failure(Problem(.corrupt, file: path, replica: replica, seqRange: claimedRange,
                                        reason: "its bytes do not match the \(claimedName.identifiesContents ? "SHA-256" : "CRC-32") in its name: a damaged or forged copy; not imported"))
            }
        }
        // Decoding every block proves the bodies inflate and parse, not just that CRCs match.
        if let problem = scan.verifyBodies().first { return .failure(problem) }
        return .success(name)
    }

    /// Reads and verifies a sealed file against its own name: what sync asks before it
    /// publishes a local file (a cached verdict could be about bytes that have since changed).
    public static func verifyFile(at path: String, replica: ReplicaID, name: SegmentName) -> Problem? {
        let scan = SegmentScanner.scan(path: path, sealed: true)
        switch verify(scan, path: path, replica: replica, claimedName: name) {
        case .failure(let problem): return problem
        case .success: return nil
        }
    }

    static func write(_ scan: ScannedSegment, name: SegmentName, replica: ReplicaID, replicasPath: String) -> Outcome {
        let target = replicasPath + "/" + replica.hex + "/" + name.fileName
        do throws(IOError) {
            // `replicas` and `replicas/<id>` are opened without following symlinks (a journal
            // folder may itself be a synced folder): a symlink planted at either is refused and
            // nothing is written through it (invariant 8).
            let folder = try DirectoryHandle.open(
                FileSystem.lastComponent(of: replicasPath) + "/" + replica.hex,
                beneath: FileSystem.parent(of: replicasPath), create: true)
            if folder.kind(of: name.fileName) != nil { return .alreadyPresent(name) }
            try folder.writeNewFileAtomically(name: name.fileName, bytes: scan.bytes)
            return .imported(name, LocalIndex.entry(for: scan, replica: replica, name: name))
        } catch {
            if error.isExists { return .alreadyPresent(name) }
            // The reason names the refused path: callers may replace `file` by the source's.
            return .rejected(Problem(.unreadable, file: target, replica: replica,
                                     reason: "cannot write: \(error)" + (error.isSymbolicLink ? "; nothing written" : "")))
        }
    }
}

/// Temporaries of files written under a final name (`DirectoryHandle.writeNewFileAtomically`,
/// `FileSystem.writeAtomically`) are named `.tmp-<name>.<host>.<pid>.<random>`: every reader
/// skips them, and `isStale` tells which ones a crashed process of this machine left behind.
public enum AtomicCopy {
    /// A temporary of ours (this host) whose process is gone: safe to delete.
    public static func isStale(_ name: String) -> Bool { FileSystem.isStaleTemporary(name) }
}
