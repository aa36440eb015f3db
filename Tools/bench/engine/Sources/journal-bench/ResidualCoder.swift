import JournalCompression
import JournalFormat
import JournalIngest

/// The `residualCoder` row: what an adaptive binary range coder would spend on a session's
/// real columns, and what decoding them costs, against deflate of the same residuals in the
/// same run. It is the measured side of issue 42's "Hershey ≤ 3.0 B/pt": deflate's Huffman
/// codes over varint bytes lose about a tenth on short strokes, a coder near the residuals'
/// entropy would not, and this row says what that coder costs a reader. No format uses this
/// coder; `Tools/bench/residual_coder_floor.py` is its `wide` shape written as ideal code lengths.
///
/// Residuals are those of FORMAT.md §14.3 on the sessions' own grids (x, y and pressure in
/// hundredths, t in thousandths): per replica file, blocks of 32,768 points, per block and
/// column the order and start rule whose varints deflate smallest, as the Python tool picks.
struct ResidualBlock {
    var column: Int
    var values: [UInt64]
    /// Each entry's age in its stroke within the block: 0 first, 1 second, 2 later (capped).
    var ages: [UInt8]
}

enum ResidualColumns {
    static let blockPoints = 32_768
    static let names = ["x", "y", "pressure", "t"]
    static let scales: [Double] = [100, 100, 100, 1000]

    private struct Sample {
        var stroke: StrokeID
        var values: (Double?, Double?, Double?, Double?)
        func value(_ column: Int) -> Double? {
            switch column {
            case 0: return values.0
            case 1: return values.1
            case 2: return values.2
            default: return values.3
            }
        }
    }

    static func blocks(of inputs: [String]) throws -> (blocks: [ResidualBlock], points: Int) {
        var blocks: [ResidualBlock] = []
        var points = 0
        for input in inputs {
            var reader = try NDJSONReader(path: input)
            var payloads: [Payload] = []
            while try reader.next(appendingTo: &payloads) != nil {}
            var samples: [Sample] = []
            for payload in payloads {
                guard case .point(let point) = payload else { continue }
                samples.append(Sample(stroke: point.stroke, values: (point.x, point.y, point.pressure, point.t)))
            }
            points += samples.count
            var first = 0
            while first < samples.count {
                let block = samples[first..<min(first + blockPoints, samples.count)]
                for column in 0..<4 {
                    var best: (size: Int, block: ResidualBlock)?
                    for order in 1...2 {
                        for start in [false, true] {
                            let candidate = residuals(block, column: column, order: order, start: start)
                            let size = try RawDeflate.compress(varints(candidate.values)).count
                            if best == nil || size < best!.size { best = (size, candidate) }
                        }
                    }
                    blocks.append(best!.block)
                }
                first += blockPoints
            }
        }
        return (blocks, points)
    }

    private static func residuals(_ block: ArraySlice<Sample>, column: Int, order: Int, start: Bool) -> ResidualBlock {
        struct StrokeState { var previous: Int64; var delta: Int64; var age: Int }
        var strokes: [StrokeID: StrokeState] = [:]
        var last: Int64 = 0
        var result = ResidualBlock(column: column, values: [], ages: [])
        for sample in block {
            guard let value = sample.value(column) else { continue }
            let n = Int64((value * scales[column]).rounded())
            let predicted: Int64
            let age: Int
            if let state = strokes[sample.stroke] {
                predicted = order == 2 ? state.previous &+ state.delta : state.previous
                age = state.age + 1
                strokes[sample.stroke] = StrokeState(previous: n, delta: n &- state.previous, age: age)
            } else {
                predicted = start ? last : 0
                age = 0
                strokes[sample.stroke] = StrokeState(previous: n, delta: 0, age: 0)
            }
            let residual = n &- predicted
            result.values.append(UInt64(bitPattern: (residual << 1) ^ (residual >> 63)))
            result.ages.append(UInt8(min(age, 2)))
            last = n
        }
        return result
    }

    static func varints(_ values: [UInt64]) -> [UInt8] {
        var writer = ByteWriter(capacity: values.count * 2)
        for value in values { writer.appendVarint(value) }
        return writer.bytes
    }

