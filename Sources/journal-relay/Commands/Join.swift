import ArgumentParser
import JournalClient
import JournalCommandLine
import JournalFormat
import JournalIngest
import JournalPlatform
import JournalReplay
import JournalWire

extension RelayCommand {
    struct Join: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Join a board on a relay, catch up, and print what it holds.",
            discussion: """
                Connects to a board's socket on a 'journal serve' relay as a client
                (RelayClient), receives the whole board (exactly, in the journal's own blocks
                unless --text) and prints its digest, the same digest 'journal digest' prints
                for the relay's journal of that board, with what the catch-up cost: bytes
                received and seconds until the board was held. With --follow it stays and
                prints each change as it arrives, until Ctrl-C.

                A refusal that trying again cannot change (no board's socket at the address, a
                name no board can have, a token the relay does not accept) ends it at once with
                the reason; a relay that cannot be reached is tried again until --timeout.

                A relay that is not open asks for a token (journal token): give it in the
                environment variable JOURNAL_TOKEN, which stays out of the process list and of
                your shell's history.

                Example:
                  JOURNAL_TOKEN=$(journal token --data boards --board poster --scope view --ttl 1h) \\
                    journal join ws://127.0.0.1:8080/boards/poster/ws --json
                """)

        @Argument(help: ArgumentHelp("The board's socket: ws://HOST:PORT/boards/<board>/ws.", valueName: "url")) var url: String
        @Flag(help: "Catch up with one text message per event instead of binary blocks.") var text = false
        @Flag(help: "Stay connected and print a line per change (strokes added, extended, hidden).") var follow = false
        @Option(help: "Give up when not caught up after this many seconds.") var timeout: Double = 60
        @Flag(help: "Print one JSON object: digest, events, strokes, points, bytes, seconds.") var json = false

        func validate() throws {
            guard url.hasPrefix("ws://") else { throw ValidationError("the url must start with ws:// (e.g. ws://127.0.0.1:8080/boards/poster/ws)") }
            guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        }

        func run() async throws {
            try await reportingErrors {
                var options = RelayClient.Options()
                options.blocks = !text
                options.token = ProcessInfoLite.environment("JOURNAL_TOKEN")
                let client = RelayClient(url: url, options: options)
                let updates = client.updates
                let start = ProcessInfoLite.monotonicSeconds()
                let connection = Task { await client.run() }
                let deadline = Task {
                    try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                    client.close()
                }
                var lastProblem = "no answer"
                var caughtUp = false
                updatesLoop: for await update in updates {
                    switch update {
                    case .caughtUp: caughtUp = true
                    case .disconnected(let reason, _): lastProblem = reason
                    case .stopped(let reason):
                        // Refused for good: say so at once rather than retry until the timeout.
                        deadline.cancel()
                        await connection.value
                        throw CLIError("\(url): \(reason)", code: CLIError.ioError)
                    default: break
                    }
                    if caughtUp { break updatesLoop }
                }
                let seconds = ProcessInfoLite.monotonicSeconds() - start
                guard caughtUp else {
                    connection.cancel()
                    throw CLIError("\(url): not caught up within \(formatSeconds(timeout)): \(lastProblem)", code: CLIError.ioError)
                }
                deadline.cancel()
                let drawing = client.drawing
                if json {
                    var object = JSONObject()
                    object.add("digest", drawing.digest)
                    object.add("events", Int(client.have.eventCount))
                    object.add("strokes", drawing.strokes.count)
                    object.add("points", drawing.strokes.reduce(0) { $0 + $1.points.count })
                    object.add("bytes", client.bytesReceived)
                    object.add("seconds", seconds)
                    object.add("mode", text ? "text" : "blocks")
                    Terminal.write(object.text + "\n")
                } else {
                    Terminal.write("""
                        \(drawing.digest)
                        \(client.have.eventCount) events, \(drawing.strokes.count) strokes, \
                        \(drawing.strokes.reduce(0) { $0 + $1.points.count }) points; \
                        \(client.bytesReceived) bytes in \(formatSeconds(seconds)) (\(text ? "text" : "blocks"))

                        """)
                }
                Terminal.flush()
                if follow {
                    let trap = SignalTrap { _ in client.close() }
                    for await update in updates {
                        if case .changed(let changes) = update {
                            for change in changes { Terminal.write(Self.line(for: change) + "\n") }
                            Terminal.flush()
                        }
                    }
                    trap.cancel()
                }
                client.close()
                await connection.value
            }
        }
    
        private static func line(for change: DrawingChange) -> String {
            switch change {
            case .added(let stroke): return "added \(stroke)"
            case .extended(let stroke, let from): return "extended \(stroke) from point \(from)"
            case .reshaped(let stroke): return "reshaped \(stroke)"
            case .moved(let stroke): return "moved \(stroke)"
            case .visibility(let stroke, let visible): return "\(visible ? "shown" : "hidden") \(stroke)"
            case .ended(let stroke): return "ended \(stroke)"
            case .reset: return "reset"
            }
        }
    }
}
