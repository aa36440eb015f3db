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
        guardOwn: OwnReplicaGuard? = nil, sharedClock: SharedCounter? = nil, trust: TrustedSegments? = nil
    ) -> Outcome {
        if let claimedName, claimedName.identifiesContents,
           FileSystem.exists(FileSystem.join(replicasPath, claimedName.relativePath(in: replica))) {
            return .alreadyPresent(claimedName)
        }
        let scan = SegmentScanner.scan(path: path, sealed: true)
        switch verify(scan, path: path, replica: replica, claimedName: claimedName) {
        case .failure(let problem): return .rejected(problem)
        case .success(let name):
            if let guardOwn, let problem = guardOwn.refusal(replica: replica, name: name, path: path) { return .rejected(problem) }
            // Before the file lands under its name: a writer appending from then on follows it.
            // Not a file the trust list quarantines (it is kept as evidence, never applied): its
            // clock would lift this journal's next events past what replay finds plausible.
            if trust?.judge(scan, path: path, replica: replica) == nil { sharedClock?.raise(to: scan.maxLamport) }
            return write(scan, name: name, replica: replica, replicasPath: replicasPath)
        }
    }

    /// The version 2 name of a complete, valid segment, or the problem that disqualifies it
    /// (`SegmentVerdict` under the whole-file policy).
    public static func verify(
        _ scan: ScannedSegment, path: String, replica: ReplicaID, claimedName: SegmentName?
    ) -> Result<SegmentName, Problem> {
        let verdict = SegmentVerdict.judge(scan, path: path, replica: replica, claimedName: claimedName, policy: .wholeFile)
        if let name = verdict.name, verdict.isValid { return .success(name) }
        return .failure(verdict.problems.first
            ?? Problem(.corrupt, file: path, replica: replica, reason: "segment holds no events"))
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
        let target = FileSystem.join(replicasPath, name.relativePath(in: replica))
        do throws(IOError) {
            // `replicas` and `replicas/<id>` are opened without following symlinks (a journal
            // folder may itself be a synced folder): a symlink planted at either is refused and
            // nothing is written through it (invariant 8).
            let folder = try DirectoryHandle.open(
                FileSystem.join(FileSystem.lastComponent(of: replicasPath), replica.hex),
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
