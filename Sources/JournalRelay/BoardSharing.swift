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
    /// false, leaving nothing at `path`, when the store has no such board.
    func adopt(_ board: BoardName, journal path: String) async -> Bool
    /// Seconds between two syncs of an open board.
    var interval: Double { get }
}

/// A relay's store, every sync counted and timed (`strokejournal_store_syncs_total`,
/// `strokejournal_store_sync_seconds`): what an operator sees of the store.
struct MeasuredSharing: BoardSharing {
    let store: BoardSharing
    let metrics: RelayMetrics

    func sync(_ board: BoardName, journal path: String, open: Bool) async -> String? {
        let started = ProcessInfoLite.monotonicSeconds()
        let why = await store.sync(board, journal: path, open: open)
        metrics.storeSynced(succeeded: why == nil, seconds: ProcessInfoLite.monotonicSeconds() - started)
        return why
    }

    func adopt(_ board: BoardName, journal path: String) async -> Bool {
        await store.adopt(board, journal: path)
    }

    var interval: Double { store.interval }
}
