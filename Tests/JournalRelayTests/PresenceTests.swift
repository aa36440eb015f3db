import JournalFormat
import JournalIngest
import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalTestSupport
import JournalWire
import Testing

/// Presence (docs/PROTOCOL.md, "Presence"): relayed to the clients that asked for it, never
/// recorded, numbered or acknowledged; bounded per connection; a "gone" when a client leaves.
@Suite struct PresenceTests {
    static let presenceHello = ClientFrame.helloText(Hello(presence: true))

    /// A live connection; `presence`: its hello asked for the others' presence.
    static func live(on board: RelayBoard, presence: Bool) async -> RelayConnection {
        let connection = board.connect()
        if presence { await connection.receive(text: presenceHello) }
        connection.goLive(caughtUp: 0)
        return connection
    }

    /// A relay tells a native text frame from the others by its first bytes alone, for every
    /// frame it reads: a presence, an event line or a hello is none; a string too short for the
    /// header, or one that only resembles it, is none either.
    @Test func aNativeTextFrameIsKnownByItsHeader() {
        let header = NativeTextFrame.headerPrefix
        #expect(NativeTextFrame.isNative(header + String(repeating: "0", count: 128) + "\"}\n{}"))
        #expect(NativeTextFrame.isNative(header))
        #expect(!NativeTextFrame.isNative(String(header.dropLast())))
        #expect(!NativeTextFrame.isNative(""))
        #expect(!NativeTextFrame.isNative(Presence(name: "Ada").frame))
        #expect(!NativeTextFrame.isNative(CanonicalJSON.line(for: .clear)))
        #expect(!NativeTextFrame.isNative(Self.presenceHello))
        #expect(!NativeTextFrame.isNative(#"{"type":"native","signatur":""#))
    }

    @Test func aPresenceFrameIsReadStrictly() throws {
        let ada = Presence(name: "Ada ✍️", color: "#1E88E5", x: 120.5, y: -80)
        #expect(try Presence.parse(ada.frame) == ada)
        #expect(try Presence.parse(#"{"type":"presence","name":"Bo"}"#) == Presence(name: "Bo"))
        #expect(try Presence.parse(CanonicalJSON.line(for: .clear)) == nil)
        #expect(try Presence.parse(#"{"name":"Bo","type":"presence"}"#) == nil, "not a presence frame: it does not start as one")
        let bad: [(String, String)] = [
            (#"{"type":"presence","name":"Bo","x":1}"#, "together"),
            (#"{"type":"presence","name":"Bo","x":1e10,"y":0}"#, "off any board"),
            (#"{"type":"presence","name":"Bo","x":"1","y":0}"#, "finite number"),
            (#"{"type":"presence","name":"Bo","color":"blue"}"#, "#RRGGBB"),
            (#"{"type":"presence","name":"Bo","id":3}"#, "unknown key"),
            (#"{"type":"presence","name":"Bo","name":"Al"}"#, "twice"),
            (#"{"type":"presence","name":"\#(String(repeating: "a", count: 65))"}"#, "64 bytes"),
            (#"{"type":"presence","name":"a\u0007b"}"#, "control"),
            (#"{"type":"presence","name":"Bo""#, "presence"),
        ]
        for (frame, reason) in bad {
            #expect(throws: WireError.self, "\(frame)") { try Presence.parse(frame) }
            do { _ = try Presence.parse(frame) } catch { #expect(error.reason.contains(reason), "\(frame): \(error.reason)") }
        }
    }

    @Test func presenceReachesOnlyWhoAskedAndIsNeitherRecordedNorNumbered() async throws {
        let temp = TemporaryDirectory("relay-presence")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false))
        let board = try relay.board(BoardName("meet"))
        let watcher = await Self.live(on: board, presence: true)
        let plain = await Self.live(on: board, presence: false)
        let ada = await Self.live(on: board, presence: true)

        let here = Presence(name: "Ada", color: "#FF0000", x: 10, y: 20)
        await ada.receive(text: here.frame)
        // Then an event: frame 1 (the presence was not numbered), acknowledged as such, and
        // broadcast behind the presence: what each client gets before it is all it got.
        await ada.receive(text: CanonicalJSON.line(for: .clear))

        var watched = watcher.outbound.makeAsyncIterator()
        #expect(await watched.next() == ServerMessage.caughtUp(events: 0).text)
        #expect(await watched.next() == here.message(from: ada.id))
        #expect(try ServerMessage(parsing: await watched.next() ?? "").payloads() == [.clear])
        var plainly = plain.outbound.makeAsyncIterator()
        #expect(await plainly.next() == ServerMessage.caughtUp(events: 0).text)
        #expect(try ServerMessage(parsing: await plainly.next() ?? "").payloads() == [.clear], "a client that did not ask got a presence")
        var own = ada.outbound.makeAsyncIterator()
        #expect(await own.next() == ServerMessage.caughtUp(events: 0).text)
        #expect(await own.next() == ServerMessage.ack(upTo: 1).text, "the presence was numbered as a frame")
        #expect(board.board.durableSeq == 1, "the presence was recorded")

        // A newcomer gets who is there once live; the one who leaves is gone for everyone.
        let late = board.connect()
        await late.receive(text: Self.presenceHello)
        late.goLive(caughtUp: 1)
        var lately = late.outbound.makeAsyncIterator()
        #expect(await lately.next() == ServerMessage.caughtUp(events: 1).text)
        #expect(await lately.next() == here.message(from: ada.id))
        ada.close()
        #expect(await watched.next() == Presence.goneMessage(from: ada.id))
        #expect(await lately.next() == Presence.goneMessage(from: ada.id))
        #expect(await eventually(within: 120) { board.presenceCount == 0 })
        await relay.close()
    }

    @Test func aFloodOfPresenceIsDroppedPastTheRateAndAMalformedOneCloses() async throws {
        let temp = TemporaryDirectory("relay-presence-flood")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false))
        let board = try relay.board(BoardName("flood"))
        let watcher = await Self.live(on: board, presence: true)
        let flooder = await Self.live(on: board, presence: false)
        let started = ProcessInfoLite.monotonicSeconds()
        let sent = 2000
        for index in 0..<sent {
            await flooder.receive(text: Presence(name: "f", x: Double(index), y: 0).frame)
        }
        let elapsed = ProcessInfoLite.monotonicSeconds() - started
        let bound = Int(WireLimits.presenceBurst + elapsed * WireLimits.presencePerSecond) + 1
        // Every presence that passed was queued at once (nothing waits): count them behind caughtUp.
        let relayed = watcher.outbound.count - 1
        #expect(relayed >= Int(WireLimits.presenceBurst) && relayed <= bound, "\(relayed) of \(sent) relayed in \(elapsed) s")
        #expect(flooder.closeReason == nil)

        await flooder.receive(text: #"{"type":"presence","name":"f","x":1}"#)
        #expect(flooder.closeReason?.hasPrefix("presence:") == true, "\(flooder.closeReason ?? "still open")")
        await relay.close()
    }
}
