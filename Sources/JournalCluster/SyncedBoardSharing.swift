import JournalPlatform
import JournalRelay
import JournalStorage
import JournalSync

/// `journal serve --share STORE`: each board's journal is synced with `STORE/<board>` by the
/// sync `journal sync` runs (a shared folder, an rsync remote, or an object store through
/// rclone), so the relays of a cluster hand boards to one another through the store.
public struct SyncedBoardSharing: BoardSharing {
    /// The store's root, as `journal sync` takes a target.
    public let store: String
    public let interval: Double
    /// One sync per board at a time in this relay: the periodic round, an ack round and a
    /// close queue here, awaiting, rather than in the journal's sync lock, whose wait sleeps
    /// a thread (two on this machine's pool would stall the whole relay).
    private let queue = BoardQueue()
    /// Per board open here, its sealed segments (paths under `replicas/`) known to be in the
    /// store: seen there by its last whole sync, or sent by an ack round since. An ack round
    /// sends only what is not here; a board closed is forgotten.
    private let inStore = Locked([BoardName: Set<String>]())

    public init(store: String, interval: Double) {
        self.store = store
        self.interval = interval
    }

    private func target(_ board: BoardName) throws(SyncError) -> SyncTarget {
        var root = store
        while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
        // `rclone:remote:` names the remote's top: the board is `remote:<board>`, not `remote:/<board>`.
        return try SyncTarget(parsing: root + (root.hasSuffix(":") ? "" : "/") + board.text)
    }

    public func sync(_ board: BoardName, journal path: String, open: Bool) async -> String? {
        await syncRepairing(board, journal: path, open: open).failure
    }

    public func syncRepairing(_ board: BoardName, journal path: String, open: Bool) async -> (failure: String?, repairs: StoreRepairs) {
        await queue.serially(board.text) {
            // Sent by an ack round, so known to have reached the store, though no sync listed
            // it there (the sync's own record of the store has not seen it): sent again, it was
            // lost there, as much as a copy the record holds.
            let sentBefore = inStore.withLock { open ? $0[board] : $0.removeValue(forKey: board) } ?? []
            do {
                let journal = try JournalDirectory.openOrCreate(at: path)
                // What is sealed now: in the store once the sync below says so.
                let sealedBefore = open ? Self.sealedSegments(of: journal) : nil
                var engine = SyncEngine(journal: journal)
                // Only a sync outside this relay (`journal sync` run by hand) can hold the lock.
                engine.lockWaitSeconds = 3
                engine.keepsRcloneRunning = true
                // An open board seals and compacts its own files (one committer). A closed one
                // is sealed first (what a killed relay left in its open segment) and compacted,
                // which publishes fewer, larger files.
                let report = try await engine.sync(try target(board), seal: !open, compact: !open, create: true)
                let restored = Set(report.restoredOnTarget).union(sentBefore.intersection(report.published))
                let repairs = StoreRepairs(damagedReplaced: report.replacedOnTarget.count, lostRestored: restored.count)
                // A sync that did not fail may still have left a segment out (a damaged copy in
                // the store under its name, a file that did not verify): not in the store, so
                // not shared, which an open board's ack round must know. (Before a board opens,
                // what matters is what came in: a store refusing a write must not keep it closed.)
                if open, let first = report.lackingOnTarget.first {
                    return ("\(report.lackingOnTarget.count) segment(s) not in the store after the sync (\(first)…)", repairs)
                }
                if let sealedBefore {
                    // Bounded by what the journal holds now (compaction retires files). What the
                    // sync fetched is in the store too: left out, the next ack round sent it back
                    // there, and a copy the store had lost meanwhile was put back uncounted.
                    let now = Self.sealedSegments(of: journal)
                    inStore.withLock { $0[board] = sealedBefore.union(report.imported).union($0[board] ?? []).intersection(now) }
                }
                return (nil, repairs)
            } catch {
                return ("\(error)", StoreRepairs())
            }
        }
    }

    /// Sends the sealed segments the store was not seen to hold, through one `publishOnly`
    /// (for an object store, one request to the rclone this relay keeps running, which lists
    /// nothing). In the board's queue, as every sync of it here: `publishOnly` takes the
    /// journal's sync lock, whose wait would otherwise sleep a thread of the pool behind a
    /// whole sync. Until a whole sync of the board has succeeded here, nothing is known of the
    /// store, and the round is that sync: its repairs are returned (a round that only publishes
    /// repairs nothing). `publishSealed` is derived from this.
    public func publishSealedRepairing(_ board: BoardName, journal path: String) async -> (failure: String?, repairs: StoreRepairs) {
        guard let known = inStore.withLock({ $0[board] }) else { return await syncRepairing(board, journal: path, open: true) }
        let failure: String? = await queue.serially(board.text) {
            do {
                var engine = SyncEngine(journal: try JournalDirectory.open(at: path))
                engine.lockWaitSeconds = 3
                engine.keepsRcloneRunning = true
                let report = try await engine.publishOnly(excluding: known, to: try target(board))
                inStore.withLock { $0[board] = ($0[board] ?? []).intersection(report.sealed).union(report.published) }
                if let first = report.notPublished.first { return "\(report.notPublished.count) segment(s) not published (\(first))" }
                return nil
            } catch {
                return "\(error)"
            }
        }
        return (failure, StoreRepairs())
    }

    /// The journal's sealed segments under content names: what a publish may send. A file
    /// under another name (an older version's, a conflict copy) is left to a whole sync.
    private static func sealedSegments(of journal: JournalDirectory) -> Set<String> {
        TreeListing.scan(replicasPath: journal.replicasPath).contentNamedSegmentKeys
    }

    public func adopt(_ board: BoardName, journal path: String, installing: @escaping @Sendable () async -> Bool) async -> Bool {
        await queue.serially(board.text) {
            if FileSystem.exists(path) { return true }
            // Built beside, under a name no board can have, and renamed into place only once
            // it holds the store's segments: nobody ever sees (or opens) a half-adopted board.
            let hex = ProcessInfoLite.randomBytes(8).map { String($0, radix: 16) }.joined()
            let building = FileSystem.join(FileSystem.parent(of: path), ".adopting-\(board.text)-\(hex)")
            defer { FileSystem.removeTree(building) }
            guard let journal = try? JournalDirectory.create(at: building) else { return false }
            // Through this relay's kept rclone, as its rounds: a client waits for this.
            var engine = SyncEngine(journal: journal)
            engine.keepsRcloneRunning = true
            guard let report = try? await engine.sync(try target(board), seal: false, compact: false, create: false),
                  !report.imported.isEmpty, await installing()
            else { return false }
            do { try FileSystem.rename(building, to: path) } catch { return FileSystem.exists(path) }
            return true
        }
    }
}

/// Runs one job per key at a time, in the order they came; the others await without a thread.
private actor BoardQueue {
    private var busy: Set<String> = []
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]

    func serially<T: Sendable>(_ key: String, _ job: @Sendable () async -> T) async -> T {
        if busy.contains(key) {
            await withCheckedContinuation { waiting[key, default: []].append($0) }
        } else {
            busy.insert(key)
        }
        let result = await job()
        if var queue = waiting[key], !queue.isEmpty {
            // Handed on: the key stays busy for the next one.
            let next = queue.removeFirst()
            waiting[key] = queue.isEmpty ? nil : queue
            next.resume()
        } else {
            busy.remove(key)
        }
        return result
    }
}
