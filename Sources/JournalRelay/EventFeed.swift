import JournalFormat
import JournalPlatform
import JournalReplay
import JournalWire

/// Events of a board's journal that someone lacks, handed out a batch at a time
/// (`WireLimits.catchUpBatchEvents`). Each batch is decoded on the board's reader thread,
/// never on the concurrency pool, and only when asked for: a slow socket holds one batch,
/// not the board.
final class EventFeed: Sendable {
    private let events: Locked<MissingEvents>
    private let reader: WorkerThread

    init(_ events: MissingEvents, reader: WorkerThread) {
        self.events = Locked(events)
        self.reader = reader
    }

    /// The next batch (never empty), or nil when none is left.
    func next() async -> [Event]? {
        await withCheckedContinuation { (continuation: CheckedContinuation<[Event]?, Never>) in
            reader.submit { [events] in
                continuation.resume(returning: events.withLock { $0.next(maxEvents: WireLimits.catchUpBatchEvents) })
            }
        }
    }

    /// The events the journal held, as far as read: once `next` returned nil, what the holder
    /// has after the batches (of this journal; it may hold more of its own).
    var covered: Have { Have(events.withLock { $0.covered }) }

    /// Events handed out so far.
    var count: UInt64 { events.withLock { $0.count } }
}
