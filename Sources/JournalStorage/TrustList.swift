import JournalFormat
import JournalKeys
import JournalPlatform

/// `local/trust`: the replica keys a journal (or a relay's board) accepts segments from
/// (invariant 12, docs/FORMAT.md §15). Local, like everything under `local/`: two machines
/// with the same list (and the same files) show the same drawing; a list is never taken from
/// a shared folder, where whoever can write would write themselves into it.
///
/// Without the file a journal is *open*: every segment that passes the format's checks is
/// applied, signed or not. With it, a sealed segment is applied only if its seal record
/// verifies and its key is this journal's own or listed (`TrustedSegments`); the rest is
/// quarantined.
///
/// Text, one entry a line: 64 lowercase hex digits (an Ed25519 public key), a space, a role
/// (`replica`: it may sign its own replica's segments; `host`: also the replicas it hosts as
/// a relay), and optionally a space and a label. `#` starts a comment line. The first line is
/// `strokejournal-trust v1`.
public struct TrustList: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var publicKey: [UInt8]
        /// The key may sign, as `host`, segments of replicas other than its own.
        public var mayHost: Bool
        public var label: String

        public init(publicKey: [UInt8], mayHost: Bool, label: String = "") {
            self.publicKey = publicKey
            self.mayHost = mayHost
            self.label = label
        }

        /// The replica this key signs as itself.
        public var replica: ReplicaID { ReplicaKey.replica(forPublicKey: publicKey) }
    }

    public var entries: [Entry] = []

    public init(entries: [Entry] = []) { self.entries = entries }

    static let fileName = "trust"
    static let header = "strokejournal-trust v1"

    /// The list of `directory`; nil when it has none (an open journal).
    public static func load(_ directory: JournalDirectory) throws(JournalError) -> TrustList? {
        let path = directory.trustPath
        guard FileSystem.linkStatus(path) != nil else { return nil }
        let bytes: [UInt8]
        do { bytes = try DirectoryHandle.open(directory.localPath, followingSymlink: false).readFile(fileName) } catch { throw .io(error) }
        return try parse(bytes, path: path)
    }

    static func parse(_ bytes: [UInt8], path: String) throws(JournalError) -> TrustList {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.first == Substring(header) else {
            throw .badTrustList(path: path, line: 1, reason: "the first line must be \"\(header)\"")
        }
        var list = TrustList()
        for (index, line) in lines.enumerated().dropFirst() where !line.isEmpty && !line.hasPrefix("#") {
            let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count >= 2, fields[0].count == 64, fields[0].utf8.allSatisfy(Hex.isLowercaseHexDigit),
                  let key = Hex.decode(fields[0]) else {
                throw .badTrustList(path: path, line: index + 1, reason: "expected a public key of 64 lowercase hex digits, a space and a role")
            }
            guard let role = Role(rawValue: String(fields[1])) else {
                throw .badTrustList(path: path, line: index + 1, reason: "role \(String(fields[1]).debugDescription) is neither \"replica\" nor \"host\"")
            }
            list.entries.append(Entry(publicKey: key, mayHost: role == .host, label: fields.count > 2 ? String(fields[2]) : ""))
        }
        return list
    }

    enum Role: String { case replica, host }

    public var text: String {
        var text = Self.header + "\n"
        for entry in entries {
            text += Hex.bytes(entry.publicKey) + " " + (entry.mayHost ? Role.host : Role.replica).rawValue
            text += (entry.label.isEmpty ? "" : " " + entry.label) + "\n"
        }
        return text
    }

    public func save(to directory: JournalDirectory) throws(IOError) {
        try DirectoryHandle.open(directory.localPath, followingSymlink: false)
            .replaceFileAtomically(name: Self.fileName, bytes: Array(text.utf8))
    }

    /// Adds or updates the entry of `entry.publicKey`.
    public mutating func add(_ entry: Entry) {
        if let index = entries.firstIndex(where: { $0.publicKey == entry.publicKey }) {
            entries[index] = entry
        } else {
            entries.append(entry)
        }
    }

    /// Removes the entry of `publicKey`; whether there was one.
    @discardableResult
    public mutating func remove(publicKey: [UInt8]) -> Bool {
        let before = entries.count
        entries.removeAll { $0.publicKey == publicKey }
        return entries.count != before
    }

    public func entry(for publicKey: [UInt8]) -> Entry? { entries.first { $0.publicKey == publicKey } }
}

