import Foundation
import Testing
import JournalTestSupport

/// `journal serve --data DIR --port P` as a child process that can be killed and started again
/// on the same folder and port.
/// The suites that run `journal serve` and `journal sync --watch` processes, one at a time:
/// each keeps two cores busy with children of its own, and together they starved the rest of
/// a full `swift test` (and each other) for minutes.
@Suite(.serialized) enum RelayProcessTests {}

final class RelayProcess {
    let data: String
    private(set) var port: Int
    private(set) var child: JournalProcess.Child?
    /// How many times it was started.
    private(set) var starts = 0

    /// Starts the relay on `port` (0: any free port, then kept for restarts).
    init(data: String, port: Int = 0) async throws {
        self.data = data
        self.port = port
        try await start()
    }

    /// Starts `journal serve` and waits until it listens. A port just freed by a killed relay
    /// can be taken for a moment (by a client's connection, say): a failed start is retried.
    func start(seconds: Double = 180) async throws {
        precondition(child == nil, "the relay is running")
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        var failures: [String] = []
        while ContinuousClock.now < deadline {
            let child = try JournalProcess.Child(["serve", "--port", String(port), "--data", data, "--open"], label: "relay-process")
            // Listening, or ended (the port was taken).
            _ = await eventually(within: (deadline - ContinuousClock.now) / .seconds(1), every: 10) {
                !child.process.isRunning || Self.listeningPort(in: child.stdout) != nil
            }
            if child.process.isRunning, let listening = Self.listeningPort(in: child.stdout) {
                port = listening
                self.child = child
                starts += 1
                return
            }
            failures.append("status \(child.process.isRunning ? "running" : String(child.process.terminationStatus)): \(child.stderr)")
            try await Task.sleep(for: .milliseconds(100))
        }
        throw RelayProcessError(message: "journal serve on port \(port) did not start: \(failures.joined(separator: "; "))")
    }

    /// `kill -9`: nothing of the relay runs after this returns (the kernel has closed its sockets).
    func kill9() async {
        guard let child else { return }
        _ = await child.stop(with: SIGKILL)
        self.child = nil
    }

    /// SIGTERM: the relay seals its boards and exits; its status, or nil.
    func terminate() async -> Int32? {
        guard let child else { return nil }
        defer { self.child = nil }
        return await child.stop(with: SIGTERM)
    }

    /// The port in `journal serve`'s first line: `journal: serving DIR on ws://HOST:PORT/boards/<board>/ws`.
    static func listeningPort(in output: String) -> Int? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("journal: serving ") }),
              let scheme = line.range(of: "ws://") else { return nil }
        let hostAndPort = line[scheme.upperBound...].prefix { $0 != "/" }
        guard let colon = hostAndPort.lastIndex(of: ":") else { return nil }
        return Int(hostAndPort[hostAndPort.index(after: colon)...])
    }
}

struct RelayProcessError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
