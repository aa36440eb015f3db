import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalStorage

extension JournalCommand {
    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create a journal with a new replica identity.",
            discussion: """
                Example:
                  journal init board        # creates ./board/replicas and ./board/local
                """)

        @Argument(help: "Where to create the journal.")
        var directory: String = "."

        func validate() throws {
            // An unset variable (`journal init "$DIR"`) names no folder: not this one, not "/".
            if directory.isEmpty { throw ValidationError("the journal's folder is an empty path; name one (`.` for this folder)") }
        }

        func run() throws {
            try reportingErrors {
                let journal = try JournalDirectory.create(at: directory)
                Terminal.write("initialised journal \(journal.root) (replica \(try journal.identity().hex))\n")
                Terminal.flush()
            }
        }
    }
}
