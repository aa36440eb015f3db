import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalKeys
import JournalPlatform
import JournalStorage

extension JournalCommand {
    struct Trust: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "trust",
            abstract: "Say whose signed segments this journal accepts (its trust list).",
            discussion: """
                A journal made by `journal init` has a key (local/replica.key, never synced) and
                signs every segment it seals. Without a trust list a journal is open: it applies
                every valid segment, signed or not. Once a list exists (the first `trust add`),
                it applies only segments sealed by its own key or a listed one; unsigned,
                unknown or badly signed segments are quarantined (kept, reported by `verify`,
                never applied), the same way on every machine with the same list.

                A relay's board is a journal too: give it a list with -C DATA/BOARD, and trust
                other relays' keys with --host (they sign what their native clients sent).

                Examples:
                  journal trust key -C alice                # print alice's key, to send to bob
                  journal trust add -C bob 3b6a27bc…  --label alice
                  journal trust add -C boards/sketch 9f1e…  --host --label relay-b
                  journal trust list -C bob --json
                  journal trust remove -C bob 3b6a27bc…
                  journal trust remove -C bob --all         # delete the list: an open journal again
                """,
            subcommands: [Key.self, List.self, Add.self, Remove.self])

        struct Key: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "key",
                abstract: "Print this journal's public key (what others add to their trust list).",
                discussion: """
                    Example:
                      journal trust key -C board
                    """)
            @OptionGroup var options: JournalOptions
            @Flag(help: "Print one JSON object: {\"replica\":…,\"key\":… or null}.")
            var json = false

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    let identity = try journal.loadIdentity()
                    let (key, replica) = (identity.key, identity.replica)
                    if json {
                        var object = JSONObject()
                        object.add("replica", replica.hex)
                        object.add("key", key.map { Hex.bytes($0.publicKey) })
                        Terminal.write(object.text + "\n")
                    } else if let key {
                        Terminal.write(Hex.bytes(key.publicKey) + "\n")
                    } else {
                        throw CLIError("\(journal.root) has no key (made before keys, or with a given replica id): it seals unsigned segments, which a journal with a trust list quarantines; record into a journal made by `journal init` to sign", code: 1)
                    }
                    Terminal.flush()
                }
            }
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "Print the trust list.",
                discussion: """
                    Example:
                      journal trust list -C board --json
                    """)
            @OptionGroup var options: JournalOptions
            @Flag(help: "Print one JSON object: {\"open\":…,\"own\":…,\"keys\":[{\"key\",\"replica\",\"role\",\"label\"}]}.")
            var json = false

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    let list = try TrustList.load(journal)
                    let own = journal.replicaKey().map { Hex.bytes($0.publicKey) }
                    if json {
                        var object = JSONObject()
                        object.add("open", list == nil)
                        object.add("own", own)
                        object.add("keys", objects: (list?.entries ?? []).map { entry in
                            var item = JSONObject()
                            item.add("key", Hex.bytes(entry.publicKey))
                            item.add("replica", entry.replica.hex)
                            item.add("role", entry.mayHost ? "host" : "replica")
                            item.add("label", entry.label)
                            return item
                        })
                        Terminal.write(object.text + "\n")
                    } else if let list {
                        Terminal.write("trusted: this journal's own key" + (own.map { " (\($0))" } ?? " (none: it has no key)") + "\n")
                        for entry in list.entries {
                            Terminal.write(Hex.bytes(entry.publicKey) + "  replica \(entry.replica.hex)" + (entry.mayHost ? "  and as host" : "")
                                           + (entry.label.isEmpty ? "" : "  " + entry.label) + "\n")
                        }
                    } else {
                        Terminal.write("no trust list: an open journal (every valid segment is applied, signed or not)\n")
                    }
                    Terminal.flush()
                }
            }
        }

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add",
                abstract: "Trust a key (its segments are applied); makes the list if there is none.",
                discussion: """
                    Example:
                      journal trust add -C board 3b6a27bc… --label alice
                    """)
            @OptionGroup var options: JournalOptions
            @Argument(help: "The public key: 64 hex digits, as `journal trust key` prints it.")
            var key: String
            @Flag(help: "Also accept what this key seals as a relay's host (its native clients' replicas).")
            var host = false
            @Option(help: "A name for people reading the list.")
            var label: String = ""

            func validate() throws {
                guard Trust.publicKey(key) != nil else { throw ValidationError("the key must be 64 hex digits (`journal trust key` prints one)") }
                guard !label.contains("\n") else { throw ValidationError("--label must be one line") }
            }

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    // Without a key its own sealed segments could not be told from forgeries of
                    // them, and a list would quarantine them.
                    guard try journal.loadIdentity().key != nil else {
                        throw CLIError("\(journal.root) has no key (made before keys, or with a given replica id), so a trust list would quarantine its own sealed segments: record into a journal made by `journal init` (and merge this one into it) to use trust lists", code: 1)
                    }
                    var list = try TrustList.load(journal) ?? TrustList()
                    let publicKey = Trust.publicKey(key)!
                    list.add(TrustList.Entry(publicKey: publicKey, mayHost: host, label: label))
                    do throws(IOError) { try list.save(to: journal) } catch { throw CLIError(JournalError.io(error)) }
                    Terminal.write("trusted \(Hex.bytes(publicKey)) (replica \(ReplicaKey.replica(forPublicKey: publicKey).hex)\(host ? ", and as a host" : ""))\n")
                    Terminal.flush()
                }
            }
        }

        struct Remove: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "remove",
                abstract: "Stop trusting a key, or delete the list (--all).",
                discussion: """
                    Segments the key sealed are quarantined from the next read on; nothing is
                    deleted. With --all the journal is open again.

                    Examples:
                      journal trust remove -C board 3b6a27bc…
                      journal trust remove -C board --all
                    """)
            @OptionGroup var options: JournalOptions
            @Argument(help: "The public key to remove: 64 hex digits.")
            var key: String?
            @Flag(help: "Delete the whole list: the journal applies every valid segment again.")
            var all = false

            func validate() throws {
                guard (key != nil) != all else { throw ValidationError("name a key, or say --all") }
                if let key, Trust.publicKey(key) == nil { throw ValidationError("the key must be 64 hex digits") }
            }

            func run() throws {
                try reportingErrors {
                    let journal = try options.open()
                    guard var list = try TrustList.load(journal) else {
                        throw CLIError("\(journal.root) has no trust list: nothing to remove", code: 1)
                    }
                    if all {
                        do throws(IOError) { try FileSystem.remove(journal.trustPath) } catch { throw CLIError(JournalError.io(error)) }
                        Terminal.write("deleted the trust list: \(journal.root) is an open journal again\n")
                    } else {
                        let publicKey = Trust.publicKey(key!)!
                        guard list.remove(publicKey: publicKey) else {
                            throw CLIError("\(Hex.bytes(publicKey)) is not in the trust list of \(journal.root)", code: 1)
                        }
                        do throws(IOError) { try list.save(to: journal) } catch { throw CLIError(JournalError.io(error)) }
                        Terminal.write("no longer trusted: \(Hex.bytes(publicKey))\n")
                    }
                    Terminal.flush()
                }
            }
        }

        static func publicKey(_ text: String) -> [UInt8]? {
            guard text.count == 64, let bytes = Hex.decode(text.lowercased()) else { return nil }
            return bytes
        }
    }
}
