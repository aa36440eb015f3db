import JournalFormat
import JournalKeys
import JournalPlatform
import JournalWire

/// The keys of the replicas native tests make: a test names a replica by its id, as clients
/// do in events, and frames of that replica are signed with its key (`NativeFrame`).
public enum TestReplicaKeys {
    private static let keys = Locked<[ReplicaID: ReplicaKey]>([:])

    /// A new replica whose key the tests keep.
    public static func newReplica() -> ReplicaID {
        let key = ReplicaKey()
        keys.withLock { $0[key.replica] = key }
        return key.replica
    }

    /// The key of a replica `newReplica` made; for any other id, a key of some other replica
    /// (what an impostor holds).
    public static func key(for replica: ReplicaID) -> ReplicaKey { keys.withLock { $0[replica] } ?? ReplicaKey() }

    /// A native client's hello for `replica`. For a replica the tests hold no key of, the hello
    /// names it with another replica's key, as an impostor would.
    public static func hello(_ replica: ReplicaID, have: Have = Have()) -> String {
        var hello = Hello(have: have, native: key(for: replica))
        hello.replica = replica
        return ClientFrame.helloText(hello)
    }

    /// A hello naming `replica` with a key of another replica: what someone who saw the id in
    /// an event message, without its key, can send.
    public static func impostorHello(_ replica: ReplicaID, have: Have = Have()) -> String {
        var hello = Hello(have: have, native: ReplicaKey())
        hello.replica = replica
        return ClientFrame.helloText(hello)
    }

    /// A native frame: `message` (a `SegmentMessage`) signed for `board` with the key of
    /// `replica`.
    public static func sign(_ message: [UInt8], on board: String, as replica: ReplicaID) -> [UInt8] {
        NativeFrame.sign(message, board: board, with: key(for: replica))
    }

    /// A native frame of `events` (of one replica), signed with that replica's key.
    public static func frame(_ events: [Event], on board: String) -> [UInt8] {
        sign(SegmentMessage.encode(replica: events[0].id.replica, events: events[...]), on: board, as: events[0].id.replica)
    }

    /// Points `seqs` of `replica`, one stroke, clocks equal to the seqs: what native tests send.
    public static func events(_ replica: ReplicaID, _ seqs: ClosedRange<UInt64>, stroke: UInt64 = 7) -> [Event] {
        let id = StrokeID(UUIDBits(high: stroke, low: 0x9A7))
        return seqs.map { seq in
            Event(id: EventID(replica: replica, seq: seq), lamport: seq, wallTime: 1_700_000_000_000 + Int64(seq),
                  payload: .point(PointSample(stroke: id, x: Double(seq) / 3, y: Double(seq) * 0.1, pressure: 0.5,
                                              t: Double(seq) / 240, style: Style(color: RGBA(rawValue: 0x1E88E5FF), width: 2))))
        }
    }
}
