import JournalFormat
import JournalPlatform
import JournalReplay
import JournalWire

/// Events of a board's journal that someone lacks, handed out a batch at a time
/// (`WireLimits.catchUpBatchEvents`) or a binary `SegmentMessage` at a time. Each is read on
/// the board's reader thread, never on the concurrency pool, and only when asked for: a slow
/// socket holds one batch, not the board.
final class EventFeed: Sendable {
    private struct State {
        var missing: MissingEvents
        /// Frames read for the next message that did not fit in the last one.
        var carried: Frames?
    }

    /// Block frames of one replica and format version, in seq order.
    private struct Frames {
        var replica: ReplicaID
        var version: UInt16
        var frames: [ArraySlice<UInt8>]
        var byteCount: Int { frames.reduce(0) { $0 + $1.count } }
    }

    /// Events the feed passes over, never reported covered: own events not durable when it
    /// began, and, with shared acks, whatever the store did not hold (`onlyIn`, when given).
    struct Withheld: Sendable {
        var replica: ReplicaID
        var seqs: ClosedRange<UInt64>
        var onlyIn: Have?
    }

    private let state: Locked<State>
    private let reader: WorkerThread
    private let withheld: Withheld?

    init(_ events: MissingEvents, withholding withheld: Withheld? = nil, reader: WorkerThread) {
        self.state = Locked(State(missing: events))
        self.reader = reader
        self.withheld = withheld
    }

    /// The next batch (never empty), or nil when none is left.
    func next() async -> [Event]? {
        await onReader { state in state.missing.next(maxEvents: WireLimits.catchUpBatchEvents) }
    }

    /// The next binary catch-up message, about `WireLimits.segmentMessageTargetBytes` (one
    /// block may take it past that, never past `WireLimits.maxSegmentMessageBytes`), or nil
    /// when nothing is left.
    func nextSegmentMessage() async -> [UInt8]? {
        await onReader { state in
            var message = state.carried
            state.carried = nil
            while message.map({ $0.byteCount < WireLimits.segmentMessageTargetBytes }) ?? true {
                guard let piece = state.missing.nextPiece(
                    maxEvents: WireLimits.catchUpBatchEvents * 4, maxBlockBytes: WireLimits.segmentMessageTargetBytes)
                else { break }
                let frames = Self.frames(of: piece)
                guard var current = message else {
                    message = frames
                    continue
                }
                guard current.replica == frames.replica, current.version == frames.version,
                      current.byteCount + frames.byteCount <= WireLimits.segmentMessageTargetBytes
                else {
                    state.carried = frames
                    break
                }
                current.frames += frames.frames
                message = current
            }
            return message.map { SegmentMessage.encode(replica: $0.replica, version: $0.version, frames: $0.frames) }
        }
    }

    /// A stored block as it is; events as blocks of the current format, one per dense run
    /// (a block's seqs are consecutive; the holder may hold the seqs between runs).
    private static func frames(of piece: MissingEvents.Piece) -> Frames {
        switch piece {
        case .block(let replica, let version, let frame, _):
            return Frames(replica: replica, version: FormatVersion.bodyCoding(version), frames: [frame])
        case .events(let replica, let events):
            var frames: [ArraySlice<UInt8>] = []
            var start = 0
            for index in 1...events.count where index == events.count || events[index].id.seq != events[index - 1].id.seq + 1 {
                frames.append(SegmentEncoder.block(events[start..<index])[...])
                start = index
            }
            return Frames(replica: replica, version: FormatVersion.current, frames: frames)
        }
    }

    private func onReader<T: Sendable>(_ body: @escaping @Sendable (inout State) -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            reader.submit { [state] in
                continuation.resume(returning: state.withLock { body(&$0) })
            }
        }
    }

    /// The events the journal held, as far as read: once `next` returned nil, what the holder
    /// has after the batches (of this journal; it may hold more of its own).
    var covered: Have {
        var covered = state.withLock { $0.missing.covered }
        if let withheld, let own = covered[withheld.replica] {
            covered[withheld.replica] = SeqRanges(own.ranges.compactMap { range in
                range.lowerBound >= withheld.seqs.lowerBound ? nil : range.lowerBound...min(range.upperBound, withheld.seqs.lowerBound - 1)
            })
        }
        if let inStore = withheld?.onlyIn {
            for (replica, seqs) in covered { covered[replica] = seqs.intersection(inStore[replica]) }
        }
        return Have(covered)
    }

    /// Events handed out so far.
    var count: UInt64 { state.withLock { $0.missing.count } }
}
