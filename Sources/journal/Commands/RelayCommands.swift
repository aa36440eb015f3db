import ArgumentParser
import JournalCommandLine
import JournalPlatform

/// `journal serve` and `journal join` live in the program journal-relay, which alone links
/// SwiftNIO and Hummingbird (Package.swift): journal hands such a command line over to it
/// whole (`RelayProgram.run`), so their help, options and exit codes are journal-relay's.
/// These two entries exist for `journal --help` and for "did you mean".
extension JournalCommand {
    struct Serve: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Relay live drawing between clients over WebSockets, recording every stroke.",
            discussion: "Run by journal-relay: 'journal serve --help' shows its options.")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { RelayProgram.run(["serve"] + arguments) }
    }

    struct Join: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "join",
            abstract: "Join a board on a relay, catch up, and print what it holds.",
            discussion: "Run by journal-relay: 'journal join --help' shows its options.")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { RelayProgram.run(["join"] + arguments) }
    }
}

enum RelayProgram {
    static let name = "journal-relay"
    static let commands: Set<String> = ["serve", "join"]

    /// The command line's relay command, if it is one (`journal serve …`, `journal help join`),
    /// as journal-relay takes it.
    static func relayArguments(_ arguments: [String]) -> [String]? {
        guard let first = arguments.first else { return nil }
        if commands.contains(first) { return arguments }
        if first == "help", arguments.count >= 2, commands.contains(arguments[1]) { return [arguments[1], "--help"] }
        return nil
    }

    /// journal-relay beside this program (an install puts both in one folder, a build both in
    /// one build folder), else on PATH.
    static func locate() -> String? {
        if let me = ProcessInfoLite.executablePath {
            let sibling = FileSystem.parent(of: me) + "/" + name
            if FileSystem.isExecutable(sibling) { return sibling }
        }
        return ProcessInfoLite.onPath(name)
    }

    /// Becomes journal-relay with `arguments`; returns never.
    static func run(_ arguments: [String]) -> Never {
        guard let program = locate() else {
            Terminal.standardError("""
                journal: '\(arguments[0])' is run by the program \(name), which is not installed beside journal nor on PATH.
                Build it with: swift build --product \(name)   (or install both: Tools/install.sh)
                It links SwiftNIO and Hummingbird, which a first build compiles in a few minutes.

                """)
            ProcessInfoLite.terminate(status: CLIError.ioError)
        }
        let failure = ProcessInfoLite.replaceProcess(with: program, arguments: [program] + arguments)
        Terminal.standardError("journal: cannot run \(program): \(failure.message)\n")
        ProcessInfoLite.terminate(status: CLIError.ioError)
    }
}
