import Foundation
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport
import Testing

/// A real sshd on 127.0.0.1, started on a free port with its own host key, stopped by pid.
///
/// It runs as a daemon (not a Foundation `Process` child): Foundation reaps children one at a
/// time with a blocking wait, so a long-lived child would stall every later `Process`.
final class LocalSSHServer {
    let directory: TemporaryDirectory
    let port: Int
    let pid: Int32
    let user: String

    var rsh: String {
        "ssh -p \(port) -i \(directory.path)/client_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR"
    }

    static let sshd = "/usr/sbin/sshd"
    static let ssh = "/usr/bin/ssh"
    static let sshKeygen = "/usr/bin/ssh-keygen"

    /// Whether this machine has the programs `start()` runs and rsync then uses: sshd, ssh
    /// and ssh-keygen (openssh-server, which brings openssh-client).
    static var toolsInstalled: Bool {
        [sshd, ssh, sshKeygen].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Nil, with the reason, when the sshd could not be started.
    static func start() -> (server: LocalSSHServer?, reason: String?) {
        let directory = TemporaryDirectory("sshd")
        let user = (try? shell("/usr/bin/id", ["-un"]))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "root"
        do {
            _ = try shell(sshKeygen, ["-q", "-t", "ed25519", "-N", "", "-f", directory.path + "/host_key"])
            _ = try shell(sshKeygen, ["-q", "-t", "ed25519", "-N", "", "-f", directory.path + "/client_key"])
            try FileManager.default.copyItem(atPath: directory.path + "/client_key.pub", toPath: directory.path + "/authorized_keys")
            try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        } catch {
            directory.remove()
            return (nil, "could not prepare keys: \(error)")
        }
        for attempt in 0..<5 {
            let port = Int.random(in: 20_000...60_000)
            let config = """
                Port \(port)
                ListenAddress 127.0.0.1
                HostKey \(directory.path)/host_key
                AuthorizedKeysFile \(directory.path)/authorized_keys
                UsePAM no
                StrictModes no
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                PermitRootLogin prohibit-password
                PidFile \(directory.path)/sshd.pid
                """
            try? config.write(toFile: directory.path + "/sshd_config", atomically: false, encoding: .utf8)
            guard (try? shell(sshd, ["-f", directory.path + "/sshd_config", "-E", directory.path + "/sshd.log"])) != nil,
                  let pidText = try? String(contentsOfFile: directory.path + "/sshd.pid", encoding: .utf8),
                  let pid = Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines))
            else { continue }
            let server = LocalSSHServer(directory: directory, port: port, pid: pid, user: user)
            // Wait until it answers (or has ended).
            var answered = false
            _ = eventuallyBlocking(within: 5, every: 100, gracePolls: 10) {
                answered = (try? shell(ssh, server.rsh.split(separator: " ").dropFirst().map(String.init) + ["\(user)@127.0.0.1", "true"])) != nil
                return answered || kill(pid, 0) != 0
            }
            if answered { return (server, nil) }
            server.stop(keepDirectory: true)
            if attempt == 4 {
                let log = (try? String(contentsOfFile: directory.path + "/sshd.log", encoding: .utf8)) ?? ""
                directory.remove()
                return (nil, "sshd did not start: \(log.suffix(300))")
            }
        }
        directory.remove()
        return (nil, "no free port for sshd")
    }

    private init(directory: TemporaryDirectory, port: Int, pid: Int32, user: String) {
        self.directory = directory
        self.port = port
        self.pid = pid
        self.user = user
    }

    func stop(keepDirectory: Bool = false) {
        kill(pid, SIGTERM)
        _ = eventuallyBlocking(within: 1, every: 20, gracePolls: 10) { kill(pid, 0) != 0 }
        if !keepDirectory { directory.remove() }
    }
}

@discardableResult
func shell(_ executable: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    try process.waitForExit()
    guard process.terminationStatus == 0 else {
        throw NSError(domain: "shell", code: Int(process.terminationStatus), userInfo: [NSLocalizedDescriptionKey: "\(executable) exited \(process.terminationStatus)"])
    }
    return String(decoding: data, as: UTF8.self)
}

/// Needs rsync and OpenSSH; a machine without them reports these tests as skipped, not passed
/// (.ci/run installs rsync and openssh-server).
@Suite(.serialized, .ownThreads) struct RsyncOverSSHTests {
    @Test(.enabled(if: hasRsync() && LocalSSHServer.toolsInstalled,
                   "needs rsync, sshd, ssh and ssh-keygen (apt-get install rsync openssh-server)"))
    func twoLaptopsConvergeThroughAnSSHServer() async throws {
        let (started, reason) = LocalSSHServer.start()
        // The tools are here, so an sshd that does not start is a failure.
        let server = try #require(started, "could not start a local sshd: \(reason ?? "unknown")")
        defer { server.stop() }
        let temp = TemporaryDirectory("ssh-sync")
        defer { temp.remove() }
        let remoteFolder = temp.path + "/server-board"
        try FileSystem.createDirectory(remoteFolder)
        let remote = SyncTarget.rsync("\(server.user)@127.0.0.1:\(remoteFolder)")
        var alice = try Machine(temp.path + "/alice", seed: 21)
        var bob = try Machine(temp.path + "/bob", seed: 22)
        try alice.draw(strokes: 8)
        try bob.draw(strokes: 5)
        let first = try await SyncEngine(journal: alice.journal).sync(remote, rsh: server.rsh)
        #expect(first.published.count == 1)
        let bobSync = try await SyncEngine(journal: bob.journal).sync(remote, rsh: server.rsh)
        #expect(bobSync.imported.count == 1 && bobSync.published.count == 1)
        try alice.draw(strokes: 2)
        let again = try await SyncEngine(journal: alice.journal).sync(remote, rsh: server.rsh)
        #expect(again.imported.count == 1 && again.published.count == 1)
        _ = try await SyncEngine(journal: bob.journal).sync(remote, rsh: server.rsh)
        #expect(alice.digest == bob.digest)
        let quiet = try await SyncEngine(journal: bob.journal).sync(remote, rsh: server.rsh)
        #expect(quiet.nothingNew && quiet.bytesRead == 0)
        // The server's folder holds exactly the canonical segments, nothing half-written.
        let onServer = TreeListing.scan(replicasPath: remoteFolder + "/replicas")
        #expect(onServer.files.count == 3)
        #expect(onServer.files.allSatisfy { if case .segment = $0.classification { true } else { false } })
    }

    @Test(.enabled(if: hasRsync() && FileManager.default.isExecutableFile(atPath: LocalSSHServer.ssh),
                   "needs rsync and ssh (apt-get install rsync openssh-client)"))
    func aBadRemoteIsAClearError() async throws {
        let temp = TemporaryDirectory("ssh-bad")
        defer { temp.remove() }
        let alice = try Machine(temp.path + "/alice", seed: 23)
        await #expect {
            _ = try await SyncEngine(journal: alice.journal).sync(.rsync("nobody@127.0.0.1:/nowhere"), rsh: "ssh -p 1 -o BatchMode=yes -o ConnectTimeout=2")
        } throws: { error in
            guard let error = error as? SyncError, case .rsyncFailed(_, let status, _) = error else { return false }
            return status != 0
        }
    }
}
