import Foundation
import JournalFormat
import JournalKeys
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport
import Testing
import JournalCompression

/// What a journal keeps true against files it did not write (forged, damaged, copied, racing a
/// seal) and against a full disk; each section names the behaviour, and every test failed on
/// the code before its fix.
@Suite(.ownThreads) struct IntegrityTests {
    // MARK: Acknowledged events outrank what other files claim

    @Test func aForeignSegmentOfOurReplicaAboveOurSeqsNeitherEntersNorDiscardsUnsealedEvents() async throws {
        let temp = TemporaryDirectory("integrity-own")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let replica = try journal.identity()
        let acknowledged = try record(journal, strokes: 1, points: 4, seal: false)   // 5 events, unsealed
        #expect(acknowledged == 5)

        // A valid segment of this journal's own replica at seq 999...1000, offered by a folder.
        let forged = try plantSegment(in: temp.path + "/elsewhere", replica: replica, firstSeq: 999, count: 2, lamport: 1)
        let report = try await SyncEngine(journal: journal).merge(from: [temp.path + "/elsewhere"])
        #expect(report.imported.isEmpty)
        #expect(report.rejected.contains { $0.kind == .quarantined && $0.file.hasSuffix(forged.fileName) })

        // Even planted straight into the journal, it may not reset the open segment.
        try writeFile(journal.segmentPath(replica, forged), SegmentScanner.scan(
            path: temp.path + "/elsewhere/replicas/" + replica.hex + "/" + forged.fileName, sealed: true).bytes)
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
        #expect(writer.recovery.discardedSealedCopy == false)
        try writer.close()
        let seqs = Set(eventsOf(replica, in: journal).map(\.id.seq))
        #expect(seqs.isSuperset(of: Set(1...5)))
    }

    /// A journal with a trust list that is moved (copied) takes a new key, and goes on applying
    /// what it sealed under its old one (none of it is quarantined).
    @Test func aCopiedJournalWithATrustListKeepsApplyingWhatItSealedBefore() throws {
        let temp = TemporaryDirectory("integrity-copy-trust")
        defer { temp.remove() }
        let original = try JournalDirectory.create(at: temp.path + "/j")
        try TrustList().save(to: original)
        do {
            let writer = try JournalWriter(directory: original)
            for event in EventGenerator(seed: 7, replica: try original.identity()).strokeEvents(points: 5) { try writer.append(event.payload) }
            try writer.close()
        }
        let sealedBefore = Replay.check(SegmentSet.load(original)).eventCount
        #expect(sealedBefore > 0)
        try copyTree(original.root, to: temp.path + "/moved")
        let moved = try JournalDirectory.open(at: temp.path + "/moved")
        let writer = try JournalWriter(directory: moved)
        #expect(writer.recovery.identityChange != nil)
        try writer.close()
        let set = SegmentSet.load(moved)
        #expect(set.problems.filter { $0.kind == .quarantined }.isEmpty, "\(set.problems)")
        #expect(Replay.check(set).eventCount == sealedBefore)
        #expect(try TrustList.load(moved)?.entries.map(\.publicKey) == [try #require(original.replicaKey()).publicKey])
    }

