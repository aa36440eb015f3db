#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
@testable import JournalSync
import JournalTestSupport
import Synchronization
import Testing

/// A shared folder is hostile: whoever can write there can plant symlinks and FIFOs,
/// before sync lists the folder or between listing and reading. Sync must never write through
/// a symlink, never read through one, never block on a FIFO, and must say what it refused.
@Suite(.ownThreads) struct HostileFolderTests {
    /// Everything under `path`, by relative name (an empty folder gives []).
    func contents(_ path: String) -> [String] { snapshot(path).keys.sorted() }

    // MARK: Nothing is written through a symlink

    @Test func publishingRefusesASymlinkedReplicaFolderOfTheTarget() async throws {
        let temp = TemporaryDirectory("hostile-publish")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 51)
        try alice.draw(strokes: 3)
        let replica = try alice.journal.identity()
        let shared = temp.path + "/shared"
        let outside = temp.path + "/outside"
        try FileSystem.createDirectory(shared + "/replicas")
        try FileSystem.createDirectory(outside)
        try FileSystem.symlink(outside, at: shared + "/replicas/" + replica.hex)

        let report = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(contents(outside).isEmpty, "a segment was written through the symlink: \(contents(outside))")
        #expect(report.published.isEmpty)
        let refused = report.notPublished.map(\.description)
        #expect(refused.count == 1 && refused[0].contains(shared + "/replicas/" + replica.hex)
                    && refused[0].contains("symbolic link"), "\(refused)")
        #expect(report.hasProblems)
        #expect(report.ignored.contains { $0.file == shared + "/replicas/" + replica.hex && $0.reason.contains("symbolic link") })
        #expect(FileSystem.linkStatus(shared + "/replicas/" + replica.hex)?.kind == .symlink)
    }

    @Test(.enabled(if: hasRsync(), "rsync is not installed (apt-get install rsync)"))
    func publishingOverRsyncRefusesASymlinkedReplicaFolderOfTheTarget() async throws {
        let temp = TemporaryDirectory("hostile-publish-rsync")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 53)
        try alice.draw(strokes: 3)
        var bob = try Machine(temp.path + "/bob", seed: 54)
        try bob.draw(strokes: 2)
        let replica = try alice.journal.identity()
        let board = temp.path + "/board"
        let outside = temp.path + "/outside"
        try FileSystem.createDirectory(board + "/replicas")
        try FileSystem.createDirectory(outside)
        try FileSystem.symlink(outside, at: board + "/replicas/" + replica.hex)
        _ = try await SyncEngine(journal: bob.journal).sync(.rsync(board))

        // Alice's folder on the board is a symlink; Bob's is real and still gets her copy of
        // nothing, while his own segments stay where they are.
        let report = try await SyncEngine(journal: alice.journal).sync(.rsync(board))
        #expect(contents(outside).isEmpty, "a segment was written through the symlink: \(contents(outside))")
        #expect(report.published.allSatisfy { !$0.hasPrefix(replica.hex) }, "\(report.published)")
        #expect(report.notPublished.count == 1 && report.notPublished[0].file.hasSuffix("/replicas/" + replica.hex)
                    && report.notPublished[0].reason.contains("symbolic link"), "\(report.notPublished)")
        let bobHex = try bob.journal.identity().hex
        #expect(report.imported.contains { $0.hasPrefix(bobHex) }, "\(report.imported)")
        #expect(FileSystem.linkStatus(board + "/replicas/" + replica.hex)?.kind == .symlink)
    }

    /// A folder swapped for a symlink between the listing and the push: rsync refuses to write
    /// through it (status 23) and sync reports the refusal instead of failing. What rsync
    /// 3.5 prints then, verbatim apart from the paths.
    @Test func rsyncRefusingASymlinkedFolderIsAReportedRefusalNotAFailure() {
        let sending = ["b2fc33eca68c447c4979999bae7cbe37/00000000000000000001-00000000000000000251-35f4e5deeb9221e9b6d461498188e57a.sjs",
                       "b2fc33eca68c447c4979999bae7cbe37/00000000000000000252-00000000000000000268-3e5acc3022831d8dca61ece6fe66218b.sjs",
                       "ef7e38ea08677a52d63da075da3a269b/00000000000000000001-00000000000000000002-00000000000000000000000000000000.sjs"]
        let messages = """
            rsync: [generator] recv_generator: failed to stat "/tmp/b/replicas/\(sending[0])": Too many levels of symbolic links (40)
            rsync: [generator] recv_generator: failed to stat "/tmp/b/replicas/\(sending[1])": Too many levels of symbolic links (40)
            rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1394) [sender=3.5.0]

            """
        #expect(RsyncTransport.symlinkRefusals(in: messages, sending: sending) == Set(sending.prefix(2)))
        // Any other complaint keeps the failure a failure.
        let mixed = messages + "rsync: [receiver] write failed on \"/tmp/b/replicas/\(sending[2])\": No space left on device (28)\n"
        #expect(RsyncTransport.symlinkRefusals(in: mixed, sending: sending) == nil)
        #expect(RsyncTransport.symlinkRefusals(in: "rsync error: some files/attrs were not transferred (code 23)\n", sending: sending) == nil)
    }

    @Test func publishingRefusesASymlinkedReplicasFolder() async throws {
        let temp = TemporaryDirectory("hostile-replicas")
        defer { temp.remove() }
        var alice = try Machine(temp.path + "/alice", seed: 52)
        try alice.draw(strokes: 3)
        let shared = temp.path + "/shared"
        let outside = temp.path + "/outside"
        try FileSystem.createDirectory(shared)
        try FileSystem.createDirectory(outside)
        try FileSystem.symlink(outside, at: shared + "/replicas")

        let report = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(contents(outside).isEmpty, "written through the symlinked replicas/: \(contents(outside))")
        #expect(report.published.isEmpty)
        #expect(report.notPublished.map(\.file) == [shared + "/replicas"])
        #expect(report.ignored.contains { $0.file == shared + "/replicas" && $0.reason == "symbolic link: never followed" })

        // Merging from such a folder does not read through the symlink either.
        var bob = try Machine(temp.path + "/bob", seed: 53)
        try bob.draw(strokes: 2)
        let bobFolder = temp.path + "/bob-folder"
        try FileSystem.createDirectory(bobFolder)
        _ = try await SyncEngine(journal: bob.journal).sync(.directory(bobFolder))
        try FileSystem.removeDirectory(outside)
        try FileSystem.symlink(bobFolder + "/replicas", at: outside)
        let merged = try await SyncEngine(journal: alice.journal).merge(from: [shared])
        #expect(merged.imported.isEmpty)
    }

    @Test func importingRefusesASymlinkedReplicaFolderOfTheLocalJournal() async throws {
        let temp = TemporaryDirectory("hostile-import")
        defer { temp.remove() }
        var bob = try Machine(temp.path + "/bob", seed: 54)
        try bob.draw(strokes: 3)
        let shared = temp.path + "/shared"
        try FileSystem.createDirectory(shared)
        _ = try await SyncEngine(journal: bob.journal).sync(.directory(shared))

        // The journal folder is itself a synced folder: someone planted replicas/<bob> -> outside.
        let alice = try Machine(temp.path + "/alice", seed: 55)
        let outside = temp.path + "/outside"
        try FileSystem.createDirectory(outside)
        try FileSystem.symlink(outside, at: alice.journal.replicasPath + "/" + (try bob.journal.identity()).hex)

        let report = try await SyncEngine(journal: alice.journal).sync(.directory(shared))
        #expect(contents(outside).isEmpty, "imported through the symlink: \(contents(outside))")
        #expect(report.imported.isEmpty)
        #expect(!report.rejected.isEmpty)
        #expect(report.rejected.allSatisfy { $0.reason.contains("symbolic link") && $0.reason.contains(alice.journal.replicasPath) },
                "\(report.rejected)")
    }

    // MARK: FIFOs and symlinks under segment names are reported, never opened or followed

    @Test func aFIFOAndASymlinkUnderSegmentNamesAreReportedAndSyncFinishes() async throws {
        let temp = TemporaryDirectory("hostile-fifo")
        defer { temp.remove() }
        var bob = try Machine(temp.path + "/bob", seed: 56)
        try bob.draw(strokes: 2)
        let segment = bob.journal.listSealed().sealed[0]
        let folder = temp.path + "/shared/replicas/" + segment.replica.hex
        try FileSystem.createDirectory(folder)
        let fifoName = "00000000000000000100-00000000000000000200-0badf00d.sjs"
        #expect(mkfifo(folder + "/" + fifoName, 0o644) == 0)
        try copyFile(segment.path, temp.path + "/elsewhere.sjs")
        try FileSystem.symlink(temp.path + "/elsewhere.sjs", at: folder + "/" + segment.name.fileName)

        let journal = try Machine(temp.path + "/alice", seed: 57).journal
        let shared = temp.path + "/shared"
        let result = Box<ReconcileReport>()
        let finished = await finishes(within: 10, unblock: { unblockFIFO(folder + "/" + fifoName) }) {
            result.value = try? await SyncEngine(journal: journal).sync(.directory(shared))
        }
        #expect(finished, "sync blocked on the FIFO")
        let report = try #require(result.value)
        #expect(report.imported.isEmpty)
        let ignored = Dictionary(report.ignored.map { (FileSystem.lastComponent(of: $0.file), $0.reason) }, uniquingKeysWith: { a, _ in a })
        #expect(ignored[fifoName] == "not a regular file")
        #expect(ignored[segment.name.fileName] == "symbolic link: never followed")
        #expect(FileSystem.linkStatus(folder + "/" + fifoName)?.kind == .other)
    }

    /// Bob's first sealed segment, published to a fresh shared folder: what a swap attacks.
    func publishedSegment(_ temp: TemporaryDirectory, seed: UInt64) async throws
        -> (shared: String, segment: JournalDirectory.SealedFile, listed: String) {
        var bob = try Machine(temp.path + "/bob", seed: seed)
        try bob.draw(strokes: 2)
        let shared = temp.path + "/shared"
        try FileSystem.createDirectory(shared)
        _ = try await SyncEngine(journal: bob.journal).sync(.directory(shared))
        let segment = bob.journal.listSealed().sealed[0]
        return (shared, segment, shared + "/replicas/" + segment.replica.hex + "/" + segment.name.fileName)
    }

    @Test func aSegmentSwappedForAFIFOAfterListingIsRefusedWithoutBlocking() async throws {
        let temp = TemporaryDirectory("hostile-swap-fifo")
        defer { temp.remove() }
        let (shared, _, listed) = try await publishedSegment(temp, seed: 58)

        let journal = try Machine(temp.path + "/alice", seed: 59).journal
        let result = Box<ReconcileReport>()
        let finished = await finishes(within: 10, unblock: { unblockFIFO(listed) }) {
            // Between the listing and the reads, the listed segment becomes a FIFO.
            let engine = SyncEngine(journal: journal) { step in
                guard step.hasPrefix("fetching") else { return }
                try? FileSystem.remove(listed)
                _ = mkfifo(listed, 0o644)
            }
            result.value = try? await engine.sync(.directory(shared))
        }
        #expect(finished, "sync blocked opening a FIFO that replaced a listed segment")
        let report = try #require(result.value)
        #expect(report.imported.isEmpty)
        #expect(report.rejected.count == 1)
        #expect(report.rejected.first?.reason.contains("not a regular file") == true, "\(report.rejected)")
    }

    @Test func aSegmentSwappedForASymlinkAfterListingIsNotFollowed() async throws {
        let temp = TemporaryDirectory("hostile-swap-link")
        defer { temp.remove() }
        let (shared, segment, listed) = try await publishedSegment(temp, seed: 60)
        try copyFile(segment.path, temp.path + "/elsewhere.sjs")

        let alice = try Machine(temp.path + "/alice", seed: 61)
        let engine = SyncEngine(journal: alice.journal) { step in
            guard step.hasPrefix("fetching") else { return }
            try? FileSystem.remove(listed)
            try? FileSystem.symlink(temp.path + "/elsewhere.sjs", at: listed)
        }
        let report = try await engine.sync(.directory(shared))
        #expect(report.imported.isEmpty, "read a file outside the shared folder through a symlink")
        #expect(report.rejected.first?.reason.contains("symbolic link: never followed") == true, "\(report.rejected)")
        #expect(alice.journal.listSealed().sealed.filter { $0.replica == segment.replica }.isEmpty)
    }
}

