import JournalPlatform
import JournalRelay
import JournalStorage

/// A cluster's store the test plays (`BoardSharing`): each round of an open board (an ack round
/// under `--ack shared`) fails with the reason the test set, or waits for the test to let it
/// go; every round is counted. Opening syncs succeed at once; adoption answers as set.
final class PlayedStore: BoardSharing {
    struct State {
        /// Rounds of an open board fail with this while it is set.
        var failing: String?
        /// Rounds of an open board wait for `release` while this is set.
        var holding = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        /// Rounds of an open board begun, and how many of them failed.
        var rounds = 0
        var failedRounds = 0
        /// What each sync reports it repaired in the store.
        var repairs = StoreRepairs()
        /// Whether `adopt` finds the board in the store, and how often it was asked.
        var storeHasBoard = false
        var adoptions = 0
    }

    let state = Locked(State())
    /// The relay's periodic sync is not started by these tests.
    let interval: Double = 3600

    func sync(_ board: BoardName, journal path: String, open: Bool) async -> String? {
        guard open else { return nil }
        let hold = state.withLock { state -> Bool in
            state.rounds += 1
            return state.holding
        }
        if hold { await withCheckedContinuation { continuation in state.withLock { $0.waiting.append(continuation) } } }
        return state.withLock { state -> String? in
            if state.failing != nil { state.failedRounds += 1 }
            return state.failing
        }
    }

    func syncRepairing(_ board: BoardName, journal path: String, open: Bool) async -> (failure: String?, repairs: StoreRepairs) {
        (await sync(board, journal: path, open: open), state.withLock { $0.repairs })
    }

    func adopt(_ board: BoardName, journal path: String, installing: @escaping @Sendable () async -> Bool) async -> Bool {
        let found = state.withLock { state -> Bool in
            state.adoptions += 1
            return state.storeHasBoard
        }
        guard found, await installing() else { return false }
        // What an adoption leaves: the board's journal at `path`.
        return (try? JournalDirectory.create(at: path)) != nil
    }

    /// Rounds held so far (waiting in `sync`).
    var heldRounds: Int { state.withLock { $0.waiting.count } }

    /// Lets every held round go on, and the rounds after them run without waiting.
    func release() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.holding = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