    @Test func aCopiedJournalFolderTakesANewIdentityAndTheOriginalLosesNothing() async throws {
        let temp = TemporaryDirectory("integrity-copy")
        defer { temp.remove() }
        let original = try JournalDirectory.create(at: temp.path + "/j")
        let replica = try original.identity()
        let shared = temp.path + "/shared"
        try FileSystem.createDirectory(shared)

        // The original's recorder keeps running: 10 events flushed (acknowledged), unsealed.
        var recorder: JournalWriter? = try JournalWriter(directory: original, options: WriterOptions(sealOnClose: false))
        var pen = EventGenerator(seed: 5, replica: replica)
        for event in pen.stroke(points: 9) { try recorder!.append(event.payload) }
        try recorder!.flush()
        #expect(recorder!.durableSeq == 10)

        // A person copies the folder (new inodes, like cp -a) and syncs the copy.
        try copyTree(original.root, to: temp.path + "/j2")
        let copy = try JournalDirectory.open(at: temp.path + "/j2")
        let copyWriter = try JournalWriter(directory: copy)
        let change = try #require(copyWriter.recovery.identityChange)
        #expect(change.previous == replica && change.current != replica)
        #expect(try copy.identity() == change.current)
        // A key of its own: the original's key signs the original's replica only (invariant 12).
        let copyKey = try #require(copy.replicaKey())
        #expect(copyKey.replica == change.current)
        #expect(copyKey.publicKey != original.replicaKey()?.publicKey)
        for event in EventGenerator(seed: 6, replica: change.current).strokeEvents(points: 3) { try copyWriter.append(event.payload) }
        try copyWriter.close()
        _ = try await SyncEngine(journal: copy).sync(.directory(shared))

        // The original acknowledges 5 more, syncs (importing the copy's seal of its events),
        // and is killed before sealing.
        for event in pen.stroke(points: 4) { try recorder!.append(event.payload) }
        try recorder!.flush()
        #expect(recorder!.durableSeq == 15)
        _ = try await SyncEngine(journal: original).sync(.directory(shared))
        // kill -9: the recorder never seals; its descriptors and lock go with it.
        recorder = nil
        let reopened = try JournalWriter(directory: original)
        #expect(reopened.replica == replica)
        #expect(reopened.nextSeq == 16)
        try reopened.close()
        let held = eventsOf(replica, in: original)
        #expect(Set(held.map(\.id.seq)) == Set(1...15))

        // Both converge, and the copy wrote nothing under the original's id beyond its seal.
        _ = try await SyncEngine(journal: original).sync(.directory(shared))
        _ = try await SyncEngine(journal: copy).sync(.directory(shared))
        #expect(Replay.load(original).drawing.digest == Replay.load(copy).drawing.digest)
        #expect(Replay.load(original).report.forks.isEmpty)
    }

    @Test func aJournalCopiedBeforeItsFirstWriterIsStillACopy() throws {
        let temp = TemporaryDirectory("integrity-copy-fresh")
        defer { temp.remove() }
        let original = try JournalDirectory.create(at: temp.path + "/j")
        try copyTree(original.root, to: temp.path + "/j2")
        let copy = try JournalDirectory.open(at: temp.path + "/j2")
        let copied = try JournalWriter(directory: copy)
        #expect(copied.recovery.identityChange != nil)
        try copied.close()
        let first = try JournalWriter(directory: original)
        #expect(first.recovery.identityChange == nil)
        try first.close()
        #expect(try copy.identity() != original.identity())
    }

    // MARK: A name identifies its bytes

    @Test func sealedNamesCarryTheSHA256OfTheirBytes() throws {
        let temp = TemporaryDirectory("integrity-name")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        _ = try record(journal, strokes: 2, points: 5, seal: true)
        let file = try #require(journal.listSealed().sealed.first)
        #expect(file.name.identifiesContents)
        #expect(file.name.fileName.count == 20 + 1 + 20 + 1 + 32 + 4)
        let bytes = try FileSystem.readFile(file.path)
        #expect(file.name == SegmentName(firstSeq: file.name.firstSeq, lastSeq: file.name.lastSeq, contents: bytes))
        var flipped = bytes
        flipped[bytes.count - 1] ^= 1
        #expect(!file.name.matches(flipped))
    }

    @Test func aForgedFileUnderAnHonestNameIsNeverImportedAndAVersion1NameIsOnlyAClaim() async throws {
        let temp = TemporaryDirectory("integrity-forged")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 41)
        let carol = try Machine(temp.path + "/carol", seed: 43)
        try alice.draw(strokes: 4)
        let honest = try #require(alice.journal.listSealed().sealed.first)
        let honestBytes = try FileSystem.readFile(honest.path)
        let forgedBytes = try recoloured(honestBytes, replica: honest.replica)

