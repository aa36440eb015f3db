import JournalFormat
import JournalPlatform

/// Copies verified sealed segments into a `replicas/` tree: temporary name in the target
/// folder, fsync, link to the final name (never overwriting), fsync the folder.
public enum SegmentImporter {
    public enum Outcome: Equatable, Sendable {
        case imported
        case alreadyPresent
        case rejected(Problem)
    }

    /// Imports `file` unless the target already holds a file of that name. The bytes are
    /// checked first: header, every block checksum, and the whole-file CRC in the name.
    public static func importSealed(
        _ file: JournalDirectory.SealedFile, intoReplicas replicasPath: String
    ) -> Outcome {
        let folder = replicasPath + "/" + file.replica.hex
        let target = folder + "/" + file.name.fileName
        if FileSystem.exists(target) { return .alreadyPresent }
        let scan = SegmentScanner.scan(path: file.path, sealed: true)
        if let problem = scan.problems.first { return .rejected(problem) }
        guard scan.header?.replica == file.replica else {
            return .rejected(Problem(.corrupt, file: file.path, replica: file.replica,
                                     reason: "header names another replica than its folder"))
        }
        guard CRC32.checksum(scan.bytes) == file.name.fileCRC else {
            return .rejected(Problem(.incomplete, file: file.path, replica: file.replica,
                                     seqRange: file.name.firstSeq...file.name.lastSeq,
                                     reason: "file checksum does not match its name (half-copied?)"))
        }
        guard scan.seqRange == file.name.firstSeq...file.name.lastSeq else {
            return .rejected(Problem(.corrupt, file: file.path, replica: file.replica,
                                     reason: "blocks do not cover the seq range in the name"))
        }
        do throws(IOError) {
            try FileSystem.createDirectory(folder)
            let temporary = folder + "/.tmp-import-\(ProcessInfoLite.processID)-" + file.name.fileName
            try? FileSystem.remove(temporary)
            let descriptor = try FileDescriptor.open(temporary, .createNew)
            do throws(IOError) {
                try descriptor.writeAll(scan.bytes)
                try descriptor.sync()
                descriptor.close()
            } catch {
                descriptor.close()
                try? FileSystem.remove(temporary)
                throw error
            }
            // link(2) fails if the name exists: an existing segment is never replaced.
            do throws(IOError) {
                try FileSystem.link(temporary, to: target)
            } catch {
                try? FileSystem.remove(temporary)
                if error.isExists { return .alreadyPresent }
                throw error
            }
            try FileSystem.remove(temporary)
            try FileSystem.syncDirectory(folder)
            return .imported
        } catch {
            return .rejected(Problem(.unreadable, file: target, replica: file.replica, reason: error.description))
        }
    }
}
