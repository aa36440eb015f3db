import JournalFormat
import JournalPlatform

extension JournalDirectory {
    /// Open segments of replicas this journal hosts (a relay's native clients): local, never
    /// synced; sealed into `replicas/<id>/` like the journal's own.
    public var hostedPath: String { localPath + "/hosted" }

    public func hostedSegmentPath(_ replica: ReplicaID) -> String { hostedPath + "/" + replica.hex + ".sjo" }

    /// The hosted open segments on disk: `local/hosted/<32 hex>.sjo` regular files (anything
    /// else there is no hosted segment and is left alone).
    public func hostedSegments() -> [(replica: ReplicaID, path: String)] {
        guard let entries = try? FileSystem.list(hostedPath) else { return [] }
        return entries.compactMap { entry in
            guard entry.kind == .file, entry.name.hasSuffix(".sjo"),
                  let replica = ReplicaID(hex: entry.name.dropLast(4)) else { return nil }
            return (replica, hostedPath + "/" + entry.name)
        }.sorted { $0.replica < $1.replica }
    }

    /// Scans every hosted open segment (`SegmentSet.load` adds them as open members). A file
    /// whose header names another replica than its name is reported and left out.
    public func scanHostedSegments() -> (scans: [ScannedSegment], problems: [Problem]) {
        var scans: [ScannedSegment] = []
        var problems: [Problem] = []
        for (replica, path) in hostedSegments() {
            let scan = SegmentScanner.scan(path: path, sealed: false)
            if let found = scan.replica, found != replica {
                problems.append(Problem(.corrupt, file: path, offset: 0, replica: found,
                                        reason: "a hosted open segment named for replica \(replica.hex) holds replica \(found.hex); not read"))
                continue
            }
            problems.append(contentsOf: scan.problems)
            if scan.replica != nil { scans.append(scan) }
        }
        return (scans, problems)
    }
}

/// Stores, in this journal, the events another replica named: a relay's native client sends
/// its own events (id, seq, Lamport, wall time), and the relay keeps them under the client's
/// replica id (docs/PROTOCOL.md, "Native mode"), so that the same events synced later from
/// the client's own journal dedup by id.
///
/// Like the journal's own writer: an open segment (`local/hosted/<id>.sjo`) that each
/// `append` extends by a block and fsyncs, sealed into `replicas/<id>/` under its final
/// immutable name once large (or when asked). Opening recovers a crash: a torn tail is cut, a
/// segment already sealed is reset.
///
/// Not thread-safe: the caller serializes every call. It must hold the journal's writer lock
/// (its `Board` or `JournalWriter`): that lock covers `local/`, hosted segments included,
/// and the caller is the only process that writes them.
public final class HostedReplicaWriter {
    public let replica: ReplicaID
    public let directory: JournalDirectory
    private let sink: SegmentSink
    /// The last seq in the open segment, nil while it is empty.
    public private(set) var lastOpenSeq: UInt64?
    /// Bytes a recovery cut from a torn tail (events never acknowledged).
    public private(set) var bytesCut: Int64 = 0
    /// Set when a seal failed (a full disk): the events stay durable in the open segment and
    /// appending goes on; the seal is tried again later. Nil once one succeeds.
    public private(set) var sealProblem: JournalError?

    public var openEvents: Int { sink.openSegmentEvents }
    public var openSegmentPath: String { sink.openPath }

