import JournalFormat
import JournalKeys
import JournalPlatform

/// A board's membership log on disk (docs/FORMAT.md §17): version 4 sealed segments in the
/// folder of each signer's membership replica, and the genesis a journal pinned
/// (`local/board`). Statements are written sealed straight away, one file each: they are rare,
/// and a statement is worth something only once other machines can have it.
public enum MembershipLog {
    /// The statements of one version 4 file, each checked against its signature and folder.
    /// Blocks that do not decode, and statements whose signature does not verify, are
    /// reported and left out.
    static func statements(of scan: ScannedSegment, blocks: [ScannedBlock], replica: ReplicaID) -> (found: [Membership.Found], problems: [Problem]) {
        var found: [Membership.Found] = []
        var problems: [Problem] = []
        scan.bytes.withUnsafeBytes { buffer in
            for block in blocks {
                let frameBytes = UnsafeRawBufferPointer(rebasing: buffer[block.offset..<block.offset + block.frame.totalLength])
                do throws(SegmentFormatError) {
                    let statements = try BlockDecoder.statements(frame: block.frame, frameBytes: frameBytes, version: scan.header?.version ?? FormatV4.version)
                    for (index, statement) in statements.enumerated() {
                        let seq = block.frame.firstSeq + UInt64(index)
                        guard MembershipSigning.verify(statement, replica: replica, seq: seq) else {
                            problems.append(Problem(
                                .quarantined, file: scan.path, offset: Int64(block.offset), replica: replica, seqRange: seq...seq,
                                reason: "membership statement whose signature does not verify with key \(Hex.bytes(statement.signer)) for this folder and seq: forged or altered; not applied"))
                            continue
                        }
                        found.append(Membership.Found(statement: statement, id: EventID(replica: replica, seq: seq),
                                                      file: scan.path, offset: Int64(block.offset)))
                    }
                } catch {
                    problems.append(Problem(.corrupt, file: scan.path, offset: Int64(block.offset), replica: replica,
                                            seqRange: block.seqRange, reason: error.description))
                }
            }
        }
        return (found, problems)
    }

    /// Writes `statement`, signed by `key`, as the next event of the key's membership replica
    /// under `replicasPath`; returns it as stored. The caller holds the lock that keeps two
    /// writers of one journal apart (`local/sync.lock`); two machines holding one key can still
    /// give two statements one seq, which every reader then reports as that key's equivocation.
    @discardableResult
    public static func append(_ statement: MembershipStatement, key: ReplicaKey, replicasPath: String) throws(JournalError) -> Membership.Found {
        let replica = MembershipSigning.membershipReplica(forPublicKey: key.publicKey, board: statement.board)
        let folder = FileSystem.join(replicasPath, replica.hex)
        let existing = (try? FileSystem.list(folder)) ?? []
        let last = existing.compactMap { SegmentName(fileName: $0.name)?.lastSeq }.max() ?? 0
        let seq = last + 1
        var unsigned = statement
        unsigned.signer = key.publicKey
        // A key that ends its own membership (a rotation, a revocation of itself) ends its
        // statements with this one, which must itself count.
        if unsigned.action == .rotate || (unsigned.action == .revoke && unsigned.subject == key.publicKey) { unsigned.memberCut = seq }
        return try store(MembershipSigning.sign(unsigned, seq: seq, key: key), replica: replica, seq: seq, replicasPath: replicasPath)
    }

    /// Writes a statement signed already (an invitation's redemption, which the invited
    /// person's key made) as event `seq` of `replica`, one sealed file.
    @discardableResult
    public static func store(_ signed: MembershipStatement, replica: ReplicaID, seq: UInt64, replicasPath: String) throws(JournalError) -> Membership.Found {
        let bytes = SegmentEncoder.membershipSegment(replica: replica, firstSeq: seq, statements: [signed])
        let name = SegmentName(firstSeq: seq, lastSeq: seq, contents: bytes)
        do {
            let handle = try DirectoryHandle.open(replica.hex, beneath: replicasPath, create: true)
            try handle.writeNewFileAtomically(name: name.fileName, bytes: bytes)
        } catch {
            throw .io(error)
        }
        return Membership.Found(statement: signed, id: EventID(replica: replica, seq: seq),
                                file: FileSystem.join(FileSystem.join(replicasPath, replica.hex), name.fileName),
                                offset: Int64(FormatV1.fileHeaderSize))
    }
}

