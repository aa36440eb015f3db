import ArgumentParser
import JournalPlatform
import JournalStorage

/// `--journal DIR`, shared by every command that works on an existing journal. It may also
/// stand before the subcommand (`journal -C board stats`, see `GlobalArguments`).
package struct JournalOptions: ParsableArguments {
    package init() {}

    @Option(name: [.customShort("C"), .long], help: ArgumentHelp(
        "The journal directory (default: $JOURNAL_DIR, else the journal holding the current directory).", valueName: "dir"))
    package var journal: String?

    package var path: String {
        journal ?? ProcessInfoLite.environment("JOURNAL_DIR") ?? "."
    }

    /// The named folder, or like git the nearest folder above it that is a journal.
    package func open() throws -> JournalDirectory {
        let named = JournalDirectory(root: path)
        if named.isJournal { return named }
        if let found = JournalDirectory.enclosing(path) { return found }
        throw CLIError(JournalError.notAJournal(path: path))
    }
}
