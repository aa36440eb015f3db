/// A handler that threads call and that is installed after it is first handed out (a board's
/// committer reports before the board that handles the reports exists; a relay's observer is
/// set while it runs).
///
/// Held in a class, never directly in a `Locked`: a closure stored in a generic value and read
/// through `withLock`'s `inout` is reabstracted on the way out and again on the write-back, so
/// every call wrapped the stored closure in two more thunks, and every later call ran through
/// all of them (3 % of a relay's CPU after a minute of acks in `perf`, and a stack that would
/// overflow in a relay running for days).
public final class SharedHandler<Argument>: Sendable {
    private final class Box: Sendable {
        let call: @Sendable (Argument) -> Void
        init(_ call: @escaping @Sendable (Argument) -> Void) { self.call = call }
    }

    private let box = Locked<Box?>(nil)

    public init() {}

    /// From now on calls go to `handler` (nil: nowhere).
    public func set(_ handler: (@Sendable (Argument) -> Void)?) {
        let new = handler.map(Box.init)
        box.withLock { $0 = new }
    }

    /// Calls the handler, if one is set, with no lock held.
    public func callAsFunction(_ argument: Argument) {
        box.withLock { $0 }?.call(argument)
    }
}
