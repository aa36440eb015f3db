import JournalPlatform
import JournalTestSupport
import Testing

/// The inotify wrapper a sync loop sleeps in: it must wake for what arrives, and only for that.
///
/// A short wait that must time out is not a guess at how long an event takes: the kernel
/// queues an inotify event within the system call that caused it, so once a write or rename
/// here has returned, its event (if any) is already there for `wait` to see.
@Suite(.enabled(if: FolderWatcher.isNative, "file-system notifications are Linux inotify only"), .ownThreads)
struct FolderWatcherTests {
    /// A shared board's shape: `replicas/` and one replica folder in it.
    struct Board {
        let temp = TemporaryDirectory("watch")
        var replicas: String { temp.path + "/replicas" }
        var replica: String { replicas + "/0123456789abcdef0123456789abcdef" }

        init() throws { try FileSystem.createDirectory(replica) }

        func land(_ path: String) throws { try FolderWatcherTests.land(path, scratchFolder: temp.path) }
    }

    /// Writes a file outside the watched tree and renames it to `path`, as a sync lands one.
    static func land(_ path: String, scratchFolder: String) throws {
        let scratch = scratchFolder + "/scratch-" + FileSystem.lastComponent(of: path)
        try write(scratch)
        try FileSystem.rename(scratch, to: path)
    }

    static func write(_ path: String, bytes: Int = 100) throws {
        let descriptor = try FileDescriptor.open(path, .createNew)
        defer { descriptor.close() }
        try descriptor.writeAll([UInt8](repeating: 7, count: bytes))
    }

    /// Runs `body` on another thread after `milliseconds`.
    static func later(_ milliseconds: Int, _ body: @escaping @Sendable () -> Void) -> WorkerThread {
        let thread = WorkerThread()
        thread.submit {
            ProcessInfoLite.sleep(milliseconds: milliseconds)
            body()
        }
        return thread
    }

    @Test func aFileRenamedIntoAWatchedSubfolderWakesTheWaiterAtOnce() throws {
        let board = try Board()
        defer { board.temp.remove() }
        let watcher = try FolderWatcher(roots: [board.replicas], depth: 1)
        let path = board.replica + "/1-2-x.sjs", scratch = board.temp.path
        let thread = Self.later(100) { try? Self.land(path, scratchFolder: scratch) }
        // `.changed`, not `.timedOut`: the landing woke it (a loaded machine may take seconds).
        #expect(watcher.wait(timeoutSeconds: 20) == .changed)
        thread.stop()
        // Everything that landing queued was drained by that one return.
        #expect(watcher.wait(timeoutSeconds: 0.3) == .timedOut)
    }

    @Test func aBurstIsOneReturnAndRemovalsCount() throws {
        let board = try Board()
        defer { board.temp.remove() }
        let watcher = try FolderWatcher(roots: [board.replicas], depth: 1)
        for index in 0..<50 { try Self.write(board.replica + "/f\(index)") }
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
        // One return drained the burst. A file's close-after-write can still come later: a test
        // beside this one that forks a child between our open and close gives the child a copy
        // of the descriptor, and the file is closed for good only at the child's exec. So a
        // few late returns are allowed, not one per file.
        var late = 0
        while late < 50, watcher.wait(timeoutSeconds: 0.3) == .changed { late += 1 }
        #expect(late <= 3, "\(late) more returns after the burst's")
        try FileSystem.remove(board.replica + "/f7")
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
    }

    @Test func aSubfolderCreatedAfterInitIsWatchedDownToTheDepthOnly() throws {
        let board = try Board()
        defer { board.temp.remove() }
        let watcher = try FolderWatcher(roots: [board.replicas], depth: 1)
        let fresh = board.replicas + "/fedcba9876543210fedcba9876543210"
        try FileSystem.createDirectory(fresh)
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
        try board.land(fresh + "/1-1-y.sjs")
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
        // Level 2 is below depth 1: its folder's creation wakes (it is in a level-1 folder),
        // what is written inside it does not.
        try FileSystem.createDirectory(fresh + "/deeper")
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
        // A write at level 2 never wakes it. A late return can still come from a file written
        // above (a child another test forks while it is open keeps it open until its exec, as
        // in the test before): so a write wakes it each time only if level 2 is watched, and
        // one quiet write in five attempts shows that it is not.
        var quiet = false
        for attempt in 0..<5 where !quiet {
            var drained = 0
            while drained < 50, watcher.wait(timeoutSeconds: 0.3) == .changed { drained += 1 }
            try Self.write(fresh + "/deeper/file-\(attempt)")
            quiet = watcher.wait(timeoutSeconds: 0.3) == .timedOut
        }
        #expect(quiet, "every write at level 2 woke the watcher")
    }

    @Test func aMissingRootIsSkippedUntilRescan() throws {
        let temp = TemporaryDirectory("watch")
        defer { temp.remove() }
        let root = temp.path + "/later/replicas"
        let watcher = try FolderWatcher(roots: [root], depth: 1)
        #expect(watcher.wait(timeoutSeconds: 0.1) == .timedOut)
        try FileSystem.createDirectory(root + "/abc")
        watcher.rescan()
        watcher.rescan()  // idempotent
        try Self.write(root + "/abc/file")
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
    }

