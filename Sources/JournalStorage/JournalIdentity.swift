import JournalFormat
import JournalKeys
import JournalPlatform

/// Who a journal is, read once by whoever writes it (docs/FORMAT.md §2.1, §15): its replica
/// id, the key that seals its own replica's segments (role `replica`), and the key that seals
/// the replicas it hosts for a relay's native clients (role `host`).
///
/// A key file that is there and cannot be read is not the absence of a key: sealing unsigned
/// (or with the journal's own key in place of the host's) would make segments that every
/// trust list and membership quarantines, acknowledged strokes that count on no other
/// machine. Loading throws for `local/replica.key`, naming the file; an unreadable
/// `local/host.key` throws from `hostSigner()`, so that only the writers that seal as host
/// stop.
public struct JournalIdentity: Sendable {
    public let replica: ReplicaID
    /// `local/replica.key` when it names `replica`; nil for an open journal (invariant 12),
    /// or one whose key names another replica (a creation or an identity change that died
    /// half way), which signs nothing.
    public let key: ReplicaKey?
    /// `local/host.key` when a relay installed one (`journal serve --host-key`: one key for a
    /// cluster, kept outside any data folder), nil when there is none; or why it cannot be read.
    private let installedHostKey: Result<ReplicaKey?, JournalError>

    init(replica: ReplicaID, key: ReplicaKey?, installedHostKey: Result<ReplicaKey?, JournalError>) {
        self.replica = replica
        self.key = key
        self.installedHostKey = installedHostKey
    }

    /// The signer of the own replica's seals; nil for an open journal.
    var replicaSigner: SealSigner? { key.map { SealSigner(key: $0, role: .replica) } }

    /// The key that seals hosted replicas; throws when `local/host.key` is there and cannot be read.
    /// The installed host key, else the journal's own.
    public func hostKey() throws(JournalError) -> ReplicaKey? { try installedHostKey.get() ?? key }

    /// The signer of hosted replicas' seals.
    func hostSigner() throws(JournalError) -> SealSigner? {
        try hostKey().map { SealSigner(key: $0, role: .host) }
    }

    /// The same journal after an identity change (a copied folder takes a new replica and key).
    func changed(to key: ReplicaKey) -> JournalIdentity {
        JournalIdentity(replica: key.replica, key: key, installedHostKey: installedHostKey)
    }
}

extension JournalDirectory {
    /// Reads `local/replica`, `local/replica.key` and `local/host.key` (`JournalIdentity`).
    public func loadIdentity() throws(JournalError) -> JournalIdentity {
        let replica = try identity()
        let found: ReplicaKey?
        if FileSystem.linkStatus(keyPath) == nil {
            found = nil
        } else {
            do { found = try readKeyFile() } catch {
                throw .badIdentity(path: keyPath, reason: "its signing key cannot be read (\(error)); nothing is written until it can: restore local/replica.key from a backup, or remove it to write unsigned (an open journal)")
            }
        }
        let key = found?.replica == replica ? found : nil
        let host: Result<ReplicaKey?, JournalError>
        if FileSystem.linkStatus(hostKeyPath) == nil {
            host = .success(nil)
        } else {
            do throws(JournalError) {
                host = .success(try readHostKeyFile())
            } catch {
                host = .failure(.badIdentity(path: hostKeyPath, reason: "the host key cannot be read (\(error)); nothing hosted is written until it can: restore it (journal serve --host-key installs it again)"))
            }
        }
        return JournalIdentity(replica: replica, key: key, installedHostKey: host)
    }
}
