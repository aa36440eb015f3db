import ArgumentParser
import JournalClient
import JournalCommandLine
import JournalFormat
import JournalIngest
import JournalPlatform
import JournalRelay
import JournalReplay
import JournalWire

extension RelayCommand {
    struct Join: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "join",
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

                The address is the board's socket or its drawing page's address (the page's
                http:// address, as copied from the browser, is turned into its socket's).

                Examples:
                  JOURNAL_TOKEN=$(journal token --data boards --board poster --scope view --ttl 1h) \\
                    journal join ws://127.0.0.1:8080/boards/poster/ws --json
                  journal join http://127.0.0.1:8080/boards/poster --follow
                """)

        @Argument(help: ArgumentHelp(
            "The board's socket, ws://HOST:PORT/boards/<board>/ws, or its drawing page's address, http://HOST:PORT/boards/<board>.",
            valueName: "url"))
        var url: String
        @Flag(help: "Catch up with one text message per event instead of binary blocks.") var text = false
        @Flag(help: "Stay connected and print a line per change (strokes added, extended, hidden).") var follow = false
        @Option(help: "Give up when not caught up after this many seconds.") var timeout: Double = 60
        @Flag(help: "Print one JSON object: digest, events, strokes, points, bytes, seconds.") var json = false

        func validate() throws {
            _ = try Self.socket(of: url)
            guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be positive") }
        }

        /// The board's socket for `address`: a socket's address as it is, or a drawing page's
        /// (http://…/boards/<board>, what a person copies from the browser: its fragment, with
        /// any token, left out); refused, with the reason, when no board can be there (the
        /// relay would refuse it anyway, after the whole --timeout of retries).
        static func socket(of address: String) throws -> (url: String, board: String) {
            var text = address
            if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }
            let example = "e.g. ws://127.0.0.1:8080/boards/poster/ws, or the page's http://127.0.0.1:8080/boards/poster"
            if text.hasPrefix("http://") {
                text = "ws://" + text.dropFirst("http://".count)
            } else if text.hasPrefix("https://") || text.hasPrefix("wss://") {
                throw ValidationError("join speaks plain ws:// only (no TLS yet): reach the relay's own port, \(example)")
            } else if !text.hasPrefix("ws://") {
                throw ValidationError("the url must start with ws:// or http:// (\(example))")
            }
            let path = text.dropFirst("ws://".count).drop { $0 != "/" }
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            // "", "boards", <board>[, "ws"]
            guard parts.count >= 3, parts[0].isEmpty, parts[1] == "boards", parts.count == 3 || (parts.count == 4 && parts[3] == "ws") else {
                throw ValidationError("\(address.debugDescription) names no board (\(example))")
            }
            let board = String(parts[2])
            do throws(RelayError) { _ = try BoardName(board) } catch { throw ValidationError(error.description) }
            return (parts.count == 3 ? text + "/ws" : text, board)
        }

        func run() async throws {
            try await reportingErrors {
                var options = RelayClient.Options()
                options.blocks = !text
                options.token = ProcessInfoLite.environment("JOURNAL_TOKEN")
                let socket = try Self.socket(of: url).url
                if url.contains("#token=") && options.token == nil {
                    Terminal.standardError("journal: the token in the address is not used (a command line is visible to every user of this machine): give it in JOURNAL_TOKEN\n")
                }
                let client = RelayClient(url: socket, options: options)
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
                        throw CLIError("\(socket): \(reason)", code: CLIError.ioError)
                    default: break
                    }
                    if caughtUp { break updatesLoop }
                }
                let seconds = ProcessInfoLite.monotonicSeconds() - start
                guard caughtUp else {
                    connection.cancel()
                    throw CLIError("\(socket): not caught up within \(formatSeconds(timeout)): \(lastProblem)", code: CLIError.ioError)
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
                    object.add("viewOnly", client.mayOnlyView)
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
