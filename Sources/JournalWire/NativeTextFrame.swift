import JournalFormat

/// Native mode in text (docs/PROTOCOL.md, "Native text frames"): the same events a binary
/// native frame carries, for a client that can sign but has no segment encoder (the drawing
/// page). One text frame is a header line, a newline, then the body:
///
///     {"type":"native","signature":"<128 lowercase hex>"}
///     <event line>
///     <event line>…
///
/// Each event line is an event message as the relay sends them (`journal log`'s line: the
/// payload, then `"replica","seq","lamport","time"` last). The signature is the replica key's
/// Ed25519 signature over a fixed label, the board's name, a zero byte and the body's bytes
/// exactly as sent (everything after the header's newline), so a frame recorded on one board
/// cannot be replayed onto another and no byte of an event can change.
public enum NativeTextFrame {
    public static let headerPrefix = #"{"type":"native","signature":""#
    static let label = "StrokeJournal native text v1\0"

    /// Whether `text` is meant as a native text frame (then `open` says whether it is one).
    public static func isNative(_ text: String) -> Bool {
        // Asked of every text frame a relay reads: bytes compared in place where the string
        // has them (a frame always does), not through the generic sequence comparison.
        let prefix = headerPrefixBytes
        if let answer = text.utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            bytes.count >= prefix.count && prefix.indices.allSatisfy { bytes[$0] == prefix[$0] }
        }) {
            return answer
        }
        return text.utf8.starts(with: prefix)
    }
    private static let headerPrefixBytes = Array(headerPrefix.utf8)

    /// The frame that carries `events` (each signed for `board` by `key`, whose replica they
    /// must name).
    public static func frame(_ events: [Event], board: String, with key: ReplicaKey) -> String {
        let body = events.map { ServerMessage.event($0).text }.joined(separator: "\n")
        let signature = key.signature(for: signedBytes(Array(body.utf8), board: board))
        return headerPrefix + Hex.bytes(signature) + "\"}\n" + body
    }

    /// The events of a frame whose signature verifies with `publicKey` for `board`: at most
    /// `limits.maxEvents`, each one line with its envelope. Throws naming what is wrong
    /// (the line, counted from 1 after the header).
    public static func open(_ text: String, board: String, publicKey: [UInt8], limits: SegmentMessage.Limits) throws(WireError) -> [Event] {
        let bytes = Array(text.utf8)
        guard bytes.count <= WireLimits.maxFrameBytes else {
            throw WireError("a native text frame of \(bytes.count) bytes is over the limit of \(WireLimits.maxFrameBytes)")
        }
        let prefix = Array(headerPrefix.utf8)
        let hexEnd = prefix.count + 2 * NativeFrame.signatureBytes
        guard bytes.count > hexEnd + 2, bytes.starts(with: prefix),
              bytes[hexEnd] == UInt8(ascii: "\""), bytes[hexEnd + 1] == UInt8(ascii: "}"), bytes[hexEnd + 2] == UInt8(ascii: "\n"),
              let signature = Hex.decode(String(decoding: bytes[prefix.count..<hexEnd], as: UTF8.self)),
              bytes[prefix.count..<hexEnd].allSatisfy(Hex.isLowercaseHexDigit)
        else {
            throw WireError("a native text frame starts with {\"type\":\"native\",\"signature\":\"<128 lowercase hex>\"} and a newline, then one event line per line")
        }
        let body = Array(bytes[(hexEnd + 3)...])
        guard ReplicaKey.isValid(signature: signature[...], of: signedBytes(body, board: board), publicKey: publicKey) else {
            throw WireError("its signature does not verify with the key of the hello (for board \(board)): it was not signed by this replica's key, or for another board")
        }
        var events: [Event] = []
        for (index, line) in body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            guard events.count < limits.maxEvents else {
                throw WireError("it holds more than \(limits.maxEvents) events")
            }
            let message: ServerMessage
            do { message = try ServerMessage(parsing: String(decoding: line, as: UTF8.self)) } catch {
                throw WireError("line \(index + 1) of its body: \(error.reason)")
            }
            let event: Event?
            do { event = try message.event() } catch { throw WireError("line \(index + 1) of its body: \(error.reason)") }
            guard let event else {
                throw WireError("line \(index + 1) of its body is not an event line with its envelope (\"replica\",\"seq\",\"lamport\",\"time\" last)")
            }
            events.append(event)
        }
        return events
    }

    private static func signedBytes(_ body: [UInt8], board: String) -> [UInt8] {
        Array(label.utf8) + Array(board.utf8) + [0] + body
    }
}
