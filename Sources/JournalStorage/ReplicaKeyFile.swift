import JournalFormat
import JournalKeys
import JournalPlatform

/// `local/replica.key`: the Ed25519 key whose public half names this journal's replica
/// (docs/FORMAT.md §2.1, §15). Never synced (it is under `local/`), readable by its owner only.
/// A journal made before keys existed, or with a replica id given by its creator, has none
/// and seals unsigned segments (an "open" journal, invariant 12).
///
/// Text: `strokejournal-key v1`, a newline, the 32 secret bytes as 64 lowercase hex digits,
/// a newline.
extension JournalDirectory {
    public var keyPath: String { localPath + "/" + Self.keyFileName }
    static let keyFileName = "replica.key"
    static let keyFileHeader = "strokejournal-key v1"

    /// This journal's key, if it has one that names its replica and it can be read: for a
    /// reader that only looks (a writer loads its `JournalIdentity`, which tells an unreadable
    /// key from none).
    public func replicaKey() -> ReplicaKey? {
        (try? loadIdentity())?.key
    }

    /// The key that seals, as host, the replicas this journal hosts for a relay's native
    /// clients: `local/host.key` when a relay installed one (`journal serve --host-key`: one
    /// key for a cluster, kept outside any data folder, so that a node that lost its disk seals
    /// as before and a board's membership needs to name it only once), else the journal's own.
    /// For a reader; a writer asks its `JournalIdentity`.
    public func hostKey() -> ReplicaKey? {
        (try? loadIdentity()).flatMap { try? $0.hostKey() }
    }

    static let hostKeyFileName = "host.key"
    public var hostKeyPath: String { localPath + "/" + Self.hostKeyFileName }

    /// Makes `key` this journal's host key (`hostKey()`), unless it is already.
    public func installHostKey(_ key: ReplicaKey) throws(JournalError) {
        if let current = try? readKey(fileName: Self.hostKeyFileName), current.publicKey == key.publicKey { return }
        let text = Self.keyFileHeader + "\n" + Hex.bytes(key.rawRepresentation) + "\n"
        do {
            try DirectoryHandle.open(localPath, followingSymlink: false)
                .replaceFileAtomically(name: Self.hostKeyFileName, bytes: Array(text.utf8), ownerOnly: true)
        } catch {
            throw .io(error)
        }
    }

    /// The key in `local/replica.key`, whatever replica it names; nil when there is none.
    func readKeyFile() throws(JournalError) -> ReplicaKey? {
        try readKey(fileName: Self.keyFileName)
    }

    /// The key in `local/host.key`; nil when there is none.
    func readHostKeyFile() throws(JournalError) -> ReplicaKey? {
        try readKey(fileName: Self.hostKeyFileName)
    }

    /// A key file under `local/`; nil when there is none.
    private func readKey(fileName: String) throws(JournalError) -> ReplicaKey? {
        let path = localPath + "/" + fileName
        guard FileSystem.exists(path) else { return nil }
        let bytes: [UInt8]
        do {
            bytes = try DirectoryHandle.open(localPath, followingSymlink: false).readFile(fileName)
        } catch {
            throw .io(error)
        }
        let lines = String(decoding: bytes.prefix(256), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 2, lines[0] == Self.keyFileHeader, let secret = Hex.decode(lines[1]), secret.count == 32,
              let key = try? ReplicaKey(rawRepresentation: secret) else {
            throw .badIdentity(path: path, reason: "expected \"\(Self.keyFileHeader)\" and 64 hex digits")
        }
        return key
    }

    /// Writes `key` as this journal's key: over an existing one (`replacing`, an identity
    /// change under the writer's lock), or only where there is none (creation: of two
    /// processes creating one journal, the second gets EEXIST).
    func writeKeyFile(_ key: ReplicaKey, replacing: Bool) throws(IOError) {
        let text = Self.keyFileHeader + "\n" + Hex.bytes(key.rawRepresentation) + "\n"
        let folder = try DirectoryHandle.open(localPath, followingSymlink: false)
        // 0600 before the secret is written: never readable by others, not even for a moment.
        if replacing {
            try folder.replaceFileAtomically(name: Self.keyFileName, bytes: Array(text.utf8), ownerOnly: true)
        } else {
            try folder.writeNewFileAtomically(name: Self.keyFileName, bytes: Array(text.utf8), ownerOnly: true)
        }
    }

    /// The key a new journal is created with: a fresh one, or the one a creation that died
    /// before writing `local/replica` (or another process creating the journal right now)
    /// left, so that the id and the key always agree.
    func takeCreationKey() throws(JournalError) -> ReplicaKey {
        let fresh = ReplicaKey()
        do throws(IOError) {
            try writeKeyFile(fresh, replacing: false)
            return fresh
        } catch where error.isExists {
            guard let existing = try readKeyFile() else { throw .io(error) }
            return existing
        } catch {
            throw .io(error)
        }
    }
}
