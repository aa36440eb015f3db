import JournalFormat
import JournalPlatform

/// One `rclone rcd` (rclone's remote-control server) per store configuration, kept running
/// beside a process that publishes many times a second: a relay's shared-ack rounds. A copy
/// through it is one HTTP request on this machine; through `rclone copy` it is a process of its
/// own each time (0.13 s of a core on a quiet machine, measured; far more on a machine that also
/// runs the store and three relays, which is what kept S3 acks above their target).
///
/// It listens on 127.0.0.1 behind a user and password made up for it and handed over in its
/// environment, never its arguments: any other user of the machine could otherwise move files
/// with this process's keys. It ends with this process however that ends: a shell between the
/// two reads a pipe from here and stops rclone when the pipe closes, which the kernel does for a
/// process killed outright (a relay killed with SIGKILL leaves no rclone behind).
final class RcloneDaemon: Sendable {
    enum Failure: Error {
        /// No answer: the server is gone, never started, or did not answer in time.
        case unreachable(IOError)
        /// rclone answered that the operation failed, in its words.
        case failed(status: Int, message: String)
    }

    let port: Int
    private let credential: String
    private let stopSignal: StopSignal
    /// Calls block a thread for as long as the store takes: never a thread of the concurrency
    /// pool (two on a 2-core machine would stall a whole relay behind a slow store).
    private let callers: [WorkerThread]
    private let nextCaller = Locked(0)

    /// How long a call may go unanswered: past rclone's own bounds (10 s to connect, 10 s of
    /// silence, one retry), so that rclone's own error is what a caller normally sees.
    static let callTimeoutSeconds = 45.0
    /// How long a new server may take to answer its first request (nobody waits for it:
    /// copies run as processes meanwhile).
    static let startSeconds = 60.0

    private init(port: Int, credential: String, stopSignal: StopSignal) {
        self.port = port
        self.credential = credential
        self.stopSignal = stopSignal
        callers = (0..<4).map { _ in WorkerThread(inheritingFaultHook: false) }
    }

    /// The shell between this process and rclone: rclone in the background, its output thrown
    /// away (an operation's failure comes back in its answer), and the shell waiting for the end
    /// of its standard input, a pipe only this process writes.
    private static let script = """
        address=$1; shift
        rclone rcd --rc-addr "$address" "$@" </dev/null >/dev/null 2>&1 &
        daemon=$!
        while read -r _; do :; done
        kill "$daemon" 2>/dev/null
        wait "$daemon"
        """

    /// Starts a server with `environment` applied to this process's (the store's keys as
    /// `RcloneTransport` maps them) and `flags` (rclone's global options), and waits until it
    /// answers. Throws `.rcloneMissing` when no rclone is on `PATH`.
    static func start(environment: [String: String?], flags: [String]) async throws(SyncError) -> RcloneDaemon {
        guard rcloneIsInstalled() else { throw .rcloneMissing }
        let port: Int
        do { port = try HTTPExchange.unusedLocalPort() } catch { throw .io(error, doing: "cannot find a port for rclone's remote control") }
        let user = hex(ProcessInfoLite.randomBytes(16)), password = hex(ProcessInfoLite.randomBytes(16))
        var childEnvironment = environment
        childEnvironment["RCLONE_RC_USER"] = user
        childEnvironment["RCLONE_RC_PASS"] = password
        let stopSignal = StopSignal()
        let daemon = RcloneDaemon(port: port, credential: "Basic " + Base64.encode(Array((user + ":" + password).utf8)), stopSignal: stopSignal)
        let arguments = ["-c", script, "sh", "127.0.0.1:\(port)"] + flags
        Task.detached {
            _ = try? await ChildProcess.run("sh", arguments, environment: childEnvironment) { _ in await stopSignal.wait() }
        }
        let deadline = ProcessInfoLite.monotonicSeconds() + startSeconds
        while true {
            do throws(Failure) {
                _ = try await daemon.call("rc/noop", "{}", timeoutSeconds: 1)
                return daemon
            } catch {
                guard ProcessInfoLite.monotonicSeconds() < deadline else {
                    daemon.stop()
                    let doing = "rclone's remote control (rclone rcd on 127.0.0.1:\(port)) did not start within \(Int(startSeconds)) s"
                    switch error {
                    case .unreachable(let cause): throw .io(cause, doing: doing)
                    case .failed(let status, let message): throw .rcloneFailed(command: "rclone rcd", status: Int32(status), output: doing + ": " + message)
                    }
                }
                try? await Task.sleep(nanoseconds: 50_000_000)
            }
        }
    }

