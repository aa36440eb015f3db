import JournalPlatform

/// Lets at most `limit` catch-ups read journals at once, over the whole relay; the others
/// wait their turn, in arrival order.
///
/// A catch-up holds the files of the board it reads (`SegmentSet`) until its last message is
/// written, and a client that does not read keeps it there until `--write-timeout`. Without a
/// bound, a few thousand sockets opened on a big board (and never read) would hold a copy
/// each: gigabytes. With it, memory is `limit` boards' worth, whoever connects; and two cores
/// gain nothing from more catch-ups at once than this anyway. A joiner that waits holds only the
/// live events queued for it meanwhile (shared with every other connection).
final class CatchUpGate: Sendable {
    private struct State {
        var running = 0
        var waiting: [(id: Int, resume: CheckedContinuation<Bool, Never>)] = []
        var nextID = 0
    }

    let limit: Int
    private let state = Locked(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Catch-ups under way and waiting (for tests and status).
    var counts: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count) } }

    /// Runs `body` once a place is free. A task cancelled while it waits gives its turn up and
    /// gets `CancellationError` (its connection ended: nothing to send).
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async throws {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let admitted = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    if state.running < limit && state.waiting.isEmpty {
                        state.running += 1
                        return true
                    }
                    state.waiting.append((id, continuation))
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let dropped = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard let at = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: at).resume
            }
            dropped?.resume(returning: false)
        }
        guard admitted else { throw CancellationError() }
    }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            // The place passes straight to the first waiter: `running` stays as it is.
            return state.waiting.removeFirst().resume
        }
        next?.resume(returning: true)
    }
}
