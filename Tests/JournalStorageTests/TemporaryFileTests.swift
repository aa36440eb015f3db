#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalFormat
import JournalPlatform
import JournalStorage
import JournalTestSupport
import Testing

/// Issue 8, finding 4: `FileSystem.writeAtomically` picks a unique temporary itself, so a
/// temporary left by a killed process never blocks a later write, and stale ones are cleaned.
@Suite(.ownThreads) struct TemporaryFileTests {
    func payload(_ index: Int) -> Payload {
        .point(PointSample(stroke: StrokeID(UUIDBits(high: 3, low: UInt64(index / 10))), x: Double(index), y: 1,
                           pressure: nil, t: nil, style: Style(color: RGBA(rawValue: 0x112233FF), width: 1)))
    }

    func plant(_ path: String) throws {
        try FileSystem.createDirectory(FileSystem.parent(of: path))
        let file = try FileDescriptor.open(path, .createNew)
        defer { file.close() }
        try file.writeAll(Array("left by kill -9".utf8))
    }

    @Test func oldFixedNameLeftoversNoLongerWedgeTheWriter() throws {
        let temp = TemporaryDirectory("wedge")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        for name in ["index.tmp", "replica.tmp", "open.sjo.new", "sync-cache.tmp", "snapshots/latest.sjsnap.tmp"] {
            try plant(journal.localPath + "/" + name)
        }
        for round in 0..<2 {
            let writer = try JournalWriter(directory: journal, options: WriterOptions(flushEveryEvents: 5, sealEveryEvents: 20))
            for index in 0..<50 { try writer.append(payload(round * 50 + index)) }
            try writer.close()
        }
        #expect(LocalIndex.refresh(journal).entries.count == journal.listSealed().sealed.count)
        #expect(journal.listSealed().sealed.last?.name.lastSeq == 100)
        // And the writer cleared them away.
        for name in ["index.tmp", "replica.tmp", "open.sjo.new", "sync-cache.tmp", "snapshots/latest.sjsnap.tmp"] {
            #expect(!FileSystem.exists(journal.localPath + "/" + name), "\(name) left behind")
        }
        // A file whose old temporary name is taken is still written.
        try FileSystem.writeAtomically(Array("new".utf8), to: journal.localPath + "/sync-cache")
        #expect(try FileSystem.readFile(journal.localPath + "/sync-cache") == Array("new".utf8))
    }

    @Test func writeAtomicallyReplacesAndLeavesNoTemporary() throws {
        let temp = TemporaryDirectory("atomic")
        defer { temp.remove() }
        let path = temp.path + "/file"
        try FileSystem.writeAtomically([1, 2, 3], to: path)
        try FileSystem.writeAtomically([4], to: path)
        #expect(try FileSystem.readFile(path) == [4])
        #expect(try FileSystem.list(temp.path).map(\.name) == ["file"])
        // A failed rename or fsync removes its temporary: the next write still works.
        for operation in [FaultInjection.Operation.rename, .fsync, .write] {
            FaultInjection.$hook.withValue({ op, _ in op == operation ? EIO : nil }) {
                #expect(throws: IOError.self) { try FileSystem.writeAtomically([9], to: path) }
            }
            #expect(try FileSystem.list(temp.path).map(\.name) == ["file"], "\(operation)")
        }
        try FileSystem.writeAtomically([5], to: path)
        #expect(try FileSystem.readFile(path) == [5])
    }

    @Test func temporaryNamesAreUniqueAndTellWhetherTheirWriterIsGone() {
        let first = FileSystem.temporaryName(for: "index")
        let second = FileSystem.temporaryName(for: "index")
        #expect(first != second)
        #expect(first.hasPrefix(".tmp-index." + ProcessInfoLite.hostName + "." + String(ProcessInfoLite.processID) + "."))
        #expect(!FileSystem.isStaleTemporary(first), "this process is alive")
        let host = ProcessInfoLite.hostName
        #expect(FileSystem.isStaleTemporary(".tmp-index.\(host).999999999.0123456789abcdef"))
        #expect(FileSystem.isStaleTemporary(".tmp-a.sjs.\(host).999999999"), "the older form without a random part")
        #expect(!FileSystem.isStaleTemporary(".tmp-index.other-host.999999999.0123456789abcdef"), "another machine's")
        #expect(!FileSystem.isStaleTemporary(".tmp-index.\(host).1.0123456789abcdef"), "pid 1 is alive")
        #expect(!FileSystem.isStaleTemporary("index.tmp"))
        #expect(!FileSystem.isStaleTemporary(".tmp-x.sjs"))
    }

    @Test func openingTheWriterRemovesOnlyStaleTemporaries() throws {
        let temp = TemporaryDirectory("stale")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let host = ProcessInfoLite.hostName
        let stale = [journal.localPath + "/.tmp-index.\(host).999999999.0123456789abcdef",
                     journal.snapshotsPath + "/.tmp-latest.sjsnap.\(host).999999999.fedcba9876543210",
                     journal.localPath + "/.tmp-replica.\(host).999999999"]
        let kept = [journal.localPath + "/.tmp-index.\(host).\(ProcessInfoLite.processID).0123456789abcdef",
                    journal.localPath + "/.tmp-index.other-host.999999999.0123456789abcdef"]
        for path in stale + kept { try plant(path) }
        let writer = try JournalWriter(directory: journal)
        try writer.close()
        for path in stale { #expect(!FileSystem.exists(path), "\(path)") }
        for path in kept { #expect(FileSystem.exists(path), "\(path)") }
    }
}