    /// Ends the server: the shell reads the end of its input and stops rclone.
    func stop() {
        stopSignal.fire()
        for caller in callers { caller.stop() }
    }

    /// POSTs `json` to the operation `path` (`sync/copy`, `rc/noop`) and returns rclone's answer.
    func call(_ path: String, _ json: String, timeoutSeconds: Double = callTimeoutSeconds) async throws(Failure) -> JSONValue {
        let caller = nextCaller.withLock { next in
            defer { next = (next + 1) % callers.count }
            return callers[next]
        }
        let port = port, credential = credential
        let outcome: Result<HTTPExchange.Response, IOError> = await withCheckedContinuation { continuation in
            caller.submit {
                continuation.resume(returning: Result { () throws(IOError) in
                    try HTTPExchange.post(host: "127.0.0.1", port: port, path: "/" + path, json: Array(json.utf8),
                                          headers: [("Authorization", credential)], timeoutSeconds: timeoutSeconds,
                                          maxResponseBytes: ChildProcess.outputLimit)
                })
            }
        }
        let response: HTTPExchange.Response
        switch outcome {
        case .success(let answer): response = answer
        case .failure(let error): throw .unreachable(error)
        }
        let answer = try? JSONValue.parse(response.body)
        guard response.status == 200, let answer else {
            let message = answer?["error"]?.text ?? String(decoding: response.body.prefix(500), as: UTF8.self)
            throw .failed(status: response.status, message: message)
        }
        return answer
    }

    private static func rcloneIsInstalled() -> Bool {
        ProcessInfoLite.onPath("rclone") != nil
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

/// Fired once; whoever waits, before or after, goes on.
private final class StopSignal: Sendable {
    private let state = Locked((fired: false, waiting: [CheckedContinuation<Void, Never>]()))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiting.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func fire() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.fired = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}

/// The servers this process keeps, one per store configuration (the environment rclone is given).
/// Asking for one that is not running starts it in the background and answers nil: the caller
/// runs an rclone process meanwhile, so a server that is slow to start (a busy machine) delays
/// nothing. One that stopped answering is put aside, and the next ask starts another; one that
/// could not start is not tried again for a minute.
enum RcloneDaemons {
    private enum Entry {
        case starting
        case running(RcloneDaemon)
        case failed(at: Double)
    }

    private static let entries = Locked([String: Entry]())
    static let retrySeconds = 60.0

    private static func key(_ environment: [String: String?], _ flags: [String]) -> String {
        (environment.map { "\($0.key)=\($0.value ?? "\u{0}")" }.sorted() + ["--"] + flags).joined(separator: "\n")
    }

    /// The server running now for this configuration, without starting one.
    static func running(environment: [String: String?], flags: [String]) -> RcloneDaemon? {
        entries.withLock { entries in
            if case .running(let daemon) = entries[key(environment, flags)] { return daemon }
            return nil
        }
    }

    /// The server running for this configuration; nil while none is (one is started then).
    static func daemon(environment: [String: String?], flags: [String]) -> RcloneDaemon? {
        let key = key(environment, flags)
        let now = ProcessInfoLite.monotonicSeconds()
        let (running, start) = entries.withLock { entries -> (RcloneDaemon?, Bool) in
            switch entries[key] {
            case .running(let daemon): return (daemon, false)
            case .starting: return (nil, false)
            case .failed(let at) where now - at < retrySeconds: return (nil, false)
            case .failed, nil:
                entries[key] = .starting
                return (nil, true)
            }
        }
        if start {
            Task.detached {
                let daemon = try? await RcloneDaemon.start(environment: environment, flags: flags)
                entries.withLock { $0[key] = daemon.map(Entry.running) ?? .failed(at: ProcessInfoLite.monotonicSeconds()) }
            }
        }
        return running
    }

    /// Puts `daemon` aside (it did not answer) and stops it.
    static func retire(_ daemon: RcloneDaemon) {
        entries.withLock { entries in
            for (key, entry) in entries {
                if case .running(let running) = entry, running === daemon { entries[key] = nil }
            }
        }
        daemon.stop()
    }
}
