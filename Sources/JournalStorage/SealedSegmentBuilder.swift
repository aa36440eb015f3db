import JournalFormat
import JournalKeys

/// Builds the bytes of one sealed segment from the blocks of segments of one replica, given
/// in seq order: what sealing does with the open segment and what compaction does with a run
/// of sealed ones (docs/FORMAT.md §2.3 step 3, §16.2).
///
/// Blocks of at least `copiedBlockMinimumEvents` events (for a seal,
/// `FormatV1.sealedBlockMinimumEvents`: compressed at the sealing level when they were
/// written) are copied byte for byte. Runs of smaller blocks between them are decoded and
/// re-encoded as blocks of at most `FormatV1.sealedBlockTargetEvents` events, which is where
/// the bytes of frequent flushes and small seals are won back.
struct SealedSegmentBuilder {
    let replica: ReplicaID
    /// The body coding of every input block and of the output (a file has one version).
    let bodyVersion: UInt16
    private(set) var bytes: [UInt8]
    private var smallRun: [Event] = []
    private let signer: SealSigner?
    /// Blocks of at least this many events are copied as they are; smaller ones re-encoded.
    private let copiedBlockMinimumEvents: Int

    /// `signer`: the output is a version 3 (or 7) file sealed by it (its bodies coded as
    /// version 2, or 6).
    /// `copyingBlocksOf`: sealing copies what the writer compressed at the sealing level
    /// (`FormatV1.sealedBlockMinimumEvents`); compaction copies only blocks of at least half
    /// the target size, so that covers of covers end in blocks as large as a batch's.
    init(replica: ReplicaID, bodyVersion: UInt16, signer: SealSigner?,
         copyingBlocksOf copiedBlockMinimumEvents: Int = FormatV1.sealedBlockMinimumEvents) {
        self.copiedBlockMinimumEvents = copiedBlockMinimumEvents
        self.replica = replica
        self.bodyVersion = bodyVersion
        self.signer = signer
        let signedVersion = FormatVersion.signed(bodyCoding: bodyVersion)
        precondition(signer == nil || signedVersion != nil, "version \(bodyVersion) bodies are never signed")
        bytes = SegmentHeader(replica: replica, version: signer == nil ? bodyVersion : signedVersion ?? bodyVersion).encoded()
    }

    /// Appends the blocks of `scan` (whose header must name `replica` and code its bodies as
    /// `bodyVersion`). The failure names the block whose body does not decode.
    mutating func add(_ scan: ScannedSegment) -> Problem? {
        for block in scan.blocks {
            if block.frame.eventCount >= copiedBlockMinimumEvents {
                flushSmallRun()
                bytes += scan.bytes[block.offset..<(block.offset + block.frame.totalLength)]
                continue
            }
            let decoded = scan.bytes.withUnsafeBytes { buffer -> Result<[Event], SegmentFormatError> in
                let frameBytes = UnsafeRawBufferPointer(rebasing: buffer[block.offset..<(block.offset + block.frame.totalLength)])
                do throws(SegmentFormatError) {
                    return .success(try BlockDecoder.events(frame: block.frame, frameBytes: frameBytes, replica: replica))
                } catch {
                    return .failure(error)
                }
            }
            switch decoded {
            case .success(let events): smallRun += events
            case .failure(let error):
                return Problem(.corrupt, file: scan.path, offset: Int64(block.offset), replica: replica,
                               seqRange: block.seqRange, reason: error.description)
            }
        }
        return nil
    }

    private mutating func flushSmallRun() {
        guard !smallRun.isEmpty else { return }
        bytes += SegmentEncoder.blocks(smallRun[...], version: bodyVersion)
        smallRun.removeAll(keepingCapacity: true)
    }

    /// The complete file, sealed if a signer was given.
    mutating func finish() -> [UInt8] {
        flushSmallRun()
        guard let signer else { return bytes }
        return SegmentSeal.seal(bytes, role: signer.role, key: signer.key)
    }
}
