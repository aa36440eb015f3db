import ArgumentParser
import JournalCommandLine
import JournalPlatform
import JournalStorage
import JournalSync

extension JournalCommand {
    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract: "Two-way sync with a shared folder, an rsync remote or an object store.",
            discussion: """
                Seals what this journal recorded, publishes the segments the target lacks and
                imports (after verifying) the segments this journal lacks. Idempotent: a second
                run with nothing new reads no segment and changes no file. Segments are never
                overwritten on either side.

                TARGET is a folder (NFS, Syncthing, Dropbox, USB stick), anything rsync
                reaches (host:path, user@host:path, rsync://host/module/path), or an object
                store through rclone (apt-get install rclone): s3://bucket/path for any S3
                service, with the keys and endpoint in the environment as AWS tools take them
                (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL), or
                rclone:REMOTE:path for a remote of your rclone configuration. Keys never go on
                the command line.

                With --watch it keeps syncing until interrupted (Ctrl-C or SIGTERM finish the
                round in progress, then exit 0): a round starts when a segment appears in this
                journal (a recorder or a drawing app sealed one) or in a folder TARGET (another
                machine published), and at least every --interval seconds (the only trigger for
                an rsync TARGET). Only rounds that change something print a line (with --json,
                one report object per such round). Another sync holding the journal skips a
                round; an unreachable target is reported once and retried.

                Examples:
                  journal sync -C board /mnt/shared/board
                  journal sync -C board alice@studio:boards/poster --rsh 'ssh -p 2222'
                  journal sync -C board /mnt/shared/board --watch
                  AWS_ENDPOINT_URL=https://s3.example.net journal sync -C board s3://boards/poster
                  journal sync -C board alice@studio:boards/poster --watch --interval 10
                """)

        @OptionGroup var options: JournalOptions
        @Argument(help: "The shared folder, rsync remote, s3://bucket/path or rclone:REMOTE:path.") var target: String
        @Option(help: ArgumentHelp("Remote shell for rsync (passed as rsync's -e).", valueName: "command"))
        var rsh: String?
        @Option(help: ArgumentHelp("How to reach TARGET: auto (host:path means rsync), folder, or rsync (use rsync even for a local path).", valueName: "auto|folder|rsync"))
        var via: Via = .auto
        @Flag(help: "Do not seal the open segment first (publish only what is already sealed).")
        var noSeal = false
        @Flag(help: "Do not compact first (runs of small sealed segments are then published as they are).")
        var noCompact = false
        @Flag(help: "Start a new shared board at TARGET even if it is missing or holds other files.")
        var create = false
        @Flag(help: "Print the reconcile report as one JSON object.") var json = false
        @Flag(help: "Keep syncing until interrupted: on every new segment here or in a folder TARGET, and every --interval seconds.")
        var watch = false
        @Option(help: ArgumentHelp("With --watch: the longest pause between rounds (default 2).", valueName: "seconds"))
        var interval: Double?

        func validate() throws {
            if target.isEmpty { throw ValidationError("the target is an empty path: name a folder, HOST:PATH or s3://BUCKET/PATH") }
            guard let interval else { return }
            guard watch else { throw ValidationError("--interval goes with --watch") }
            guard interval >= 0.1 && interval <= 86_400 else {
                throw ValidationError("--interval must be between 0.1 and 86400 seconds")
            }
        }

        func run() async throws {
            try await reportingErrors {
                let journal = try options.open()
                let parsed: SyncTarget
                switch via {
                case .auto:
                    do throws(SyncError) { parsed = try SyncTarget(parsing: target) } catch { throw cliError(error) }
                case .folder: parsed = .directory(target)
                case .rsync: parsed = .rsync(target)
                }
                if watch {
                    try await watching(journal: journal, target: parsed)
                    return
                }
                try await printReport(json: json, label: "sync", journal: journal) { engine async throws(SyncError) in
                    try await engine.sync(parsed, rsh: rsh, seal: !noSeal, compact: !noCompact, create: create)
                }
            }
        }

        /// `--watch`: rounds until SIGINT or SIGTERM. Round lines go to standard output (with
        /// `--json`, report objects only), the rest to standard error.
        private func watching(journal: JournalDirectory, target: SyncTarget) async throws {
            let every = interval ?? 2
            let loop = SyncWatch(journal: journal, target: target,
                                 options: .init(interval: every, rsh: rsh, seal: !noSeal, compact: !noCompact, create: create))
            let trap = SignalTrap { _ in loop.stop() }
            defer { trap.cancel() }
            func line(_ text: String) -> String { "\(ProcessInfoLite.localTimeOfDay()) sync: \(text)\n" }
            let json = json
            if !json {
                Terminal.write(line("watching \(target) (on new segments and every \(SyncWatch.Options.wording(every)); Ctrl-C stops)"))
                Terminal.flush()
            }
            do throws(SyncError) {
                try await loop.run { event in
                    switch event {
                    case .synced(let report):
                        if json {
                            Terminal.write(report.json)
                        } else {
                            Terminal.write(line(SyncWatch.summary(of: report)))
                            for problem in report.rejected { Terminal.write("  not imported: \(problem)\n") }
                            for problem in report.notPublished { Terminal.write("  not published: \(problem)\n") }
                        }
                        Terminal.flush()
                    case .busy(let pid):
                        Terminal.standardError(line("\(SyncError.busy(pid: pid)); skipping rounds until it is done"))
                    case .failed(let error):
                        Terminal.standardError(line("\(error); trying again"))
                    case .recovered:
                        Terminal.standardError(line("syncing again"))
                    case .intervalOnly(let why):
                        Terminal.standardError(line(why))
                    }
                }
            } catch {
                throw cliError(error)
            }
            if json { Terminal.standardError(line("stopped")) } else { Terminal.write(line("stopped")) }
            Terminal.flush()
        }
    }

    enum Via: String, ExpressibleByArgument {
        case auto, folder, rsync
    }

    struct Merge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "merge",
            abstract: "Import every valid segment from other journals or shared folders.",
            discussion: """
                Reads SOURCE/replicas/… of each source (a journal, a shared folder, a backup, a
                USB stick, or an object store: s3://bucket/path, rclone:REMOTE:path, as for
                sync) and imports the segments this journal lacks, after verifying them. The
                sources are never written to.

                Examples:
                  journal merge /media/usb/board ~/backup/board --into board
                  journal merge -C board ../laptop-journal
                  journal merge -C board s3://backups/poster
                """)

        @OptionGroup var options: JournalOptions
        @Argument(help: "Journals, shared folders or object stores to import from.") var sources: [String]
        @Option(help: ArgumentHelp("The journal to merge into (created if missing; default: -C).", valueName: "dir"))
        var into: String?
        @Flag(help: "Print the reconcile report as one JSON object.") var json = false

        func validate() throws {
            guard !sources.isEmpty else { throw ValidationError("give at least one SOURCE to merge from") }
        }

        func run() async throws {
            try await reportingErrors {
                let journal: JournalDirectory
                if let into {
                    journal = try JournalDirectory.openOrCreate(at: into)
                } else {
                    journal = try options.open()
                }
                try await printReport(json: json, label: "merge", journal: journal) { engine async throws(SyncError) in
                    try await engine.merge(from: sources)
                }
            }
        }
    }
}

/// Runs a sync or merge with a progress line on a terminal, then prints its report.
private func printReport(
    json: Bool, label: String, journal: JournalDirectory,
    _ operation: (SyncEngine) async throws(SyncError) -> ReconcileReport
) async throws {
    var progress = Progress(label)
    let engine = SyncEngine(journal: journal) { progress.update($0) }
    let report: ReconcileReport
    do throws(SyncError) {
        report = try await operation(engine)
    } catch {
        progress.finish()
        throw cliError(error)
    }
    progress.finish()
    Terminal.write(json ? report.json : report.text)
    Terminal.flush()
}

/// The message and exit code of a sync or merge that failed.
private func cliError(_ error: SyncError) -> CLIError {
    switch error {
    // Another sync on this journal is "locked", like another writer: try again later.
    case .busy: return CLIError(error.description, code: CLIError.locked)
    // A path that names no board is a usage mistake, not an I/O failure.
    case .targetMissing, .sourceMissing, .notABoard, .targetNotADirectory, .sameJournal, .badObjectStoreAddress:
        return CLIError(error.description, code: 64)
    default: return CLIError(error.description, code: CLIError.ioError)
    }
}