        // Version 2: the forgery under the honest name, in a folder a new machine syncs from.
        let forgedShare = temp.path + "/forged-share"
        try writeFile(forgedShare + "/replicas/" + honest.replica.hex + "/" + honest.name.fileName, forgedBytes)
        let report = try await SyncEngine(journal: carol.journal).sync(.directory(forgedShare))
        #expect(report.imported.isEmpty)
        #expect(report.rejected.contains { $0.reason.contains("SHA-256") })

        // Version 1: Alice holds the honest file under its old CRC name; the shared folder
        // has a different file under that very name. A same name does not mean "held".
        let legacyName = SegmentName(firstSeq: honest.name.firstSeq, lastSeq: honest.name.lastSeq, fileCRC: CRC32.checksum(honestBytes))
        try FileSystem.remove(honest.path)
        try writeFile(alice.journal.segmentPath(honest.replica, legacyName), honestBytes)
        let share = temp.path + "/share"
        try writeFile(share + "/replicas/" + honest.replica.hex + "/" + legacyName.fileName, forgedBytes)
        _ = try await SyncEngine(journal: alice.journal).sync(.directory(share))
        // Alice now holds it by content and published it under the name that proves it.
        #expect(FileSystem.exists(share + "/replicas/" + honest.replica.hex + "/" + honest.name.fileName))
        #expect(!FileSystem.exists(alice.journal.segmentPath(honest.replica, legacyName)))
        _ = try await SyncEngine(journal: carol.journal).sync(.directory(share))
        #expect(carol.digest == alice.digest)
    }

    // MARK: A damaged local file is never published

    @Test func aDamagedLocalSegmentOfTheSameSizeIsNotPublished() async throws {
        let temp = TemporaryDirectory("integrity-damaged")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 51)
        try alice.draw(strokes: 5)
        let file = try #require(alice.journal.listSealed().sealed.first)
        _ = LocalIndex.refresh(alice.journal)   // the index now says "valid" for this name and size
        var bytes = try FileSystem.readFile(file.path)
        bytes[bytes.count / 2] ^= 0x40
        try FileSystem.remove(file.path)
        try writeFile(file.path, bytes)
        let shared = temp.path + "/shared"
        try FileSystem.createDirectory(shared)
        let report = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(report.published.isEmpty)
        #expect(!FileSystem.exists(shared + "/replicas/" + file.replica.hex + "/" + file.name.fileName))
        #expect(report.rejected.contains { $0.reason.contains("not published") })
    }

    @Test func aDamagedSharedCopyIsMovedAsideAndRepublishedByItsHolder() async throws {
        let temp = TemporaryDirectory("integrity-repair")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 53)
        let bob = try Machine(temp.path + "/bob", seed: 54)
        try alice.draw(strokes: 5)
        let shared = temp.path + "/shared"
        try FileSystem.createDirectory(shared)
        _ = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        let file = try #require(alice.journal.listSealed().sealed.first)
        let sharedPath = shared + "/replicas/" + file.replica.hex + "/" + file.name.fileName
        // The shared copy is damaged in place (a disk error, a careless tool), same size.
        var bytes = try FileSystem.readFile(sharedPath)
        bytes[bytes.count / 3] ^= 0x04
        let handle = try FileDescriptor.open(sharedPath, .readWrite)
        try handle.writeAll(bytes)
        handle.close()

        // Written a moment ago: it may still be in the hands of another tool, so it stays.
        let fresh = try await SyncEngine(journal: bob.journal).sync(.directory(shared))
        #expect(fresh.imported.isEmpty && FileSystem.exists(sharedPath))
        // A minute later it is moved aside, and Alice, who holds the name, publishes it again.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -120)], ofItemAtPath: sharedPath)
        let moved = try await SyncEngine(journal: bob.journal).sync(.directory(shared))
        #expect(moved.rejected.contains { $0.reason.contains("moved aside") })
        #expect(!FileSystem.exists(sharedPath))
        let republished = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(republished.published.contains(file.replica.hex + "/" + file.name.fileName))
        let repaired = try await SyncEngine(journal: bob.journal).sync(.directory(shared))
        #expect(repaired.imported.count == 1)
        #expect(bob.digest == alice.digest)
        #expect(repaired.ignored.contains { $0.file.contains(FileClassifier.damagedPrefix) })
    }

    @Test func aMergeNeverWritesToItsSource() async throws {
        let temp = TemporaryDirectory("integrity-merge-source")
        defer { temp.remove() }
        var bob = try Machine(temp.path + "/bob", seed: 55)
        let alice = try Machine(temp.path + "/alice", seed: 56)
        try bob.draw(strokes: 3)
        let file = try #require(bob.journal.listSealed().sealed.first)
        let folder = bob.journal.replicaPath(file.replica)
        // What a killed recorder of this host leaves, and a damaged copy nobody wrote for long.
        try writeFile(folder + "/.tmp-" + file.name.fileName + "." + ProcessInfoLite.hostName + ".999999999.0123456789abcdef", [1, 2, 3])
        var bytes = try FileSystem.readFile(file.path)
        bytes[bytes.count / 2] ^= 0x08
        let damaged = folder + "/" + SegmentName(firstSeq: 900, lastSeq: 900, contents: [9]).fileName
        try writeFile(damaged, bytes)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -600)], ofItemAtPath: damaged)
        let before = snapshot(bob.journal.root)
        let report = try await SyncEngine(journal: alice.journal).merge(from: [bob.journal.root])
        #expect(!report.imported.isEmpty && !report.rejected.isEmpty)
        #expect(snapshot(bob.journal.root) == before, "merge changed its source")
    }

    // MARK: One crafted file cannot exhaust clocks or seqs

    @Test func implausibleClocksAreQuarantinedAndWritersKeepRecording() async throws {
        let temp = TemporaryDirectory("integrity-clock")
        defer { temp.remove() }
        let victim = try JournalDirectory.create(at: temp.path + "/victim")
        let bystander = try JournalDirectory.create(at: temp.path + "/bystander")
        _ = try record(victim, strokes: 2, points: 5, seal: true)
        _ = try record(bystander, strokes: 2, points: 5, seal: true)
        let victimReplica = try victim.identity()

        // A valid segment of the victim's replica near the seq bound, and another replica's
        // `clear` near the clock bound, in a shared folder.
        let shared = temp.path + "/shared"
        _ = try plantSegment(in: shared, replica: victimReplica, firstSeq: FormatV1.maxSeq - 2, count: 1, lamport: 3)
        let attacker = ReplicaID(UUIDBits(high: 0xA77A_CCE5, low: 1))
        let clear = Event(id: EventID(replica: attacker, seq: 1), lamport: FormatV1.maxLamport - 1, wallTime: 1, payload: .clear)
        try writeSegment(in: shared, replica: attacker, events: [clear])

        for journal in [victim, bystander] {
            _ = try await SyncEngine(journal: journal).sync(.directory(shared))
            let writer = try JournalWriter(directory: journal)
            var pen = EventGenerator(seed: 9, replica: writer.replica)
            for event in pen.stroke(points: 2_000) { try writer.append(event.payload) }
            try writer.close()
            let (drawing, report) = Replay.load(journal)
            #expect(report.quarantinedEvents >= 1)
            #expect(report.problems.contains { $0.kind == .quarantined })
            // Writers stay far from the bound: the crafted clock was not followed.
            #expect(report.maxLamport < FormatV1.maxLamport / 1024)
            // The clear is not applied: strokes drawn before and after it stay visible.
            #expect(drawing.visibleStrokes.count == 3)
        }
        // The victim never took the seq-bound file in.
        #expect(!victim.listSealed().sealed.contains { $0.name.lastSeq > FormatV1.maxSeq / 2 })
        #expect(bystander.listSealed().sealed.contains { $0.name.lastSeq > FormatV1.maxSeq / 2 })
    }

    @Test func quarantineIsAFunctionOfTheEventSet() throws {
        // The same files in any order and split give the same quarantine and the same drawing.
        let temp = TemporaryDirectory("integrity-clock-set")
        defer { temp.remove() }
        let honest = ReplicaID(UUIDBits(high: 1, low: 1))
        var pen = EventGenerator(seed: 12, replica: honest)
        let strokes = pen.stroke(points: 20)
        let liar = ReplicaID(UUIDBits(high: 2, low: 2))
        let lies = [Event(id: EventID(replica: liar, seq: 1), lamport: 1 << 40, wallTime: 5, payload: .clear),
                    Event(id: EventID(replica: liar, seq: 2), lamport: 3, wallTime: 6, payload: .erase(strokes[0].payload.stroke!))]
        var digests = Set<String>()
        for order in 0..<2 {
            let root = temp.path + "/set\(order)"
            try writeSegment(in: root, replica: honest, events: order == 0 ? strokes : Array(strokes.reversed().reversed()))
            if order == 0 {
                try writeSegment(in: root, replica: liar, events: lies)
            } else {
                try writeSegment(in: root, replica: liar, events: [lies[0]])
                try writeSegment(in: root, replica: liar, events: [lies[1]])
            }
            let set = SegmentSet.load(replicasPath: root + "/replicas")
            let (drawing, report) = Replay.replay(set)
            #expect(report.quarantinedEvents == 1)
            // The erase (plausible) applies; the clear (implausible) does not.
            #expect(drawing.visibleStrokes.isEmpty)
            #expect(drawing.strokes.count == 1)
            digests.insert(drawing.digest)
        }
        #expect(digests.count == 1)
    }

    // MARK: Causality across replicas

    @Test func aWriterOpensWithAClockAboveEveryReplicasEvents() async throws {
        let temp = TemporaryDirectory("integrity-causality-open")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let other = ReplicaID(UUIDBits(high: 7, low: 7))
        var pen = EventGenerator(seed: 13, replica: other)
        var events = pen.stroke(points: 30)
        events = events.map { var event = $0; event.lamport += 500; return event }
        try writeSegment(in: temp.path + "/peer", replica: other, events: events)
        _ = try await SyncEngine(journal: journal).merge(from: [temp.path + "/peer"])
        let writer = try JournalWriter(directory: journal)
        #expect(writer.clock >= events.last!.lamport)
        try writer.append(.clear)
        try writer.close()
        #expect(Replay.load(journal).drawing.visibleStrokes.isEmpty)
    }

    @Test func aRunningWriterSeesWhatAConcurrentSyncImports() async throws {
        let temp = TemporaryDirectory("integrity-causality-running")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let writer = try JournalWriter(directory: journal)
        try writer.append(.point(PointSample(stroke: StrokeID(UUIDBits(high: 3, low: 3)), x: 1, y: 1, pressure: nil, t: nil,
                                             style: Style(color: RGBA(red: 1, green: 2, blue: 3), width: 2))))
        try writer.flush()
        // 500 events of another machine arrive while the recorder runs.
        let other = ReplicaID(UUIDBits(high: 8, low: 8))
        var pen = EventGenerator(seed: 14, replica: other)
        var events: [Event] = []
        while events.count < 500 { events += pen.stroke(points: 49) }
        try writeSegment(in: temp.path + "/peer", replica: other, events: events)
        _ = try await SyncEngine(journal: journal).merge(from: [temp.path + "/peer"])
        // The next event the recorder takes must follow all of them: a clear hides them.
        try writer.append(.clear)
        try writer.close()
        let (drawing, report) = Replay.load(journal)
        #expect(report.eventCount == 502)
        #expect(drawing.visibleStrokes.isEmpty)
    }

    // MARK: Cached verdicts follow the bytes, and the cache is bounded

    @Test func aRepairedCopyWithTheSameSizeAndMtimeIsReadAgain() async throws {
        let temp = TemporaryDirectory("integrity-cache")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 61)
        let bob = try Machine(temp.path + "/bob", seed: 62)
        try alice.draw(strokes: 4)
        let file = try #require(alice.journal.listSealed().sealed.first)
        let good = try FileSystem.readFile(file.path)
        var bad = good
        bad[bad.count / 2] ^= 0x10
        let shared = temp.path + "/shared"
        let target = shared + "/replicas/" + file.replica.hex + "/" + file.name.fileName
        try writeFile(target, bad)
        let stamp = try FileManager.default.attributesOfItem(atPath: target)[.modificationDate] as! Date
        let first = try await SyncEngine(journal: bob.journal).sync(.directory(shared))
        #expect(first.imported.isEmpty && !first.rejected.isEmpty)
        // Repaired in place, size and mtime preserved (cp -p, rsync -a).
        let handle = try FileDescriptor.open(target, .readWrite)
        try handle.writeAll(good)
        handle.close()
        try FileManager.default.setAttributes([.modificationDate: stamp], ofItemAtPath: target)
        let second = try await SyncEngine(journal: bob.journal).sync(.directory(shared))
        #expect(second.imported.count == 1)
        #expect(bob.digest == alice.digest)
    }

    @Test func cacheEntriesOfVanishedFilesArePruned() async throws {
        let temp = TemporaryDirectory("integrity-cache-prune")
        defer { temp.remove() }
        let bob = try Machine(temp.path + "/bob", seed: 72)
        let shared = temp.path + "/shared"
        let replica = ReplicaID(UUIDBits(high: 9, low: 9))
        for index in 0..<300 {
            try writeFile(shared + "/replicas/\(replica.hex)/junk\(index).sync-conflict-20260101-000000-ABCDEF.sjs", Array("junk \(index)".utf8))
        }
        _ = try await SyncEngine(journal: bob.journal).sync(.directory(shared))
        let cachePath = bob.journal.localPath + "/sync-cache"
        let full = try FileSystem.readFile(cachePath).count
        #expect(full > 300 * 40)
        for index in 0..<300 { try FileSystem.remove(shared + "/replicas/\(replica.hex)/junk\(index).sync-conflict-20260101-000000-ABCDEF.sjs") }
        _ = try await SyncEngine(journal: bob.journal).sync(.directory(shared))
        #expect(try FileSystem.readFile(cachePath).count < 100)
    }

    // MARK: Sync while a recorder seals never calls our own segments corrupt

    @Test func syncingWhileARecorderSealsReportsNoFalseCorruption() async throws {
        let temp = TemporaryDirectory("integrity-seal-race")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let shared = temp.path + "/shared"
        try FileSystem.createDirectory(shared)
        let done = Flag()
        let recorder = Thread {
            defer { done.set() }
            do {
                let writer = try JournalWriter(directory: journal, options: WriterOptions(sealEveryEvents: 40))
                var pen = EventGenerator(seed: 15, replica: writer.replica)
                for _ in 0..<60 {
                    for event in pen.stroke(points: 19) { try writer.append(event.payload) }
                    try writer.flush()
                }
                try writer.close()
            } catch {
                done.fail("\(error)")
            }
        }
        recorder.start()
        var falseAlarms: [Problem] = []
        repeat {
            let report = try await SyncEngine(journal: journal).sync(.directory(shared), seal: false)
            falseAlarms += report.rejected.filter { $0.file.hasPrefix(journal.root) }
        } while !done.isSet
        #expect(falseAlarms.isEmpty, "\(falseAlarms)")
        #expect(done.failure == nil)
        _ = try await SyncEngine(journal: journal).sync(.directory(shared))
        #expect(Replay.load(journal).report.eventCount == 1_200)
    }

    // MARK: A full disk at seal time does not stop recording

    @Test(.enabled(if: LoopMount.isPossible, "needs root and a loop device to make a small file system"))
    func aFullDiskAtSealTimeKeepsRecordingAndSaysWhatIsNeeded() throws {
        let mount = try LoopMount(megabytes: 8)
        defer { mount.remove() }
        let journal = try JournalDirectory.create(at: mount.path + "/j")
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealEveryEvents: 40_000))
        var pen = EventGenerator(seed: 16, replica: writer.replica)
        var appended = 0
        func draw(_ events: Int) throws {
            let target = appended + events
            while appended < target {
                for event in pen.stroke(points: 199) { try writer.append(event.payload, flushingEvery: 1_000) }
                appended += 200
            }
            try writer.flush()
        }
        try draw(38_000)
        // The disk fills up (another program), leaving room for a few open-segment blocks only.
        let ballast = try FileDescriptor.open(mount.path + "/ballast", .readWrite)
        let free = FileSystem.availableBytes(mount.path) ?? 0
        try ballast.writeAll([UInt8](repeating: 0xAB, count: Int(max(0, free - 40 * 1024))))
        try ballast.sync()
        ballast.close()
        let openSize = FileSystem.linkStatus(journal.openSegmentPath)?.size ?? 0
        #expect(openSize > 80 * 1024, "the sealed copy must not fit in what is left")
        try draw(2_000)
        #expect(writer.durableSeq == UInt64(appended))
        let problem = try #require(writer.sealProblem)
        #expect(problem.description.contains("sealing needs about"))
        try draw(1_000)
        #expect(writer.durableSeq == UInt64(appended))
        do throws(JournalError) {
            try writer.close()
            Issue.record("closing must report that sealing is still pending")
        } catch {
            guard case .sealFailed = error else { Issue.record("unexpected \(error)"); return }
        }
        // Recording goes on after a reopen; once room is freed, the seal happens.
        let again = try JournalWriter(directory: journal)
        #expect(again.nextSeq == UInt64(appended) + 1)
        try FileSystem.remove(mount.path + "/ballast")
        try again.append(.clear)
        try again.close()
        #expect(journal.listSealed().sealed.count == 1)
        #expect(Replay.load(journal).report.eventCount == appended + 1)
    }
}

