import JournalPlatform
import JournalWire

/// When a relay acknowledges: once the event is fsynced on its own disk (the default), or
/// once it is in the cluster's shared store as well (`journal serve --ack shared`), so that
/// losing the relay's disk loses nothing acknowledged (docs/DEPLOY.md).
public enum AckMode: String, Sendable, CaseIterable {
    case local
    case shared
}

/// The acknowledgements of one board waiting for the shared store (`AckMode.shared`).
///
/// Acks are held in the order they fell due. A round seals the board and publishes it, then
/// releases every ack held before the round began: those events were durable then, so the
/// seal took them, and the publish put them in the store. Rounds run one at a time, only
/// while acks wait, and each covers all that waited; a failed round releases nothing and is
/// tried again, so a store that is down holds acks back (and throttles clients), never lets
/// one through.
final class SharedAcks: Sendable {
    private struct Held {
        /// Rounds begun when the ack fell due: a round numbered above it began after.
        var round: Int
        var release: @Sendable () -> Void
        /// Called instead of `release` when the board closes first (a catch-up waiting for a
        /// round must not wait for ever).
        var abandoned: (@Sendable () -> Void)?
    }

    private struct State {
        var begun = 0
        var held: [Held] = []
        var running = false
        var closed = false
    }

    private let state = Locked(State())
    /// Seals and publishes; nil, or why it failed.
    private let round: @Sendable () async -> String?
    private let failed: @Sendable (String) -> Void

    init(round: @escaping @Sendable () async -> String?, failed: @escaping @Sendable (String) -> Void) {
        self.round = round
        self.failed = failed
    }

    /// Calls `release` once a round that began after this call has put the board in the store
    /// (or `abandoned`, if given, when the board closes before).
    func hold(_ release: @escaping @Sendable () -> Void, abandoned: (@Sendable () -> Void)? = nil) {
        let (start, closed) = state.withLock { state -> (Bool, Bool) in
            guard !state.closed else { return (false, true) }
            state.held.append(Held(round: state.begun, release: release, abandoned: abandoned))
            guard !state.running else { return (false, false) }
            state.running = true
            return (true, false)
        }
        if closed { abandoned?() }
        if start { Task { await rounds() } }
    }

    private func rounds() async {
        while true {
            let number = state.withLock { state -> Int? in
                guard !state.held.isEmpty, !state.closed else {
                    state.running = false
                    return nil
                }
                state.begun += 1
                return state.begun
            }
            guard let number else { return }
            if let why = await round() {
                failed(why)
                try? await Task.sleep(for: .milliseconds(500))
                continue
            }
            let due = state.withLock { state -> [Held] in
                let due = state.held.filter { $0.round < number }
                state.held.removeAll { $0.round < number }
                return due
            }
            for ack in due { ack.release() }
        }
    }

    /// No ack held and no round running.
    var isIdle: Bool { state.withLock { $0.held.isEmpty && !$0.running } }

    /// The board closes: acks still held are never sent (their clients resend those events).
    func close() {
        let held = state.withLock { state -> [Held] in
            state.closed = true
            defer { state.held.removeAll() }
            return state.held
        }
        for entry in held { entry.abandoned?() }
    }
}

/// What the cluster's store holds of a board, as far as its relay knows (`--ack shared`): what
/// the board held when its last successful round began, every event of it then sealed and
/// published. A catch-up sends only this; the rest reaches the client live, after its round
/// (docs/PROTOCOL.md, "Acks a cluster shares").
final class StoreCoverage: Sendable {
    private let have = Locked(Have())

    var current: Have { have.withLock { $0 } }

    /// A round that began holding `held` succeeded.
    func record(_ held: Have) {
        have.withLock { $0.formUnion(held) }
    }
}
