import JournalFormat
import JournalLive
import JournalPlatform
import JournalReplay
import JournalStorage

/// One board of the relay: its live `Board` and the connections drawing on it.
public final class RelayBoard: Sendable {
    public let name: BoardName
    public let board: Board
    private let connections = Locked<[Int: RelayConnection]>([:])
    private let nextConnection = Locked(0)
    /// Catch-up reads whole journals: on a thread of its own, never on the concurrency pool.
    private let reader = WorkerThread()

    init(name: BoardName, board: Board) {
        self.name = name
        self.board = board
    }

    /// A new connection, registered at once, so that nothing broadcast from now on passes it
    /// by; it holds live events back until its catch-up is sent (`RelayConnection.catchUp`).
    public func connect() -> RelayConnection {
        let id = nextConnection.withLock { next -> Int in
            next += 1
            return next
        }
        let connection = RelayConnection(id: id, board: self)
        connections.withLock { $0[id] = connection }
        return connection
    }

    func remove(_ id: Int) {
        _ = connections.withLock { $0.removeValue(forKey: id) }
    }

    public var connectionCount: Int { connections.withLock { $0.count } }

    /// Sends durable events to every connection but their sender's.
    func broadcast(_ events: [Event], from sender: Int) {
        guard !events.isEmpty else { return }
        let others = connections.withLock { connections in connections.filter { $0.key != sender }.map(\.value) }
        for connection in others { connection.deliver(events) }
    }

    /// Every event of the board's journal, in total order, that is durable now, and the seq
    /// ranges they cover. Exact: every event this board acknowledged before the call is in it.
    func readDurableEvents() async throws(RelayError) -> (events: [Event], covered: [ReplicaID: SeqRanges]) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<([Event], [ReplicaID: SeqRanges]), RelayError>, Never>) in
            reader.submit { [board, name] in
                continuation.resume(returning: Self.read(board, name: name))
            }
        }
        return try result.get()
    }

    private static func read(_ board: Board, name: BoardName) -> Result<([Event], [ReplicaID: SeqRanges]), RelayError> {
        // What was broadcast was durable before: `durableSeq` read after the connection was
        // registered covers it. A seal that renames the open segment while the files are
        // listed can hide own events from one read: then read again.
        for _ in 0..<5 {
            let durable = board.durableSeq
            let set = SegmentSet.load(board.directory)
            var report = ReplayReport()
            var events: [Event] = []
            var covered: [ReplicaID: SeqRanges] = [:]
            Replay.forEachUniqueEvent(set, report: &report) { event in
                events.append(event)
                covered[event.id.replica, default: SeqRanges()].insert(event.id.seq...event.id.seq)
            }
            if durable == 0 || (covered[board.replica] ?? SeqRanges()).containsAll(1...durable) {
                events.sort { $0.orderKey < $1.orderKey }
                return .success((events, covered))
            }
        }
        return .failure(.disconnected("board \(name): its journal changed under every read; try again"))
    }

    func close() async {
        let all = connections.withLock { connections -> [RelayConnection] in
            let all = Array(connections.values)
            connections.removeAll()
            return all
        }
        for connection in all { connection.close(reason: RelayError.closed.description) }
        // What was acknowledged is durable already; a seal that fails here leaves the events
        // in the open segment, which the next open recovers.
        try? await board.close()
        reader.stop()
    }
}