// MARK: Helpers

/// Records `strokes` strokes of `points` points and closes; returns the events written.
@discardableResult
private func record(_ journal: JournalDirectory, strokes: Int, points: Int, seal: Bool) throws -> Int {
    let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: seal))
    var pen = EventGenerator(seed: 77, replica: writer.replica)
    var count = 0
    for _ in 0..<strokes {
        for event in pen.stroke(points: points) { try writer.append(event.payload, flushingEvery: 1); count += 1 }
    }
    try writer.close()
    return count
}

private func eventsOf(_ replica: ReplicaID, in journal: JournalDirectory) -> [Event] {
    var events: [Event] = []
    var report = ReplayReport()
    Replay.forEachUniqueEvent(SegmentSet.load(journal), report: &report) { if $0.id.replica == replica { events.append($0) } }
    return events
}

private func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    try FileSystem.createDirectory(FileSystem.parent(of: path))
    let descriptor = try FileDescriptor.open(path, .createNew)
    defer { descriptor.close() }
    try descriptor.writeAll(bytes)
}

/// Writes `events` as one sealed segment under its canonical name in `root/replicas/`.
@discardableResult
private func writeSegment(in root: String, replica: ReplicaID, events: [Event]) throws -> SegmentName {
    let bytes = SegmentEncoder.segment(replica: replica, events: events)
    let name = SegmentName(firstSeq: events.first!.id.seq, lastSeq: events.last!.id.seq, contents: bytes)
    try writeFile(root + "/replicas/" + replica.hex + "/" + name.fileName, bytes)
    return name
}

