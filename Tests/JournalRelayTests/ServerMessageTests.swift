import JournalFormat
import JournalIngest
import JournalTestSupport
import JournalWire
import Testing

/// The wire messages read back to what was written; a client can tell them apart by their start.
@Suite struct ServerMessageTests {
    @Test func messagesRoundTrip() throws {
        let stroke = StrokeID(UUIDBits(high: 7, low: 9))
        let messages: [ServerMessage] = [
            .ack(upTo: 0), .ack(upTo: UInt64.max), .caughtUp(events: 42),
            .replicaAck(replica: ReplicaID(UUIDBits(high: 1, low: 2)), upTo: 77),
            .error(frame: 3, code: .badRequest, message: "line 1: \"quoted\"\nand a tab\t, é"),
            .error(frame: nil, code: .unavailable, message: "going away"),
            .error(frame: nil, code: .unspecified, message: "an older relay's error"),
            .event(line: CanonicalJSON.line(for: .end(stroke))),
        ]
        for message in messages {
            #expect(try ServerMessage(parsing: message.text) == message)
        }
        #expect(ServerMessage.ack(upTo: 12).text == #"{"type":"ack","upTo":12}"#)
        #expect(ServerMessage.replicaAck(replica: ReplicaID(UUIDBits(high: 0, low: 0xAB)), upTo: 5).text
                == #"{"type":"ack","replica":"000000000000000000000000000000ab","upTo":5}"#)
    }

