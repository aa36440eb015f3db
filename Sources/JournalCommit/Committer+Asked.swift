import JournalFormat
import JournalStorage

extension Committer {
    /// The open segment a recorder left unsealed (it stopped without closing, or was
    /// killed), sealed now so that sync can publish it: a recording opened only to seal
    /// (`journal sync`). The name of the new sealed segment, nil when nothing was open.
    /// Throws `.locked` while a recorder holds the writer.
    public static func sealLeftover(_ journal: JournalDirectory) throws(JournalError) -> SealedSegment? {
        let recording = try Recording(directory: journal, options: RecordingOptions(automaticCompaction: false))
        let name = try recording.seal()
        try recording.close()
        return name.map { SealedSegment(replica: recording.replica, name: $0) }
    }

    /// A compaction a person asked for, run now on the calling thread: `.standard` before a
    /// sync publishes (a target receives covers rather than runs of small files), `.everything`
    /// for `journal compact`. The caller holds the sealed-files lock (`SealedFilesLock`);
    /// compactions a journal's own seals ask for run on its committer's scheduler instead.
    public static func compact(_ journal: JournalDirectory, policy: CompactionPolicy = .standard, dryRun: Bool = false) -> CompactionReport {
        Compactor(directory: journal, policy: policy).run(dryRun: dryRun)
    }

    /// The files of `replicas` that a cover sync just imported holds, retired (under the
    /// sealed-files lock the sync holds): machines converge on the cover.
    public static func retireCovered(_ journal: JournalDirectory, of replicas: Set<ReplicaID>) -> CompactionReport {
        Compactor(directory: journal).retireCoveredFiles(of: replicas)
    }
}