/// A valid segment of `count` events from `firstSeq`, as an attacker with write access makes one.
private func plantSegment(in root: String, replica: ReplicaID, firstSeq: UInt64, count: Int, lamport: UInt64) throws -> SegmentName {
    let stroke = StrokeID(UUIDBits(high: 0xF0F0, low: firstSeq))
    let style = Style(color: RGBA(red: 0, green: 0, blue: 0), width: 1)
    let events = (0..<count).map { index in
        Event(id: EventID(replica: replica, seq: firstSeq + UInt64(index)), lamport: lamport + UInt64(index), wallTime: 1,
              payload: .point(PointSample(stroke: stroke, x: Double(index), y: 0, pressure: nil, t: nil, style: style)))
    }
    return try writeSegment(in: root, replica: replica, events: events)
}

/// The same events moved and recoloured: a forgery that verifies block by block.
private func recoloured(_ bytes: [UInt8], replica: ReplicaID) throws -> [UInt8] {
    let scan = SegmentScanner.scan(bytes: bytes, path: "honest", sealed: true)
    var events = scan.allEvents().events
    for index in events.indices {
        if case .point(var sample) = events[index].payload {
            sample.x += 100
            sample.style.color = RGBA(red: 255, green: 0, blue: 255)
            events[index].payload = .point(sample)
        }
    }
    return SegmentEncoder.segment(replica: replica, events: events)
}

