import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalTestSupport
import JournalWire
import Testing

/// Signs of life (`RelayConnection.signOfLifeIfQuiet`, docs/PROTOCOL.md): while a client's
/// frames wait for a round the store holds back, a quiet relay repeats its last ack, so the
/// client can tell a slow round from a stopped relay; nothing is repeated when nothing waits,
/// when something else was sent lately, or once the node's lease lapsed.
@Suite struct SignsOfLifeTests {
    @Test func aClientWhoseFramesWaitHearsTheLastAckAgainAndOnlyThen() async throws {
        let temp = TemporaryDirectory("signs-of-life")
        defer { temp.remove() }
        let store = PlayedStore()
        let leases = PlayedLeases()
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              sharing: store, ackMode: .shared, leases: leases)
        let connection = try await SharedAckRoundTests.connect(relay, "wall")
        let received = SharedAckRoundTests.Received(connection)
        await connection.receive(text: SharedAckRoundTests.point(1))
        #expect(await eventually(within: 120) { received.acks == [1] }, "the first frame was not acknowledged: \(received.acks)")

        // Nothing waits: a quiet relay says nothing.
        connection.signOfLifeIfQuiet(quietSeconds: 0, now: .infinity)
        // Frame 2 waits for a round the store holds back.
        store.state.withLock { $0.holding = true }
        await connection.receive(text: SharedAckRoundTests.point(2))
        #expect(await eventually(within: 120) { store.heldRounds >= 1 })
        // Something was sent a moment ago (in a test's time, always): not quiet yet.
        connection.signOfLifeIfQuiet(quietSeconds: 3600, now: ProcessInfoLite.monotonicSeconds())
        connection.signOfLifeIfQuiet(quietSeconds: 0, now: .infinity)
        #expect(await eventually(within: 120) { received.acks == [1, 1] }, "no sign of life, or more than one: \(received.acks)")

        store.release()
        #expect(await eventually(within: 120) { received.acks == [1, 1, 2] }, "frame 2 was not acknowledged: \(received.acks)")

        // A node whose lease lapsed gives no sign of life: its clients must go elsewhere.
        store.state.withLock { $0.holding = true }
        await connection.receive(text: SharedAckRoundTests.point(3))
        #expect(await eventually(within: 120) { store.heldRounds >= 1 })
        leases.state.withLock { $0.inForce = false }
        connection.signOfLifeIfQuiet(quietSeconds: 0, now: .infinity)
        _ = relay.boards.withLock { Array($0.open.values) }.map { $0.holdsLease() }
        #expect(await eventually(within: 120) { connection.closeRefusal?.code == .notOwner })
        connection.outbound.finish()
        #expect(await eventually(within: 120) { connection.outbound.count == 0 })
        #expect(received.acks == [1, 1, 2], "a node without its lease gave a sign of life: \(received.acks)")
        received.stop()
        store.release()
        await relay.close()
    }
}
