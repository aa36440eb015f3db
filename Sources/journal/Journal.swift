import ArgumentParser
import JournalPlatform

@main
struct JournalCommand: ParsableCommand {
    /// Standard descriptors are made safe before anything opens a file: started with 0, 1 or
    /// 2 closed, the journal's own files would get those numbers and output meant for the
    /// terminal would be written into them.
    static func main() {
        guard ProcessInfoLite.guardStandardDescriptors() else { Self.exit(withError: ExitCode(71)) }
        main(nil)
    }

    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Record, merge and inspect collaborative drawing sessions.",
        discussion: """
            A journal is a folder of append-only, zlib-compressed segments of pen events.
            Every machine holding the same events reconstructs the same strokes.

            Start with:  journal demo
            Exit codes:  0 ok, 1 problems found (verify), 64 usage, 65 bad input,
                         74 I/O error, 75 journal locked by another writer or sync.
            """,
        subcommands: [
            Demo.self, Init.self, Record.self, Sync.self, Merge.self, Status.self,
            Log.self, Strokes.self, Render.self, Stats.self, Verify.self, DigestCommand.self, SnapshotCommand.self,
        ]
    )
}
