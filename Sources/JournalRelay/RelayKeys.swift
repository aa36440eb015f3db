import Crypto
import JournalFormat
import JournalPlatform

/// A capability as a token carries it (docs/PROTOCOL.md, "Access").
public struct Capability: Equatable, Sendable {
    /// 16 hex digits, random: what revocation and the per-token limits name.
    public var id: String
    public var scope: Scope
    public var boards: BoardPattern
    /// Seconds since 1970 after which the token is refused.
    public var expiresAtSeconds: Int64

    public init(id: String, scope: Scope, boards: BoardPattern, expiresAtSeconds: Int64) {
        self.id = id
        self.scope = scope
        self.boards = boards
        self.expiresAtSeconds = expiresAtSeconds
    }

    public var expiresAtMilliseconds: Int64 { expiresAtSeconds.multipliedReportingOverflow(by: 1000).overflow ? .max : expiresAtSeconds * 1000 }

    /// The signed part of a token: `sjt1.<id>.<scope>.<boards>.<expires>`. Plain text, so a
    /// person can read what a token allows without any tool; none of its fields holds a dot.
    var signedText: String { "\(Self.prefix).\(id).\(scope).\(boards).\(expiresAtSeconds)" }

    static let prefix = "sjt1"
}

/// The relay's token key and revocation list, in `DIR/.relay/` beside the boards (a board's
/// name never starts with a dot, so no board can be named `.relay`). The folder is the
/// owner's only (0700): whoever reads `token-key` can mint any token.
///
/// - `token-key`: the Ed25519 private key, 64 hex digits and a newline. Replacing it (rotation,
///   `journal token --rotate-key`) invalidates every token minted before, at once: the relay
///   reads the file again whenever it changed.
/// - `revoked-tokens`: token ids, one a line (`#` starts a comment); a revoked token is
///   refused from the next check on, and connections holding it are closed within a second.
public final class RelayKeys: Sendable {
    public let folder: String
    private struct Cache {
        var keyStamp: FileStamp?
        var key: Curve25519.Signing.PrivateKey?
        var revokedStamp: FileStamp?
        var revoked: Set<String> = []
    }
    private struct FileStamp: Equatable {
        var inode: UInt64
        var modified: Int64
        var size: Int64
    }
    private let cache = Locked(Cache())

    public static let folderName = ".relay"
    static let keyName = "token-key"
    static let revokedName = "revoked-tokens"

    /// The keys of the relay serving `dataDirectory`; the key is made if there is none yet.
    public static func openOrCreate(dataDirectory: String) throws(AccessError) -> RelayKeys {
        let keys = RelayKeys(folder: FileSystem.join(dataDirectory, folderName))
        do throws(IOError) {
            try FileSystem.createDirectory(keys.folder)
            try FileSystem.restrictToOwner(keys.folder)
            if !FileSystem.exists(keys.keyPath) { try keys.writeKey(Curve25519.Signing.PrivateKey()) }
        } catch {
            throw .keyUnavailable(error.description)
        }
        _ = try keys.signingKey()
        return keys
    }

    init(folder: String) { self.folder = folder }

    var keyPath: String { FileSystem.join(folder, Self.keyName) }
    var revokedPath: String { FileSystem.join(folder, Self.revokedName) }

    /// A new key: every token minted so far is refused from now on.
    public func rotate() throws(AccessError) {
        do { try writeKey(Curve25519.Signing.PrivateKey()) } catch { throw .keyUnavailable(error.description) }
    }

    private func writeKey(_ key: Curve25519.Signing.PrivateKey) throws(IOError) {
        try FileSystem.writeAtomically(Array((Hex.bytes(Array(key.rawRepresentation)) + "\n").utf8), to: keyPath)
        try FileSystem.restrictToOwner(keyPath)
    }

    /// A token for `capability`, signed with the relay's key.
    public func mint(_ capability: Capability) throws(AccessError) -> String {
        let key = try signingKey()
        let signed = capability.signedText
        let signature: [UInt8]
        do { signature = Array(try key.signature(for: Array(signed.utf8))) } catch { throw .keyUnavailable("signing failed: \(error)") }
        return signed + "." + Hex.bytes(signature)
    }

    /// A new capability's id: 8 random bytes.
    public static func newTokenID() -> String { Hex.bytes(ProcessInfoLite.randomBytes(8)) }

    /// The capability `token` carries, if it is well formed, signed by this relay's key, not
    /// expired and not revoked.
    public func verify(_ token: String, nowMilliseconds: Int64) throws(AccessError) -> Capability {
        let (capability, signature) = try Self.parse(token)
        let key = try signingKey()
        guard key.publicKey.isValidSignature(signature, for: Array(capability.signedText.utf8)) else { throw .badSignature }
        guard nowMilliseconds < capability.expiresAtMilliseconds else { throw .expired(tokenID: capability.id) }
        guard try !isRevoked(capability.id) else { throw .revoked(tokenID: capability.id) }
        return capability
    }

