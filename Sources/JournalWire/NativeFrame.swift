import JournalFormat
// Replica keys live in JournalKeys (storage signs sealed segments with them too); every
// client of the wire needs them, so they come with it.
@_exported import JournalKeys

/// A native mode binary frame (docs/PROTOCOL.md, "Native mode"): a `SegmentMessage` of the
/// client's replica, then 64 bytes, the Ed25519 signature of the replica's key over a fixed
/// label, the board's name, a zero byte and the message. The board's name is signed so that a
/// frame recorded on one board cannot be replayed onto another.
public enum NativeFrame {
    public static let signatureBytes = 64
    static let label = "StrokeJournal native frame v1\0"

    /// `message` (a `SegmentMessage`), signed for `board`.
    public static func sign(_ message: [UInt8], board: String, with key: ReplicaKey) -> [UInt8] {
        message + key.signature(for: signedBytes(message[...], board: board))
    }

    /// The `SegmentMessage` of a frame whose signature verifies with `publicKey` for `board`.
    public static func open(_ frame: [UInt8], board: String, publicKey: [UInt8]) throws(WireError) -> [UInt8] {
        guard frame.count > signatureBytes else {
            throw WireError("a native frame is a segment message and a 64-byte signature; this one is \(frame.count) bytes")
        }
        let message = frame[..<(frame.count - signatureBytes)]
        let signature = frame[(frame.count - signatureBytes)...]
        guard ReplicaKey.isValid(signature: signature, of: signedBytes(message, board: board), publicKey: publicKey) else {
            throw WireError("its signature does not verify with the key of the hello (for board \(board)): it was not signed by this replica's key, or for another board")
        }
        return Array(message)
    }

    private static func signedBytes(_ message: ArraySlice<UInt8>, board: String) -> [UInt8] {
        Array(label.utf8) + Array(board.utf8) + [0] + message
    }
}