    @Test func theTimeoutIsKept() async throws {
        let board = try Board()
        defer { board.temp.remove() }
        let watcher = try FolderWatcher(roots: [board.replicas], depth: 1)
        var started = ProcessInfoLite.monotonicSeconds()
        #expect(watcher.wait(timeoutSeconds: 0.25) == .timedOut)
        var elapsed = ProcessInfoLite.monotonicSeconds() - started
        #expect(elapsed >= 0.24 && elapsed < 3)
        #expect(watcher.wait(timeoutSeconds: 0) == .timedOut)
        #expect(watcher.wait(timeoutSeconds: -1) == .timedOut)
        started = ProcessInfoLite.monotonicSeconds()
        #expect(await watcher.next(timeoutSeconds: 0.25) == .timedOut)
        elapsed = ProcessInfoLite.monotonicSeconds() - started
        // Resuming the awaiting task needs a free pool thread, and synchronous tests running
        // beside this one can hold them all for a minute: no upper bound here (the blocking
        // `wait` above has one).
        #expect(elapsed >= 0.24)
    }

    @Test func stopFromAnotherThreadWakesTheWaiterAndEveryLaterOne() async throws {
        let board = try Board()
        defer { board.temp.remove() }
        let watcher = try FolderWatcher(roots: [board.replicas], depth: 1)
        let thread = Self.later(100) { watcher.stop() }
        // `.stopped`, not `.timedOut`: the stop woke it.
        #expect(watcher.wait(timeoutSeconds: 30) == .stopped)
        thread.stop()
        #expect(watcher.wait(timeoutSeconds: 30) == .stopped)
        #expect(await watcher.next(timeoutSeconds: 30) == .stopped)
        watcher.stop()  // twice is harmless
        #expect(watcher.wait(timeoutSeconds: 30) == .stopped)
    }

    @Test func nextWaitsOffThePoolAndStopWakesIt() async throws {
        let board = try Board()
        defer { board.temp.remove() }
        let watcher = try FolderWatcher(roots: [board.replicas], depth: 1)
        let path = board.replica + "/2-3-z.sjs", scratch = board.temp.path
        let landing = Self.later(100) { try? Self.land(path, scratchFolder: scratch) }
        #expect(await watcher.next(timeoutSeconds: 20) == .changed)
        landing.stop()
        let stopping = Self.later(100) { watcher.stop() }
        #expect(await watcher.next(timeoutSeconds: 30) == .stopped)
        stopping.stop()
    }

    @Test func aSymlinkedFolderIsNeverFollowed() throws {
        let board = try Board()
        defer { board.temp.remove() }
        let elsewhere = board.temp.path + "/elsewhere"
        try FileSystem.createDirectory(elsewhere + "/inner")
        // Planted before the watcher starts, and after.
        try FileSystem.symlink(elsewhere, at: board.replicas + "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
        let watcher = try FolderWatcher(roots: [board.replicas], depth: 1)
        try FileSystem.symlink(elsewhere + "/inner", at: board.replicas + "/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)  // the new entry in replicas/ itself
        watcher.rescan()
        try Self.write(elsewhere + "/file")
        try Self.write(elsewhere + "/inner/file")
        #expect(watcher.wait(timeoutSeconds: 0.5) == .timedOut)

        // A root that is itself a symlink is not watched either.
        let linkedRoot = board.temp.path + "/linked-replicas"
        try FileSystem.symlink(elsewhere, at: linkedRoot)
        let rootWatcher = try FolderWatcher(roots: [linkedRoot], depth: 1)
        try Self.write(elsewhere + "/second")
        try Self.write(elsewhere + "/inner/second")
        #expect(rootWatcher.wait(timeoutSeconds: 0.5) == .timedOut)
    }

    @Test func aFolderMovedOutIsNoLongerWatched() throws {
        let board = try Board()
        defer { board.temp.remove() }
        let watcher = try FolderWatcher(roots: [board.replicas], depth: 1)
        let outside = board.temp.path + "/moved-out"
        try FileSystem.rename(board.replica, to: outside)
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
        try Self.write(outside + "/file")
        #expect(watcher.wait(timeoutSeconds: 0.5) == .timedOut)
        // And moved back in, it is watched again.
        try FileSystem.rename(outside, to: board.replica)
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
        try Self.write(board.replica + "/again")
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
    }

    @Test func moreFoldersThanTheBoundAndAFullQueueDegradeQuietly() throws {
        let temp = TemporaryDirectory("watch")
        defer { temp.remove() }
        let root = temp.path + "/replicas"
        for index in 0..<4_200 { try FileSystem.createDirectory(root + "/" + String(100_000 + index)) }
        // Past the bound some folders go unwatched; the watched ones still wake.
        let watcher = try FolderWatcher(roots: [root], depth: 1)
        try Self.write(root + "/100000/file")
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
        // More events than the kernel queues (16384 by default): an overflow is a change, and
        // the watcher settles: a few more returns while it reads what was queued (on a loaded
        // machine the second wait once still saw some), then nothing wakes it.
        for index in 0..<9_000 { try Self.write(root + "/100001/f\(index)", bytes: 0) }
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
        var further = 0
        while further < 50, watcher.wait(timeoutSeconds: 0.3) == .changed { further += 1 }
        #expect(further < 50, "the watcher kept waking after the burst")
        try Self.write(root + "/100002/after")
        #expect(watcher.wait(timeoutSeconds: 5) == .changed)
    }
}
