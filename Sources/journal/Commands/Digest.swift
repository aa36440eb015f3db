import ArgumentParser
import JournalReplay

extension JournalCommand {
    struct DigestCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "digest",
            abstract: "Print the SHA-256 digest of the reconstructed drawing.",
            discussion: """
                Two journals holding the same events print the same digest, whatever order the
                events arrived in.

                Example:
                  [ "$(journal digest -C a)" = "$(journal digest -C b)" ] && echo converged
                """)

        @OptionGroup var options: JournalOptions

        func run() throws {
            try reportingErrors {
                let (drawing, report) = Replay.load(try options.open())
                reportProblems(report)
                Terminal.write(drawing.digest + "\n")
                Terminal.flush()
            }
        }
    }
}
