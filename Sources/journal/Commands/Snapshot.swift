import ArgumentParser
import JournalCommandLine
import JournalFormat
import JournalPlatform
import JournalReplay

extension JournalCommand {
    struct SnapshotCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "snapshot",
            abstract: "Save the folded drawing so that later opens replay only newer events.",
            discussion: """
                Snapshots are local caches in local/snapshots/: never synced, ignored when damaged,
                rebuilt when missing. Opening uses one only when the result is exactly a full
                replay's. One is also taken automatically after a replay of at least \(SnapshotStore.automaticThreshold)
                events beyond the newest snapshot (when they are at least a quarter of the journal).

                Example:
                  journal snapshot -C board && journal digest -C board
                """)

        @OptionGroup var options: JournalOptions
        @Flag(help: "Print one JSON object (keys: path, bytes, events, milliseconds).")
        var json = false

        func run() throws {
            try reportingErrors {
                let journal = try options.open()
                let started = ProcessInfoLite.monotonicSeconds()
                let info = try SnapshotStore.create(journal)
                let seconds = ProcessInfoLite.monotonicSeconds() - started
                Terminal.write(json
                    ? snapshotJSON(info, seconds: seconds)
                    : "snapshot of \(Wording.counted(info.events, "event")): \(info.path) (\(Wording.counted(info.bytes, "byte"))) in \(formatSeconds(seconds))\n")
                Terminal.flush()
            }
        }

        private func snapshotJSON(_ info: SnapshotStore.Info, seconds: Double) -> String {
            var object = JSONObject()
            object.add("path", info.path)
            object.add("bytes", info.bytes)
            object.add("events", info.events)
            object.add("milliseconds", Int((seconds * 1000).rounded()))
            return object.text + "\n"
        }
    }
}
