import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalKeys
import JournalPlatform
import JournalStorage

extension JournalCommand {
    struct Members: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "members",
            abstract: "Say who may view, draw and administer a board: its membership, synced with it.",
            discussion: """
                A board's membership is part of its journal: signed statements
                (create, grant, revoke, rotate) stored as segments, synced by
                `journal sync` like strokes, and folded the same way on every
                machine. Once a board has membership, a replica's events count
                only while its key holds `draw` (or more); events a key signs
                after its revocation count nowhere, whatever their clocks. A
                board without membership is open, as before (or follows the
                local trust list, `journal trust`).

                Statements are signed by this journal's own key
                (local/replica.key), or by the key in --key FILE: an admin key
                kept outside the journal (`journal members keygen`). Back that
                file up: whoever holds it administers the board.

                Examples:
                  journal members init -C board --label Alice
                  journal trust key -C bobs-board      # Bob sends his key
                  journal members grant -C board 3b6a27bc… --role draw --label Bob
                  journal members invite -C boards/sketch --role draw --label Carol
                  journal members list -C board --json
                  journal members revoke -C board 3b6a27bc…
                  journal members rotate -C board 9f1e44d0…   # to a new key
                  journal members import -C board      # keys of local/trust
                """,
            subcommands: [Init.self, List.self, Grant.self, Invite.self, Revoke.self, Rotate.self, Import.self, Keygen.self, Pin.self])

        /// The key that signs: --key FILE, or the journal's own.
        struct SigningKey: ParsableArguments {
            @Option(name: .customLong("key"), help: ArgumentHelp(
                "Sign with the key in this file (made by `journal members keygen`) instead of the journal's own.", valueName: "file"))
            var keyFile: String?

            func key(for journal: JournalDirectory) throws -> ReplicaKey {
                if let keyFile {
                    do throws(MembershipError) { return try KeyFile.read(keyFile) } catch { throw CLIError(error.description, code: 65) }
                }
                guard let key = try journal.loadIdentity().key else {
                    throw CLIError("\(journal.root) has no key (made before keys, or with a given replica id): sign with --key FILE (`journal members keygen FILE` makes one)", code: 1)
                }
                return key
            }
        }

        struct Init: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "init",
                abstract: "Give a board membership: the signing key becomes its first admin.",
                discussion: """
                    From then on only members' events count. Grant the keys of everyone who
                    draws (`journal members import` grants those of the trust list) before or
                    right after, or their strokes stop showing.

                    Example:
                      journal members init -C board --label Alice
                    """)
            @OptionGroup var options: JournalOptions
            @OptionGroup var signing: SigningKey
            @Option(help: "The first admin's name, shown by `members list` and `history`.")
            var label: String = ""

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    let key = try signing.key(for: journal)
                    let found = try Members.edit { () throws(MembershipError) in
                        try MembershipEditor(journal: journal, key: key).create(label: label)
                    }
                    Terminal.write("board \(found.statement.board.compactHex): membership created; admin \(Hex.bytes(key.publicKey))\n")
                    let unsigned = SegmentSet.load(journal).problems.filter { $0.kind == .quarantined }.count
                    if unsigned > 0 {
                        Terminal.write("note: \(unsigned) file(s) or run(s) of events no longer count (not members' or unsigned); `journal members list` and `journal verify` say which\n")
                    }
                    Terminal.flush()
                }
            }
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "Print the board's members, as its files say.",
                discussion: """
                    Example:
                      journal members list -C board --json
                    """)
            @OptionGroup var options: JournalOptions
            @Flag(help: "Print one JSON object: {\"open\",\"board\",\"founder\",\"statements\",\"trustListOverridden\",\"members\":[{\"key\",\"replica\",\"role\",\"label\",\"active\",\"revoked\",\"rotatedTo\",\"admitted\"}],\"problems\":[…]}.")
            var json = false

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    let set = SegmentSet.load(journal)
                    let membership = set.membership ?? Membership.fold(set.statements)
                    let members = membership.members.values.sorted { ($0.role, Hex.bytes($1.key)) > ($1.role, Hex.bytes($0.key)) }
                    if json {
                        var object = JSONObject()
                        object.add("open", membership.isOpen)
                        object.add("board", membership.board?.compactHex)
                        object.add("founder", membership.founder.map(Hex.bytes))
                        object.add("statements", membership.statementCount)
                        object.add("trustListOverridden", set.trustListOverridden)
                        object.add("members", objects: members.map { member in
                            var item = JSONObject()
                            item.add("key", Hex.bytes(member.key))
                            item.add("replica", member.replica.hex)
                            item.add("role", member.isActive ? member.role.description : "none")
                            item.add("label", member.label)
                            item.add("active", member.isActive)
                            item.add("revoked", member.revoked)
                            item.add("rotatedTo", member.rotatedTo.map(Hex.bytes))
                            item.add("admitted", raw: SeqRanges.json(membership.admitted(member.replica)?.ranges ?? []))
                            if let invitation = member.invitation {
                                var invited = JSONObject()
                                invited.add("role", invitation.role.description)
                                invited.add("expires", invitation.expires)
                                item.add("invitation", raw: invited.text)
                            } else {
                                item.add("invitation", nil as String?)
                            }
                            return item
                        })
                        object.add("problems", objects: membership.problems.map(\.json))
                        Terminal.write(object.text + "\n")
                    } else if let board = membership.board {
                        let active = members.filter { $0.isActive && $0.invitation == nil }.count
                        let pending = members.filter { $0.isActive && $0.invitation != nil }.count
                        Terminal.write("board \(board.compactHex): \(active) active member(s)\(pending > 0 ? ", \(pending) open invitation(s)" : ""), \(membership.statementCount) statement(s)\n")
                        for member in members {
                            if let invitation = member.invitation {
                                let state = member.revoked ? "withdrawn" : member.rotatedTo.map { "redeemed by \(Hex.bytes($0).prefix(12))…" }
                                    ?? "open until \(WallClock.localDescription(invitation.expires))"
                                Terminal.write("\(Hex.bytes(member.key))  invited  \(member.label.isEmpty ? "-" : member.label)"
                                               + "  an invitation to \(invitation.role), \(state)\n")
                                continue
                            }
                            let state = member.revoked ? "revoked" : member.rotatedTo != nil ? "rotated" : member.role.description
                            Terminal.write("\(Hex.bytes(member.key))  \(state.padding(7))  \(member.label.isEmpty ? "-" : member.label)"
                                           + "  draws as \(member.replica.hex), counted seqs \(Members.text(membership.admitted(member.replica)))\n")
                        }
                        if set.trustListOverridden {
                            Terminal.write("note: local/trust is ignored: this board's membership decides what counts\n")
                        }
                    } else {
                        Terminal.write("no membership: an open board (\(set.trust == nil ? "every valid segment counts" : "local/trust decides what counts on this machine"))\n")
                    }
                    for problem in membership.problems { Terminal.standardError("journal: \(problem)\n") }
                    Terminal.flush()
                }
            }
        }

        struct Grant: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "grant",
                abstract: "Make a key a member with a role, or change its role or label.",
                discussion: """
                    Roles: view (sees the board), draw (its events count), relay (a relay node:
                    draws, and seals what its native clients sent), admin (changes membership).

                    Example:
                      journal members grant -C board 3b6a27bc… --role draw --label Bob
                    """)
            @OptionGroup var options: JournalOptions
            @OptionGroup var signing: SigningKey
            @Argument(help: "The member's public key: 64 hex digits (`journal trust key` prints a journal's).")
            var key: String
            @Option(help: "view, draw, relay or admin.")
            var role: String
            @Option(help: "A name for people: shown by `members list` and `history`.")
            var label: String = ""

            func validate() throws {
                guard Members.publicKey(key) != nil else { throw ValidationError("the key must be 64 hex digits (`journal trust key` prints one)") }
                guard MembershipStatement.Role(name: role) != nil else { throw ValidationError("--role must be view, draw, relay or admin") }
                guard label.utf8.count <= FormatV4.maxLabelBytes, !label.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                    throw ValidationError("--label is one line of at most \(FormatV4.maxLabelBytes) bytes")
                }
            }

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    let signer = try signing.key(for: journal)
                    let subject = Members.publicKey(key)!
                    let role = MembershipStatement.Role(name: role)!
                    _ = try Members.edit { () throws(MembershipError) in
                        try MembershipEditor(journal: journal, key: signer).grant(subject, role: role, label: label)
                    }
                    Terminal.write("granted \(role) to \(Hex.bytes(subject))\(label.isEmpty ? "" : " (\(label))"); `journal sync` carries it to the other machines\n")
                    Terminal.flush()
                }
            }
        }

        struct Invite: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "invite",
                abstract: "Invite someone: a link whose first use makes its page's key a member.",
                discussion: """
                    Writes an invitation into the board's membership (signed by an admin
                    key) and prints the link's fragment, #invite=…: a secret. The drawing
                    page opened with it makes its own key, redeems the invitation once at
                    any relay node that holds the board (nothing node-local is needed),
                    and draws as a member with the role and label given here. Unused, it
                    expires after --ttl; `journal members revoke KEY` withdraws it sooner.
                    --ttl takes seconds, or a number with s, m, h or d.

                    Example:
                      journal members invite -C boards/sketch --role draw --label Carol \\
                        --url https://draw.example.org --ttl 1d
                    """)
            @OptionGroup var options: JournalOptions
            @OptionGroup var signing: SigningKey
            @Option(help: "view, draw, relay or admin: what the invited person becomes.")
            var role: String = "draw"
            @Option(help: "The invited person's name, shown by `members list` and `history`.")
            var label: String
            @Option(help: "How long the invitation can be redeemed: 3600, 30m, 8h, 7d.")
            var ttl: String = "1d"
            @Option(help: ArgumentHelp("The relay's address, to print the whole link (else only its path).", valueName: "url"))
            var url: String?
            @Flag(help: "Print one JSON object: key, expires, link.")
            var json = false

            func validate() throws {
                guard MembershipStatement.Role(name: role) != nil else { throw ValidationError("--role must be view, draw, relay or admin") }
                guard !label.isEmpty, label.utf8.count <= FormatV4.maxLabelBytes, !label.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                    throw ValidationError("--label is one line of 1 to \(FormatV4.maxLabelBytes) bytes: the invited person's name")
                }
                guard JournalCommand.Token.seconds(ttl) != nil else { throw ValidationError("--ttl must be seconds, or a number with s, m, h or d (8h)") }
            }

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    let signer = try signing.key(for: journal)
                    let role = MembershipStatement.Role(name: role)!
                    let expires = ProcessInfoLite.wallClockMilliseconds() + JournalCommand.Token.seconds(ttl)! * 1000
                    let (found, key) = try Members.edit { () throws(MembershipError) in
                        try MembershipEditor(journal: journal, key: signer).invite(role: role, label: label, expires: expires)
                    }
                    let invitation = Invitation(key: key, board: found.statement.board, lamport: found.statement.lamport, role: role)
                    let board = String(journal.root.split(separator: "/").last ?? "")
                    let path = "/boards/" + Members.percentEncoded(board) + "#invite=" + invitation.code
                    let link = (url.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } ?? "") + path
                    if json {
                        Terminal.write(#"{"key":""# + Hex.bytes(key.publicKey) + #"","role":""# + role.description + #"","label":"#
                            + JSONText.quoted(label) + #","expires":"# + String(expires) + #","link":"# + JSONText.quoted(link) + "}\n")
                    } else {
                        Terminal.write("""
                            invited \(label) as \(role) until \(WallClock.localDescription(expires)) (invitation key \(Hex.bytes(key.publicKey)));
                            send this link, a secret, to \(label) alone\(url == nil ? " (put the relay's address in front: --url)" : ""):
                            \(link)
                            `journal sync` carries the invitation to the relay's store; `journal members revoke \(Hex.bytes(key.publicKey).prefix(12))…` withdraws it

                            """)
                    }
                    Terminal.flush()
                }
            }
        }

        struct Revoke: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "revoke",
                abstract: "End a key's membership for good.",
                discussion: """
                    Its events up to the last one this journal holds keep counting; the ones it
                    signs after do not, on any machine, whatever their clocks. A revoked key is
                    never a member again: its holder makes a new key to be granted.

                    Example:
                      journal members revoke -C board 3b6a27bc…
                    """)
            @OptionGroup var options: JournalOptions
            @OptionGroup var signing: SigningKey
            @Argument(help: "The member's public key: 64 hex digits.")
            var key: String

            func validate() throws {
                guard Members.publicKey(key) != nil else { throw ValidationError("the key must be 64 hex digits") }
            }

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    let signer = try signing.key(for: journal)
                    let subject = Members.publicKey(key)!
                    let found = try Members.edit { () throws(MembershipError) in
                        try MembershipEditor(journal: journal, key: signer).revoke(subject)
                    }
                    Terminal.write("revoked \(Hex.bytes(subject)): its events after seq \(found.statement.drawCut) no longer count\n")
                    Terminal.flush()
                }
            }
        }

        struct Rotate: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "rotate",
                abstract: "Hand the signing key's role and label to a new key.",
                discussion: """
                    For a key that may be exposed, or to move to a new machine: the new key draws
                    as a new replica; the old key's events after those this journal holds stop
                    counting.

                    Example:
                      journal members keygen ~/keys/alice-2.key     # prints 9f1e44d0…
                      journal members rotate -C board 9f1e44d0… --key ~/keys/alice.key
                    """)
            @OptionGroup var options: JournalOptions
            @OptionGroup var signing: SigningKey
            @Argument(help: "The new public key: 64 hex digits.")
            var newKey: String

            func validate() throws {
                guard Members.publicKey(newKey) != nil else { throw ValidationError("the new key must be 64 hex digits") }
            }

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    let signer = try signing.key(for: journal)
                    let subject = Members.publicKey(newKey)!
                    _ = try Members.edit { () throws(MembershipError) in
                        try MembershipEditor(journal: journal, key: signer).rotate(to: subject)
                    }
                    Terminal.write("rotated \(Hex.bytes(signer.publicKey)) to \(Hex.bytes(subject))\n")
                    Terminal.flush()
                }
            }
        }

        struct Import: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "import",
                abstract: "Grant every key of the local trust list (draw; relay for --host entries).",
                discussion: """
                    Moves a journal from a per-machine trust list to membership that travels with
                    the board. Keys already members are left as they are.

                    Example:
                      journal members import -C board
                    """)
            @OptionGroup var options: JournalOptions
            @OptionGroup var signing: SigningKey

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    let signer = try signing.key(for: journal)
                    guard let list = try TrustList.load(journal) else {
                        throw CLIError("\(journal.root) has no trust list (local/trust): nothing to import", code: 1)
                    }
                    let current = SegmentSet.load(journal)
                    let membership = current.membership ?? Membership.fold(current.statements)
                    var granted = 0
                    for entry in list.entries where membership.member(entry.publicKey) == nil {
                        _ = try Members.edit { () throws(MembershipError) in
                            try MembershipEditor(journal: journal, key: signer).grant(
                                entry.publicKey, role: entry.mayHost ? .relay : .draw, label: String(entry.label.utf8.prefix(FormatV4.maxLabelBytes)) ?? "")
                        }
                        granted += 1
                    }
                    Terminal.write("granted \(granted) key(s) of local/trust; it is ignored from now on (delete it with `journal trust remove --all`)\n")
                    Terminal.flush()
                }
            }
        }

        struct Keygen: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "keygen",
                abstract: "Make a key file (0600) to administer boards from outside their journals.",
                discussion: """
                    Prints the public key. Keep a copy of the file somewhere safe: it is the
                    only way to administer the boards it is admin of.

                    Example:
                      journal members keygen ~/.config/strokejournal/admin.key
                    """)
            @Argument(help: "Where to write the key (never over an existing file).")
            var file: String

            func run() throws {
                try reportingErrors {
                    let key = try Members.edit { () throws(MembershipError) in try KeyFile.create(file) }
                    Terminal.write(Hex.bytes(key.publicKey) + "\n")
                    Terminal.flush()
                }
            }
        }

        /// `1...`, for seqs counted from 1 on; `1...40,52...` and so on.
        static func text(_ admitted: SeqRanges?) -> String {
            guard let ranges = admitted?.ranges, !ranges.isEmpty else { return "none" }
            return ranges.map { range in
                range.upperBound == FormatV1.maxSeq - 1 ? "\(range.lowerBound)..." : SeqRanges.text([range])
            }.joined(separator: ",")
        }

        struct Pin: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "pin",
                abstract: "Hold this journal to one board's genesis when its files hold rival ones.",
                discussion: """
                    A journal that created a board, or synced it in while it had one genesis, is
                    pinned already (local/board). One that met the board with rival geneses in
                    it (someone planted a board of their own) pins none until a person says
                    which board is theirs: ask its owner for the id `journal members list`
                    prints.

                    Example:
                      journal members pin -C board 4255f84e0d96c823cc75c2148c717309
                    """)
            @OptionGroup var options: JournalOptions
            @Argument(help: "The board's id: 32 hex digits, as `journal members list` prints it.")
            var board: String

            func validate() throws {
                guard board.count == 32, Hex.decode(board.lowercased()) != nil else { throw ValidationError("a board id is 32 hex digits") }
            }

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    let id = UUIDBits(bytes: Hex.decode(board.lowercased())!)
                    let geneses = Membership.geneses(MembershipLog.found(replicasPath: journal.replicasPath))
                    guard let pin = geneses.first(where: { $0.board == id }) else {
                        throw CLIError("\(journal.root) holds no genesis of board \(id.compactHex)"
                                       + (geneses.isEmpty ? " (it has no membership: sync it first)" : "; it holds: " + geneses.map(\.board.compactHex).joined(separator: ", ")), code: 1)
                    }
                    do throws(IOError) { try journal.saveBoardPin(pin) } catch { throw CLIError(JournalError.io(error)) }
                    Terminal.write("pinned board \(id.compactHex) (founder \(Hex.bytes(pin.founder)))\n")
                    Terminal.flush()
                }
            }
        }

        static func publicKey(_ text: String) -> [UInt8]? {
            guard text.count == 64, let bytes = Hex.decode(text.lowercased()) else { return nil }
            return bytes
        }

        /// Runs a change, turning a refusal into the CLI's error with its exit code.
        /// A board name as a link's path segment spells it.
        static func percentEncoded(_ text: String) -> String {
            var out = ""
            for byte in text.utf8 {
                if (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "-._~".utf8.contains(byte) {
                    out.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    out += "%" + Hex.string(UInt64(byte), digits: 2, uppercase: true)
                }
            }
            return out
        }

        static func edit<T>(_ body: () throws(MembershipError) -> T) throws -> T {
            do throws(MembershipError) { return try body() } catch {
                switch error {
                case .io(let io): throw CLIError(JournalError.io(io))
                case .locked: throw CLIError(error.description, code: CLIError.locked)
                case .badKeyFile: throw CLIError(error.description, code: 65)
                default: throw CLIError(error.description, code: 1)
                }
            }
        }
    }
}

private extension String {
    func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