    /// Reads a token's fields without checking its signature (`journal token --inspect`).
    public static func parse(_ token: String) throws(AccessError) -> (Capability, signature: [UInt8]) {
        guard token.utf8.count <= 400 else { throw .malformed("longer than any token (\(token.utf8.count) bytes)") }
        let fields = token.split(separator: ".", omittingEmptySubsequences: false)
        guard fields.count == 6, fields[0] == Capability.prefix else {
            throw .malformed("not a StrokeJournal token (sjt1.<id>.<scope>.<boards>.<expires>.<signature>)")
        }
        guard fields[1].utf8.count == 16, fields[1].utf8.allSatisfy(Hex.isLowercaseHexDigit) else {
            throw .malformed("its id is not 16 lowercase hex digits")
        }
        guard let scope = Scope(name: fields[2]) else { throw .malformed("scope \"\(fields[2].prefix(20))\" is not view, draw or admin") }
        let boards = try BoardPattern(fields[3])
        // One spelling per token (a revocation or a log line names exactly one): no leading
        // zero, no uppercase hex.
        guard fields[4].utf8.count <= 18, fields[4].utf8.allSatisfy(Hex.isDecimalDigit), let expires = Int64(fields[4]),
              fields[4] == "0" || !fields[4].hasPrefix("0") else {
            throw .malformed("its expiry is not a whole number of seconds since 1970, written without leading zeros")
        }
        guard fields[5].utf8.count == 128, fields[5].utf8.allSatisfy(Hex.isLowercaseHexDigit),
              let signature = Hex.decode(fields[5]), signature.count == 64 else {
            throw .malformed("its signature is not 128 lowercase hex digits")
        }
        return (Capability(id: String(fields[1]), scope: scope, boards: boards, expiresAtSeconds: expires), signature)
    }

    // MARK: Revocation

    /// Adds `tokenID` to the revocation list (kept sorted, one a line).
    public func revoke(_ tokenID: String) throws(AccessError) {
        guard tokenID.utf8.count == 16, tokenID.utf8.allSatisfy(Hex.isLowercaseHexDigit) else {
            throw .malformed("a token id is 16 lowercase hex digits (the second field of the token)")
        }
        var ids = try revokedIDs()
        ids.insert(tokenID)
        let text = "# token ids revoked (journal token --revoke); one a line\n" + ids.sorted().map { $0 + "\n" }.joined()
        do { try FileSystem.writeAtomically(Array(text.utf8), to: revokedPath) } catch { throw .keyUnavailable(error.description) }
    }

    public func isRevoked(_ tokenID: String) throws(AccessError) -> Bool { try revokedIDs().contains(tokenID) }

    public func revokedIDs() throws(AccessError) -> Set<String> {
        let stamp = Self.stamp(revokedPath)
        if let cached = cache.withLock({ $0.revokedStamp == stamp && stamp != nil ? $0.revoked : nil }) { return cached }
        guard stamp != nil else { return [] }
        let bytes: [UInt8]
        do { bytes = try FileSystem.readFile(revokedPath) } catch { throw .keyUnavailable(error.description) }
        var ids = Set<String>()
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let id = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0].trimmingSpaces
            if !id.isEmpty { ids.insert(String(id)) }
        }
        cache.withLock { cache in
            cache.revokedStamp = stamp
            cache.revoked = ids
        }
        return ids
    }

    // MARK: The key

    /// The private key, read again whenever its file changed (a rotation takes effect without
    /// a restart).
    func signingKey() throws(AccessError) -> Curve25519.Signing.PrivateKey {
        let stamp = Self.stamp(keyPath)
        if let key = cache.withLock({ $0.keyStamp == stamp && stamp != nil ? $0.key : nil }) { return key }
        let bytes: [UInt8]
        do { bytes = try FileSystem.readFile(keyPath) } catch { throw .keyUnavailable(error.description) }
        let text = String(decoding: bytes, as: UTF8.self).trimmingSpaces
        guard let raw = Hex.decode(text), raw.count == 32,
              let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw) else {
            throw .keyUnavailable("\(keyPath) does not hold a key (64 hex digits)")
        }
        cache.withLock { cache in
            cache.keyStamp = stamp
            cache.key = key
        }
        return key
    }

    private static func stamp(_ path: String) -> FileStamp? {
        FileSystem.linkStatus(path).map { FileStamp(inode: $0.inode, modified: $0.modified, size: $0.size) }
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return Substring(self[first...last])
    }
}
