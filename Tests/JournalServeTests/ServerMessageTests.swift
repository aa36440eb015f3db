import JournalFormat
import JournalIngest
import JournalWire
import Testing

/// The wire messages read back to what was written; a client can tell them apart by their start.
@Suite struct ServerMessageTests {
    @Test func messagesRoundTrip() throws {
        let stroke = StrokeID(UUIDBits(high: 7, low: 9))
        let messages: [ServerMessage] = [
            .ack(upTo: 0), .ack(upTo: UInt64.max), .caughtUp(events: 42),
            .error(frame: 3, message: "line 1: \"quoted\"\nand a tab\t, é"),
            .error(frame: nil, message: "going away"),
            .event(line: CanonicalJSON.line(for: .end(stroke))),
        ]
        for message in messages {
            #expect(try ServerMessage(parsing: message.text) == message)
        }
        #expect(ServerMessage.ack(upTo: 12).text == #"{"type":"ack","upTo":12}"#)
    }

    @Test func malformedMessagesAreRefusedWithAReason() {
        for text in [#"{"type":"ack","upTo":-1}"#, #"{"type":"ack","upTo":01}"#, #"{"type":"ack","upTo":18446744073709551616}"#,
                     #"{"type":"error","message":"unterminated}"#, #"{"type":"nonsense"}"#, "not json"] {
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

        let event = Event(id: EventID(replica: b, seq: 42), lamport: 9, wallTime: 1, payload: .clear)
        #expect(ServerMessage.event(event).eventID == event.id)
        #expect(ServerMessage.event(line: #"{"type":"clear"}"#).eventID == nil)
        #expect(ServerMessage.ack(upTo: 3).eventID == nil)
    }

    @Test func hellosAreReadExactlyAndRefusedWithAReason() throws {
        let a = ReplicaID(UUIDBits(high: 0xABC, low: 0xDEF))
        let have = Have([a: SeqRanges([1...120, 130...200])])
        #expect(try ClientFrame.hello(in: ClientFrame.helloText(have: have)) == have)
        // Any key order, whitespace, overlapping ranges, no have at all.
        #expect(try ClientFrame.hello(in: " { \"have\" : { \"\(a.hex)\" : [ [130,200] , [1,120], [100,120] ] } , \"type\":\"hello\" } ") == have)
        #expect(try ClientFrame.hello(in: #"{"type":"hello"}"#) == Have())
        #expect(try ClientFrame.hello(in: #"{"type":"hello","have":{}}"#) == Have())
        // Not hellos: event lines and anything that is not an object go on to the line parser.
        #expect(try ClientFrame.hello(in: CanonicalJSON.line(for: .clear)) == nil)
        #expect(try ClientFrame.hello(in: "not json") == nil)
        #expect(try ClientFrame.hello(in: #"{"id":"x","point":[1,2]}"#) == nil)

        let refused: [(String, String)] = [
            (#"{"type":"hello","have":{"ABC":[[1,2]]}}"#, "not a replica id"),
            (#"{"type":"hello","have":{"\#(a.hex)":[[0,2]]}}"#, "1 ≤ first ≤ last"),
            (#"{"type":"hello","have":{"\#(a.hex)":[[5,2]]}}"#, "1 ≤ first ≤ last"),
            (#"{"type":"hello","have":{"\#(a.hex)":[[1,2.5]]}}"#, "whole number"),
            (#"{"type":"hello","have":{"\#(a.hex)":[[1,18446744073709551616]]}}"#, "2^64"),
            (#"{"type":"hello","have":{"\#(a.hex)":[[1,2]],"\#(a.hex)":[]}}"#, "twice"),
            (#"{"type":"hello","have":{"\#(a.hex)":[1,2]}}"#, "[first,last]"),
            (#"{"type":"hello","replica":"x"}"#, "unknown key"),
            (#"{"type":"hello","have":[]}"#, "object"),
            (#"{"type":"hello"} trailing"#, "after"),
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
