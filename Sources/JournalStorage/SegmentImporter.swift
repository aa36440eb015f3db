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

    /// Verifies the file at `path` (header, every block checksum, seq range, and the whole-file
    /// CRC when the file carries a canonical name) and imports it into `replicasPath`.
    /// `claimedName` is nil for copies under foreign names (e.g. Syncthing conflict copies):
    /// their canonical name is computed from their contents.
    public static func importSegment(
        at path: String, replica: ReplicaID, claimedName: SegmentName?, intoReplicas replicasPath: String
    ) -> Outcome {
        if let claimedName, FileSystem.exists(replicasPath + "/" + replica.hex + "/" + claimedName.fileName) {
            return .alreadyPresent(claimedName)
        }
        let scan = SegmentScanner.scan(path: path, sealed: true)
        switch verify(scan, path: path, replica: replica, claimedName: claimedName) {
        case .failure(let problem): return .rejected(problem)
        case .success(let name): return write(scan, name: name, replica: replica, replicasPath: replicasPath)
        }
    }

    /// The canonical name of a complete, valid segment, or the problem that disqualifies it.
    public static func verify(
        _ scan: ScannedSegment, path: String, replica: ReplicaID, claimedName: SegmentName?
    ) -> Result<SegmentName, Problem> {
        let claimedRange = claimedName.map { $0.firstSeq...$0.lastSeq }
        let fileCRC = CRC32.checksum(scan.bytes)
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
        if let claimedName {
            guard fileCRC == claimedName.fileCRC else {
                return .failure(Problem(.incomplete, file: path, replica: replica, seqRange: claimedRange,
                                        reason: "file checksum \(hex8(fileCRC)) does not match its name (\(hex8(claimedName.fileCRC))): incomplete or altered copy; not imported"))
            }
            guard range == claimedName.firstSeq...claimedName.lastSeq else {
                return .failure(Problem(.corrupt, file: path, replica: replica, seqRange: range,
                                        reason: "blocks hold seq \(range.lowerBound)...\(range.upperBound), the name says \(claimedName.firstSeq)...\(claimedName.lastSeq)"))
            }
        }
        // Decoding every block proves the bodies inflate and parse, not just that CRCs match.
        if let problem = scan.verifyBodies().first { return .failure(problem) }
        return .success(SegmentName(firstSeq: range.lowerBound, lastSeq: range.upperBound, fileCRC: fileCRC))
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

func hex8(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 8 - digits.count) + digits
}
