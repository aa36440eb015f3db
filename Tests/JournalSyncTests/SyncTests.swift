import Foundation
import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
@testable import JournalSync
import JournalTestSupport
import Testing
import JournalCompression

@Suite(.ownThreads) struct SyncTests {
    @Test(.enabled(if: hasRsync(), "rsync is not installed (apt-get install rsync)"))
    func replicasConvergeThroughAFolderAndRsyncInAnyOrder() async throws {
        for seed in [1, 2, 3] as [UInt64] {
            let temp = TemporaryDirectory("converge")
            defer { temp.remove() }
            var random = SeededGenerator(seed: seed)
            var machines = try (0..<4).map { try Machine(temp.path + "/m\($0)", seed: seed * 100 + UInt64($0)) }
            let folder = temp.path + "/shared"
            let rsyncBoard = temp.path + "/rsync-board"
            try FileSystem.createDirectory(folder)
            try FileSystem.createDirectory(rsyncBoard)
            let targets: [SyncTarget] = [.directory(folder), .rsync(rsyncBoard)]
            for _ in 0..<14 {
                let who = Int.random(in: 0..<machines.count, using: &random)
                if Bool.random(using: &random) {
                    try machines[who].draw(strokes: Int.random(in: 1...4, using: &random))
                } else {
                    let target = targets.randomElement(using: &random)!
                    _ = try await SyncEngine(journal: machines[who].journal).sync(target)
                }
            }
            // A duplicate delivery: one segment copied again under a Syncthing conflict name.
            let someSegment = machines[0].journal.listSealed().sealed.first!
            try copyFile(someSegment.path, folder + "/replicas/" + someSegment.replica.hex + "/"
                         + someSegment.name.fileName.replacingOccurrences(of: ".sjs", with: ".sync-conflict-20261122-101010-ABCDEFG.sjs"))
            // Everyone syncs with both targets until nothing moves.
            for _ in 0..<3 {
                for machine in machines {
                    for target in targets { _ = try await SyncEngine(journal: machine.journal).sync(target) }
                }
            }
            let digests = Set(machines.map(\.digest))
            #expect(digests.count == 1, "seed \(seed)")
            let merged = try JournalDirectory.create(at: temp.path + "/merged")
            let report = try await SyncEngine(journal: merged).merge(from: machines.map(\.journal.root))
            #expect(report.rejected.isEmpty)
            #expect(Replay.load(merged).drawing.digest == digests.first)
            let (_, replay) = Replay.load(machines[1].journal)
            #expect(replay.forks.isEmpty && replay.problems.isEmpty)
            let authors = Set(machines.flatMap { $0.journal.listSealed().sealed.map(\.replica) })
            #expect(replay.replicas.count == authors.count)
            #expect(replay.replicas.allSatisfy { $0.gaps.isEmpty })
        }
    }

