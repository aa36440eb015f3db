import ArgumentParser
import JournalPlatform
import JournalStorage

/// `--journal DIR`, shared by every command that works on an existing journal.
struct JournalOptions: ParsableArguments {
    @Option(name: [.customShort("C"), .long], help: ArgumentHelp(
        "The journal directory (default: $JOURNAL_DIR, else the current directory).", valueName: "dir"))
    var journal: String?

    var path: String {
        journal ?? ProcessInfoLite.environment("JOURNAL_DIR") ?? "."
    }

    func open() throws -> JournalDirectory {
        do {
            return try JournalDirectory.open(at: path)
        } catch {
            throw CLIError(error)
        }
    }
}
