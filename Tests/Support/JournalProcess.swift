import Foundation
import JournalPlatform

/// The built `journal` binary, run as a child process: what a person or a service manager runs.
/// Shared by the test targets that run it (CLI, sync --watch, relay processes).
public enum JournalProcess {
    public static let binary = builtExecutable("journal")

    /// The package's executable `name`: the test bundle sits in the build folder, next to it.
    public static func builtExecutable(_ name: String) -> String {
        var folder = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = folder.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
            folder = folder.deletingLastPathComponent()
        }
        return Bundle.main.bundleURL.appendingPathComponent(name).path
    }

    public struct Output {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// Runs `journal arguments` to the end. Output goes to files: a pipe that fills up would
    /// block the child.
    public static func run(_ arguments: [String]) throws -> Output {
        let child = try Child(arguments, label: "journal-run")
        try child.process.waitForExit()
        return Output(status: child.process.terminationStatus, stdout: child.stdout, stderr: child.stderr)
    }

    /// A `journal` child, its standard output and error in files of its own; killed if still
    /// running when released.
    public final class Child {
        public let process = Process()
        let scratch: TemporaryDirectory

        public init(_ arguments: [String], label: String = "journal-child") throws {
            scratch = TemporaryDirectory(label)
            process.executableURL = URL(fileURLWithPath: JournalProcess.binary)
            process.arguments = arguments
            var environment = ProcessInfo.processInfo.environment
            environment.removeValue(forKey: "JOURNAL_DIR")
            // A test process killed halfway leaves no relay running (and holding its port).
            environment[ParentWatch.variable] = "1"
            process.environment = environment
            _ = FileManager.default.createFile(atPath: scratch.path + "/out", contents: nil)
            _ = FileManager.default.createFile(atPath: scratch.path + "/err", contents: nil)
            process.standardOutput = FileHandle(forWritingAtPath: scratch.path + "/out")
            process.standardError = FileHandle(forWritingAtPath: scratch.path + "/err")
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            scratch.remove()
        }

        public var stdout: String { (try? String(contentsOfFile: scratch.path + "/out", encoding: .utf8)) ?? "" }
        public var stderr: String { (try? String(contentsOfFile: scratch.path + "/err", encoding: .utf8)) ?? "" }

        /// Sends `signal` and waits (`eventually`: the test's thread pool is not held) for the
        /// exit: the exit status, or nil if a signal ended it or it still runs after `seconds`.
        public func stop(with signal: Int32, seconds: Double = 30) async -> Int32? {
            kill(process.processIdentifier, signal)
            _ = await eventually(within: seconds, every: 10) { !process.isRunning }
            return exitStatus()
        }

        /// `stop`, for a synchronous caller: blocks its thread while polling (`eventuallyBlocking`).
        public func stopBlocking(with signal: Int32, seconds: Double = 30) -> Int32? {
            kill(process.processIdentifier, signal)
            _ = eventuallyBlocking(within: seconds, every: 10) { !process.isRunning }
            return exitStatus()
        }

        private func exitStatus() -> Int32? {
            guard !process.isRunning else { return nil }
            process.waitUntilExit()
            return process.terminationReason == .exit ? process.terminationStatus : nil
        }
    }
}
