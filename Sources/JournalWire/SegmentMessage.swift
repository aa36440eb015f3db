import JournalFormat

/// A binary frame of a catch-up in blocks (`"blocks":true` in the hello; docs/PROTOCOL.md):
/// events of one replica in the journal's own encoding, a segment header (docs/FORMAT.md §4)
/// followed by block frames (§5), each block's seqs after the previous block's. Blocks the
/// client lacks wholly are the relay's stored bytes, unchanged; so a catch-up costs about what
/// the journal weighs (≈ 2 bytes per point) and nothing is encoded twice.
///
/// Unlike a segment file, seqs may skip between blocks (the client holds the events between).
public struct SegmentMessage: Sendable {
    public var replica: ReplicaID
    /// The segment format version its blocks are encoded in.
    public var version: UInt16
    /// The decoded blocks, in seq order.
    public var blocks: [BlockColumns]

    public init(replica: ReplicaID, version: UInt16, blocks: [BlockColumns]) {
        self.replica = replica
        self.version = version
        self.blocks = blocks
    }

    public var eventCount: Int { blocks.reduce(0) { $0 + $1.count } }

    /// The events, in seq order.
    public func events() -> [Event] { blocks.flatMap { $0.events(replica: replica) } }

    /// The frame's bytes: `frames` must be whole block frames of `version`, of `replica`, in
    /// increasing seq order (the relay builds them from its journal or `SegmentEncoder`).
    public static func encode(replica: ReplicaID, version: UInt16, frames: [ArraySlice<UInt8>]) -> [UInt8] {
        var out = SegmentHeader(replica: replica, version: version).encoded()
        out.reserveCapacity(out.count + frames.reduce(0) { $0 + $1.count })
        for frame in frames { out.append(contentsOf: frame) }
        return out
    }

    /// A native client's frame: `events` (of `replica`, consecutive seqs) as one block.
    public static func encode(replica: ReplicaID, events: ArraySlice<Event>) -> [UInt8] {
        SegmentHeader(replica: replica).encoded() + SegmentEncoder.block(events)
    }

    /// Reads a binary frame the relay sent: every block is checked (checksum, inflate, body
    /// rules) as a journal reader checks it, so a damaged frame is refused whole, naming the
    /// offset and what was wrong, and nothing of it is drawn.
    ///
    /// `limits` bound what a message may hold in all, checked from the block headers before
    /// anything is inflated: a relay reading a native client's frame must not let a small
    /// frame of highly compressible blocks become millions of events.
    public init(decoding bytes: [UInt8], limits: Limits? = nil) throws(WireError) {
        var decoded: Result<SegmentMessage, WireError> = .failure(WireError("not decoded"))
        bytes.withUnsafeBytes { buffer in
            decoded = Result { () throws(WireError) in try Self.decode(buffer, limits: limits) }
        }
        self = try decoded.get()
    }

    public struct Limits: Sendable {
        public var maxEvents: Int
        public var maxRawBytes: Int
        public init(maxEvents: Int, maxRawBytes: Int) {
            self.maxEvents = maxEvents
            self.maxRawBytes = maxRawBytes
        }
    }

    private static func decode(_ buffer: UnsafeRawBufferPointer, limits: Limits?) throws(WireError) -> SegmentMessage {
        let header: SegmentHeader
        do { header = try SegmentHeader.decode(buffer) } catch {
            throw WireError("segment message: header: \(error)")
        }
        var message = SegmentMessage(replica: header.replica, version: header.version, blocks: [])
        var offset = FormatV1.fileHeaderSize
        var previousLast: UInt64 = 0
        var events = 0
        var raw = 0
        var overLimitAt: Int?
        blocks: while offset < buffer.count {
            let remaining = UnsafeRawBufferPointer(rebasing: buffer[offset...])
            do throws(SegmentFormatError) {
                let frame = try BlockFrame.decodeHeader(remaining, version: header.version)
                // Counted from the headers, before the block is inflated.
                events += frame.eventCount
                raw += frame.rawLength
                if let limits, events > limits.maxEvents || raw > limits.maxRawBytes {
                    overLimitAt = offset
                    break blocks
                }
                guard frame.totalLength <= remaining.count else { throw .truncatedBlock }
                guard frame.firstSeq > previousLast else {
                    throw .seqOutOfOrder(expected: previousLast + 1, found: frame.firstSeq)
                }
                let frameBytes = UnsafeRawBufferPointer(rebasing: remaining[0..<frame.totalLength])
                message.blocks.append(try BlockDecoder.columns(frame: frame, frameBytes: frameBytes))
                previousLast = frame.lastSeq
                offset += frame.totalLength
            } catch {
                throw WireError("segment message of replica \(header.replica.hex): block at offset \(offset): \(error)")
            }
        }
        if let at = overLimitAt, let limits {
            throw WireError("segment message of replica \(header.replica.hex): its blocks hold more than \(limits.maxEvents) events or \(limits.maxRawBytes) bytes uncompressed (block at offset \(at))")
        }
        guard !message.blocks.isEmpty else { throw WireError("segment message of replica \(header.replica.hex) holds no block") }
        return message
    }
}
