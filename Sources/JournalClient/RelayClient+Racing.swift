import JournalPlatform

/// Waits that race a piece of work against a deadline (a socket that does not open, a close
/// that is not answered): the loser runs on, unheeded, and nothing waits for it.
extension RelayClient {
    /// Whether `work` ends before `seconds` pass (false: it runs on, unheeded). At the deadline,
    /// `unlessThen` may say to wait for it after all.
    static func finishes(within seconds: Double, unlessThen keepWaiting: @escaping @Sendable () -> Bool = { false },
                         _ work: @escaping @Sendable () async -> Void) async -> Bool {
        await first({
            await work()
            return true
        }, {
            try? await Task.sleep(for: .milliseconds(Int(max(0, seconds) * 1000)))
            return keepWaiting() ? nil : false
        })
    }

    /// Runs both in tasks of their own and returns the first value one gives (nil gives none:
    /// the other's is awaited); the other runs on, unheeded. At least one must give a value.
    static func first<T: Sendable>(_ one: @escaping @Sendable () async -> T?, _ other: @escaping @Sendable () async -> T?) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            let resumed = Locked(false)
            let finish: @Sendable (T?) -> Void = { value in
                guard let value, resumed.withLock({ resumed in defer { resumed = true }; return !resumed }) else { return }
                continuation.resume(returning: value)
            }
            Task { finish(await one()) }
            Task { finish(await other()) }
        }
    }
}
