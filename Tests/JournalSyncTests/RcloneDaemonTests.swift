import Atomics
import Foundation
import JournalPlatform
import JournalStorage
@testable import JournalSync
import JournalTestSupport
import Testing

/// Copies through the `rclone rcd` a relay keeps running (`RcloneDaemon`), against a real S3
/// server (Ceph's RADOS Gateway, `Tools/ci/s3/ceph-rgw.sh`): the same objects, the same rules
/// (never replace unless asked), rclone's own words on failure, and a server that dies is
/// replaced without a copy being lost.
@Suite(.serialized, .ownThreads) struct RcloneDaemonTests {
    /// The rclone remote-control servers running now whose address is `127.0.0.1:port`.
    static func serverProcesses(port: Int) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { pid in
            guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            let words = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return words.contains("rcd") && words.contains("127.0.0.1:\(port)") && words.first.map { $0.hasSuffix("rclone") } == true
        }
    }

    @Test(.enabled(if: LocalS3Server.toolsInstalled,
                   "needs rclone and Debian's ceph-mon, ceph-osd, radosgw, jq and curl (apt-get install; .ci/run does)"))
    func copiesGoThroughOneServerThatIsReplacedWhenItDies() async throws {
        let temp = TemporaryDirectory("rclone-daemon")
        defer { temp.remove() }
        let server = try LocalS3Server(in: temp)
        defer { server.stop() }
        let address = try #require(try ObjectStoreAddress(parsing: "s3://daemon/board"))
        var environment = address.environment { server.awsEnvironment[$0] }
        for (name, value) in server.awsEnvironment { environment[name] = value }
        // A replica's folder, as a listing requires (what is outside one is ignored).
        let replica = "0123456789abcdef0123456789abcdef"
        let local = temp.path + "/replicas"
        try FileManager.default.createDirectory(atPath: local + "/" + replica, withIntermediateDirectories: true)
        for (name, text) in [("a.sjs", "first copy of a"), ("b.sjs", "first copy of b")] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: local + "/\(replica)/" + name))
        }
        func transport(_ environment: [String: String?]) -> RcloneTransport {
            RcloneTransport(address: address, staging: temp.path + "/staging-" + UUID().uuidString, create: true,
                            keepsRcloneRunning: true, environment: environment)
        }
        func stored(_ name: String) throws -> String {
            let run = try server.rclone(["cat", ":s3:daemon/board/replicas/\(replica)/" + name])
            return run.status == 0 ? run.stdout : "(no object: \(run.stderr.suffix(300)))"
        }

        let flags = transport(environment).daemonFlags
        // The first copy starts the server and, not waiting for it, runs as a process.
        let sent = try await transport(environment).publish(["\(replica)/a.sjs", "\(replica)/b.sjs"], from: local)
        #expect(sent.sent == ["\(replica)/a.sjs", "\(replica)/b.sjs"])
        #expect(try stored("a.sjs") == "first copy of a")
        #expect(try stored("b.sjs") == "first copy of b")
        #expect(await eventually(within: 120) { RcloneDaemons.running(environment: environment, flags: flags) != nil }, "no server started")
        let daemon = try #require(RcloneDaemons.running(environment: environment, flags: flags))
        let processesBefore = RcloneTransport.processesRun.load(ordering: .relaxed)
        let servers = Self.serverProcesses(port: daemon.port)
        #expect(servers.count == 1, "rclone rcd on port \(daemon.port): \(servers)")

        // Listed and fetched through it too, as an rclone process would: sizes, the store's
        // MD5s, the bytes.
        let listing = try await transport(environment).list()
        #expect(listing.files.map(\.relativePath).sorted() == ["\(replica)/a.sjs", "\(replica)/b.sjs"])
        #expect(listing.files.first { $0.name == "a.sjs" }?.size == Int64("first copy of a".utf8.count))
        #expect(listing.files.allSatisfy { $0.storeMD5?.count == 32 }, "\(listing.files.map(\.storeMD5))")
        let fetching = transport(environment)
        let fetched = try await fetching.fetch(listing.files)
        #expect(fetched.count == 2)
        #expect(try String(contentsOfFile: try #require(fetched["\(replica)/b.sjs"]), encoding: .utf8) == "first copy of b")
        fetching.finish()
        // A store with no such bucket is as a process reports it: missing, or empty when asked to create.
        let absent = try #require(try ObjectStoreAddress(parsing: "s3://no-such-bucket/board"))
        do {
            _ = try await RcloneTransport(address: absent, staging: temp.path + "/staging-absent", create: false,
                                          keepsRcloneRunning: true, environment: environment).list()
            Issue.record("a missing bucket listed")
        } catch {
            #expect("\(error)" == "\(SyncError.targetMissing(absent.text))", "\(error)")
        }

        // Publishing never replaces an object (its name says its bytes); replacing does, even a
        // copy damaged in place with its size kept.
        try Data("second copy of a, longer".utf8).write(to: URL(fileURLWithPath: local + "/\(replica)/a.sjs"))
        _ = try await transport(environment).publish(["\(replica)/a.sjs"], from: local)
        #expect(try stored("a.sjs") == "first copy of a")
        #expect(try server.rclone(["rcat", ":s3:daemon/board/replicas/\(replica)/b.sjs"], stdin: "FIRST COPY OF B").status == 0)
        _ = try await transport(environment).replace(["\(replica)/b.sjs"], from: local)
        #expect(try stored("b.sjs") == "first copy of b")
        #expect(RcloneTransport.processesRun.load(ordering: .relaxed) == processesBefore, "an rclone process ran beside the kept server")

        // A failure comes back in rclone's words, explained as a process's would be (the first
        // try is a process, while the server for these keys starts).
        var wrongKeys = environment
        wrongKeys["AWS_SECRET_ACCESS_KEY"] = "not-the-key"
        for attempt in ["a process", "the server"] {
            if attempt == "the server" {
                #expect(await eventually(within: 120) { RcloneDaemons.running(environment: wrongKeys, flags: flags) != nil })
            }
            do {
                _ = try await transport(wrongKeys).publish(["\(replica)/b.sjs"], from: local)
                Issue.record("a copy with the wrong key succeeded through \(attempt)")
            } catch {
                #expect("\(error)".contains("refused the credentials"), "through \(attempt): \(error)")
                #expect("\(error)".contains("rclone rc sync/copy") == (attempt == "the server"), "through \(attempt): \(error)")
            }
        }
        if let wrong = RcloneDaemons.running(environment: wrongKeys, flags: flags) { RcloneDaemons.retire(wrong) }

        // The server dies (killed outright): the next copy still arrives, through an rclone of
        // its own, and the copy after that through a new server.
        for pid in servers { kill(pid, SIGKILL) }
        try Data("c".utf8).write(to: URL(fileURLWithPath: local + "/\(replica)/c.sjs"))
        let processesBeforeDeath = RcloneTransport.processesRun.load(ordering: .relaxed)
        _ = try await transport(environment).publish(["\(replica)/c.sjs"], from: local)
        #expect(try stored("c.sjs") == "c")
        #expect(RcloneTransport.processesRun.load(ordering: .relaxed) == processesBeforeDeath + 1)
        try Data("d".utf8).write(to: URL(fileURLWithPath: local + "/\(replica)/d.sjs"))
        _ = try await transport(environment).publish(["\(replica)/d.sjs"], from: local)
        #expect(try stored("d.sjs") == "d")
        #expect(await eventually(within: 120) { RcloneDaemons.running(environment: environment, flags: flags) != nil }, "no new server")
        let replacement = try #require(RcloneDaemons.running(environment: environment, flags: flags))
        #expect(replacement !== daemon)
        #expect(Self.serverProcesses(port: replacement.port).count == 1)

        // Stopped, its rclone ends with it (as it does when this process ends: the pipe closes).
        RcloneDaemons.retire(replacement)
        #expect(await eventually(within: 60) { Self.serverProcesses(port: replacement.port).isEmpty })
    }
}
