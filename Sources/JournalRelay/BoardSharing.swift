import JournalPlatform

/// How the relays of a cluster share their boards (`journal serve --share STORE`): each board's
/// journal is synced with the store before it opens, while it is open and once it is closed,
/// so that a relay taking a board over from a lost one opens it with everything the lost one
/// had published (docs/DEPLOY.md). The relay itself never reads or writes the store.
public protocol BoardSharing: Sendable {
    /// Two-way sync of the journal at `path` (board `board`) with the store; the journal and
    /// the store's board are created when missing. Nil, or why it failed. `open`: the board is
    /// open here (it seals its own files); then nil also means that every sealed segment of
    /// the journal is in the store, which `--ack shared` relies on.
    func sync(_ board: BoardName, journal path: String, open: Bool) async -> String?
    /// Brings a board this relay has never held from the store into a new journal at `path`;
    /// false, leaving nothing at `path`, when the store has no such board. The copy is put at
    /// `path` only once `installing` says yes (false: nothing is left): a relay fetches the
    /// board while it waits for the board's lease and installs it once the lease is held.
    func adopt(_ board: BoardName, journal path: String, installing: @escaping @Sendable () async -> Bool) async -> Bool
    /// Seconds between two syncs of an open board.
    var interval: Double { get }
    /// `sync`, saying also what it repaired in the store (what an operator's metrics count).
    func syncRepairing(_ board: BoardName, journal path: String, open: Bool) async -> (failure: String?, repairs: StoreRepairs)
    /// A shared-ack round's half of a sync, for a board open here: every sealed segment of
    /// the journal at `path` is in the store once this returns nil (else why not). A store
    /// may send only what it has not seen there, and leave listing, fetching and repairs to
    /// `sync`; by default it is a whole `sync`.
    func publishSealed(_ board: BoardName, journal path: String) async -> String?
    /// `publishSealed`, saying also what it repaired: a round that is a whole sync (the first,
    /// before the store is known) puts back what the store lost as any sync does, and an
    /// operator counts it.
    func publishSealedRepairing(_ board: BoardName, journal path: String) async -> (failure: String?, repairs: StoreRepairs)
}

extension BoardSharing {
    /// `adopt`, installed as soon as it is fetched.
    public func adopt(_ board: BoardName, journal path: String) async -> Bool {
        await adopt(board, journal: path, installing: { true })
    }

    public func publishSealed(_ board: BoardName, journal path: String) async -> String? {
        await publishSealedRepairing(board, journal: path).failure
    }

    public func publishSealedRepairing(_ board: BoardName, journal path: String) async -> (failure: String?, repairs: StoreRepairs) {
        await syncRepairing(board, journal: path, open: true)
    }

    public func syncRepairing(_ board: BoardName, journal path: String, open: Bool) async -> (failure: String?, repairs: StoreRepairs) {
        (await sync(board, journal: path, open: open), StoreRepairs())
    }
}

/// Copies a sync put back into the cluster's store: damaged ones replaced by this node's
/// verified segments, lost ones (held there at an earlier sync) published again.
public struct StoreRepairs: Sendable, Equatable {
    public var damagedReplaced = 0
    public var lostRestored = 0

    public init(damagedReplaced: Int = 0, lostRestored: Int = 0) {
        self.damagedReplaced = damagedReplaced
        self.lostRestored = lostRestored
    }
}

/// A relay's store, every sync counted and timed (`strokejournal_store_syncs_total`,
/// `strokejournal_store_sync_seconds`) and its repairs counted (`strokejournal_store_repairs_total`):
/// what an operator sees of the store.
struct MeasuredSharing: BoardSharing {
    let store: BoardSharing
    let metrics: RelayMetrics

    func sync(_ board: BoardName, journal path: String, open: Bool) async -> String? {
        await measured { await store.syncRepairing(board, journal: path, open: open) }
    }

    func publishSealed(_ board: BoardName, journal path: String) async -> String? {
        await measured { await store.publishSealedRepairing(board, journal: path) }
    }

    /// Times and counts one exchange with the store, and counts what it repaired.
    private func measured(_ exchange: () async -> (failure: String?, repairs: StoreRepairs)) async -> String? {
        let started = ProcessInfoLite.monotonicSeconds()
        let (why, repairs) = await exchange()
        metrics.storeSynced(succeeded: why == nil, seconds: ProcessInfoLite.monotonicSeconds() - started)
        metrics.storeRepaired(repairs)
        return why
    }

    func adopt(_ board: BoardName, journal path: String, installing: @escaping @Sendable () async -> Bool) async -> Bool {
        await store.adopt(board, journal: path, installing: installing)
    }

    var interval: Double { store.interval }
}