    /// Inflates a block's deflated varints and reads `count` of them into `out` with the
    /// journal's own column reader (`ByteReader.readVarints`), which must end at the last byte.
    static func inflateVarints(_ deflated: [UInt8], rawCount: Int, count: Int, scratch: UnsafeMutableRawBufferPointer,
                               into out: UnsafeMutablePointer<UInt64>) throws {
        let raw = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<rawCount])
        var failure: ZlibError?
        deflated.withUnsafeBytes { input in
            do throws(ZlibError) { try RawDeflate.decompress(input, into: raw) } catch { failure = error }
        }
        if let failure { throw BenchError("inflating a block's residuals: \(failure)") }
        var reader = ByteReader(UnsafeRawBufferPointer(raw))
        try reader.readVarints(into: UnsafeMutableBufferPointer(start: out, count: count))
        guard reader.isAtEnd else { throw BenchError("\(reader.remaining) bytes left after a block's \(count) residuals") }
    }
}

/// LZMA's binary range coder (12-bit probabilities moved 1/32 towards each bit) over a
/// residual's bit length n and the bits below its leading one, in one of two shapes:
///
/// - `wide`, the model of `residual_coder_floor.py`: n in a 7-bit tree, in a context of the
///   entry's age in its stroke and the previous non-first entry's n (capped at 15); the two
///   bits below the leading one in a tree per (n, first entry or not); every other bit one
///   probability per (n, position).
/// - `short`: n in a 4-bit tree in the same contexts, 15 and above escaping to a 6-bit tree of
///   its own; the top two bits as in `wide`, the next two one probability per (n, position),
///   and the bits below those raw, in a bit stream after the coded bytes. Fewer decisions a
///   value, and fewer probabilities to learn in a block.
struct AdaptiveResidualCoder {
    enum Shape: String, CaseIterable {
        case wide, short
        var lengthBits: Int { self == .wide ? 7 : 4 }
        /// Bits below the leading one that are coded with a probability; the rest are raw.
        var codedBelow: Int { self == .wide ? 64 : 4 }
    }

    let shape: Shape
    static let lengthContexts = 3 * 16
    static let lengthsCount = lengthContexts * 128
    static let escapeCount = 64
    static let topCount = 65 * 8 * 2
    static let belowCount = 65 * 64
    static let probabilityBits: UInt32 = 12
    static let moveBits: UInt32 = 5
    static let half: UInt16 = 1 << 11

    /// Probabilities, reset for every block (each block decodes alone, as a block body must).
    final class Model {
        let lengths = UnsafeMutablePointer<UInt16>.allocate(capacity: lengthsCount)
        let escape = UnsafeMutablePointer<UInt16>.allocate(capacity: escapeCount)
        let top = UnsafeMutablePointer<UInt16>.allocate(capacity: topCount)
        let below = UnsafeMutablePointer<UInt16>.allocate(capacity: belowCount)
        func reset() {
            lengths.update(repeating: half, count: lengthsCount)
            escape.update(repeating: half, count: escapeCount)
            top.update(repeating: half, count: topCount)
            below.update(repeating: half, count: belowCount)
        }
        deinit {
            lengths.deallocate()
            escape.deallocate()
            top.deallocate()
            below.deallocate()
        }
    }

    /// A block's coded bytes, then its raw bits (most significant first, zero-padded to a byte).
    struct Coded {
        var bytes: [UInt8]
        var raw: [UInt8]
        var count: Int { bytes.count + raw.count }
    }

    func encode(_ block: ResidualBlock, model: Model) -> Coded {
        model.reset()
        var encoder = Encoder()
        var raw = RawBits()
        var previous = 0
        let lengthBits = shape.lengthBits
        let lengthLimit = (1 << lengthBits) - 1
        for index in block.values.indices {
            let value = block.values[index]
            let age = Int(block.ages[index])
            let n = 64 - value.leadingZeroBitCount
            let lengths = model.lengths + (age * 16 + min(previous, 15)) * 128
            let head = shape == .short ? min(n, lengthLimit) : n
            var node = 1
            for shift in stride(from: lengthBits - 1, through: 0, by: -1) {
                let bit = (head >> shift) & 1
                encoder.encode(bit, lengths + node)
                node = node * 2 + bit
            }
            if shape == .short && n >= lengthLimit {
                node = 1
                for shift in stride(from: 5, through: 0, by: -1) {
                    let bit = ((n - lengthLimit) >> shift) & 1
                    encoder.encode(bit, model.escape + node)
                    node = node * 2 + bit
                }
            }
            var topNode = 1
            var position = n - 2
            while position >= 0 {
                let bit = Int(truncatingIfNeeded: value >> UInt64(position)) & 1
                if position >= n - 3 {
                    encoder.encode(bit, model.top + ((n * 8 + topNode) * 2 + min(age, 1)))
                    topNode = topNode * 2 + bit
                } else if position >= n - 1 - shape.codedBelow {
                    encoder.encode(bit, model.below + (n * 64 + position))
                } else {
                    // The rest of the value at once: position + 1 bits.
                    raw.append(value & ((1 << UInt64(position + 1)) - 1), count: position + 1)
                    break
                }
                position -= 1
            }
            if age > 0 { previous = n }
        }
        return Coded(bytes: encoder.finish(), raw: raw.finish())
    }

