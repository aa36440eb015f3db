import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalPlatform
import JournalRelay

extension JournalCommand {
    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Mint, inspect or revoke the tokens a relay (journal serve) asks its clients for.",
            discussion: """
                A token lets its holder view, draw on, or (admin) also create the boards it
                names, until it expires. It is signed with the relay's key in DIR/.relay/ (made
                by the first 'journal serve' or 'journal token' on DIR), so mint tokens on the
                relay's machine, as a user who may read that folder. A token is a secret: pass
                it in a hello or an Authorization: Bearer header, or give a person the drawing
                page's address with #token=… (the page keeps it out of its history).

                --board takes a board's name, a prefix ending in * (team-*), or * (every board).
                --ttl takes seconds, or a number with s, m, h or d (8h, 30d).

                Revoking a token (its id is its second field, printed with --json) closes its
                connections within a second and refuses it from then on. Rotating the key
                revokes every token minted before at once.

                Examples:
                  journal token --data boards --board sketch --scope draw --ttl 8h
                  journal token --data boards --board 'class-*' --scope view --ttl 30d --json
                  journal token --data boards --revoke 3f9c0a1b2c3d4e5f
                  journal token --data boards --rotate-key
                  journal token --inspect sjt1.3f9c0a1b2c3d4e5f.draw.sketch.1795000000.…
                """)

        @Option(help: ArgumentHelp("The relay's data folder (journal serve --data).", valueName: "dir"))
        var data: String?
        @Option(help: ArgumentHelp("The board, a prefix ending in *, or * for every board.", valueName: "pattern"))
        var board: String?
        @Option(help: "view (catch up and watch), draw (also send), admin (also create the board).")
        var scope: String = "draw"
        @Option(help: ArgumentHelp("How long the token holds: seconds, or N with s, m, h or d.", valueName: "duration"))
        var ttl: String = "8h"
        @Option(help: ArgumentHelp("Revoke the token with this id (16 hex digits).", valueName: "id"))
        var revoke: String?
        @Flag(help: "Make the relay a new key: every token minted before is refused from now on.")
        var rotateKey = false
        @Option(help: ArgumentHelp("Print what a token says (its signature is not checked).", valueName: "token"))
        var inspect: String?
        @Flag(help: "Print one JSON object (keys: token, id, scope, boards, expires).")
        var json = false

        func validate() throws {
            if data?.isEmpty == true { throw ValidationError("--data must name a folder") }
            let actions = [board != nil, revoke != nil, rotateKey, inspect != nil].filter { $0 }.count
            guard actions == 1 else {
                throw ValidationError("say one of --board (mint a token), --revoke ID, --rotate-key or --inspect TOKEN")
            }
            if inspect == nil && data == nil { throw ValidationError("--data must name the relay's data folder") }
            if board != nil {
                guard Scope(name: scope) != nil else { throw ValidationError("--scope must be view, draw or admin") }
                guard Self.seconds(ttl) != nil else { throw ValidationError("--ttl must be seconds, or a number with s, m, h or d (8h)") }
            }
        }

        /// `90`, `90s`, `15m`, `8h`, `30d`, between 1 second and 10 years.
        static func seconds(_ text: String) -> Int64? {
            let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
            var digits = Substring(text)
            var unit: Int64 = 1
            if let last = text.last, let factor = units[last] {
                unit = factor
                digits = digits.dropLast()
            }
            guard let count = Int64(digits), count > 0 else { return nil }
            let (total, overflow) = count.multipliedReportingOverflow(by: unit)
            guard !overflow, total <= 10 * 366 * 86400 else { return nil }
            return total
        }

        func run() throws {
            try reportingErrors {
                do throws(AccessError) {
                    if let token = inspect {
                        let (capability, _) = try RelayKeys.parse(token)
                        print(capability, token: nil)
                        return
                    }
                    let keys = try RelayKeys.openOrCreate(dataDirectory: data ?? ".")
                    if let id = revoke {
                        try keys.revoke(id)
                        Terminal.write("journal: token \(id) revoked: its connections close within a second\n")
                    } else if rotateKey {
                        try keys.rotate()
                        Terminal.write("journal: the relay has a new key: every token minted before is refused from now on\n")
                    } else if let board, let scope = Scope(name: scope), let ttl = Self.seconds(ttl) {
                        let expires = ProcessInfoLite.wallClockMilliseconds() / 1000 + ttl
                        let capability = Capability(
                            id: RelayKeys.newTokenID(), scope: scope, boards: try BoardPattern(board), expiresAtSeconds: expires)
                        print(capability, token: try keys.mint(capability))
                    }
                    Terminal.flush()
                } catch {
                    throw CLIError(error.description, code: {
                        if case .keyUnavailable = error { return CLIError.ioError }
                        return CLIError.badInput
                    }())
                }
            }
        }

        private func print(_ capability: Capability, token: String?) {
            if json {
                var object = JSONObject()
                if let token { object.add("token", token) }
                object.add("id", capability.id)
                object.add("scope", capability.scope.description)
                object.add("boards", capability.boards.description)
                object.add("expires", capability.expiresAtSeconds)
                Terminal.write(object.text + "\n")
            } else if let token {
                Terminal.write(token + "\n")
            } else {
                Terminal.write("id \(capability.id), scope \(capability.scope), boards \(capability.boards), expires \(capability.expiresAtSeconds) (seconds since 1970)\n")
            }
            Terminal.flush()
        }
    }
}
