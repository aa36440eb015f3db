import ArgumentParser
import JournalIngest
import JournalPlatform
import JournalReplay
import JournalStorage

/// One sentence for the person, and a documented exit code (sysexits.h).
package struct CLIError: Error, CustomStringConvertible {
    package var message: String
    package var code: Int32

    package static let problemsFound: Int32 = 1
    package static let badInput: Int32 = 65
    package static let ioError: Int32 = 74
    package static let locked: Int32 = 75

    package init(_ message: String, code: Int32) {
        self.message = message
        self.code = code
    }

    package init(_ error: JournalError) {
        switch error {
        case .locked: self.init(error.description, code: Self.locked)
        case .invalidEvent: self.init(error.description, code: Self.badInput)
        case .notAJournal, .alreadyAJournal, .insideAJournal: self.init(error.description, code: 64)
        default: self.init(error.description, code: Self.ioError)
        }
    }

    /// A bad line is bad input (65); an input that cannot be read at all (line 0: missing,
    /// unreadable) is an I/O error (74).
    package init(_ error: InputError) {
        self.init(error.description, code: error.line == 0 ? Self.ioError : Self.badInput)
    }

    package var description: String { message }
}

extension ParsableCommand {
    /// Prints the error as one line on stderr and exits with its code.
    package static func fail(_ error: CLIError) -> Never {
        Terminal.standardError("journal: \(error.message)\n")
        Self.exit(withError: ExitCode(error.code))
    }
}

/// Runs `body`, turning the library's typed errors into a message and an exit code.
package func reportingErrors<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch { throw exitCode(reporting: error) }
}

/// `reportingErrors` for commands that wait on child processes (sync, merge, demo).
package func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch { throw exitCode(reporting: error) }
}

/// Prints what went wrong as one line on stderr; the exit code it calls for.
private func exitCode(reporting error: any Error) -> any Error {
    do { throw error } catch let error as CLIError {
        Terminal.standardError("journal: \(error.message)\n")
        return ExitCode(error.code)
    } catch let error as JournalError {
        let cli = CLIError(error)
        Terminal.standardError("journal: \(cli.message)\n")
        return ExitCode(cli.code)
    } catch let error as InputError {
        let cli = CLIError(error)
        Terminal.standardError("journal: \(cli.message)\n")
        return ExitCode(cli.code)
    } catch let error as IOError {
        Terminal.standardError("journal: \(error)\n")
        return ExitCode(CLIError.ioError)
    } catch let error as SnapshotError {
        Terminal.standardError("journal: \(error)\n")
        if case .io = error { return ExitCode(CLIError.ioError) }
        return ExitCode(CLIError.problemsFound)
    } catch {
        // ExitCode and argument-parser's own errors pass through unchanged.
        return error
    }
}
