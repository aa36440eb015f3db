#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Atomics
import SystemPackage

/// Why a `FolderWatcher.wait` returned.
public enum WatchOutcome: Sendable, Equatable { case changed, timedOut, stopped }

/// Wakes a waiter when files appear in, or leave, a few folders: how a sync loop or a live board
/// learns that a segment arrived without listing folders in a tight loop.
///
/// On Linux it is inotify. A notification is only a hint to look again, never a statement of
/// what is there: events are coalesced, a full kernel queue (`IN_Q_OVERFLOW`) or the watch bound
/// loses detail, and changes made by other machines on a network file system (NFS, SMB) are not
/// reported at all. Callers therefore also look at an interval. Elsewhere `wait` only times out
/// (or is stopped).
///
/// Symlinks are never followed (`IN_DONT_FOLLOW`, and listings that skip them): a symlink planted
/// in a shared folder must not make us watch, or wake for, a folder outside the journal.
///
/// Thread safety (why `@unchecked Sendable` is sound): the descriptors, `roots`, `depth` and
/// `worker` are set in `init` and never change; they are closed only in `deinit`, which cannot
/// run while any method runs (a caller holds the instance, and `next` hands its job no strong
/// reference). The watch table is read and written only with `tableLock` held. `stopping` is
/// atomic. Concurrent waiters are safe: each read of the inotify descriptor returns whole
/// events, so a burst wakes whichever waiter drains it.
public final class FolderWatcher: @unchecked Sendable {
    /// True where file-system notifications exist (Linux inotify); elsewhere `wait` only times out.
    public static var isNative: Bool {
        #if os(Linux)
        return true
        #else
        return false
        #endif
    }

    /// At most this many folders are watched (inotify's per-user default is 8192 watches for
    /// everything the user runs). Beyond it folders go unwatched: fewer notifications, which
    /// the caller's interval covers.
    static let watchLimit = 4096

    private let roots: [String]
    private let depth: Int
    /// A pipe whose read end is in every `poll`: `stop` writes one byte and nobody ever reads
    /// it, so every later wait returns at once too.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let stopping = ManagedAtomic<Bool>(false)
    private let worker = WorkerThread()
    /// On the heap: a mutex must not move, and a stored property's address is not stable.
    private let tableLock: UnsafeMutablePointer<pthread_mutex_t>
    #if os(Linux)
    private let notify: Int32
    private struct Watch {
        var path: String
        var level: Int
    }
    private var watches: [Int32: Watch] = [:]
    private var descriptorOfPath: [String: Int32] = [:]
    private var needsRescan = false
    #endif