/// Copies a folder tree file by file, so every copy has a new inode (what `cp -a` gives).
private func copyTree(_ from: String, to: String) throws {
    try FileSystem.createDirectory(to)
    for entry in try FileSystem.list(from) {
        let source = from + "/" + entry.name, target = to + "/" + entry.name
        switch entry.kind {
        case .directory: try copyTree(source, to: target)
        case .file: try writeFile(target, try FileSystem.readFile(source))
        default: break
        }
    }
}

private extension EventGenerator {
    func strokeEvents(points: Int) -> [Event] {
        var copy = self
        return copy.stroke(points: points)
    }
}

/// A thread-safe one-shot flag, with the error that ended the work if any.
private final class Flag: @unchecked Sendable {
    // Both guarded by `lock`.
    private var value = false
    private var message: String?
    private let lock = NSLock()
    func set() { lock.lock(); value = true; lock.unlock() }
    func fail(_ text: String) { lock.lock(); message = text; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    var failure: String? { lock.lock(); defer { lock.unlock() }; return message }
}

/// A small ext4 file system on a loop device, for disk-full tests (root only).
struct LoopMount {
    let path: String
    private let image: String

    static let isPossible: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/sbin/mkfs.ext4")
                || FileManager.default.isExecutableFile(atPath: "/usr/sbin/mkfs.ext4") else { return false }
        guard let probe = try? LoopMount(megabytes: 2) else { return false }
        probe.remove()
        return true
    }()

    init(megabytes: Int) throws {
        let base = TemporaryDirectory("loop").path
        image = base + "/fs.img"
        path = base + "/mnt"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: image, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: image))
        try handle.truncate(atOffset: UInt64(megabytes) << 20)
        try handle.close()
        guard Self.run("mkfs.ext4", ["-q", "-m", "0", image]) == 0, Self.run("mount", ["-o", "loop", image, path]) == 0 else {
            throw IOError("mount", path: path, code: EIO)
        }
    }

    func remove() {
        _ = Self.run("umount", [path])
        try? FileManager.default.removeItem(atPath: FileSystem.parent(of: image))
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return 127 }
        guard (try? process.waitForExit()) != nil else { return 137 }
        return process.terminationStatus
    }
}
