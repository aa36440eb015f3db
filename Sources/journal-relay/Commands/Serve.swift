import ArgumentParser
import JournalCluster
import JournalCommandLine
import JournalFormat
import JournalKeys
import JournalPlatform
import JournalRelay
import JournalServe
import JournalStorage
import JournalSync
import Logging

extension RelayCommand {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Relay live drawing between clients over WebSockets, recording every stroke.",
            discussion: """
                Serves many boards, each an ordinary journal DIR/<board> (created on first
                use; sync, merge and every command work on it). A board's socket is
                ws://HOST:PORT/boards/<board>/ws, <board> being 1 to 64 of A-Z a-z 0-9 _ -.

                A client sends text frames, each one line that 'journal record' accepts; the
                relay records it, acknowledges it once it is fsynced ({"type":"ack","upTo":N},
                N counting the client's frames) and sends its events to the board's other
                clients. A refused frame gets {"type":"error","frame":N,"message":…} and the
                connection stays open. A client that joins first gets the whole board, then
                {"type":"caughtUp","events":N}, then live events. docs/PROTOCOL.md has the rest.

                A browser at http://HOST:PORT/boards/<board> gets a drawing page on that board.

                A board nobody is connected to is closed after --close-idle-after seconds (60):
                sealed, so 'journal sync' publishes all of it, and unlocked; the next
                connection opens it again.

                At most --max-boards boards are open at once (256): past it, the board idle
                the longest is closed to make room, and a new board is refused while every
                open one has a connection. At most --max-connections connections (4096) are
                served at once; past it a new one is refused with an error message. Both are
                lowered, with a note, when the descriptor limit (ulimit -n, raised to its hard
                limit at start) cannot hold them.

                Access: a client presents a token (journal token) in its hello or in an
                Authorization: Bearer header; its scope says what it may do on which boards:
                view (catch up and watch), draw (also send), admin (also create a board).
                Without a token the connection is refused. The relay's signing key is made at
                first start in DIR/.relay/ (owner only). --open serves everyone instead, with
                no token: anyone who reaches the port may create, read and draw on any board.
                Use it for a demo or on a machine of your own, never on a shared network.

                Membership: a board this relay creates (without --open) gets membership, whose
                first admin is the relay's host key (--host-key FILE, else DIR/.relay/host.key,
                made at first start). Who may draw is then in the board's own signed files,
                the same on every machine that syncs it (journal members). That key makes the
                board journal's own key (its text-mode writer's) an admin, which grants draw to
                each native client's key that came with a draw token ("token <id>"); an admin
                invites people (journal members invite -C DIR/BOARD --key DIR/.relay/host.key).
                Boards created open before, or with --open, stay open.

                A cluster (docs/DEPLOY.md): several relays behind a load balancer that sends
                each board to one of them, all with --share STORE. A board is synced with
                STORE/<board> before it opens (so a relay taking it over from a lost one
                starts from what that one published), every --share-interval seconds while
                open, and once closed. With --ack local (the default) acknowledged means
                fsynced on this relay's disk: what it had not published yet reaches the store
                when it starts again (a native client's events, when the board next opens
                on it), and is lost if its disk is lost. With --ack shared a relay
                acknowledges an event only once its segment is in the store (it seals and
                publishes first, a round at a time): losing the disk loses nothing
                acknowledged, and acks wait for the store. With --lease etcd://HOST:PORT a
                board has one owner at a time: a relay serves it only while it holds the
                board's lease in etcd, refuses it (not-owner) while another does, and stops
                acknowledging once its own lease may have lapsed (a freeze, a lost network).

                Ctrl-C or SIGTERM stop it: boards are sealed and their locks released.

                Examples:
                  journal serve --port 8080 --data boards
                  journal token --data boards --board sketch --scope draw --ttl 8h
                  journal serve --port 8080 --data boards --open     # no tokens: local use only
                  journal serve --port 8081 --data node1 --share s3://boards/cluster --ack shared
                  journal serve --port 8081 --data node1 --share /mnt/boards --lease etcd://10.0.0.21:2379 --node node1
                """)

        @Option(help: "The TCP port to listen on (0: any free port, printed at start).") var port: Int
        @Option(help: ArgumentHelp("The folder of the boards' journals (created if missing).", valueName: "dir"))
        var data: String
        @Option(help: ArgumentHelp("The address to listen on; 0.0.0.0 serves every network.", valueName: "address"))
        var bind = "127.0.0.1"
        @Option(help: ArgumentHelp(
            "Close a board nobody has been connected to for this many seconds (sealed, its lock released for sync); 0: never.",
            valueName: "seconds"))
        var closeIdleAfter: Double = 60
        @Option(help: ArgumentHelp(
            "Close a connection whose client has acknowledged none of a pending write for this many seconds (it stopped reading).",
            valueName: "seconds"))
        var writeTimeout: Double = 30
        @Option(help: ArgumentHelp("Boards open at once (each costs threads and memory); the longest idle makes room.", valueName: "n"))
        var maxBoards = RelayLimits().maxOpenBoards
        @Option(help: ArgumentHelp("Connections served at once, over all boards; more are refused.", valueName: "n"))
        var maxConnections = RelayLimits().maxConnections
        @Option(help: ArgumentHelp("Connections at once that present the same token; more are refused.", valueName: "n"))
        var maxConnectionsPerToken = RelayLimits().maxConnectionsPerToken
        @Option(help: ArgumentHelp("Replicas a board may hold and still take on a new native client's (over its life); a new one past it is refused.", valueName: "n"))
        var maxNativeReplicas = RelayLimits().maxNativeReplicasPerBoard
        @Option(help: ArgumentHelp("Events a token's connections may send per second, together (a connection without a token: alone), after a burst of ten seconds' worth; past it their frames are read only as fast (0: no bound). One drawer cannot flood a board's other clients.", valueName: "n"))
        var maxEventsPerSecond = RelayLimits().maxEventsPerSecond ?? 0
        @Option(help: ArgumentHelp("Seconds a socket has to send its whole request head (request line and headers) before it is closed: sockets that never finish a request cannot keep honest clients out.", valueName: "seconds"))
        var requestHeadTimeout = RelayLimits().requestHeadSeconds
        @Option(help: ArgumentHelp("Sockets from one address still sending their request head; a further one is answered 503 and closed (a proxy that forwards whole requests, as HAProxy does, never reaches it).", valueName: "n"))
        var maxUnfinishedPerAddress = RelayLimits().maxUnfinishedRequestsPerAddress
        @Option(help: ArgumentHelp(
            "What the relay logs on stderr: trace, debug, info (connections and boards opened and closed), notice (start and stop), warning, error, critical.",
            valueName: "level"))
        var logLevel: String = "info"
        @Flag(help: "Serve without tokens: anyone who reaches the port may create, read and draw on any board.")
        var open = false
        @Option(help: ArgumentHelp(
            "A cluster's shared store, as 'journal sync' takes a target (a folder, host:path, s3://bucket/path, rclone:REMOTE:path): each board is synced with STORE/<board> before it opens, every --share-interval seconds while open, and once closed.",
            valueName: "store"))
        var share: String?
        @Option(help: ArgumentHelp("With --share: seconds between two syncs of an open board.", valueName: "seconds"))
        var shareInterval: Double = 2
        @Option(help: ArgumentHelp(
            "When an event is acknowledged: local (once fsynced on this relay's disk) or shared (once its segment is in the --share store too: losing this disk loses nothing acknowledged).",
            valueName: "local|shared"))
        var ack: AckMode = .local
        @Option(help: ArgumentHelp(
            "Seal native clients' replicas, as their host, with the key in this file (`journal members keygen FILE`), on every board, and found new boards' membership with it (default without --open: DIR/.relay/host.key): one key for a cluster, kept outside --data, so that a node that lost its disk serves and seals as before.",
            valueName: "file"))
        var hostKey: String?
        @Option(help: ArgumentHelp(
            "With --share: one owner per board, through etcd's v3 JSON gateway at this address (etcd://HOST:PORT). A node serves a board only while it holds the board's lease, refuses it (code not-owner) while another node does, and stops acknowledging once its lease may have lapsed. A node killed outright gives its lease back at once (a bash beside it revokes it); a frozen one keeps it until it lapses (docs/DEPLOY.md, \"One owner per board\").",
            valueName: "etcd://host:port"))
        var lease: String?
        @Option(help: ArgumentHelp("With --lease: this node's name, as other nodes' refusals show it (default: HOSTNAME:PORT).", valueName: "name"))
        var node: String?
        @Option(help: ArgumentHelp("With --lease: seconds a lease lives without a renewal (renewed every quarter of it); a node stops acknowledging after three quarters. A lost machine's boards move after it: 1 needs an etcd whose --election-timeout is 666 ms or less (etcd grants no less than 1.5 times it, rounded up to a second).", valueName: "seconds"))
        var leaseTtl: Int = 2
        @Flag(help: ArgumentHelp("With --lease: the nodes run behind a balancer that sends each board to one node (HAProxy's balance uri, docs/DEPLOY.md). A board this node took over while its usual node was down is handed back (its clients told not-owner) once the balancer sends the board's clients there again. Leave it off where clients pick a node themselves."))
        var behindBalancer = false

        func validate() throws {
            guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
            guard !data.isEmpty else { throw ValidationError("--data must name a folder") }
            guard Logger.Level(rawValue: logLevel) != nil else {
                throw ValidationError("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard closeIdleAfter >= 0, closeIdleAfter.isFinite else { throw ValidationError("--close-idle-after must be 0 or more seconds") }
            guard writeTimeout > 0, writeTimeout.isFinite else { throw ValidationError("--write-timeout must be more than 0 seconds") }
            guard maxBoards >= 1 else { throw ValidationError("--max-boards must be 1 or more") }
            guard maxConnections >= 1 else { throw ValidationError("--max-connections must be 1 or more") }
            guard maxNativeReplicas >= 1 else { throw ValidationError("--max-native-replicas must be 1 or more") }
            guard maxEventsPerSecond >= 0 else { throw ValidationError("--max-events-per-second must be 0 (no bound) or more") }
            guard requestHeadTimeout >= 0.05, requestHeadTimeout <= 3600 else { throw ValidationError("--request-head-timeout must be between 0.05 and 3600 seconds") }
            guard maxUnfinishedPerAddress >= 1 else { throw ValidationError("--max-unfinished-per-address must be 1 or more") }
            guard maxConnectionsPerToken >= 1 else { throw ValidationError("--max-connections-per-token must be 1 or more") }
            if ack == .shared && share == nil { throw ValidationError("--ack shared needs --share STORE: acknowledged means in that store") }
            guard shareInterval >= 0.1, shareInterval <= 3600 else { throw ValidationError("--share-interval must be between 0.1 and 3600 seconds") }
            if lease != nil && share == nil { throw ValidationError("--lease needs --share STORE: a board's next owner opens it from the store") }
            if behindBalancer && lease == nil { throw ValidationError("--behind-balancer needs --lease: a board is handed back through the lease service") }
            guard (1...60).contains(leaseTtl) else { throw ValidationError("--lease-ttl must be between 1 and 60 seconds") }
            if let lease {
                do throws(EtcdLeases.LeaseAddressError) { _ = try EtcdLeases(address: lease, node: "check") } catch { throw ValidationError("--lease \(error)") }
            }
            if let share {
                let target: SyncTarget
                do throws(SyncError) { target = try SyncTarget(parsing: share) } catch { throw ValidationError("--share: \(error)") }
                if case .directory(let path) = target, !FileSystem.isDirectory(path) {
                    throw ValidationError("--share \(path): no such folder (make it first: every relay of the cluster must see the same one)")
                }
            }
        }

        func run() async throws {
            try await reportingErrors {
                // A relay runs for days and opens and closes boards: what it frees must go back.
                Allocator.returnFreedMemoryPromptly()
                let asked = RelayLimits(maxOpenBoards: maxBoards, maxConnections: maxConnections, maxConnectionsPerToken: maxConnectionsPerToken,
                                       maxNativeReplicasPerBoard: maxNativeReplicas, maxEventsPerSecond: maxEventsPerSecond > 0 ? maxEventsPerSecond : nil,
                                       requestHeadSeconds: requestHeadTimeout, maxUnfinishedRequestsPerAddress: maxUnfinishedPerAddress)
                let descriptors = ProcessInfoLite.raiseDescriptorLimit()
                let limits = asked.fitting(descriptorLimit: descriptors)
                if limits != asked {
                    Terminal.standardError("journal: the descriptor limit is \(descriptors) (ulimit -n): serving at most \(limits.maxOpenBoards) boards and \(limits.maxConnections) connections instead of \(asked.maxOpenBoards) and \(asked.maxConnections)\n")
                }
                let access: RelayAccess
                if open {
                    access = .open
                } else {
                    do throws(AccessError) {
                        access = .tokens(try RelayKeys.openOrCreate(dataDirectory: data))
                    } catch { throw CLIError(error.description, code: CLIError.ioError) }
                }
                // Without --open, boards created here get membership, founded by this key: by
                // default kept beside the token key (a cluster copies `DATA/.relay/` to every
                // node), and made at first start.
                let keyFile = hostKey ?? (open ? nil : FileSystem.join(FileSystem.join(data, ".relay"), "host.key"))
                var sealingKey: ReplicaKey?
                if let keyFile {
                    do throws(MembershipError) {
                        sealingKey = hostKey == nil && !FileSystem.exists(keyFile) ? try KeyFile.create(keyFile) : try KeyFile.read(keyFile)
                    } catch { throw CLIError(error.description, code: 65) }
                }
                var leases: EtcdLeases?
                if let lease {
                    do throws(EtcdLeases.LeaseAddressError) {
                        leases = try EtcdLeases(address: lease, node: node ?? (ProcessInfoLite.hostName + ":" + String(port)), ttlSeconds: leaseTtl,
                                                revokesWhenProcessEnds: true, followsBalancer: behindBalancer)
                    } catch { throw ValidationError("--lease \(error)") }
                    if let problem = leases?.revocationProblem { Terminal.standardError("journal: warning: \(problem)\n") }
                }
                leases?.start()
                defer { leases?.stop() }
                let relay: Relay
                do throws(RelayError) { relay = try Relay(
                    dataDirectory: data, access: access, idleBoardSeconds: closeIdleAfter > 0 ? closeIdleAfter : nil,
                    limits: limits, sharing: share.map { SyncedBoardSharing(store: $0, interval: shareInterval) }, ackMode: ack,
                    hostKey: sealingKey, foundsBoards: !open, leases: leases) } catch { throw CLIError(error.description, code: CLIError.ioError) }
                var logger = Logger(label: "journal-serve")
                if let level = Logger.Level(rawValue: logLevel) { logger.logLevel = level }
                let server = RelayServer(relay: relay, host: bind, port: port, writeStallSeconds: writeTimeout, logger: logger)
                let (bind, data, founder) = (self.bind, self.data, sealingKey)
                do {
                    try await server.run(handlingSignals: true) { port in
                        Terminal.write("journal: serving \(data) on ws://\(bind):\(port)/boards/<board>/ws, drawing page http://\(bind):\(port)/boards/<board>\n")
                        if access.isOpen {
                            Terminal.write("journal: open (--open): anyone who reaches this port may create, read and draw on any board\n")
                        } else {
                            Terminal.write("journal: clients need a token: journal token --data \(data) --board BOARD --scope draw --ttl 8h\n")
                            if let founder, let keyFile {
                                Terminal.write("journal: boards created here get membership, administered by host key \(Hex.bytes(founder.publicKey)) (\(keyFile)): journal members invite -C \(data)/BOARD --key \(keyFile) --role draw --label NAME\n")
                            }
                        }
                        Terminal.flush()
                    }
                } catch {
                    let said = "\(error)"
                    if said.contains("errno: 98") || said.contains("Address already in use") {
                        throw CLIError("port \(port) on \(bind) is in use (another relay, or another program, listens there): choose another --port, or --port 0 for any free one (printed at start)", code: CLIError.ioError)
                    }
                    if said.contains("errno: 99") || said.contains("Cannot assign requested address") {
                        throw CLIError("\(bind) is no address of this machine: --bind takes one of its own (127.0.0.1, 0.0.0.0 for every network)", code: CLIError.ioError)
                    }
                    if said.contains("errno: 13") || said.contains("Permission denied") {
                        throw CLIError("port \(port) needs privileges this user lacks (ports under 1024): choose a --port of 1024 or more", code: CLIError.ioError)
                    }
                    throw CLIError("serving on \(bind):\(port) failed: \(error)", code: CLIError.ioError)
                }
            }
        }
    }
}

extension AckMode: ExpressibleByArgument {}
