/// Why a frame or a message was refused: the reason is what the other side is told.
public struct WireError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