    /// Opens (or creates) the open segment of `replica` in `directory`, recovering it.
    /// `identity`: the journal's, as its committer loaded it (read from the folder if nil).
    public init(directory: JournalDirectory, replica: ReplicaID, identity: JournalIdentity? = nil,
                sealEveryEvents: Int = 1 << 16) throws(JournalError) {
        let identity = try Self.identity(identity, of: directory)
        guard identity.replica != replica else {
            throw .notHostable("replica \(replica.hex) is this journal's own: only its writer writes it")
        }
        self.replica = replica
        self.directory = directory
        sink = SegmentSink(directory: directory, replica: replica,
                           options: WriterOptions(sealEveryEvents: sealEveryEvents, sealOnClose: true),
                           openPath: directory.hostedSegmentPath(replica))
        // The relay checked every frame against the replica's own key; its journal's key
        // vouches for that when it seals (docs/FORMAT.md §15, role `host`).
        sink.signer = try identity.hostSigner()
        // Both folders this writer writes in are the journal's own, never a symlink to
        // elsewhere (a planted one would send the events, and the seal, outside the journal).
        for folder in [directory.hostedPath, directory.replicaPath(replica)]
        where FileSystem.linkStatus(folder)?.kind == .symlink {
            throw .notHostable("\(folder) is a symbolic link: never followed")
        }
        do throws(IOError) {
            if !FileSystem.isDirectory(directory.hostedPath) {
                try FileSystem.createDirectory(directory.hostedPath)
                try FileSystem.syncDirectory(directory.localPath)
            }
        } catch {
            throw .io(error)
        }
        try recover()
    }

    deinit { sink.closeFiles() }

    private static func identity(_ given: JournalIdentity?, of directory: JournalDirectory) throws(JournalError) -> JournalIdentity {
        if let given { return given }
        return try directory.loadIdentity()
    }

    private func recover() throws(JournalError) {
        // A seal a crashed process did not finish (its temporary in the replica's folder).
        FileSystem.removeStaleTemporaries(in: directory.replicaPath(replica))
        FileSystem.removeStaleTemporaries(in: directory.hostedPath)
        let found = try sink.recoverOpenSegment(
            what: "the hosted open segment of \(replica.hex)", index: { LocalIndex.refresh(directory) }, directory: directory)
        bytesCut = found.bytesCut
        lastOpenSeq = found.lastSeq
    }

    /// Appends `events` (of this replica, seqs consecutive and increasing) and fsyncs: durable
    /// when it returns. Events that do not follow the open segment's last seq start a new
    /// segment (the open one is sealed first: a segment's seqs are dense). Seals once the
    /// open segment is large. Returns the name of a segment sealed on the way, if any.
    @discardableResult
    public func append(_ events: [Event]) throws(JournalError) -> [SegmentName] {
        guard let first = events.first else { return [] }
        for (index, event) in events.enumerated() {
            guard event.id.replica == replica, event.id.seq == first.id.seq + UInt64(index) else {
                throw .notHostable("hosted events must be of replica \(replica.hex), with consecutive seqs")
            }
        }
        var sealed: [SegmentName] = []
        if let last = lastOpenSeq, first.id.seq != last + 1, let name = try seal() { sealed.append(name) }
        let outcome = sink.makeDurable(events, sealIfDue: true)
        if let error = outcome.error { throw error }
        if let name = outcome.sealedName { sealed.append(name) }
        // The events are durable whether or not the seal that followed could be written.
        if let problem = outcome.sealProblem { sealProblem = problem.value }
        lastOpenSeq = sink.openSegmentEvents > 0 ? events[events.count - 1].id.seq : nil
        return sealed
    }

    /// Moves the open segment's events into a sealed segment under `replicas/<id>/`.
    @discardableResult
    public func seal() throws(JournalError) -> SegmentName? {
        do {
            let name = try sink.seal()
            if name != nil { lastOpenSeq = nil }
            sealProblem = nil
            return name
        } catch {
            sealProblem = error
            throw error
        }
    }

    /// The seqs in the open segment (what a recovery found, or what was appended since).
    public var openSeqs: ClosedRange<UInt64>? {
        guard let last = lastOpenSeq, openEvents > 0 else { return nil }
        return (last + 1 - UInt64(openEvents))...last
    }

    /// Seals what is open (what a relay does when it closes a board) and closes the file.
    public func close() throws(JournalError) {
        defer { sink.closeFiles() }
        if sink.failure == nil { try seal() }
    }
}
