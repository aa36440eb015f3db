import JournalPlatform
import JournalRelay
import JournalStorage
import JournalSync

/// `journal serve --share STORE`: each board's journal is synced with `STORE/<board>` by the
/// sync `journal sync` runs (a shared folder, an rsync remote, or an object store through
/// rclone), so the relays of a cluster hand boards to one another through the store.
struct SyncedBoardSharing: BoardSharing {
    /// The store's root, as `journal sync` takes a target.
    let store: String
    let interval: Double

    private func target(_ board: BoardName) throws(SyncError) -> SyncTarget {
        var root = store
        while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
        return try SyncTarget(parsing: root + "/" + board.text)
    }

    func sync(_ board: BoardName, journal path: String, open: Bool) async -> String? {
        do {
            let journal = try JournalDirectory.openOrCreate(at: path)
            var engine = SyncEngine(journal: journal)
            // The periodic round and a close may meet on one journal: wait rather than fail.
            engine.lockWaitSeconds = 60
            // An open board seals and compacts its own files (one committer). A closed one is
            // sealed first (what a killed relay left in its open segment) and compacted, which
            // publishes fewer, larger files.
            _ = try await engine.sync(try target(board), seal: !open, compact: !open, create: true)
            return nil
        } catch {
            return "\(error)"
        }
    }

    func adopt(_ board: BoardName, journal path: String) async -> Bool {
        let journal: JournalDirectory
        do {
            journal = try JournalDirectory.create(at: path)
        } catch {
            // Made meanwhile (another connection's adoption): it is there, whoever made it.
            return FileSystem.exists(path)
        }
        var imported = false
        if let report = try? await SyncEngine(journal: journal).sync(try target(board), seal: false, compact: false, create: false) {
            imported = !report.imported.isEmpty
        }
        if !imported { FileSystem.removeTree(path) }
        return imported
    }
}
