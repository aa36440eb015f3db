#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
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
    /// standard output and error are collected apart. The child inherits this process's
    /// environment with `environment` applied: a value sets a variable, nil removes it.
    public static func run(_ program: String, _ arguments: [String], input: [UInt8]? = nil,
                           environment: [String: String?] = [:]) async throws(IOError) -> Result {
        do {
            let executable = Executable.name(program)
            let childEnvironment = inherited(updating: environment)
            let result = if let input {
                try await Subprocess.run(
                    executable, arguments: Arguments(arguments), environment: childEnvironment, input: .array(input),
                    output: .bytes(limit: outputLimit), error: .bytes(limit: outputLimit))
            } else {
                try await Subprocess.run(
                    executable, arguments: Arguments(arguments), environment: childEnvironment,
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

    /// Something that sends a running child bytes on its standard input.
    public struct InputFeed: ~Copyable {
        fileprivate let writer: StandardInputWriter

        public func write(_ bytes: [UInt8]) async throws(IOError) {
            do { _ = try await writer.write(bytes) } catch {
                throw IOError("write", path: "standard input of the child", code: error.underlyingError?.rawValue ?? Errno.ioError.rawValue,
                              reason: "\(error)")
            }
        }
    }

    /// Runs `program` while `feed` writes its standard input (as much as it likes: nothing is
    /// held in memory but what `feed` holds); standard output is thrown away and standard
    /// error collected. A child that exits early makes the next write fail (EPIPE, not a
    /// SIGPIPE that would end this process), and that failure is returned as the child's
    /// status with `feed`'s error, so that the caller can quote the child's message.
    /// `environment` as for `run(_:_:input:environment:)`.
    public static func run(
        _ program: String, _ arguments: [String], environment: [String: String?] = [:],
        feeding feed: (borrowing InputFeed) async throws -> Void
    ) async throws(IOError) -> (result: Result, feedError: (any Error)?) {
        ignoreBrokenPipe()
        do {
            let run = try await Subprocess.run(
                Configuration(executable: .name(program), arguments: Arguments(arguments), environment: inherited(updating: environment)),
                input: .inputWriter, output: .discarded, error: .bytes(limit: outputLimit)
            ) { execution -> (any Error)? in
                let input = InputFeed(writer: execution.standardInputWriter)
                var failure: (any Error)?
                do { try await feed(input) } catch { failure = error }
                try? await execution.standardInputWriter.finish()
                return failure
            }
            let status: Int32 = switch run.terminationStatus {
            case .exited(let code): code
            case .signaled(let signal): 128 + signal
            }
            return (Result(status: status, output: [], errorOutput: run.standardError), run.closureResult)
        } catch let error as SubprocessError where error.code == .executableNotFound {
            return (Result(status: 127, output: [], errorOutput: []), nil)
        } catch {
            throw IOError("run", path: program, code: Self.errno(of: error), reason: "\(error)")
        }
    }

    /// This process's environment with `changes` applied: a value sets a variable, nil removes it.
    private static func inherited(updating changes: [String: String?]) -> Environment {
        var keyed: [Environment.Key: String?] = [:]
        for (name, value) in changes {
            if let key = Environment.Key(rawValue: name) { keyed[key] = value }
        }
        return Environment.inherit.updating(keyed)
    }

    private static func errno(of error: any Error) -> Int32 {
        // EIO when the library gives no errno: the child could not be run or read, as `reason` says.
        (error as? SubprocessError)?.underlyingError?.rawValue ?? Errno.ioError.rawValue
    }
}

/// A write to a pipe whose reader is gone fails with EPIPE instead of ending the process.
private func ignoreBrokenPipe() {
    _ = signal(SIGPIPE, SIG_IGN)
}