    @Test func aSecondSyncReadsNothingAndChangesNothing() async throws {
        let temp = TemporaryDirectory("idempotent")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 1)
        var bob = try Machine(temp.path + "/bob", seed: 2)
        let folder = temp.path + "/shared"
        try FileSystem.createDirectory(folder)
        try alice.draw(strokes: 5)
        try bob.draw(strokes: 5)
        _ = try await SyncEngine(journal: alice.journal).sync(.directory(folder))
        _ = try await SyncEngine(journal: bob.journal).sync(.directory(folder))
        _ = try await SyncEngine(journal: alice.journal).sync(.directory(folder))
        // Some foreign clutter, which must be reported each time but never touched.
        try copyFile(bob.journal.listSealed().sealed[0].path, folder + "/replicas/" + bob.journal.listSealed().sealed[0].replica.hex + "/.syncthing.x.sjs.tmp")
        _ = try await SyncEngine(journal: alice.journal).sync(.directory(folder))
        let before = (snapshot(folder), snapshot(alice.journal.root))
        let second = try await SyncEngine(journal: alice.journal).sync(.directory(folder))
        #expect(second.nothingNew)
        #expect(second.bytesRead == 0)
        #expect(second.ignored.count == 1)
        #expect(snapshot(folder) == before.0)
        #expect(snapshot(alice.journal.root) == before.1)
        #expect(alice.digest == bob.digest)
    }

    @Test func aHalfCopiedSegmentIsReportedThenImportedWhenComplete() async throws {
        let temp = TemporaryDirectory("halfcopy")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 3)
        let bob = try Machine(temp.path + "/bob", seed: 4)
        try alice.draw(strokes: 20)
        let segment = alice.journal.listSealed().sealed[0]
        let size = Int(segment.size)
        var random = SeededGenerator(seed: 5)
        let folder = temp.path + "/shared"
        let target = folder + "/replicas/" + segment.replica.hex + "/" + segment.name.fileName
        for _ in 0..<12 {
            let cut = Int.random(in: 0..<size, using: &random)
            try copyFile(segment.path, target, truncatedTo: cut)
            let report = try await SyncEngine(journal: bob.journal).sync(.directory(folder))
            #expect(report.imported.isEmpty, "cut at \(cut)")
            #expect(report.rejected.count == 1, "cut at \(cut)")
            #expect(report.rejected.first?.kind == .incomplete || report.rejected.first?.kind == .corrupt, "cut at \(cut)")
            #expect(bob.journal.listSealed().sealed.isEmpty)
        }
        try copyFile(segment.path, target)
        let report = try await SyncEngine(journal: bob.journal).sync(.directory(folder))
        #expect(report.imported.count == 1)
        #expect(report.rejected.isEmpty)
        #expect(bob.digest == alice.digest)
    }

    @Test func temporariesAreIgnoredAndConflictCopiesAreReadAsSegments() async throws {
        let temp = TemporaryDirectory("foreign")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 6)
        let bob = try Machine(temp.path + "/bob", seed: 7)
        try alice.draw(strokes: 6)
        let segment = alice.journal.listSealed().sealed[0]
        let folder = temp.path + "/shared/replicas/" + segment.replica.hex
        let stem = segment.name.fileName.replacingOccurrences(of: ".sjs", with: "")
        // Only conflict copies of the segment: bob must still get every event from them.
        try copyFile(segment.path, folder + "/" + stem + ".sync-conflict-20261122-101010-ABCDEFG.sjs")
        try copyFile(segment.path, folder + "/" + stem + " (bob's conflicted copy 2026-11-22).sjs")
        let foreign = ["." + segment.name.fileName + ".a1B2c3", ".syncthing." + segment.name.fileName + ".tmp",
                       "~syncthing~" + segment.name.fileName + ".tmp", ".unison." + segment.name.fileName + ".123",
                       segment.name.fileName + ".icloud", "notes.txt"]
        for name in foreign { try copyFile(segment.path, folder + "/" + name, truncatedTo: 10) }
        try FileSystem.createDirectory(folder + "/.~tmp~")
        try FileSystem.createDirectory(folder + "/.rsync-partial")
        let report = try await SyncEngine(journal: bob.journal).sync(.directory(temp.path + "/shared"))
        #expect(report.imported.count == 1)
        #expect(report.rejected.isEmpty)
        #expect(report.ignored.count == foreign.count + 2)
        #expect(report.replicas.first?.duplicateSegments == 1)
        #expect(bob.digest == alice.digest)
        // Nothing foreign was imported or published back.
        #expect(TreeListing.scan(replicasPath: bob.journal.replicasPath).files.count == 1)
        // …and the canonical name goes out to the folder, beside the conflict copies.
        #expect(report.published == [segment.replica.hex + "/" + segment.name.fileName])
        let again = try await SyncEngine(journal: bob.journal).sync(.directory(temp.path + "/shared"))
        #expect(again.imported.isEmpty && again.bytesRead == 0)
    }

    @Test func hostileEntriesAreReportedAndNeverFollowed() async throws {
        let temp = TemporaryDirectory("hostile")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 8)
        let bob = try Machine(temp.path + "/bob", seed: 9)
        try alice.draw(strokes: 3)
        let segment = alice.journal.listSealed().sealed[0]
        let shared = temp.path + "/shared"
        let folder = shared + "/replicas/" + segment.replica.hex
        try FileSystem.createDirectory(folder)
        // A symlink with a segment's name pointing at a real segment outside, and a symlinked
        // replica folder: both must be ignored, not read.
        try symlink(segment.path, folder + "/" + segment.name.fileName)
        try symlink(alice.journal.replicaPath(segment.replica), shared + "/replicas/" + String(repeating: "a", count: 32))
        // A directory where a segment should be, and a segment in the wrong replica's folder.
        try FileSystem.createDirectory(folder + "/00000000000000000001-00000000000000000002-0000abcd.sjs")
        let forgedFolder = shared + "/replicas/" + String(repeating: "b", count: 32)
        try copyFile(segment.path, forgedFolder + "/" + segment.name.fileName)
        // A file claiming an absurd size (sparse): refused before reading.
        let huge = folder + "/00000000000000000001-00000000000000000009-0badf00d.sjs"
        let descriptor = try FileDescriptor.open(huge, .createNew)
        try descriptor.truncate(to: SegmentScanner.maxSegmentFileSize + 1)
        descriptor.close()
        let report = try await SyncEngine(journal: bob.journal).sync(.directory(shared), seal: false)
        #expect(report.imported.isEmpty)
        #expect(report.ignored.contains { $0.reason.contains("symbolic link") && $0.file.hasSuffix(segment.name.fileName) })
        #expect(report.ignored.contains { $0.reason.contains("symbolic link") && $0.file.hasSuffix(String(repeating: "a", count: 32)) })
        #expect(report.ignored.contains { $0.reason.contains("directory") })
        #expect(report.rejected.contains { $0.reason.contains("names replica") })
        #expect(report.rejected.contains { $0.reason.contains("exceeds") })
        #expect(bob.journal.listSealed().sealed.isEmpty)
        #expect(SegmentSet.load(bob.journal).members.allSatisfy { $0.scan.eventCount == 0 })
    }

    @Test(.enabled(if: hasRsync(), "rsync is not installed (apt-get install rsync)"))
    func rsyncReplacesADamagedCopyWithTheVerifiedSegmentAndLeavesAGoodOneAlone() async throws {
        let temp = TemporaryDirectory("rsync-keep")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 10)
        try alice.draw(strokes: 4)
        let remote = temp.path + "/remote"
        try FileSystem.createDirectory(remote)
        let segment = alice.journal.listSealed().sealed[0]
        // The remote already has a damaged file under that name (cut short): its name is the
        // hash of other bytes, so alice's verified copy goes over it.
        let there = remote + "/replicas/" + segment.replica.hex + "/" + segment.name.fileName
        try copyFile(segment.path, there, truncatedTo: 40)
        let report = try await SyncEngine(journal: alice.journal).sync(.rsync(remote))
        #expect(report.published.isEmpty)
        #expect(report.replacedOnTarget == [segment.name.relativePath(in: segment.replica)])
        #expect(try FileSystem.readFile(there) == FileSystem.readFile(segment.path))
        // Intact now: never written again.
        let before = FileSystem.linkStatus(there)
        let again = try await SyncEngine(journal: alice.journal).sync(.rsync(remote))
        #expect(again.replacedOnTarget.isEmpty && again.rejected.isEmpty)
        #expect(FileSystem.linkStatus(there)?.inode == before?.inode && FileSystem.linkStatus(there)?.modified == before?.modified)
    }

    @Test func mergeIntoANewJournalAndTheGapsItSees() async throws {
        let temp = TemporaryDirectory("merge")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 11)
        try alice.draw(strokes: 3)
        try alice.draw(strokes: 3)
        try alice.draw(strokes: 3)
        let sealed = alice.journal.listSealed().sealed.sorted { $0.name < $1.name }
        #expect(sealed.count == 3)
        // A backup that lost the middle segment.
        let backup = temp.path + "/backup"
        for file in [sealed[0], sealed[2]] {
            try copyFile(file.path, backup + "/replicas/" + file.replica.hex + "/" + file.name.fileName)
        }
        let merged = try JournalDirectory.create(at: temp.path + "/merged")
        let report = try await SyncEngine(journal: merged).merge(from: [backup])
        #expect(report.imported.count == 2)
        let state = report.replicas.first!
        #expect(state.gaps == [sealed[1].name.firstSeq...sealed[1].name.lastSeq])
        _ = try await SyncEngine(journal: merged).merge(from: [alice.journal.root])
        #expect(Replay.load(merged).drawing.digest == alice.digest)
    }

    /// Someone forges a segment in a replica's folder that reuses its seqs with other
    /// contents: reported as forks by seq, resolved the same way everywhere, never silent.
    @Test func forgedEventsOfAnotherReplicaAreReportedAsForks() async throws {
        let temp = TemporaryDirectory("forged")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 31)
        let bob = try Machine(temp.path + "/bob", seed: 32)
        try alice.draw(strokes: 3)
        let segment = alice.journal.listSealed().sealed[0]
        var events = SegmentScanner.scan(path: segment.path, sealed: true).allEvents().events
        for index in events.indices {
            if case .point(var sample) = events[index].payload {
                sample.x += 100
                events[index].payload = .point(sample)
            }
        }
        let forged = SegmentEncoder.segment(replica: segment.replica, events: events)
        let name = SegmentName(firstSeq: segment.name.firstSeq, lastSeq: segment.name.lastSeq, fileCRC: CRC32.checksum(forged))
        let shared = temp.path + "/shared"
        try FileSystem.createDirectory(shared + "/replicas/" + segment.replica.hex)
        try FileSystem.writeAtomically(forged, to: shared + "/replicas/" + segment.replica.hex + "/" + name.fileName)
        let aliceSync = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(aliceSync.replicas.first { $0.replica == segment.replica }?.forks.isEmpty == false)
        let report = try await SyncEngine(journal: bob.journal).sync(.directory(shared))
        #expect(report.replicas.first { $0.replica == segment.replica }?.forks.isEmpty == false)
        #expect(alice.digest == bob.digest)
        let (_, replay) = Replay.load(bob.journal)
        #expect(!replay.forks.isEmpty && replay.problems.contains { $0.kind == .fork })
    }

    @Test func targetParsing() throws {
        #expect(try SyncTarget(parsing: "/mnt/shared/board") == .directory("/mnt/shared/board"))
        #expect(try SyncTarget(parsing: "board") == .directory("board"))
        #expect(try SyncTarget(parsing: "./odd:name") == .directory("./odd:name"))
        #expect(try SyncTarget(parsing: "host:board") == .rsync("host:board"))
        #expect(try SyncTarget(parsing: "alice@studio:boards/poster") == .rsync("alice@studio:boards/poster"))
        #expect(try SyncTarget(parsing: "rsync://nas/boards/poster") == .rsync("rsync://nas/boards/poster"))
        // Object stores: rclone's on-the-fly S3 remote, or a configured remote as it stands.
        guard case .objectStore(let s3) = try SyncTarget(parsing: "s3://boards/team/poster/") else { Issue.record("not a store"); return }
        #expect(s3.remote == ":s3:boards/team/poster" && s3.isS3URL && s3.text == "s3://boards/team/poster/")
        guard case .objectStore(let configured) = try SyncTarget(parsing: "rclone:r2:boards/poster") else { Issue.record("not a store"); return }
        #expect(configured.remote == "r2:boards/poster" && !configured.isS3URL)
        for bad in ["s3://", "s3:///x", "s3://b/../c", "s3://b//c", "rclone:", "rclone::x", "rclone:nocolon",
                    "rclone::s3,secret_access_key=x:bucket", "rclone:r2,access_key_id=k:bucket"] {
            #expect(throws: SyncError.self, "\(bad)") { try SyncTarget(parsing: bad) }
        }
    }

    /// A store that heals (issue 40): the target's copy of a segment this journal holds that
    /// is not its name's bytes (cut short, or the same size with a byte changed) is replaced
    /// by this journal's verified copy; a merge source is only told; a target whose copy
    /// this journal cannot replace (its own copy damaged too) still lacks the segment.
    @Test func aDamagedCopyOnTheTargetIsReplacedByThisJournalsVerifiedSegment() async throws {
        let temp = TemporaryDirectory("lacking-on-target")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 41)
        try alice.draw(strokes: 3)
        let shared = temp.path + "/shared"
        let first = try await SyncEngine(journal: alice.journal).sync(.directory(shared), create: true)
        #expect(first.published.count == 1 && first.lackingOnTarget.isEmpty)
        let relative = try #require(first.published.first)
        let (local, there) = (alice.journal.replicasPath + "/" + relative, shared + "/replicas/" + relative)
        let good = try FileSystem.readFile(local)

        // Cut short: another size.
        try copyFile(local, there, truncatedTo: 100)
        let cut = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(cut.replacedOnTarget == [relative] && cut.lackingOnTarget.isEmpty, "\(cut.text)")
        #expect(try FileSystem.readFile(there) == good)

        // The same size, one byte changed in the middle: found by its hash, replaced too.
        var flipped = good
        flipped[flipped.count / 2] ^= 0x40
        try FileSystem.writeAtomically(flipped, to: there)
        let same = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(same.replacedOnTarget == [relative] && same.lackingOnTarget.isEmpty, "\(same.text)")
        #expect(try FileSystem.readFile(there) == good)
        // Checked once per version of the file (the replaced one once more), then never read.
        _ = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        let quiet = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(quiet.nothingNew && quiet.bytesRead == 0, "\(quiet.text)")

        // A merge from the damaged folder does not write there: it says so.
        try copyFile(local, there, truncatedTo: 100)
        var bob = try Machine(temp.path + "/bob", seed: 42)
        try bob.draw(strokes: 1)
        _ = try await SyncEngine(journal: bob.journal).merge(from: [alice.journal.root])
        let merged = try await SyncEngine(journal: bob.journal).merge(from: [shared])
        #expect(merged.rejected.contains { $0.kind == .incomplete } && merged.replacedOnTarget.isEmpty)
        #expect(try FileSystem.readFile(there).count == 100)

        // Alice's own copy damaged too: nothing replaces the target's, which still lacks it.
        var localDamaged = good
        localDamaged[localDamaged.count / 2] ^= 0x40
        try FileSystem.writeAtomically(localDamaged, to: local)
        let stuck = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(stuck.replacedOnTarget.isEmpty && stuck.lackingOnTarget == [relative], "\(stuck.text)")
    }

    /// This journal heals too (issue 41): its own copy of a segment the target holds intact, cut
    /// short or with one byte changed (a disk error), is replaced by the target's copy once that
    /// verifies, by a sync and by a merge alike; the drawing is what it was.
    @Test func aDamagedLocalCopyIsRepairedFromTheTargetsVerifiedOne() async throws {
        let temp = TemporaryDirectory("repaired-here")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 61)
        try alice.draw(strokes: 3)
        let shared = temp.path + "/shared"
        let first = try await SyncEngine(journal: alice.journal).sync(.directory(shared), create: true)
        let relative = try #require(first.published.first)
        let local = alice.journal.replicasPath + "/" + relative
        let good = try FileSystem.readFile(local)
        let before = alice.digest

        try FileSystem.writeAtomically(Array(good.prefix(100)), to: local)
        let cut = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(cut.repairedHere == [relative] && cut.replacedOnTarget.isEmpty && cut.lackingOnTarget.isEmpty, "\(cut.text)")
        #expect(cut.text.contains("repaired 1 damaged segment of this journal"), "\(cut.text)")
        #expect(try FileSystem.readFile(local) == good)

        var flipped = good
        flipped[flipped.count / 2] ^= 0x40
        try FileSystem.writeAtomically(flipped, to: local)
        let same = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(same.repairedHere == [relative] && same.replacedOnTarget.isEmpty, "\(same.text)")
        #expect(try FileSystem.readFile(local) == good)

        try FileSystem.writeAtomically(flipped, to: local)
        let merged = try await SyncEngine(journal: alice.journal).merge(from: [shared])
        #expect(merged.repairedHere == [relative], "\(merged.text)")
        #expect(try FileSystem.readFile(local) == good)
        #expect(alice.digest == before)
        // Once repaired, a sync reads nothing again.
        let quiet = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(quiet.nothingNew && quiet.bytesRead == 0, "\(quiet.text)")
    }

    /// A damaged object blocks nothing it does not hold (issue 40): a store copy of another
    /// machine's segment that is damaged is refused and reported, and this journal's own new
    /// segments are still published, none lacking (what a relay's shared-ack round waits on).
    @Test func aDamagedCopyOfAnotherMachinesSegmentBlocksNothingElse() async throws {
        let temp = TemporaryDirectory("damage-blocks-nothing")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 51)
        var bob = try Machine(temp.path + "/bob", seed: 52)
        let shared = temp.path + "/shared"
        try bob.draw(strokes: 2)
        let bobs = try await SyncEngine(journal: bob.journal).sync(.directory(shared), create: true)
        let relative = try #require(bobs.published.first)
        var damaged = try FileSystem.readFile(shared + "/replicas/" + relative)
        damaged[damaged.count / 2] ^= 0x40
        try FileSystem.writeAtomically(damaged, to: shared + "/replicas/" + relative)

        try alice.draw(strokes: 2)
        let report = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(report.rejected.contains { $0.file.hasSuffix(relative) }, "\(report.text)")
        #expect(report.published.count == 1 && report.lackingOnTarget.isEmpty, "\(report.text)")
        // Bob, who holds the right bytes, heals the store at his next sync; alice then has it all.
        #expect(try await SyncEngine(journal: bob.journal).sync(.directory(shared)).replacedOnTarget == [relative])
        _ = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(alice.digest == bob.digest)
    }

    @Test func theAWSEnvironmentIsMappedOntoRclonesS3BackendWithoutOverridingIt() throws {
        guard case .objectStore(let store) = try SyncTarget(parsing: "s3://boards/poster") else { Issue.record("not a store"); return }
        let aws = ["AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-3", "AWS_CA_BUNDLE": "/etc/ca.pem"]
        let mapped = store.environment { aws[$0] }
        #expect(mapped["RCLONE_S3_ENV_AUTH"] == .some("true"))
        #expect(mapped["RCLONE_S3_ENDPOINT"] == .some("http://127.0.0.1:9000"))
        #expect(mapped["RCLONE_S3_PROVIDER"] == .some("Other"))
        #expect(mapped["RCLONE_S3_REGION"] == .some("eu-west-3"))
        // Plain http: the CA bundle, which rclone would fail to load for nothing, is dropped.
        #expect(mapped.keys.contains("AWS_CA_BUNDLE") && mapped["AWS_CA_BUNDLE"]! == nil)
        // rclone's own variables win; https keeps the bundle; AWS itself needs no endpoint.
        let own = ["RCLONE_S3_ACCESS_KEY_ID": "k", "RCLONE_S3_ENDPOINT": "https://s3.example.net", "AWS_CA_BUNDLE": "/etc/ca.pem"]
        let kept = store.environment { own[$0] }
        #expect(kept["RCLONE_S3_ENV_AUTH"] == nil && kept["RCLONE_S3_ENDPOINT"] == nil && !kept.keys.contains("AWS_CA_BUNDLE"))
        #expect(store.environment { _ in nil }["RCLONE_S3_PROVIDER"] == .some("AWS"))
        guard case .objectStore(let configured) = try SyncTarget(parsing: "rclone:r2:boards") else { Issue.record("not a store"); return }
        #expect(configured.environment { aws[$0] }.isEmpty)
    }

    @Test func anObjectStoreListingCannotBeForgedByAKeyName() {
        let replica = "0123456789abcdef0123456789abcdef"
        let segment = "00000000000000000001-00000000000000000009-00112233445566778899aabbccddeeff.sjs"
        let md5 = "9e107d9d372bb6826bd81d3542a419d6"
        // What `rclone lsf -R --csv --format sph --hash MD5` prints for a board holding real
        // segments (one whose MD5 the store knows, one without, one with a value that is no
        // MD5), a key made to look like a second record, a folder, and a key outside any
        // replica folder.
        let output = """
            120,\(replica)/\(segment),\(md5.uppercased())
            121,\(replica)/a\(segment),
            122,\(replica)/b\(segment),"abc-2"
            5,"\(replica)/x
            7,fedcba9876543210fedcba9876543210/\(segment)",
            -1,\(replica)/,
            3,"notes,""old"".txt",
            4,"\(replica)/tab\there",

            """
        let listing = RcloneTransport.parseListing(output, shownAs: "s3://b/replicas/")
        // The forged record stays one key (with an odd name, outside any replica folder),
        // never a segment of another replica.
        #expect(listing.files.map(\.relativePath) == ["\(replica)/\(segment)", "\(replica)/a\(segment)", "\(replica)/b\(segment)"])
        #expect(listing.files.map(\.size) == [120, 121, 122])
        // Only a real MD5 is compared later; another value is as good as none.
        #expect(listing.files.map(\.storeMD5) == [md5, nil, nil])
        #expect(listing.ignored.map(\.file) == ["s3://b/replicas/" + "\(replica)/x\n7,fedcba9876543210fedcba9876543210/\(segment)".debugDescription,
                                                "s3://b/replicas/notes,\"old\".txt",
                                                "s3://b/replicas/" + "\(replica)/tab\there".debugDescription])
    }

    @Test func classifierNamesEveryForeignKind() {
        #expect(FileClassifier.classify("00000000000000000001-00000000000000000002-0000abcd.sjs") == .segment(SegmentName(firstSeq: 1, lastSeq: 2, fileCRC: 0xabcd)))
        #expect(FileClassifier.classify("x.sync-conflict-20261122-101010-ABCDEFG.sjs") == .conflictCopy)
        #expect(FileClassifier.classify("x (Bob's conflicted copy 2026-11-22).sjs") == .conflictCopy)
        for name in [".x.sjs.AbC123", ".syncthing.x.tmp", "~syncthing~x.tmp", ".unison.x", "x.sjs.icloud", ".tmp-x.sjs.42", "readme"] {
            guard case .foreign = FileClassifier.classify(name) else {
                Issue.record("\(name) should be foreign")
                continue
            }
        }
    }
}

private func symlink(_ target: String, _ path: String) throws {
    try FileSystem.symlink(target, at: path)
}
