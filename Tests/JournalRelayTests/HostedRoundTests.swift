#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import JournalCommit
import JournalFormat
import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalStorage
import JournalTestSupport
import JournalWire
import Testing

/// A native client's round that cannot be stored: what the host accepted after it (staged for
/// the next round of the board's committer) would follow a hole, so it is dropped with it,
/// never stored nor broadcast; the client's resend is stored once.
@Suite struct HostedRoundTests {
    @Test(.enabled(if: FaultInjection.isCompiled, "the fault hook is built only by `swift test --traits FaultInjection`"))
    func eventsAcceptedAfterAFailedRoundAreNotStoredAfterTheHole() async throws {
        let temp = TemporaryDirectory("hosted-failed-round")
        defer { temp.remove() }
        // The first write to a hosted file waits for the test, then fails; later ones run.
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let failures = Locked(1)
        let hook: @Sendable (FaultInjection.Operation, String) -> Int32? = { operation, path in
            guard operation == .write, path.contains("/local/hosted/") else { return nil }
            guard failures.withLock({ remaining -> Bool in
                defer { remaining = max(0, remaining - 1) }
                return remaining > 0
            }) else { return nil }
            entered.signal()
            release.wait()
            return EIO
        }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false),
                              idleBoardSeconds: nil)
        let board = try FaultInjection.$hook.withValue(hook) { try relay.board(BoardName("failing")) }
        let stored = Locked<[Event]>([])
        let failed = Locked(0)
        let rounds = Locked(0)
        board.board.observe { activity in
            guard case .hosted(let round) = activity else { return }
            stored.withLock { $0 += round.stored.values.joined() }
            failed.withLock { $0 += round.failed.count }
            rounds.withLock { $0 += 1 }
        }
        var client = EventGenerator(seed: 7)
        let events = client.stroke(points: 19)  // seqs 1...20
        #expect(try board.host.accept(Array(events[..<10]), replica: client.replica, from: 1) == .staged(10))
        // The round of 1...10 is writing (held in the hook); 11...20 follow what is accepted.
        await Task.detached { entered.wait() }.value
        #expect(try board.host.accept(Array(events[10...]), replica: client.replica, from: 1) == .staged(10))
        release.signal()
        // The failed round, then the one that held 11...20 (their batch still settles).
        #expect(await eventually(within: 30) { rounds.withLock { $0 } >= 2 })
        #expect(failed.withLock { $0 } == 1)
        #expect(stored.withLock { $0 }.isEmpty, "stored after the hole: \(stored.withLock { $0 }.map(\.id.seq))")
        #expect(board.host.accepted[client.replica].isEmpty)
        #expect(board.board.hostedStored[client.replica] == nil)
        // The client resends from seq 1: every event stored once, in order.
        #expect(try board.host.accept(events, replica: client.replica, from: 2) == .staged(20))
        #expect(await eventually(within: 30) { stored.withLock { $0.count } == 20 })
        #expect(stored.withLock { $0 } == events)
        #expect(board.host.durablePrefix(of: client.replica) == 20)
        await relay.close()
    }
}
