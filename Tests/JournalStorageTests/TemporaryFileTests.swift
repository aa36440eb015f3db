import JournalFormat
import JournalPlatform
import JournalStorage
import JournalTestSupport
import Testing

/// A journal's writer is never blocked by temporaries a killed process left (every write
/// through a temporary picks a unique one, `AtomicWriteTests`), and it removes the stale ones.
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

    @Test func filesAtFixedTemporaryNamesNeitherBlockTheWriterNorStay() throws {
        let temp = TemporaryDirectory("wedge")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        for name in ["index.tmp", "replica.tmp", "open.sjo.new", "sync-cache.tmp", "snapshots/latest.sjsnap.tmp"] {
            try plant(journal.localPath + "/" + name)
        }
        for round in 0..<2 {
            let writer = try JournalWriter(directory: journal, options: WriterOptions(sealEveryEvents: 20))
            for index in 0..<50 { try writer.append(payload(round * 50 + index), flushingEvery: 5) }
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
