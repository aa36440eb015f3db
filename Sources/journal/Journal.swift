import ArgumentParser
import JournalCommandLine
import JournalPlatform

@main
struct JournalCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Record, merge and inspect collaborative drawing sessions.",
        discussion: """
            A journal is a folder of append-only, zlib-compressed segments of pen events.
            Every machine holding the same events reconstructs the same strokes.

            Start with:  journal demo
            Journal:     -C DIR before or after the command, else $JOURNAL_DIR, else the
                         journal holding the current folder (like git).
            Exit codes:  0 ok, 1 problems found (verify), 64 usage, 65 bad input,
                         74 I/O error, 75 journal locked by another writer or sync.
            """,
        version: journalVersion,
        subcommands: [
            Demo.self, Init.self, Record.self, Sync.self, Merge.self, Status.self,
            Log.self, HistoryCommand.self, Restore.self, TimelapseCommand.self, Strokes.self, Render.self, Stats.self, Verify.self, DigestCommand.self, SnapshotCommand.self, Compact.self, Serve.self, Join.self, Token.self, Trust.self, Members.self,
        ]
    )

    /// Standard descriptors are made safe before anything opens a file: started with 0, 1 or
    /// 2 closed, the journal's own files would get those numbers and output meant for the
    /// terminal would be written into them. Then the arguments git users type are rewritten
    /// (`GlobalArguments`).
    static func main() async {
        guard ProcessInfoLite.guardStandardDescriptors() else { Self.exit(withError: ExitCode(71)) }
        ParentWatch.startIfAsked()
        let commands = configuration.subcommands.map { $0._commandName }
        switch GlobalArguments.rewrite(Array(CommandLine.arguments.dropFirst()), commands: commands) {
        case .unknownCommand(let word, let suggestion):
            let hint = suggestion.map { " Did you mean '\($0)'?" } ?? " See 'journal --help'."
            Terminal.standardError("journal: '\(word)' is not a journal command.\(hint)\n")
            ProcessInfoLite.terminate(status: 64)
        case .run(let arguments, let journal):
            if let journal { ProcessInfoLite.setEnvironment("JOURNAL_DIR", journal) }
            if let relay = RelayProgram.relayArguments(arguments) { RelayProgram.run(relay) }
            await main(arguments)
        }
    }
}