extension JournalDirectory {
    public var trustPath: String { localPath + "/" + TrustList.fileName }
}

/// Which sealed segments a journal with a trust list applies (invariant 12). Built once per
/// load; `judge` is a pure function of the file's bytes, the list and the journal's own key
/// (listed implicitly as a host), so machines whose lists agree once each adds its own key as
/// a host quarantine the same files (docs/FORMAT.md §15.3).
public struct TrustedSegments: Sendable {
    public var list: TrustList
    /// The journal's own key: trusted for its own replica and as the host of what it hosts.
    public var ownKey: [UInt8]?
    /// The replica that key names (nil for a journal without a key).
    var ownReplica: ReplicaID? { ownKey.map(ReplicaKey.replica(forPublicKey:)) }
    /// The list could not be read: nothing but the journal's own key is trusted, and every
    /// quarantine says why (failing open would apply what the list was there to keep out).
    public var listProblem: String?

    public init(list: TrustList, ownKey: [UInt8]?, listProblem: String? = nil) {
        self.list = list
        self.ownKey = ownKey
        self.listProblem = listProblem
    }

    /// The trust of `directory`; nil for an open journal (no list).
    public static func of(_ directory: JournalDirectory) -> TrustedSegments? {
        let ownKey = directory.replicaKey()?.publicKey
        do {
            guard let list = try TrustList.load(directory) else { return nil }
            return TrustedSegments(list: list, ownKey: ownKey)
        } catch {
            return TrustedSegments(list: TrustList(), ownKey: ownKey, listProblem: error.description)
        }
    }

    /// Nil if the segment may be applied; otherwise the quarantine, with the reason.
    public func judge(_ scan: ScannedSegment, path: String, replica: ReplicaID) -> Problem? {
        func quarantine(_ reason: String) -> Problem {
            Problem(.quarantined, file: path, replica: replica, seqRange: scan.seqRange,
                    reason: reason + (listProblem.map { " (the trust list is unreadable: \($0); only this journal's own key is trusted)" } ?? ""))
        }
        if let failure = scan.sealFailure(replica: replica, unsignedRule: "this journal's trust list accepts only segments sealed by a listed key") {
            return quarantine(failure)
        }
        guard let seal = scan.seal else { return nil }
        let key = Hex.bytes(seal.publicKey)
        let isOwn = seal.publicKey == ownKey
        guard isOwn || list.entry(for: seal.publicKey) != nil else {
            return quarantine("sealed by key \(key), which is not in the trust list (`journal trust add \(key)` to accept it)")
        }
        if seal.role == .host {
            if !isOwn, list.entry(for: seal.publicKey)?.mayHost != true {
                return quarantine("sealed as host of replica \(replica.hex) by key \(key), which the trust list trusts for its own replica only (`journal trust add \(key) --host`)")
            }
            // A host vouches for the native clients it stored, never for a replica that seals
            // for itself: a compromised relay must not be able to fork this journal's own
            // replica or a listed one.
            if replica == ownReplica || list.entries.contains(where: { $0.replica == replica }) {
                return quarantine("sealed as host by key \(key), but replica \(replica.hex) seals its own segments: a host may seal only the native clients it stored")
            }
        }
        return nil
    }
}

extension ScannedSegment {
    /// Why this sealed file's seal record proves nothing about who sealed it (none, a signature
    /// that does not verify, a replica key naming another replica); nil when it verifies.
    /// `unsignedRule` says what the caller accepts instead of an unsigned file.
    func sealFailure(replica: ReplicaID, unsignedRule: String) -> String? {
        guard let seal, let contents = sealedContents else {
            return "unsigned segment (format version \(header?.version ?? 0)): " + unsignedRule
        }
        let key = Hex.bytes(seal.publicKey)
        switch SegmentSeal.verify(seal, contents: contents, replica: replica) {
        case .valid: return nil
        case .badSignature: return "its seal's signature does not verify with key \(key): altered after sealing, or forged"
        case .keyNamesAnotherReplica(let other): return "sealed as replica \(replica.hex) by key \(key), which names replica \(other.hex)"
        }
    }
}