    /// Clients decide on the code: it is written where a client reads it, an older relay's
    /// error without one reads as `unspecified`, and a code this client does not know (a newer
    /// relay's) too, which is tried again, never taken for a refusal for good.
    @Test func errorsCarryTheirCodeAndUnknownCodesAreTriedAgain() throws {
        #expect(ServerMessage.error(frame: 2, code: .viewOnly, message: "m").text == #"{"type":"error","frame":2,"code":"view-only","message":"m"}"#)
        #expect(ServerMessage.error(frame: nil, code: .unauthorized, message: "m").text == #"{"type":"error","code":"unauthorized","message":"m"}"#)
        #expect(try ServerMessage(parsing: #"{"type":"error","message":"old"}"#) == .error(frame: nil, code: .unspecified, message: "old"))
        #expect(try ServerMessage(parsing: #"{"type":"error","frame":4,"code":"from-the-future","message":"new"}"#)
                == .error(frame: 4, code: .unspecified, message: "new"))
        #expect(RefusalCode.unspecified.retry == .later)
        // Every close code stands for one code, in the range RFC 6455 leaves to applications.
        for code in RefusalCode.allCases where code != .unspecified {
            #expect((4000...4999).contains(code.closeCode), "\(code)")
            #expect(RefusalCode(closeCode: code.closeCode) == code, "\(code)")
        }
        #expect(RefusalCode(closeCode: 1000) == nil && RefusalCode(closeCode: 1006) == nil && RefusalCode(closeCode: 4999) == nil)
    }


    @Test func malformedMessagesAreRefusedWithAReason() {
        for text in [#"{"type":"ack","upTo":-1}"#, #"{"type":"ack","upTo":01}"#, #"{"type":"ack","upTo":18446744073709551616}"#,
                     #"{"type":"error","message":"unterminated}"#, #"{"type":"nonsense"}"#, "not json",
                     #"{"type":"error","code":"forbidden"}"#, #"{"type":"error","code":7,"message":"m"}"#,
                     #"{"type":"ack","replica":"000000000000000000000000000000AB","upTo":5}"#,
                     #"{"type":"ack","replica":"000000000000000000000000000000ab","upTo":5,"x":1}"#] {
            #expect(throws: WireError.self, "\(text)") { try ServerMessage(parsing: text) }
        }
    }

    @Test func caughtUpCarriesTheBoardsHaveAndEventsTheirIds() throws {
        let a = ReplicaID(UUIDBits(high: 1, low: 2)), b = ReplicaID(UUIDBits(high: 3, low: 4))
        let have = Have([b: SeqRanges([130...200, 1...120]), a: SeqRanges([5...5])])
        let message = ServerMessage.caughtUp(events: 7, have: have)
        #expect(message.text == #"{"type":"caughtUp","events":7,"have":{"00000000000000010000000000000002":[[5,5]],"00000000000000030000000000000004":[[1,120],[130,200]]}}"#)
        #expect(try ServerMessage(parsing: message.text) == message)
        #expect(ServerMessage.caughtUp(events: 0).text == #"{"type":"caughtUp","events":0,"have":{}}"#)
        // A viewer's connection is told at once; without the field, a client may draw.
        let viewer = ServerMessage.caughtUp(events: 3, have: have, viewOnly: true)
        #expect(viewer.text.hasPrefix(#"{"type":"caughtUp","events":3,"viewOnly":true,"have":{"#))
        #expect(try ServerMessage(parsing: viewer.text) == viewer)
        #expect(try ServerMessage(parsing: #"{"type":"caughtUp","events":3,"have":{}}"#) == .caughtUp(events: 3))
        #expect(throws: WireError.self) { try ServerMessage(parsing: #"{"type":"caughtUp","events":3,"viewOnly":false,"have":{}}"#) }

        let event = Event(id: EventID(replica: b, seq: 42), lamport: 9, wallTime: 1, payload: .clear)
        #expect(ServerMessage.event(event).eventID == event.id)
        #expect(ServerMessage.event(line: #"{"type":"clear"}"#).eventID == nil)
        #expect(ServerMessage.ack(upTo: 3).eventID == nil)
    }

    @Test func hellosAreReadExactlyAndRefusedWithAReason() throws {
        let a = ReplicaID(UUIDBits(high: 0xABC, low: 0xDEF))
        let have = Have([a: SeqRanges([1...120, 130...200])])
        #expect(try ClientFrame.hello(in: ClientFrame.helloText(have: have))?.have == have)
        // Any key order, whitespace, overlapping ranges, no have at all.
        #expect(try ClientFrame.hello(in: " { \"have\" : { \"\(a.hex)\" : [ [130,200] , [1,120], [100,120] ] } , \"type\":\"hello\" } ")?.have == have)
        #expect(try ClientFrame.hello(in: #"{"type":"hello"}"#) == Hello())
        #expect(try ClientFrame.hello(in: #"{"type":"hello","have":{}}"#) == Hello())
        // Native mode: the client's replica, read and written back the same.
        let key = ReplicaKey()
        let native = Hello(have: Have([a: SeqRanges([1...3])]), blocks: true, native: key)
        #expect(native.replica == key.replica && native.key == key.publicKey)
        #expect(try ClientFrame.hello(in: ClientFrame.helloText(native)) == native)
        let keyHex = Hex.bytes(key.publicKey)
        #expect(try ClientFrame.hello(in: #"{"key":"\#(keyHex)","replica":"\#(key.replica.hex)","type":"hello"}"#) == Hello(native: key))
        // A token travels as an opaque string.
        let withToken = Hello(echo: true, token: "sjt1.0123456789abcdef.draw.b.1.\\\"x")
        #expect(try ClientFrame.hello(in: ClientFrame.helloText(withToken)) == withToken)
        // Not hellos: event lines and anything that is not an object go on to the line parser.
        #expect(try ClientFrame.hello(in: CanonicalJSON.line(for: .clear)) == nil)
        #expect(try ClientFrame.hello(in: "not json") == nil)
        #expect(try ClientFrame.hello(in: #"{"id":"x","point":[1,2]}"#) == nil)

        // A client of a board with thousands of replicas still has a hello the relay reads:
        // it names the replicas it holds most of, and whatever it leaves out comes again.
        var crowd = Have([a: SeqRanges([1...1_000_000])])
        for index in 0..<3000 { crowd.insert(ReplicaID(UUIDBits(high: 1, low: UInt64(index))), 1...UInt64(1 + index % 7)) }
        let crowded = ClientFrame.helloText(Hello(have: crowd, echo: true, token: "t"))
        #expect(crowded.utf8.count <= WireLimits.maxFrameBytes)
        let read = try #require(try ClientFrame.hello(in: crowded))
        #expect(read.echo && read.token == "t" && read.have[a] == SeqRanges([1...1_000_000]))
        #expect(read.have.ranges.count > 1000 && read.have.ranges.count < 3001)
        #expect(crowd.containsAll(read.have))

        let refused: [(String, String)] = [
            (#"{"type":"hello","have":{"ABC":[[1,2]]}}"#, "not a replica id"),
            (#"{"type":"hello","have":{"\#(a.hex)":[[0,2]]}}"#, "1 ≤ first ≤ last"),
            (#"{"type":"hello","have":{"\#(a.hex)":[[5,2]]}}"#, "1 ≤ first ≤ last"),
            (#"{"type":"hello","have":{"\#(a.hex)":[[1,2.5]]}}"#, "whole number"),
            (#"{"type":"hello","have":{"\#(a.hex)":[[1,18446744073709551616]]}}"#, "2^64"),
            (#"{"type":"hello","have":{"\#(a.hex)":[[1,2]],"\#(a.hex)":[]}}"#, "twice"),
            (#"{"type":"hello","have":{"\#(a.hex)":[1,2]}}"#, "[first,last]"),
            (#"{"type":"hello","replica":"x"}"#, "32 lowercase hex"),
            (#"{"type":"hello","replica":"\#(a.hex.uppercased())"}"#, "32 lowercase hex"),
            // Native mode names the replica of the client's key, and only that one.
            (#"{"type":"hello","replica":"\#(a.hex)"}"#, "needs both"),
            (#"{"type":"hello","key":"\#(keyHex)"}"#, "needs both"),
            (#"{"type":"hello","replica":"\#(a.hex)","key":"\#(keyHex)"}"#, "is not the replica its \"key\" names"),
            (#"{"type":"hello","replica":"\#(key.replica.hex)","key":"\#(keyHex.uppercased())"}"#, "64 lowercase hex"),
            (#"{"type":"hello","token":1}"#, "must be a string"),
            (#"{"type":"hello","replica":"\#(a.hex)","replica":"\#(a.hex)"}"#, "twice"),
            (#"{"type":"hello","origin":"x"}"#, "unknown key"),
            (#"{"type":"hello","have":[]}"#, "object"),
            (#"{"type":"hello"} trailing"#, "after"),
            // Cut short or nested too deep after saying it is a hello: still a hello, refused.
            (#"{"type":"hello","have":{"#, ""),
            (#"{"type":"hello","have":"# + String(repeating: "[", count: 5000), ""),
        ]
        for (text, expected) in refused {
            do {
                _ = try ClientFrame.hello(in: text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.reason.hasPrefix("hello: ") && error.reason.contains(expected), "\(text): \(error.reason)")
            }
        }
    }

    @Test func clientFramesAreWhatRecordAccepts() throws {
        #expect(try ClientFrame.payloads(of: #"{"type":"clear"}"#) == [.clear])
        #expect(try ClientFrame.payloads(of: #"{"type":"clear"}"# + "\n") == [.clear])
        #expect(try ClientFrame.payloads(of: "") == [])
        #expect(throws: WireError.self) { try ClientFrame.payloads(of: String(repeating: " ", count: WireLimits.maxFrameBytes + 1)) }
    }
}

/// The binary catch-up message: the journal's blocks behind a segment header, refused whole
/// when any part of it is damaged.
@Suite struct SegmentMessageTests {
    /// Two blocks of one replica with a gap between them (the client holds the seqs between).
    func message() -> (bytes: [UInt8], events: [Event]) {
        var generator = EventGenerator(seed: 11)
        var events: [Event] = []
        for _ in 0..<6 { events += generator.stroke(points: 20) }
        let first = events[0..<40], second = events[60...]
        let bytes = SegmentMessage.encode(
            replica: generator.replica, version: FormatVersion.current,
            frames: [SegmentEncoder.block(first)[...], SegmentEncoder.block(second)[...]])
        return (bytes, Array(first) + Array(second))
    }

    @Test func blocksWithAGapDecodeToTheirEvents() throws {
        let (bytes, events) = message()
        let decoded = try SegmentMessage(decoding: bytes)
        #expect(decoded.events() == events)
        #expect(decoded.eventCount == events.count && decoded.blocks.count == 2)
        #expect(decoded.replica == events[0].id.replica)
    }

    @Test func damageIsNamedWithItsOffset() {
        let (bytes, _) = message()
        let header = FormatV1.fileHeaderSize
        let cases: [(String, [UInt8], String)] = [
            ("a flipped body byte", Damage.flipByte(bytes, at: header + FormatV1.blockHeaderSize + 3), "offset \(header)"),
            ("a truncated block", Array(bytes.dropLast(5)), "offset"),
            ("a damaged header", Damage.flipByte(bytes, at: 14), "header"),
            ("no block", Array(bytes[0..<header]), "no block"),
        ]
        for (what, damaged, mention) in cases {
            do {
                _ = try SegmentMessage(decoding: damaged)
                Issue.record("\(what): accepted")
            } catch {
                #expect(error.reason.contains(mention), "\(what): \(error.reason)")
            }
        }
    }

    @Test func blocksOutOfSeqOrderAreRefused() throws {
        var generator = EventGenerator(seed: 12)
        let events = generator.stroke(points: 30)
        let bytes = SegmentMessage.encode(
            replica: generator.replica, version: FormatVersion.current,
            frames: [SegmentEncoder.block(events[10..<20])[...], SegmentEncoder.block(events[0..<10])[...]])
        #expect(throws: WireError.self) { try SegmentMessage(decoding: bytes) }
    }

    @Test func aHelloMayAskForBlocks() throws {
        let have = Have([ReplicaID(UUIDBits(high: 1, low: 2)): SeqRanges([1...9])])
        #expect(try ClientFrame.hello(in: ClientFrame.helloText(have: have, blocks: true)) == Hello(have: have, blocks: true))
        #expect(try ClientFrame.hello(in: #"{"blocks":false,"type":"hello"}"#) == Hello())
        for bad in [#"{"type":"hello","blocks":1}"#, #"{"type":"hello","blocks":true,"blocks":true}"#, #"{"type":"hello","blocks":tru}"#] {
            #expect(throws: WireError.self, "\(bad)") { try ClientFrame.hello(in: bad) }
        }
    }
}
