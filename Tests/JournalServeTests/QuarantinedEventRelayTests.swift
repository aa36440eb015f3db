import JournalFormat
import JournalLive
import JournalPlatform
import JournalRelay
import JournalReplay
import JournalStorage
import JournalTestSupport
import JournalWire
import Testing

/// Events that sync brings into a relay's board while their clock is past the plausibility
/// bound (quarantined, FORMAT.md §8.9) reach its connected clients once the board applies them.
@Suite(.serialized) struct QuarantinedEventRelayTests {
    typealias RunningRelay = RelayServerTests.RunningRelay

    /// Writes a sealed segment of `events` into the board's journal as sync imports one (an
    /// atomic rename into `replicas/<id>/`).
    static func plant(_ events: [Event], in board: JournalDirectory) throws {
        let replica = events[0].id.replica
        let bytes = SegmentEncoder.segment(replica: replica, events: events)
        let name = SegmentName(firstSeq: events[0].id.seq, lastSeq: events[events.count - 1].id.seq, contents: bytes)
        try FileSystem.createDirectory(board.replicaPath(replica))
        try FileSystem.writeAtomically(bytes, to: board.segmentPath(replica, name))
    }

    static func point(_ replica: ReplicaID, seq: UInt64, lamport: UInt64, stroke: UInt64) -> Event {
        Event(id: EventID(replica: replica, seq: seq), lamport: lamport, wallTime: 1_700_000_000_000 + Int64(seq),
              payload: .point(PointSample(stroke: StrokeID(UUIDBits(high: stroke, low: 1)), x: Double(seq), y: 2, pressure: 0.5,
                                          t: Double(seq) / 240, style: Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2))))
    }

    /// An event that sync brings in quarantined is covered by the board at once (`covered`
    /// holds a quarantined block's whole range) but sent to no one. When the board grows and the
    /// event becomes plausible, the journal applies it (here a `clear` that hides every stroke),
    /// and the relay sends it to the clients that stayed connected: their drawing is the
    /// journal's, as a client joining then gets it.
    @Test func aQuarantinedEventThatBecomesPlausibleReachesConnectedClients() async throws {
        let temp = TemporaryDirectory("relay-quarantine")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let running = try await RunningRelay.start(data: data, options: .relay)
        defer { Task { await running.stop() } }

        let alice = RelayTestClient(port: running.port, board: "q")
        alice.send(ClientFrame.helloText(have: Have()))
        #expect(try await alice.next() == .caughtUp(events: 0))
        let stroke = StrokeID(UUIDBits(high: 42, low: 42))
        for index in 0..<4 {
            alice.send(ClientFrame.text(for: .point(PointSample(
                stroke: stroke, x: Double(index), y: 1, pressure: 0.5, t: Double(index) / 240,
                style: Style(color: RGBA(rawValue: 0xE53935FF), width: 3)))))
        }
        _ = try await alice.collect { if case .ack(4) = $0 { true } else { false } }
        let board = try JournalDirectory.open(at: data + "/q")

        // A `clear` of another replica, its clock 4 past the bound of the 5 events the board
        // then holds (2^32 + 2*5): quarantined until the board holds 2 more events.
        let x = ReplicaID.random()
        let clear = Event(id: EventID(replica: x, seq: 1), lamport: (1 << 32) + 14, wallTime: 1_700_000_000_000, payload: .clear)
        try Self.plant([clear], in: board)
        // The board has folded it in, quarantined, before the events that make it plausible come.
        let relayBoard = try running.relay.board(BoardName("q"))
        #expect(await eventually(within: 60) { relayBoard.board.covered[x]?.contains(1) == true },
                "the board never folded in the quarantined clear")
        #expect(Replay.replay(SegmentSet.load(board)).report.quarantinedEvents == 1)

        // Three ordinary events of a third replica: now 8 events, bound 2^32 + 16: the clear applies.
        let y = ReplicaID.random()
        let fresh = (1...3).map { Self.point(y, seq: $0, lamport: UInt64($0), stroke: 9) }
        try Self.plant(fresh, in: board)

        var received: [Event] = []
        while let message = try await alice.next(within: 8) {
            if let event = try message.event() { received.append(event) }
        }
        // The journal applies the clear now.
        let replay = Replay.replay(SegmentSet.load(board))
        #expect(replay.report.quarantinedEvents == 0)
        #expect(replay.drawing.visibleStrokes.isEmpty, "the journal's drawing is cleared")
        // The connected client got y's events, and the clear.
        #expect(received.filter { $0.id.replica == y }.count == 3)
        #expect(received.contains { $0.id == clear.id }, "a connected client never got the clear the journal applies")

        // A client joining now gets it too: both clients hold the journal's drawing.
        let bob = RelayTestClient(port: running.port, board: "q")
        bob.send(ClientFrame.helloText(have: Have()))
        let joined = try await bob.collect { if case .caughtUp = $0 { true } else { false } }
        #expect(joined.before.compactMap { try? $0.event() }.contains { $0.id == clear.id })
        alice.close()
        bob.close()
    }
}
