import Foundation
import JournalFormat
import JournalPlatform
import JournalStorage
import JournalTestSupport
import Testing

/// A journal whose creation died half-way (a relay killed as a board's first client
/// connected) is created again on demand, never left as a folder nothing opens; a folder of
/// somebody else's files is never taken over.
@Suite(.ownThreads) struct UnfinishedCreationTests {
    func point(_ index: Int) -> Payload {
        .point(PointSample(stroke: StrokeID(UUIDBits(high: 3, low: 1)), x: Double(index), y: 1, pressure: 0.5,
                           style: Style(color: RGBA(rawValue: 0x112233FF), width: 2)))
    }

    /// Records one event and reads it back: the journal works.
    func recordsAndReads(_ journal: JournalDirectory) throws {
        let writer = try JournalWriter(directory: journal)
        try writer.append(point(1))
        try writer.close()
        let reader = try JournalWriter(directory: journal)
        #expect(reader.nextSeq == 2)
        try reader.close()
    }

    /// Every storage operation of `create`, failed in turn (what was done before it stays, as
    /// after a kill): `openOrCreate` then makes a working journal, and `open` agrees it is one.
    @Test(.enabled(if: FaultInjection.isCompiled, "the fault hook is built only by `swift test --traits FaultInjection`"))
    func aCreationCutAtAnyStepIsCreatedAgain() throws {
        var failAt = 1
        var cut = 0
        while failAt < 64 {
            let temp = TemporaryDirectory("unfinished")
            defer { temp.remove() }
            let root = temp.path + "/board"
            let count = Locked(0)
            let target = failAt
            let failed = FaultInjection.$hook.withValue({ _, path in
                guard path.hasPrefix(root) else { return nil }
                return count.withLock { count -> Int32? in
                    count += 1
                    return count == target ? EIO : nil
                }
            }) { () -> Bool in
                do {
                    try JournalDirectory.create(at: root)
                    return false
                } catch {
                    return true
                }
            }
            guard failed else { break }
            cut += 1
            let journal = try JournalDirectory.openOrCreate(at: root)
            #expect(journal.isJournal, "cut at operation \(failAt)")
            #expect(!journal.isUnfinishedCreation)
            _ = try JournalDirectory.open(at: root)
            try recordsAndReads(journal)
            failAt += 1
        }
        // create makes folders, writes, syncs and renames: several steps were cut.
        #expect(cut >= 5, "only \(cut) operations were cut")
    }

    /// What a kill leaves before the identity: the folders, and perhaps a half-written
    /// temporary of the identity file.
    @Test func leftFoldersAndATemporaryAreAnUnfinishedCreation() throws {
        let temp = TemporaryDirectory("unfinished")
        defer { temp.remove() }
        let root = temp.path + "/board"
        try FileSystem.createDirectory(root + "/replicas")
        try FileSystem.createDirectory(root + "/local")
        try FileSystem.writeAtomically(Array("0123".utf8), to: root + "/local/" + FileSystem.temporaryName(for: "replica"))
        #expect(JournalDirectory(root: root).isUnfinishedCreation)
        #expect(throws: JournalError.notAJournal(path: root)) { try JournalDirectory.open(at: root) }
        try recordsAndReads(try JournalDirectory.openOrCreate(at: root))
    }

    /// Creators of one journal at once: one identity wins, all get the journal, and it
    /// never takes itself for a copy (the second creator never replaces the identity the first
    /// has anchored). Sixty rounds of four creators: a race this test looks for is rare.
    @Test func twoCreatorsAtOnceAgreeOnOneIdentity() throws {
        let temp = TemporaryDirectory("unfinished-race")
        defer { temp.remove() }
        for round in 0..<60 {
            let root = temp.path + "/b\(round)"
            let identities = Locked<[ReplicaID]>([])
            let failures = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                do {
                    let journal = try JournalDirectory.openOrCreate(at: root)
                    let identity = try journal.identity()
                    identities.withLock { $0.append(identity) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "round \(round)")
            let seen = identities.withLock { $0 }
            #expect(seen.count == 4 && Set(seen).count == 1, "round \(round): \(seen)")
            let writer = try JournalWriter(directory: JournalDirectory(root: root))
            #expect(writer.recovery.identityChange == nil, "round \(round): the journal took itself for a copy")
            #expect(writer.replica == seen.first)
            try writer.close()
        }
    }

    /// An existing journal is opened as it is (same identity), never created again.
    @Test func aJournalIsOpenedNotRecreated() throws {
        let temp = TemporaryDirectory("unfinished")
        defer { temp.remove() }
        let created = try JournalDirectory.create(at: temp.path + "/board")
        let before = try created.identity()
        let again = try JournalDirectory.openOrCreate(at: temp.path + "/board")
        #expect(try again.identity() == before)
    }

    /// Anything more than what `create` makes is somebody's: refused, and left as it was.
    @Test(arguments: ["notes.txt", "replicas/0123/x.sjs", "local/open.sjo", "local/other/"])
    func aFolderWithOtherContentIsRefusedAndLeftAlone(extra: String) throws {
        let temp = TemporaryDirectory("unfinished")
        defer { temp.remove() }
        let root = temp.path + "/board"
        try FileSystem.createDirectory(root + "/replicas")
        try FileSystem.createDirectory(root + "/local")
        let path = root + "/" + extra
        if extra.hasSuffix("/") {
            try FileSystem.createDirectory(path)
        } else {
            try FileSystem.createDirectory(FileSystem.parent(of: path))
            try FileSystem.writeAtomically(Array("keep".utf8), to: path)
        }
        #expect(!JournalDirectory(root: root).isUnfinishedCreation)
        #expect(throws: JournalError.notAJournal(path: root)) { try JournalDirectory.openOrCreate(at: root) }
        #expect(!FileSystem.exists(root + "/local/replica"))
        #expect(FileSystem.exists(path))
    }

    /// A symlink where the journal would be is never followed to create one.
    @Test func aSymlinkedFolderIsRefused() throws {
        let temp = TemporaryDirectory("unfinished")
        defer { temp.remove() }
        try FileSystem.createDirectory(temp.path + "/elsewhere")
        #expect(symlink(temp.path + "/elsewhere", temp.path + "/board") == 0)
        #expect(throws: JournalError.notAJournal(path: temp.path + "/board")) {
            try JournalDirectory.openOrCreate(at: temp.path + "/board")
        }
        #expect(try FileSystem.list(temp.path + "/elsewhere").isEmpty)
    }

    /// "" is the current folder, never the root that `"" + "/local"` names.
    @Test func anEmptyRootIsTheCurrentFolder() {
        #expect(JournalDirectory(root: "").localPath == "./local")
        #expect(JournalDirectory(root: "").replicasPath == "./replicas")
    }
}
