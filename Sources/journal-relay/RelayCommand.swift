import ArgumentParser
import JournalCommandLine
import JournalPlatform

/// `journal serve` and `journal join`: the commands that need a network stack (SwiftNIO,
/// Hummingbird), in a program of their own that `journal` runs in its place, as git runs its
/// subcommands. `swift run journal demo`, `journal record` and an app embedding the library
/// then never build the relay's dependencies (README, "Try it").
///
/// It names itself `journal`, so that help and errors read as the command a person typed.
@main
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "The relay's commands of journal: serve a folder of boards, or join one.",
        discussion: """
            Run them as 'journal serve' and 'journal join': journal runs this program
            (journal-relay, installed beside it) for them.
            """,
        version: journalVersion,
        subcommands: [Serve.self, Join.self]
    )

    static func main() async {
        guard ProcessInfoLite.guardStandardDescriptors() else { Self.exit(withError: ExitCode(71)) }
        ParentWatch.startIfAsked()
        await main(nil)
    }
}
