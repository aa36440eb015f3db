import JournalPlatform

/// The rounds of a sync loop (`SyncWatch`, `journal sync --watch`), seen from outside the loop.
///
/// Every round that runs takes its journal's sync lock (`local/sync.lock`, `SealedFilesLock`),
/// and one that finds the lock's text naming another process rewrites it to name its own. So a
/// test makes the lock name no live process (`mark`), and knows that a round has run since
/// once the text names someone again and the lock is free (`roundRanSinceMark`). A check that
/// a round did not do something waits for that, instead of sleeping for a time that a starved
/// loop may not have used at all.
///
/// Rounds the loop skips (nothing changed since the last one) take no lock and are not seen.
/// A compaction also takes the lock: mark after the writers' compactions are done
/// (`CompactionScheduler.waitUntilIdle`, which a writer's close waits for).
public struct SyncRoundWitness: Sendable {
    public let lockPath: String
    /// What no round writes: pid 0 is no process's.
    static let nobody = Array("pid 0\n".utf8)

    /// The witness of the loops that sync the journal at `root`.
    public init(journal root: String) { lockPath = root + "/local/sync.lock" }

    /// Makes the lock name no process; false while a round holds it (try again: `eventually`).
    public func mark() -> Bool {
        withLock { descriptor in
            (try? descriptor.truncate(to: 0)) != nil && (try? descriptor.writeAll(Self.nobody)) != nil
        } ?? false
    }

    /// Whether a round took the lock since `mark` and has let it go.
    public var roundRanSinceMark: Bool {
        guard let text = try? FileSystem.readFile(lockPath), !text.isEmpty, text != Self.nobody else { return false }
        return withLock { _ in true } ?? false
    }

    /// `body` with the lock held (taken without waiting); nil if it is taken.
    private func withLock<Value>(_ body: (FileDescriptor) -> Value) -> Value? {
        guard let descriptor = try? FileDescriptor.open(lockPath, .readWrite) else { return nil }
        defer { descriptor.close() }
        guard (try? descriptor.tryLockExclusive()) != nil else { return nil }
        return body(descriptor)
    }
}
