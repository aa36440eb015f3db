import JournalPlatform

/// The one process that adds or removes sealed files other than by sealing: a sync, a merge,
/// or a compaction (`Compactor`). An exclusive `flock(2)` on `local/sync.lock`, released when
/// the descriptor closes or the process dies, so never stale. A writer seals without it:
/// a seal only adds a file no one else can name.
public struct SealedFilesLock {
    let descriptor: FileDescriptor

    public static func path(_ directory: JournalDirectory) -> String { directory.localPath + "/sync.lock" }

    /// The lock if no one holds it now; nil if someone does (the caller tries again later).
    public static func tryAcquire(_ directory: JournalDirectory) throws(IOError) -> SealedFilesLock? {
        let descriptor = try FileDescriptor.open(path(directory), .readWrite)
        do throws(IOError) {
            try descriptor.tryLockExclusive()
        } catch {
            descriptor.close()
            if error.isWouldBlock { return nil }
            throw error
        }
        // Informational (the flock is what excludes): whoever finds the lock taken names us.
        // Rewritten only when it names another process, so repeated passes write nothing.
        let text = Array("pid \(ProcessInfoLite.processID)\n".utf8)
        if (try? descriptor.read(count: 64, at: 0)) != text {
            try? descriptor.truncate(to: 0)
            try? descriptor.writeAll(text)
        }
        return SealedFilesLock(descriptor: descriptor)
    }

    /// Waits for the lock, up to `seconds`; nil if it stayed taken.
    public static func acquire(_ directory: JournalDirectory, waitingUpTo seconds: Double) throws(IOError) -> SealedFilesLock? {
        let deadline = ProcessInfoLite.monotonicSeconds() + seconds
        while true {
            if let lock = try tryAcquire(directory) { return lock }
            guard ProcessInfoLite.monotonicSeconds() < deadline else { return nil }
            ProcessInfoLite.sleep(milliseconds: 50)
        }
    }

    public func release() { descriptor.close() }
}
