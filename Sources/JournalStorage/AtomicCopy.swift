import JournalPlatform

/// Temporaries of files written under a final name (`DirectoryHandle.writeNewFileAtomically`,
/// `FileSystem.writeAtomically`) are named `.tmp-<name>.<host>.<pid>.<random>`: every reader
/// skips them, and `isStale` tells which ones a crashed process of this machine left behind.
public enum AtomicCopy {
    /// A temporary of ours (this host) whose process is gone: safe to delete.
    public static func isStale(_ name: String) -> Bool { FileSystem.isStaleTemporary(name) }
}