/// A value written by another thread, read after it has finished.
final class Box<T>: @unchecked Sendable {
    var value: T?
}

/// Runs `body` in a task of its own. If it has not finished within `seconds` of starting,
/// calls `unblock` (so that a build that hangs fails the test instead of the whole run) and
/// waits for it. The watchdog is a thread, not a task: a `body` blocked in a system call
/// holds a thread of the shared pool, which other tests also use.
func finishes(
    within seconds: Double, unblock: @escaping @Sendable () -> Void, _ body: @escaping @Sendable () async -> Void
) async -> Bool {
    let state = WatchdogState()
    await Task.detached {
        Thread {
            guard !state.done.wait(timeout: .now() + seconds).isSuccess else { return }
            state.fired.withLock { $0 = true }
            unblock()
        }.start()
        await body()
        state.done.signal()
    }.value
    return !state.fired.withLock { $0 }
}

final class WatchdogState: Sendable {
    let done = DispatchSemaphore(value: 0)
    let fired = Mutex(false)
}

extension DispatchTimeoutResult {
    var isSuccess: Bool { self == .success }
}

/// Lets a reader blocked opening the FIFO at `path` go on: a writer opens it and closes it.
func unblockFIFO(_ path: String) {
    // Opening for writing without blocking succeeds only once the reader has opened its end.
    _ = eventuallyBlocking(within: 5, every: 50) {
        let fd = open(path, O_WRONLY | O_NONBLOCK)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }
}
