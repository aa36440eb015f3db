import Crypto
import JournalFormat

/// The Ed25519 key of a replica. Its replica id is derived from the public key
/// (`ReplicaKey.replica(forPublicKey:)`), so only the key's holder can sign as that replica:
/// a native client signs its frames with it (invariant 11), a journal its sealed segments
/// (invariant 12, docs/FORMAT.md §15).
public struct ReplicaKey: Sendable {
    private let key: Curve25519.Signing.PrivateKey

    /// A new key, from the system's random numbers.
    public init() { key = Curve25519.Signing.PrivateKey() }

    /// A key kept from before (`rawRepresentation`: its 32 bytes).
    public init(rawRepresentation bytes: [UInt8]) throws(KeyError) {
        guard bytes.count == 32, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: bytes) else {
            throw KeyError("a replica key is 32 bytes")
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

    /// The Ed25519 signature of `message` (64 bytes).
    public func signature(for message: [UInt8]) -> [UInt8] {
        // Signing with a valid key fails only if the system's random source does; Ed25519
        // signatures are deterministic, so it has none to fail on.
        (try? Array(key.signature(for: message))) ?? []
    }

    /// Whether `signature` is `publicKey`'s over `message`. A malformed key verifies nothing.
    public static func isValid(signature: some Collection<UInt8>, of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(Array(signature), for: message)
    }
}

/// Why a key, a signature or a trust entry was refused.
public struct KeyError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
