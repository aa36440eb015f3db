import JournalFormat
import JournalIngest

/// What a client sends in text mode: one frame, one line of any form `journal record` accepts
/// (canonical, DrawTogether's `UpsertStrokeMessage`, CollabSketch's `DrawingStroke`, `clear`).
/// The same parser as `journal record`, so a line means the same on a socket as in a file.
public enum ClientFrame {
    /// The payloads of one text frame: several for a CollabSketch stroke, none for a blank
    /// frame. A frame may end with one newline (a client that writes NDJSON lines as they are).
    public static func payloads(of text: String) throws(WireError) -> [Payload] {
        guard text.utf8.count <= WireLimits.maxFrameBytes else {
            throw WireError("frame of \(text.utf8.count) bytes is over the limit of \(WireLimits.maxFrameBytes)")
        }
        var line = Substring(text)
        if line.utf8.last == UInt8(ascii: "\n") { line = line.dropLast() }
        do {
            return try LineParser.parse(String(line))
        } catch {
            throw WireError(error.reason)
        }
    }

    /// The text frame that records `payload`: its canonical line.
    public static func text(for payload: Payload) -> String { CanonicalJSON.line(for: payload) }
}
