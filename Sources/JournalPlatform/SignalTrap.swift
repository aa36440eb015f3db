#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Turns SIGINT and SIGTERM into a call, so that a long-running command (`journal sync --watch`)
/// finishes what it is doing and exits cleanly instead of dying mid-round.
///
/// A Dispatch signal source, not a `sigaction` handler: a handler may only do async-signal-safe
/// things, while this one calls Swift code (it sets flags and wakes a watcher). The handler runs
/// on a serial queue of its own; it must be short and must not block.
public final class SignalTrap: @unchecked Sendable {
    // `sources` is set in init and only read afterwards (cancel, deinit): nothing mutates
    // shared state, which is what makes the unchecked Sendable sound.
    private let sources: [DispatchSourceSignal]
    private let signals: [Int32]

    public static let interrupt = SIGINT
    public static let terminate = SIGTERM

    /// From now on, each of `signals` calls `handler` (with its number) instead of ending the
    /// process.
    public init(_ signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) {
        self.signals = signals
        let queue = DispatchQueue(label: "strokejournal.signals")
        sources = signals.map { number in
            // The default action would end the process before the source saw the signal.
            _ = signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    /// Restores the default action of the signals.
    public func cancel() {
        for source in sources { source.cancel() }
        for number in signals { _ = signal(number, SIG_DFL) }
    }

    deinit { for source in sources where !source.isCancelled { source.cancel() } }
}