    enum DecodeError: Error { case lengthOutOfRange(Int), endsEarly }

    /// Decodes `ages.count` residuals into `out`. A residual reads at most 77 coded bytes (one
    /// a decision), so with 80 zero bytes of padding it never reads past the buffer; a stream
    /// that reads past its own bytes is refused at the next residual.
    func decode(_ coded: Coded, ages: [UInt8], model: Model, into out: UnsafeMutablePointer<UInt64>) throws(DecodeError) {
        model.reset()
        var padded = coded.bytes
        padded.append(contentsOf: repeatElement(0, count: 80))
        var rawPadded = coded.raw
        rawPadded.append(contentsOf: repeatElement(0, count: 16))
        let shape = shape
        var failure: DecodeError?
        padded.withUnsafeBufferPointer { buffer in rawPadded.withUnsafeBufferPointer { rawBuffer in
            let base = buffer.baseAddress!
            var input = base
            let end = base + coded.bytes.count
            var range: UInt32 = 0xFFFF_FFFF
            var code: UInt32 = 0
            for _ in 0..<5 {
                code = (code << 8) | UInt32(input.pointee)
                input += 1
            }
            // Branch-free but for the renormalisation: a bit of a residual is close to a coin
            // toss, so a branch on it is mispredicted about half the time.
            @inline(__always) func bit(_ probability: UnsafeMutablePointer<UInt16>) -> Int {
                let p = UInt32(probability.pointee)
                let bound = (range >> Self.probabilityBits) &* p
                let one = code >= bound
                code &-= one ? bound : 0
                range = one ? range &- bound : bound
                probability.pointee = UInt16(truncatingIfNeeded: one ? p &- (p >> Self.moveBits) : p &+ ((4096 &- p) >> Self.moveBits))
                if range < 1 << 24 {
                    range <<= 8
                    code = (code << 8) | UInt32(input.pointee)
                    input += 1
                }
                return one ? 1 : 0
            }
            var rawReader = RawBitReader(rawBuffer.baseAddress!, count: coded.raw.count)
            let lengthBits = shape.lengthBits
            let lengthLimit = (1 << lengthBits) - 1
            let codedBelow = shape.codedBelow
            var previous = 0
            for index in ages.indices {
                if input > end || rawReader.overran {
                    failure = .endsEarly
                    return
                }
                let age = Int(ages[index])
                let lengths = model.lengths + (age * 16 + min(previous, 15)) * 128
                var node = 1
                for _ in 0..<lengthBits { node = node &* 2 &+ bit(lengths + node) }
                var n = node &- (1 << lengthBits)
                if shape == .short && n == lengthLimit {
                    var escape = 1
                    for _ in 0..<6 { escape = escape &* 2 &+ bit(model.escape + escape) }
                    n += escape - 64
                }
                guard n <= 64 else {
                    failure = .lengthOutOfRange(n)
                    return
                }
                var value: UInt64 = n == 0 ? 0 : 1
                var position = n - 2
                var topNode = 1
                let young = min(age, 1)
                while position >= 0 && position >= n - 3 {
                    let b = bit(model.top + ((n * 8 + topNode) * 2 + young))
                    topNode = topNode * 2 + b
                    value = (value << 1) | UInt64(b)
                    position -= 1
                }
                let below = model.below + n * 64
                while position >= 0 && position >= n - 1 - codedBelow {
                    value = (value << 1) | UInt64(bit(below + position))
                    position -= 1
                }
                if position >= 0 {
                    value = (value << UInt64(position + 1)) | rawReader.read(position + 1)
                }
                out[index] = value
                if age > 0 { previous = n }
            }
            if input > end || rawReader.overran { failure = .endsEarly }
        } }
        if let failure { throw failure }
    }