    /// Watches each root folder and its subfolders down to `depth` levels (depth 1: a journal's
    /// `replicas/` and every `replicas/<id>/`), adding watches for subfolders created later.
    /// Missing roots are skipped; `rescan` watches them once they exist.
    public init(roots: [String], depth: Int) throws(IOError) {
        self.roots = roots
        self.depth = max(0, depth)
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw IOError("pipe", path: "folder watcher", code: errno) }
        // Non-blocking: a second `stop` must never block on a full pipe.
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
        #if os(Linux)
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else {
            let code = errno
            SystemCall.close(ends[0])
            SystemCall.close(ends[1])
            // EMFILE here is usually inotify's per-user instance limit, not open files.
            throw IOError("inotify_init1", path: roots.joined(separator: ", "), code: code)
        }
        notify = descriptor
        #endif
        tableLock = .allocate(capacity: 1)
        pthread_mutex_init(tableLock, nil)
        rescan()
    }

    deinit {
        worker.stop()
        #if os(Linux)
        SystemCall.close(notify)
        #endif
        SystemCall.close(wakeRead)
        SystemCall.close(wakeWrite)
        pthread_mutex_destroy(tableLock)
        tableLock.deallocate()
    }

    /// Re-walks the roots, adding watches for folders that appeared (cheap, idempotent).
    public func rescan() {
        #if os(Linux)
        pthread_mutex_lock(tableLock)
        defer { pthread_mutex_unlock(tableLock) }
        for root in roots { watchTree(root, level: 0) }
        #endif
    }

    /// Blocks the calling thread until a file was created, moved in, closed after writing or
    /// removed in a watched folder (events are coalesced: one return for a burst, and all queued
    /// events drained), or until `timeoutSeconds`, or `stop()`.
    public func wait(timeoutSeconds: Double) -> WatchOutcome {
        let timeout = timeoutSeconds.isFinite ? max(0, timeoutSeconds) : 86_400
        let deadline = ProcessInfoLite.monotonicSeconds() + timeout
        while true {
            if stopping.load(ordering: .acquiring) { return .stopped }
            let remaining = deadline - ProcessInfoLite.monotonicSeconds()
            // Rounded up: a poll that returns before the deadline only loops again.
            let milliseconds = remaining <= 0 ? 0 : Int32(min((remaining * 1000).rounded(.up), 3_600_000))
            var descriptors = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            #if os(Linux)
            descriptors.append(pollfd(fd: notify, events: Int16(POLLIN), revents: 0))
            #endif
            let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                // Out of memory or the like: sleep out the timeout rather than spin; the
                // caller's interval keeps working.
                if remaining > 0 { usleep(useconds_t(min(remaining, 3_600) * 1_000_000)) }
                return .timedOut
            }
            if descriptors[0].revents != 0 { return .stopped }
            #if os(Linux)
            if descriptors[1].revents != 0 && drainEvents() { return .changed }
            #endif
            if ready == 0 && ProcessInfoLite.monotonicSeconds() >= deadline { return .timedOut }
        }
    }

    /// Same, without blocking a concurrency-pool thread: runs `wait` on the watcher's own WorkerThread.
    public func next(timeoutSeconds: Double) async -> WatchOutcome {
        await withCheckedContinuation { continuation in
            // Unowned: if the job held the last reference, `deinit` would run on the worker
            // thread and join itself. The caller keeps the watcher alive until `next` returns.
            worker.submit { [unowned self] in
                continuation.resume(returning: self.wait(timeoutSeconds: timeoutSeconds))
            }
        }
    }

    /// Wakes a `wait` in progress (and every later one) with `.stopped`; safe from any thread.
    /// Closes nothing a waiter uses.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let byte: UInt8 = 1
        _ = withUnsafeBytes(of: byte) { try? SystemPackage.FileDescriptor(rawValue: wakeWrite).write($0) }
    }

    #if os(Linux)
    /// What a folder watch reports. `IN_ONLYDIR | IN_DONT_FOLLOW`: a path that is (or was
    /// swapped for) a symlink or a file is refused by the kernel, not followed.
    private static let mask: UInt32 = {
        let events = IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM
        return UInt32(events) | UInt32(IN_ONLYDIR) | UInt32(IN_DONT_FOLLOW)
    }()
    private static let contentEvents = UInt32(IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM)

    /// Called with `tableLock` held.
    private func watchTree(_ path: String, level: Int) {
        guard level <= depth else { return }
        if descriptorOfPath[path] == nil {
            guard watches.count < Self.watchLimit else { return }
            let descriptor = inotify_add_watch(notify, path, Self.mask)
            // Missing, not a folder, a symlink, or the system's watch limit: not watched.
            guard descriptor >= 0 else { return }
            if let previous = watches[descriptor] { descriptorOfPath[previous.path] = nil }
            watches[descriptor] = Watch(path: path, level: level)
            descriptorOfPath[path] = descriptor
        }
        guard level < depth, let entries = try? FileSystem.list(path) else { return }
        for entry in entries where entry.kind == .directory {
            watchTree(FileSystem.join(path, entry.name), level: level + 1)
        }
    }

    /// Reads every queued event; true if any says a watched folder's content changed.
    private func drainEvents() -> Bool {
        var changed = false
        // Room for at least one event with the longest name (NAME_MAX 255).
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        pthread_mutex_lock(tableLock)
        defer { pthread_mutex_unlock(tableLock) }
        while true {
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes { raw in
                    try SystemPackage.FileDescriptor(rawValue: notify).read(into: raw)
                }
            } catch {
                break  // EAGAIN: the queue is empty
            }
            guard count > 0 else { break }
            var offset = 0
            let header = 16  // struct inotify_event without its name
            while offset + header <= count {
                let (descriptor, mask, length) = buffer.withUnsafeBytes { raw in
                    (raw.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                     raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                     Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                let nameEnd = offset + header + length
                guard nameEnd <= count else { break }
                let name = String(decoding: buffer[(offset + header)..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
                offset = nameEnd
                if handle(descriptor: descriptor, mask: mask, name: name) { changed = true }
            }
        }
        if needsRescan {
            needsRescan = false
            for root in roots { watchTree(root, level: 0) }
        }
        return changed
    }

    /// Called with `tableLock` held.
    private func handle(descriptor: Int32, mask: UInt32, name: String) -> Bool {
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            // Events were dropped, folder creations among them perhaps.
            needsRescan = true
            return true
        }
        if mask & UInt32(IN_IGNORED) != 0 {
            // The folder was removed or its watch dropped: forget it (a new folder of that
            // name gets a watch of its own).
            if let gone = watches.removeValue(forKey: descriptor), descriptorOfPath[gone.path] == descriptor {
                descriptorOfPath[gone.path] = nil
            }
            return false
        }
        guard let folder = watches[descriptor], !name.isEmpty else { return mask & Self.contentEvents != 0 }
        if mask & UInt32(IN_ISDIR) != 0 {
            let child = FileSystem.join(folder.path, name)
            if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                // Files may have landed in it before its watch existed: the caller looks at
                // it anyway, since this event counts as a change.
                watchTree(child, level: folder.level + 1)
            } else if mask & UInt32(IN_MOVED_FROM) != 0, let moved = descriptorOfPath.removeValue(forKey: child) {
                // Moved away, perhaps out of the journal: its watch would now report a folder
                // we were not asked to watch, under a wrong path.
                watches[moved] = nil
                _ = inotify_rm_watch(notify, moved)
            }
        }
        return mask & Self.contentEvents != 0
    }
    #endif
}
