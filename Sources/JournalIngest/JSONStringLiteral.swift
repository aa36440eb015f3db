import JournalFormat

/// Reads one JSON string literal at a position in a line of text, with the same scanner (and
/// the same escape rules and messages) as `LineParser`: clients of the relay decode the
/// strings of its messages with it rather than with a second JSON reader.
public enum JSONStringLiteral {
    /// Decodes the string literal that starts at byte `offset` of `text` (on its opening
    /// quote). Returns the decoded string and the byte offset just after the closing quote.
    public static func decode(_ text: String, at offset: Int) throws(LineError) -> (value: String, end: Int) {
        try JSONScanner.scanning(text) { scanner throws(LineError) in
            guard offset >= 0, offset < scanner.end, scanner.base[offset] == UInt8(ascii: "\"") else {
                throw LineError(reason: "expected a string at column \(offset + 1)")
            }
            scanner.index = offset
            let bytes = try scanner.decodeString()
            return (String(decoding: bytes, as: UTF8.self), scanner.index)
        }
    }
}
