import JournalWire

/// A board's name as it appears in a URL and as the folder of its journal under the relay's
/// data directory. Only `[A-Za-z0-9_-]{1,64}`: never a path, never `.` or `..`, the same
/// folder name on every file system.
public struct BoardName: Hashable, Sendable, CustomStringConvertible {
    public let text: String

    public static let maxLength = 64

    public init(_ text: some StringProtocol) throws(RelayError) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxLength, bytes.allSatisfy(Self.isAllowed) else {
            throw .invalidBoardName(String(text))
        }
        self.text = String(text)
    }

    public var description: String { text }

    static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}
