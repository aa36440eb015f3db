@testable import JournalServe
import JournalRelay
import JournalTestSupport
import NIOCore
import NIOEmbedded
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sockets that never finish their request cannot keep honest clients out (issue 40: 4,300 such
/// sockets made every honest join time out): each has `requestHeadSeconds` to send its head, and
/// one address may have only `maxUnfinishedRequestsPerAddress` of them at once.
@Suite(.serialized) struct AdmissionTests {
    typealias RunningRelay = RelayServerTests.RunningRelay

    final class Outcomes: @unchecked Sendable {
        var seen: [RequestHeadDeadline.Outcome] = []
    }

    func activeChannel(deadline: TimeAmount, outcomes: Outcomes) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(RequestHeadDeadline(deadline: deadline) { outcomes.seen.append($0) })
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        return channel
    }

    @Test func aHeadThatNeverEndsIsClosedAtItsDeadline() throws {
        let outcomes = Outcomes()
        let channel = try activeChannel(deadline: .seconds(10), outcomes: outcomes)
        try channel.writeInbound(ByteBuffer(string: "GET /boards/wall/ws HTTP/1.1\r\nHost: a\r\n"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive && outcomes.seen.isEmpty)
        // More of the head, but not its end: the deadline still counts from the opening.
        try channel.writeInbound(ByteBuffer(string: "Upgrade: websocket\r\n"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
        #expect(outcomes.seen == [.timedOut])
        // Its bytes went on unchanged while it was open.
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "GET /boards/wall/ws HTTP/1.1\r\nHost: a\r\n"))
    }

    @Test func aWholeHeadEndsTheWaitEvenSplitAcrossReads() throws {
        let outcomes = Outcomes()
        let channel = try activeChannel(deadline: .seconds(10), outcomes: outcomes)
        // Line ends that are not the blank line, then the blank line cut between two reads.
        try channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: a\r\r\nX: b\r\n\r"))
        #expect(outcomes.seen.isEmpty)
        try channel.writeInbound(ByteBuffer(string: "\n\u{81}\u{85}frame"))
        #expect(outcomes.seen == [.arrived])
        // Gone from the pipeline: a WebSocket after its head may stay quiet for ever.
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: RequestHeadDeadline.self) }
        channel.embeddedEventLoop.advanceTime(by: .hours(1))
        #expect(channel.isActive && outcomes.seen == [.arrived])
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "GET / HTTP/1.1\r\nHost: a\r\r\nX: b\r\n\r"))
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "\n\u{81}\u{85}frame"))
        _ = try? channel.finish()
    }

    @Test func aSocketClosedByItsClientEndsItsWaitOnce() throws {
        let outcomes = Outcomes()
        let channel = try activeChannel(deadline: .seconds(10), outcomes: outcomes)
        try channel.writeInbound(ByteBuffer(string: "GET /"))
        _ = try? channel.finish()
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(outcomes.seen == [.closed])
    }

    @Test func unfinishedRequestsAreCountedPerAddressAndReleased() {
        let unfinished = UnfinishedRequests(limitPerAddress: 2)
        #expect(unfinished.admit("10.0.0.1") && unfinished.admit("10.0.0.1"))
        #expect(!unfinished.admit("10.0.0.1"))
        #expect(unfinished.admit("10.0.0.2"))
        unfinished.release("10.0.0.1")
        #expect(unfinished.count(of: "10.0.0.1") == 1 && unfinished.admit("10.0.0.1"))
    }

    /// The relay's places (`maxConnections + extraSockets`) all held by sockets that never finish
    /// their request: each is closed at its deadline, and an honest request gets through.
    /// The deadline is 2 s: the honest socket's own deadline starts when it is accepted, and with
    /// 0.5 s one CI run (both cores busy with other tests) saw the honest request reset with
    /// nothing read (errno 104), most likely its deadline passing before the loaded relay read
    /// the request already waiting there.
    @Test func socketsThatNeverFinishTheirRequestAreClosedAndAnHonestOneGetsThrough() async throws {
        let temp = TemporaryDirectory("admission-head")
        defer { temp.remove() }
        let limits = RelayLimits(maxConnections: 4, requestHeadSeconds: 2, maxUnfinishedRequestsPerAddress: 1000)
        let running = try await RunningRelay.start(data: temp.path + "/boards", limits: limits)
        let attackers = limits.maxConnections + RelayLimits.extraSockets + 12
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        for _ in 0..<attackers { sockets.append(try PlainHTTP.openUnfinishedRequest(port: running.port, sourceHost: 2)) }
        // Without a deadline this waits for ever (here: until its 60 s bound fails the test).
        let honest = try await PlainHTTP.get(port: running.port, path: "/healthz", sourceHost: 3)
        #expect(honest.status == 200)
        var closed = 0
        for socket in sockets where await PlainHTTP.readUntilClosed(socket) == [] { closed += 1 }
        #expect(closed == attackers, "every unfinished socket is closed, with nothing written to it")
        let metrics = try await PlainHTTP.get(port: running.port, path: "/metrics")
        #expect(MetricsTests.sample(metrics.text, #"strokejournal_sockets_turned_away_total{reason="request-head-timeout"}"#) == Double(attackers))
        await running.stop()
    }

    /// One address with many unfinished sockets: those past its limit are answered 503 at once,
    /// other addresses are served, and the address is admitted again once its sockets end.
    @Test func oneAddressMayHoldOnlySoManyUnfinishedRequests() async throws {
        let temp = TemporaryDirectory("admission-address")
        defer { temp.remove() }
        let limits = RelayLimits(requestHeadSeconds: 3600, maxUnfinishedRequestsPerAddress: 8)
        let running = try await RunningRelay.start(data: temp.path + "/boards", limits: limits)
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        for _ in 0..<20 { sockets.append(try PlainHTTP.openUnfinishedRequest(port: running.port, sourceHost: 2)) }
        let turnedAway = #"strokejournal_sockets_turned_away_total{reason="unfinished-per-address"}"#
        var counted: Double?
        for _ in 0..<3000 {
            counted = MetricsTests.sample(try await PlainHTTP.get(port: running.port, path: "/metrics").text, turnedAway)
            if counted == 12 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(counted == 12, "20 unfinished sockets from one address, 8 allowed")
        // One more from that address is told why; another address is served.
        let extra = try PlainHTTP.openUnfinishedRequest(port: running.port, sourceHost: 2)
        let reply = await PlainHTTP.readUntilClosed(extra).map { String(decoding: $0, as: UTF8.self) }
        close(extra)
        #expect(reply?.hasPrefix("HTTP/1.1 503 ") == true && reply?.contains("too many unfinished requests from this address") == true)
        #expect(try await PlainHTTP.get(port: running.port, path: "/healthz", sourceHost: 3).status == 200)
        // Its sockets closed, the address is served again.
        sockets.forEach { close($0) }
        sockets = []
        var status = 0
        for _ in 0..<3000 {
            status = try await PlainHTTP.get(port: running.port, path: "/healthz", sourceHost: 2).status
            if status == 200 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(status == 200)
        await running.stop()
    }
}