    /// Raw bits, most significant first.
    struct RawBits {
        var bytes: [UInt8] = []
        var pending: UInt64 = 0
        var pendingCount = 0

        mutating func append(_ value: UInt64, count: Int) {
            for index in stride(from: count - 1, through: 0, by: -1) {
                pending = (pending << 1) | ((value >> UInt64(index)) & 1)
                pendingCount += 1
                if pendingCount == 8 {
                    bytes.append(UInt8(pending))
                    pending = 0
                    pendingCount = 0
                }
            }
        }

        mutating func finish() -> [UInt8] {
            if pendingCount > 0 { bytes.append(UInt8(pending << UInt64(8 - pendingCount))) }
            return bytes
        }
    }

    /// Reads `RawBits`' bits from a buffer with at least 16 bytes of zero padding after `count`.
    struct RawBitReader {
        let bytes: UnsafePointer<UInt8>
        let count: Int
        var bitPosition = 0
        init(_ bytes: UnsafePointer<UInt8>, count: Int) {
            self.bytes = bytes
            self.count = count
        }
        var overran: Bool { bitPosition > count * 8 }

        /// `width` ≤ 63 bits as an integer; past the end they read as 0 and `overran` says so.
        @inline(__always) mutating func read(_ width: Int) -> UInt64 {
            guard !overran else { return 0 }
            let byte = bitPosition >> 3
            var window: UInt64 = 0
            for offset in 0..<8 { window = (window << 8) | UInt64(bytes[byte + offset]) }
            let skip = bitPosition & 7
            bitPosition += width
            if skip + width <= 64 { return (window << UInt64(skip)) >> UInt64(64 - width) }
            // Over nine bytes: the window's bits, then the ninth byte's top ones.
            let ninth = UInt64(bytes[byte + 8])
            let fromWindow = 64 - skip
            let high = (window << UInt64(skip)) >> UInt64(skip)
            return (high << UInt64(width - fromWindow)) | (ninth >> UInt64(8 - (width - fromWindow)))
        }
    }

    struct Encoder {
        var low: UInt64 = 0
        var range: UInt32 = 0xFFFF_FFFF
        var cache: UInt8 = 0
        var cacheSize = 1
        var bytes: [UInt8] = []

        @inline(__always) mutating func encode(_ bit: Int, _ probability: UnsafeMutablePointer<UInt16>) {
            let p = UInt32(probability.pointee)
            let bound = (range >> probabilityBits) &* p
            if bit == 0 {
                range = bound
                probability.pointee = UInt16(truncatingIfNeeded: p &+ ((4096 &- p) >> moveBits))
            } else {
                low &+= UInt64(bound)
                range &-= bound
                probability.pointee = UInt16(truncatingIfNeeded: p &- (p >> moveBits))
            }
            while range < 1 << 24 {
                range <<= 8
                shiftLow()
            }
        }

        /// Writes the top byte of `low` once no carry can change it (LZMA's cache of one byte
        /// and a run of 0xFF bytes a carry would ripple through).
        mutating func shiftLow() {
            if low < 0xFF00_0000 || low > 0xFFFF_FFFF {
                let carry = UInt8(truncatingIfNeeded: low >> 32)
                var pending = cache
                repeat {
                    bytes.append(pending &+ carry)
                    pending = 0xFF
                    cacheSize -= 1
                } while cacheSize != 0
                cache = UInt8(truncatingIfNeeded: low >> 24)
            }
            cacheSize += 1
            low = (low & 0x00FF_FFFF) << 8
        }

        mutating func finish() -> [UInt8] {
            for _ in 0..<5 { shiftLow() }
            return bytes
        }
    }
}

