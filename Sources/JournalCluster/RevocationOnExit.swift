import JournalPlatform

/// A shell beside the node that gives the node's etcd lease back the moment this process ends,
/// however it ends: a relay killed outright (SIGKILL, a crash, the OOM killer) would otherwise
/// keep its boards for a time to live, and every pen on them would wait that long for the next
/// node. Its standard input is a pipe only this process writes, one lease ID a line; the kernel
/// closes it when this process ends, and the shell then revokes the last ID it read.
///
/// Revoking a dead process's lease is safe: nothing acknowledges under it any more. A node that
/// is alive but stopped (SIGSTOP, a frozen VM) keeps the pipe open and its lease lapses as
/// before; a machine that dies takes the shell with it, and the lease lapses as before.
final class RevocationOnExit: Sendable {
    private let leases: AsyncStream<Int64>.Continuation
    /// Why the shell is not running, once known (no bash, or it ended early).
    private let problem = Locked<String?>(nil)

    /// bash for `/dev/tcp` (no curl needed); the lease ID is checked to be digits before use.
    private static let script = #"""
        host=$1 port=$2 lease=
        while read -r line; do
          case $line in ''|*[!0-9]*) ;; *) lease=$line ;; esac
        done
        [ -n "$lease" ] || exit 0
        body="{\"ID\":\"$lease\"}"
        exec 3<>"/dev/tcp/$host/$port" || exit 1
        printf 'POST /v3/lease/revoke HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
          "$host" "$port" "${#body}" "$body" >&3
        IFS= read -r -t 5 status <&3
        """#

    init(host: String, port: Int) {
        let (stream, continuation) = AsyncStream<Int64>.makeStream(bufferingPolicy: .unbounded)
        leases = continuation
        guard ProcessInfoLite.onPath("bash") != nil else {
            problem.withLock { $0 = Self.noBash }
            return
        }
        let problem = problem
        Task.detached {
            do {
                let (result, _) = try await ChildProcess.run("bash", ["-c", Self.script, "bash", host, String(port)]) { input in
                    for await lease in stream { try await input.write(Array("\(lease)\n".utf8)) }
                }
                if result.status == 127 { problem.withLock { $0 = Self.noBash } }
            } catch {
                problem.withLock { $0 = "the shell that revokes the lease when this process ends could not run: \(error)" }
            }
        }
    }

    private static let noBash = "bash is not on PATH: a node killed outright frees its boards only when its lease lapses"

    /// The lease to revoke if this process ends now (a new one replaces the last).
    func announce(_ lease: Int64) {
        leases.yield(lease)
    }

    /// Closes the pipe as the kernel would at this process's end: the shell revokes the last
    /// lease announced. Called on a graceful stop (the lease is revoked there already; once more
    /// does nothing) and by tests, which cannot end their own process.
    func closePipe() {
        leases.finish()
    }

    var lastProblem: String? { problem.withLock { $0 } }
}
