import JournalFormat

/// Challenge–response for a native hello (docs/PROTOCOL.md, "Proving a key"): a client that
/// opens its socket with `?challenge` gets `{"type":"challenge","nonce":"<64 hex>"}` first,
/// and proves it holds its hello's key by a `"proof"`: the key's Ed25519 signature over a
/// fixed label, the board's name, a zero byte and the 32 nonce bytes. A nonce is the relay's,
/// fresh per socket, so a proof is good for that socket alone.
public enum HelloProof {
    public static let query = "challenge"
    public static let nonceBytes = 32
    static let label = "StrokeJournal hello proof v1\0"

    public static func challengeText(nonce: [UInt8]) -> String { #"{"type":"challenge","nonce":""# + Hex.bytes(nonce) + #""}"# }

    public static func sign(nonce: [UInt8], board: String, with key: ReplicaKey) -> [UInt8] {
        key.signature(for: message(nonce: nonce, board: board))
    }

    public static func verify(_ proof: [UInt8], nonce: [UInt8], board: String, publicKey: [UInt8]) -> Bool {
        ReplicaKey.isValid(signature: proof, of: message(nonce: nonce, board: board), publicKey: publicKey)
    }

    static func message(nonce: [UInt8], board: String) -> [UInt8] {
        Array(label.utf8) + Array(board.utf8) + [0] + nonce
    }
}
