import Subprocess
import SystemPackage

/// Runs a program found on `PATH` and waits for it, through swift-subprocess: no shell in
/// between, so arguments are never re-parsed. What sync needs to drive `rsync` and the
/// command-line tool to drive `rsvg-convert`, without Foundation.
public enum ChildProcess {
    public struct Result: Sendable {
        /// The exit status, or 128 + the signal that ended it; 127 when the program was not found.
        public var status: Int32
        public var output: [UInt8]
        public var errorOutput: [UInt8]
        public var outputText: String { String(decoding: output, as: UTF8.self) }
        /// Standard error, then standard output: what a message quoting a failure should show.
        public var messages: String { String(decoding: errorOutput + output, as: UTF8.self) }
    }

    /// More output than this is a failure of the child, not something to hold in memory.
    public static let outputLimit = 256 << 20

    /// `input` goes to the child's standard input (nothing, as from `/dev/null`, without it);
    /// standard output and error are collected apart.
    public static func run(_ program: String, _ arguments: [String], input: [UInt8]? = nil) async throws(IOError) -> Result {
        do {
            let executable = Executable.name(program)
            let result = if let input {
                try await Subprocess.run(
                    executable, arguments: Arguments(arguments), input: .array(input),
                    output: .bytes(limit: outputLimit), error: .bytes(limit: outputLimit))
            } else {
                try await Subprocess.run(
                    executable, arguments: Arguments(arguments),
                    output: .bytes(limit: outputLimit), error: .bytes(limit: outputLimit))
            }
            let status: Int32 = switch result.terminationStatus {
            case .exited(let code): code
            case .signaled(let signal): 128 + signal
            }
            return Result(status: status, output: result.standardOutput, errorOutput: result.standardError)
        } catch let error as SubprocessError where error.code == .executableNotFound {
            return Result(status: 127, output: [], errorOutput: [])
        } catch {
            throw IOError("run", path: program, code: Self.errno(of: error), reason: "\(error)")
        }
    }

    private static func errno(of error: any Error) -> Int32 {
        // EIO when the library gives no errno: the child could not be run or read, as `reason` says.
        (error as? SubprocessError)?.underlyingError?.rawValue ?? Errno.ioError.rawValue
    }
}
