import Crypto
import JournalFormat

/// The Ed25519 key of a replica that a native client owns. Its replica id is derived from the
/// public key (`ReplicaKey.replica(forPublicKey:)`), and every native frame is signed with it,
/// so only the key's holder can send events under that id: a client naming someone else's
/// replica (another client's, another relay's, the relay's own) is refused before any of its
/// events is looked at (invariant 11).
public struct ReplicaKey: Sendable {
    private let key: Curve25519.Signing.PrivateKey

    /// A new key, from the system's random numbers.
    public init() { key = Curve25519.Signing.PrivateKey() }

    /// A key kept from before (`rawRepresentation`: its 32 bytes).
    public init(rawRepresentation bytes: [UInt8]) throws(WireError) {
        guard bytes.count == 32, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: bytes) else {
            throw WireError("a replica key is 32 bytes")
        }
        self.key = key
    }

    /// The 32 secret bytes, to keep the key across runs (never send them anywhere).
    public var rawRepresentation: [UInt8] { Array(key.rawRepresentation) }

    public var publicKey: [UInt8] { Array(key.publicKey.rawRepresentation) }

    /// The replica this key names.
    public var replica: ReplicaID { Self.replica(forPublicKey: publicKey) }

    /// The replica id a public key names: the first 16 bytes of SHA-256 over a fixed label and
    /// the key. Finding a key for a given id means a 2^128 search.
    public static func replica(forPublicKey publicKey: [UInt8]) -> ReplicaID {
        let digest = Array(SHA256.hash(data: Array(replicaLabel.utf8) + publicKey))
        return ReplicaID(UUIDBits(bytes: Array(digest[0..<16])))
    }

    static let replicaLabel = "StrokeJournal replica key v1\0"

    func signature(for message: [UInt8]) -> [UInt8] {
        // Signing with a valid key fails only if the system's random source does; Ed25519
        // signatures are deterministic, so it has none to fail on.
        (try? Array(key.signature(for: message))) ?? []
    }
}

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
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey),
              key.isValidSignature(Array(signature), for: signedBytes(message, board: board)) else {
            throw WireError("its signature does not verify with the key of the hello (for board \(board)): it was not signed by this replica's key, or for another board")
        }
        return Array(message)
    }

    private static func signedBytes(_ message: ArraySlice<UInt8>, board: String) -> [UInt8] {
        Array(label.utf8) + Array(board.utf8) + [0] + message
    }
}