extension RowRunner {
    /// `residualCoder`: on `--input DIR` (else the standard workload), every block's residuals
    /// deflated (level 6, the baseline) and range-coded in each shape; each run decodes all of
    /// them every way, and a decoded value that differs fails the row.
    func residualCoder() throws -> RowOutput {
        let scaled = input.map { Workload($0) } ?? workload
        let (blocks, points) = try ResidualColumns.blocks(of: scaled.inputs)
        guard points > 0 else { throw BenchError("no points in \(scaled.dir)") }
        let model = AdaptiveResidualCoder.Model()
        let coders = AdaptiveResidualCoder.Shape.allCases.map { AdaptiveResidualCoder(shape: $0) }
        var output = RowOutput()
        var deflated: [(bytes: [UInt8], rawCount: Int)] = []
        var deflateBytes = [0, 0, 0, 0]
        for block in blocks {
            let raw = ResidualColumns.varints(block.values)
            deflated.append((try RawDeflate.compress(raw), raw.count))
            deflateBytes[block.column] += deflated[deflated.count - 1].bytes.count
        }
        var coded: [[AdaptiveResidualCoder.Coded]] = []
        var encodeSeconds: [Double] = []
        for coder in coders {
            let (blocksCoded, seconds) = Clock.time { blocks.map { coder.encode($0, model: model) } }
            coded.append(blocksCoded)
            encodeSeconds.append(seconds)
        }
        let largest = blocks.map(\.values.count).max() ?? 0
        let decoded = UnsafeMutablePointer<UInt64>.allocate(capacity: max(largest, 1))
        defer { decoded.deallocate() }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(deflated.map(\.rawCount).max() ?? 0, 1), alignment: 8)
        defer { scratch.deallocate() }
        var baseline: [Double] = []
        var decodeSeconds = [[Double]](repeating: [], count: coders.count)
        let values = blocks.reduce(0) { $0 + $1.values.count }
        func check(_ index: Int, _ block: ResidualBlock, _ what: String) throws {
            guard UnsafeBufferPointer(start: decoded, count: block.values.count).elementsEqual(block.values) else {
                throw BenchError("block \(index): \(what) residuals differ from the coded ones")
            }
        }
        for _ in 0..<repeats {
            let (_, inflateSeconds) = try Clock.time {
                for (index, block) in blocks.enumerated() {
                    try ResidualColumns.inflateVarints(deflated[index].bytes, rawCount: deflated[index].rawCount,
                                                       count: block.values.count, scratch: scratch, into: decoded)
                    try check(index, block, "inflated")
                }
            }
            baseline.append(inflateSeconds)
            for (which, coder) in coders.enumerated() {
                let (_, seconds) = try Clock.time {
                    for (index, block) in blocks.enumerated() {
                        try coder.decode(coded[which][index], ages: block.ages, model: model, into: decoded)
                        try check(index, block, coder.shape.rawValue + "-decoded")
                    }
                }
                decodeSeconds[which].append(seconds)
            }
        }
        // The row's main timing: the shape a format would take (`short`).
        output.seconds = decodeSeconds[coders.count - 1]
        func perPoint(_ bytes: Int) -> JSON { .number(Double(bytes) / Double(points), decimals: 4) }
        output.extra["workload"] = .string(scaled.dir)
        output.extra["points"] = .int(points)
        output.extra["values"] = .int(values)
        output.extra["blocks"] = .int(blocks.count / 4)
        output.extra["deflateBytesPerPoint"] = perPoint(deflateBytes.reduce(0, +))
        output.extra["inflateSeconds"] = .seconds(baseline)
        for column in 0..<4 { output.extra["deflate_" + ResidualColumns.names[column]] = perPoint(deflateBytes[column]) }
        for (which, coder) in coders.enumerated() {
            let name = coder.shape.rawValue
            var bytes = [0, 0, 0, 0]
            for (index, block) in blocks.enumerated() { bytes[block.column] += coded[which][index].count }
            output.extra[name + "BytesPerPoint"] = perPoint(bytes.reduce(0, +))
            for column in 0..<4 { output.extra[name + "_" + ResidualColumns.names[column]] = perPoint(bytes[column]) }
            output.extra[name + "BytesRatio"] = .number(Double(bytes.reduce(0, +)) / Double(deflateBytes.reduce(0, +)), decimals: 4)
            output.extra[name + "DecodeSeconds"] = .seconds(decodeSeconds[which])
            output.extra[name + "EncodeSeconds"] = .seconds([encodeSeconds[which]])
            output.extra[name + "DecodeRatio"] = .number(median(decodeSeconds[which]) / median(baseline), decimals: 3)
        }
        return output
    }
}
