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

    @Test func clientFramesAreWhatRecordAccepts() throws {
        #expect(try ClientFrame.payloads(of: #"{"type":"clear"}"#) == [.clear])
        #expect(try ClientFrame.payloads(of: #"{"type":"clear"}"# + "\n") == [.clear])
        #expect(try ClientFrame.payloads(of: "") == [])
        #expect(throws: WireError.self) { try ClientFrame.payloads(of: String(repeating: " ", count: WireLimits.maxFrameBytes + 1)) }
    }
}
