import JournalPlatform

extension JournalDirectory {
    /// The journal that holds `path`: `path` itself or the nearest folder above it with a
    /// `local/replica` file, as git finds its repository. Nil when no folder up to the root is
    /// a journal.
    public static func enclosing(_ path: String) -> JournalDirectory? {
        var current = absolute(path)
        while true {
            let candidate = JournalDirectory(root: current)
            if candidate.isJournal { return candidate }
            let parent = FileSystem.parent(of: current)
            if parent == current || current == "/" { return nil }
            current = parent
        }
    }

    /// `path` made absolute against the current directory, with `.` and `..` resolved by name.
    static func absolute(_ path: String) -> String {
        let joined = path.hasPrefix("/") ? path : FileSystem.join(FileSystem.currentDirectory, path)
        var parts: [Substring] = []
        for part in joined.split(separator: "/") {
            if part == "." || part.isEmpty { continue }
            if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }
}

extension JournalDirectory {
    /// Opens the journal at `root`, creating it (with a new replica id) where there is none
    /// yet: what an app does every time it starts, and a relay for each board. It is created
    /// where nothing is, in an empty folder, and over what a `create` cut short left
    /// (`isUnfinishedCreation`: `create` makes `replicas/` and `local/` before the identity, and
    /// a relay killed in between would leave a board that `open` refuses for ever). A folder holding
    /// anything else is somebody's and is refused (`notAJournal`; `journal init` makes a
    /// journal there on purpose).
    public static func openOrCreate(at root: String) throws(JournalError) -> JournalDirectory {
        let directory = JournalDirectory(root: root)
        if directory.isJournal { return directory }
        guard !FileSystem.exists(root) || directory.isUnfinishedCreation else {
            // Another process may have finished creating it since the first look.
            if directory.isJournal { return directory }
            throw .notAJournal(path: root)
        }
        do {
            return try create(at: root)
        } catch .alreadyAJournal {
            return directory   // another process created it meanwhile
        }
    }
}
