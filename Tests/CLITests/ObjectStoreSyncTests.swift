import Foundation
import JournalTestSupport
import Testing

/// `journal sync` and `merge` with an object store, against a real S3 server (Ceph's RADOS
/// Gateway) through the real rclone. A machine without the packages reports it as skipped;
/// .ci/run installs them.
@Suite(.serialized, .ownThreads) struct ObjectStoreSyncTests {
    let cli = CLITests()

    /// Strokes of one machine as canonical NDJSON: `strokes` strokes of 40 points each.
    static func strokes(_ strokes: Int, seed: Int) -> String {
        var lines: [String] = []
        for stroke in 0..<strokes {
            let id = String(format: "%08X-0000-4000-8000-%012X", seed, stroke)
            for point in 0..<40 {
                lines.append(##"{"type":"point","stroke":"\##(id)","x":\##(Double(stroke * 10 + point) / 4),"y":\##(Double(seed * 50 + point)),"color":"#1E88E5FF","width":3,"pressure":0.5,"t":\##(Double(point) / 100)}"##)
            }
            lines.append(#"{"type":"end","stroke":"\#(id)"}"#)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    func digest(_ board: String) throws -> String {
        let run = try cli.journal(["digest", "-C", board, "--json"])
        #expect(run.status == 0, "digest of \(board): \(run.stderr)")
        return run.stdout
    }

    @Test(.enabled(if: LocalS3Server.toolsInstalled,
                   "needs rclone and a Ceph RADOS Gateway (apt-get install --no-install-recommends rclone ceph-mon ceph-osd radosgw jq curl)"))
    func twoMachinesSyncThroughARealS3Server() throws {
        let temp = TemporaryDirectory("s3-sync")
        defer { temp.remove() }
        // The tools are here, so a server that does not start is a failure.
        let server = try LocalS3Server(in: temp)
        defer { server.stop() }
        let aws = server.awsEnvironment
        let target = "s3://boards/poster"
        let alice = temp.path + "/alice", bob = temp.path + "/bob"
        for (board, seed) in [(alice, 1), (bob, 2)] {
            #expect(try cli.journal(["init", board]).status == 0)
            let recorded = try cli.journal(["record", "-C", board], stdin: Self.strokes(20, seed: seed))
            #expect(recorded.status == 0, "\(recorded.stderr)")
        }

        // A bucket that does not exist is a mistyped address unless --create says otherwise.
        let missing = try cli.journal(["sync", "-C", alice, target], environment: aws)
        #expect(missing.status == 64 && missing.stderr.contains("--create"), "\(missing.stderr)")

        let first = try cli.journal(["sync", "-C", alice, target, "--create", "--json"], environment: aws)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains(#""published":["#) && !first.stdout.contains(#""published":[]"#), "\(first.stdout)")
        let listed = try server.rclone(["lsf", "-R", "--files-only", ":s3:boards/poster/replicas/"])
        #expect(listed.status == 0 && listed.stdout.split(separator: "\n").count == 1, "\(listed)")

        // Bob imports Alice's segment and publishes his; Alice then imports his.
        let bobSync = try cli.journal(["sync", "-C", bob, target, "--json"], environment: aws)
        #expect(bobSync.status == 0, "\(bobSync.stderr)")
        #expect(!bobSync.stdout.contains(#""imported":[]"#) && !bobSync.stdout.contains(#""published":[]"#), "\(bobSync.stdout)")
        #expect(try cli.journal(["sync", "-C", alice, target], environment: aws).status == 0)
        let together = try digest(alice)
        #expect(together == (try digest(bob)))
        #expect(together.contains(#""strokes":40"#), "\(together)")

        // Nothing new: nothing moves either way.
        let quiet = try cli.journal(["sync", "-C", alice, target, "--json"], environment: aws)
        #expect(quiet.status == 0 && quiet.stdout.contains(#""imported":[]"#) && quiet.stdout.contains(#""published":[]"#), "\(quiet.stdout)")

        // The store's copy of Alice's segment damaged without changing its size (one byte in
        // the middle): the store's MD5 no longer matches hers, so her next sync replaces it,
        // and a machine that fetches it afterwards gets every stroke.
        let aliceKey = try #require(listed.stdout.split(separator: "\n").first.map(String.init))
        let objectPath = ":s3:boards/poster/replicas/" + aliceKey
        let original = temp.path + "/original.sjs", damaged = temp.path + "/damaged.sjs"
        #expect(try server.rclone(["copyto", objectPath, original]).status == 0)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: original)))
        bytes[bytes.count / 2] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        #expect(try server.rclone(["copyto", damaged, objectPath]).status == 0)
        let healing = try cli.journal(["sync", "-C", alice, target, "--json"], environment: aws)
        #expect(healing.status == 0, "\(healing.stderr)")
        #expect(healing.stdout.contains(#""replacedOnTarget":[""#), "\(healing.stdout)")
        let restored = temp.path + "/restored.sjs"
        #expect(try server.rclone(["copyto", objectPath, restored]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: restored)) == Data(contentsOf: URL(fileURLWithPath: original)))
        let healed = try cli.journal(["sync", "-C", alice, target, "--json"], environment: aws)
        #expect(healed.status == 0 && healed.stdout.contains(#""replacedOnTarget":[]"#), "\(healed.stdout)")

        // What anyone may write into the store: a damaged segment under a valid name, a key
        // made to look like two listing lines, an object where a replica folder belongs.
        let damagedName = "00000000000000000001-00000000000000000009-00112233445566778899aabbccddeeff.sjs"
        let planted = [
            "replicas/0123456789abcdef0123456789abcdef/" + damagedName,
            "replicas/0123456789abcdef0123456789abcdef/x\n5,fedcba9876543210fedcba9876543210/y",
            "replicas/fedcba9876543210fedcba9876543210",
        ]
        for key in planted {
            let put = try server.rclone(["rcat", ":s3:boards/poster/" + key], stdin: "not a segment\n")
            #expect(put.status == 0, "\(put.stderr)")
        }
        let hostile = try cli.journal(["sync", "-C", bob, target, "--json"], environment: aws)
        #expect(hostile.status == 0, "\(hostile.stderr)")
        #expect(hostile.stdout.contains(damagedName) && hostile.stdout.contains(#""imported":[]"#), "\(hostile.stdout)")
        #expect(try digest(bob) == together)

        // A new machine merges the store (read only) and draws the same.
        let carol = temp.path + "/carol"
        let merged = try cli.journal(["merge", target, "--into", carol], environment: aws)
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(try digest(carol) == together)

        // Alice publishes more small files, one sync each, Bob importing each: her journal
        // compacts them (a cover), and once the cover is in the store with her copy's MD5
        // the objects it covers leave it. Bob retires his copies when he imports the cover,
        // and a new machine fetches only what Alice holds.
        let aliceReplica = String(aliceKey.prefix(32))
        func removed(_ run: CLITests.Run) throws -> [String] {
            #expect(run.status == 0, "\(run.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            return report["removedFromTarget"] as? [String] ?? []
        }
        var removedObjects: [String] = []
        for seed in 3...6 {
            #expect(try cli.journal(["record", "-C", alice], stdin: Self.strokes(2, seed: seed)).status == 0)
            removedObjects += try removed(cli.journal(["sync", "-C", alice, target, "--json"], environment: aws))
            #expect(try cli.journal(["sync", "-C", bob, target], environment: aws).status == 0)
        }
        _ = try cli.journal(["compact", "-C", alice])
        removedObjects += try removed(cli.journal(["sync", "-C", alice, target, "--json"], environment: aws))
        #expect(!removedObjects.isEmpty && removedObjects.allSatisfy { $0.contains("/replicas/" + aliceReplica + "/") }, "\(removedObjects)")
        let held = try FileManager.default.contentsOfDirectory(atPath: alice + "/replicas/" + aliceReplica).filter { $0.hasSuffix(".sjs") }.sorted()
        let stored = try server.rclone(["lsf", "--files-only", ":s3:boards/poster/replicas/" + aliceReplica])
        #expect(stored.stdout.split(separator: "\n").map(String.init).sorted() == held, "store: \(stored.stdout) held: \(held)")
        let bobAfter = try cli.journal(["sync", "-C", bob, target, "--json"], environment: aws)
        #expect(bobAfter.status == 0 && bobAfter.stdout.contains(#""retired":[""#), "\(bobAfter.stdout)")
        let all = try digest(alice)
        #expect(try digest(bob) == all)
        let dave = temp.path + "/dave"
        #expect(try cli.journal(["merge", target, "--into", dave], environment: aws).status == 0)
        #expect(try digest(dave) == all)
        let daveFiles = try FileManager.default.contentsOfDirectory(atPath: dave + "/replicas/" + aliceReplica)
        #expect(daveFiles.filter { $0.hasSuffix(".sjs") }.sorted() == held, "\(daveFiles)")

        // Wrong keys: rclone's refusal, quoted; no key in the message.
        var wrong = aws
        wrong["AWS_SECRET_ACCESS_KEY"] = "not-the-secret-" + server.secretKey
        let refused = try cli.journal(["sync", "-C", alice, target], environment: wrong)
        #expect(refused.status == 74 && refused.stderr.contains("rclone failed"), "\(refused.stderr)")
        #expect(!refused.stderr.contains(server.secretKey) && !refused.stderr.contains(server.accessKey), "\(refused.stderr)")
    }

    @Test func withoutRcloneTheMessageSaysWhatToInstallAndNothingChanges() throws {
        let temp = TemporaryDirectory("s3-no-rclone")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let before = try cli.journal(["digest", "-C", board]).stdout
        let run = try cli.journal(["sync", "-C", board, "s3://boards/poster", "--create"], environment: ["PATH": temp.path])
        #expect(run.status == 74 && run.stderr.contains("apt-get install rclone"), "\(run.stderr)")
        #expect(try cli.journal(["digest", "-C", board]).stdout == before)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: board + "/local").filter { $0.hasPrefix("staging-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// A store that takes connections and never answers (a gateway frozen, a proxy with no
    /// backend): the sync gives up with rclone's reason and exit 74 (it hung for over 5
    /// minutes); nothing changes in the journal.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/rclone"), "needs rclone (apt-get install rclone)"))
    func aStoreThatNeverAnswersIsGivenUpOn() throws {
        let temp = TemporaryDirectory("s3-silent")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let before = try cli.journal(["digest", "-C", board]).stdout
        let listener = SilentListener()
        #expect(listener.port != 0)
        let run = try cli.journal(["sync", "-C", board, "s3://boards/poster"], environment: [
            "AWS_ACCESS_KEY_ID": "key", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_ENDPOINT_URL": "http://127.0.0.1:\(listener.port)",
        ])
        withExtendedLifetime(listener) {}
        #expect(run.status == 74 && run.stderr.contains("timeout"), "\(run.stderr)")
        #expect(try cli.journal(["digest", "-C", board]).stdout == before)
    }

    /// A store that is not running (nothing listens at its endpoint): the message says so in
    /// words first, without rclone's notice about its configuration file.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/rclone"), "needs rclone (apt-get install rclone)"))
    func aStoreThatIsNotRunningIsNamed() throws {
        let temp = TemporaryDirectory("s3-stopped")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        let run = try cli.journal(["sync", "-C", board, "s3://boards/poster"], environment: [
            "AWS_ACCESS_KEY_ID": "key", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_ENDPOINT_URL": "http://127.0.0.1:1",
        ])
        #expect(run.status == 74 && run.stderr.contains("nothing answers at the store at http://127.0.0.1:1"), "\(run.stderr)")
        #expect(!run.stderr.contains("Config file"), "\(run.stderr)")
    }

    @Test func anObjectStoreAddressIsCheckedBeforeAnythingRuns() throws {
        let temp = TemporaryDirectory("s3-address")
        defer { temp.remove() }
        let board = try cli.sampleBoard(temp)
        for bad in ["s3://", "s3:///path", "s3://bucket/../other", "rclone:nocolon"] {
            let run = try cli.journal(["sync", "-C", board, bad])
            #expect(run.status == 64 && run.stderr.contains("not an object-store address"), "\(bad): \(run.stderr)")
        }
    }
}
