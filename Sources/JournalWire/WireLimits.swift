/// Bounds both sides of a relay connection rely on (docs/PROTOCOL.md, "Limits").
public enum WireLimits {
    /// The largest frame either side sends, in bytes. A pen point's line is about 200 bytes;
    /// CollabSketch's whole-stroke lines are the long ones (about 300 points fit).
    public static let maxFrameBytes = 64 * 1024
    /// Frames a client may have sent that are not acknowledged yet. Past this the relay stops
    /// reading its socket until the acks catch up, so a flooding client waits on TCP instead
    /// of filling the relay's memory.
    public static let maxUnacknowledgedFrames = 4096
    /// Messages queued for one client that it has not read. A client that falls this far
    /// behind is disconnected with an error (it reconnects and catches up) rather than
    /// holding the relay's memory.
    public static let maxQueuedMessages = 65_536
}