extension MembershipLog {
    /// Whether the file at `path` says format version 4 in its header (its first 32 bytes alone
    /// are read).
    static func isMembershipFile(_ path: String) -> Bool {
        guard let descriptor = try? FileDescriptor.open(path, .readOnly) else { return false }
        defer { descriptor.close() }
        guard let header = try? descriptor.read(count: FormatV1.fileHeaderSize, at: 0), header.count == FormatV1.fileHeaderSize else { return false }
        return FormatVersion.membership.contains(UInt16(header[8]) | UInt16(header[9]) << 8)
    }

    /// Every membership statement under `replicasPath`: each sealed file's header is read, and
    /// only version 4 files further (a journal's drawing segments are not decoded).
    public static func found(replicasPath: String) -> [Membership.Found] {
        var found: [Membership.Found] = []
        for file in JournalDirectory.listSealed(replicasPath: replicasPath).sealed where isMembershipFile(file.path) {
            let scan = SegmentScanner.scan(path: file.path, sealed: true)
            let verdict = SegmentVerdict.judge(scan, path: file.path, replica: file.replica, claimedName: file.name, policy: .wholeFile)
            guard !verdict.isRefused else { continue }
            found += statements(of: scan, blocks: verdict.usableBlocks, replica: file.replica).found
        }
        return found
    }

    /// Trust on first use: a journal that has no pinned genesis and now holds exactly one
    /// board's genesis (a sync or merge brought it) pins it, so that a rival genesis planted
    /// later in a shared folder cannot take the board over here. With several, nothing in the
    /// files tells the real one: nothing is pinned, every reader reports the contest, and a
    /// person settles it (`journal members pin`).
    /// `imported`: the files ("replica/name") the sync brought; a genesis can only have come
    /// with one of them, so a sync that brought no membership file reads nothing more.
    public static func pinAdoptedGenesis(_ journal: JournalDirectory, imported: [String]) {
        guard journal.isJournal, journal.boardPin() == nil,
              imported.contains(where: { isMembershipFile(FileSystem.join(journal.replicasPath, $0)) }) else { return }
        let geneses = Membership.geneses(found(replicasPath: journal.replicasPath))
        guard geneses.count == 1, let only = geneses.first else { return }
        try? journal.saveBoardPin(only)
    }
}

/// `local/board`: the genesis this journal holds to (docs/FORMAT.md §17.4). Written when the
/// journal creates a board's membership or adopts one; never synced.
extension JournalDirectory {
    static let boardPinName = "board"
    static let boardPinHeader = "strokejournal-board v1"
    public var boardPinPath: String { localPath + "/" + Self.boardPinName }

    /// The pinned genesis; nil when there is none or it does not parse (then nothing is pinned).
    public func boardPin() -> Membership.Pin? {
        guard FileSystem.linkStatus(boardPinPath) != nil,
              let bytes = try? DirectoryHandle.open(localPath, followingSymlink: false).readFile(Self.boardPinName) else { return nil }
        let lines = String(decoding: bytes.prefix(512), as: UTF8.self).split(separator: "\n")
        guard lines.count >= 2, lines[0] == Self.boardPinHeader else { return nil }
        let fields = lines[1].split(separator: " ")
        guard fields.count == 2, fields[0].count == 32, fields[1].count == 64,
              fields.allSatisfy({ $0.utf8.allSatisfy(Hex.isLowercaseHexDigit) }),
              let board = Hex.decode(fields[0]), let founder = Hex.decode(fields[1]) else { return nil }
        return Membership.Pin(board: UUIDBits(bytes: board), founder: founder)
    }

    public func saveBoardPin(_ pin: Membership.Pin) throws(IOError) {
        let text = Self.boardPinHeader + "\n" + pin.board.compactHex + " " + Hex.bytes(pin.founder) + "\n"
        try DirectoryHandle.open(localPath, followingSymlink: false).replaceFileAtomically(name: Self.boardPinName, bytes: Array(text.utf8))
    }
}
