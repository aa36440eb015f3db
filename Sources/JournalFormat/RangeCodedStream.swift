/// A stream of a real column coded with an adaptive binary range coder (docs/FORMAT.md §18):
/// each integer's bit length, in the context of the entry's age in its stroke and the previous
/// length, then the four bits below its leading one with probabilities of their own, and the
/// rest raw. Deflate's Huffman codes over varint bytes spend about a tenth more than that on
/// short strokes (handwriting), which is why versions 6 and 7 exist.
///
/// The coder is LZMA's: 12-bit probabilities moved 1/32 towards each bit, a 32-bit range
/// renormalised a byte at a time.
package enum RangeCodedStream {
    /// When a writer range-codes a stream of at least `minimumCount` integers.
    package enum Policy: Sendable {
        /// Never: versions 1 to 3, and snapshots.
        case never
        /// When it is clearly smaller than the `low` form (the reference writer, §18.3).
        case whenSmaller
        /// Always: for golden vectors that must hold every kind of range-coded stream.
        case always
    }

    /// The first byte of a range-coded stream, where a `low`-form stream has its `low` (0…7).
    package static let marker: UInt8 = 0xFF
    /// Streams shorter than this keep the `low` form: too few integers to learn from.
    package static let minimumCount = 64
    /// A range-coded stream is kept only if it is smaller than this share of the `low` form's
    /// estimate (§14.3): decoding it costs several times inflating varints.
    static let worthwhileShare = 0.95

    // The probability tables of §18.2, one array: L[a][q][node], X[node], T[n][node][y], B[n][p].
    static let lengthsBase = 0
    static let escapeBase = lengthsBase + 3 * 16 * 16
    static let topBase = escapeBase + 64
    static let belowBase = topBase + 65 * 4 * 2
    static let probabilityCount = belowBase + 65 * 64
    static let probabilityBits: UInt32 = 12
    static let moveBits: UInt32 = 5
    static let initialProbability: UInt16 = 1 << 11

    @inline(__always) static func lengths(age: Int, previous: Int) -> Int { lengthsBase + (age * 16 + min(previous, 15)) * 16 }
    @inline(__always) static func top(length: Int, node: Int, young: Int) -> Int { topBase + (length * 4 + node) * 2 + young }
    @inline(__always) static func below(length: Int, position: Int) -> Int { belowBase + length * 64 + position }

    /// Each coded entry's age (§18.2): how many coded entries of its stroke came before it in
    /// the column, at most 2. `strokes[i]`: entry i's stroke; `codedIndex`: the entries that are
    /// not exceptions (nil: all of them). A stroke index beyond the table is malformed.
    package static func ages(strokes: [UInt32], codedIndex: [Int]?, count: Int, strokeCount: Int, offset: Int) throws(DecodeError) -> [UInt8] {
        var seen = [UInt8](repeating: 0, count: strokeCount)
        var ages = [UInt8](repeating: 0, count: count)
        for cursor in 0..<count {
            let index = codedIndex?[cursor] ?? cursor
            let stroke = Int(strokes[index])
            guard stroke < strokeCount else {
                throw .malformed(offset: offset, reason: "entry \(index): stroke \(stroke) of \(strokeCount)")
            }
            ages[cursor] = seen[stroke]
            if seen[stroke] < 2 { seen[stroke] += 1 }
        }
        return ages
    }

    // MARK: Encoding

    /// The stream's bytes after the marker: `codedLength`, `rawLength`, coded bytes, raw bytes.
    package static func encode(_ values: [UInt64], ages: [UInt8]) -> (lengths: [UInt8], coded: [UInt8], raw: [UInt8]) {
        var probabilities = [UInt16](repeating: initialProbability, count: probabilityCount)
        var encoder = Encoder()
        var raw = RawBitWriter()
        probabilities.withUnsafeMutableBufferPointer { table in
            let p = table.baseAddress!
            var previous = 0
            for (index, value) in values.enumerated() {
                let age = Int(ages[index])
                let n = 64 - value.leadingZeroBitCount
                let lengths = p + Self.lengths(age: age, previous: previous)
                var node = 1
                let head = min(n, 15)
                for shift in stride(from: 3, through: 0, by: -1) {
                    let bit = (head >> shift) & 1
                    encoder.encode(bit, lengths + node)
                    node = node * 2 + bit
                }
                if n >= 15 {
                    node = 1
                    for shift in stride(from: 5, through: 0, by: -1) {
                        let bit = ((n - 15) >> shift) & 1
                        encoder.encode(bit, p + escapeBase + node)
                        node = node * 2 + bit
                    }
                }
                var position = n - 2
                var topNode = 1
                let young = min(age, 1)
                while position >= 0 {
                    let bit = Int(truncatingIfNeeded: value >> UInt64(position)) & 1
                    if position >= n - 3 {
                        encoder.encode(bit, p + top(length: n, node: topNode, young: young))
                        topNode = topNode * 2 + bit
                    } else if position >= n - 5 {
                        encoder.encode(bit, p + below(length: n, position: position))
                    } else {
                        raw.append(value & ((1 << UInt64(position + 1)) &- 1), count: position + 1)
                        break
                    }
                    position -= 1
                }
                if age > 0 { previous = n }
            }
        }
        let coded = encoder.finish()
        let rawBytes = raw.finish()
        var lengths = ByteWriter(capacity: 10)
        lengths.appendVarint(UInt64(coded.count))
        lengths.appendVarint(UInt64(rawBytes.count))
        return (lengths.bytes, coded, rawBytes)
    }

    /// LZMA's range encoder: `low` keeps a carry above its 32 bits, and the byte a carry could
    /// still change waits in `cache`, with the run of 0xFF bytes behind it.
    struct Encoder {
        private var low: UInt64 = 0
        private var range: UInt32 = 0xFFFF_FFFF
        private var cache: UInt8 = 0
        private var pending = 1
        private(set) var bytes: [UInt8] = []

        /// Without a branch on `bit`: half the bits of a residual are a coin toss.
        @inline(__always) mutating func encode(_ bit: Int, _ probability: UnsafeMutablePointer<UInt16>) {
            let p = UInt32(probability.pointee)
            let bound = (range >> RangeCodedStream.probabilityBits) &* p
            let one = 0 &- UInt32(truncatingIfNeeded: bit)  // all ones for a 1 bit, else 0
            low &+= UInt64(bound & one)
            range = (bound & ~one) | ((range &- bound) & one)
            let raised = (4096 &- p) >> RangeCodedStream.moveBits, lowered = p >> RangeCodedStream.moveBits
            probability.pointee = UInt16(truncatingIfNeeded: p &+ (raised & ~one) &- (lowered & one))
            while range < 1 << 24 {
                range <<= 8
                shiftLow()
            }
        }

        private mutating func shiftLow() {
            if low < 0xFF00_0000 || low > 0xFFFF_FFFF {
                let carry = UInt8(truncatingIfNeeded: low >> 32)
                var byte = cache
                repeat {
                    bytes.append(byte &+ carry)
                    byte = 0xFF
                    pending -= 1
                } while pending != 0
                cache = UInt8(truncatingIfNeeded: low >> 24)
            }
            pending += 1
            low = (low & 0x00FF_FFFF) << 8
        }

        mutating func finish() -> [UInt8] {
            for _ in 0..<5 { shiftLow() }
            return bytes
        }
    }

    /// Bits, most significant first, packed into bytes; the last byte padded with zeros.
    struct RawBitWriter {
        private var bytes: [UInt8] = []
        private var window: UInt64 = 0
        private var count = 0

        /// The low `width` bits of `value` (at most 59: a residual's bits below its top five).
        mutating func append(_ value: UInt64, count width: Int) {
            // At most 7 bits wait in the window, so pieces of 32 never overflow it.
            if width > 32 {
                append(value >> 32, count: width - 32)
                append(value & 0xFFFF_FFFF, count: 32)
                return
            }
            window = (window << UInt64(width)) | value
            count += width
            while count >= 8 {
                count -= 8
                bytes.append(UInt8(truncatingIfNeeded: window >> UInt64(count)))
            }
            window &= (1 << UInt64(count)) &- 1
        }

        mutating func finish() -> [UInt8] {
            if count > 0 { bytes.append(UInt8(truncatingIfNeeded: window << UInt64(8 - count))) }
            return bytes
        }
    }

    // MARK: Decoding

    /// Reads a range-coded stream of `ages.count` integers, the reader just past its marker.
    package static func decode(_ reader: inout ByteReader, ages: [UInt8], what: String) throws(DecodeError) -> [UInt64] {
        let start = reader.offset - 1
        let codedLength = try reader.readVarint()
        let rawLength = try reader.readVarint()
        guard codedLength >= 5 else {
            throw .malformed(offset: start, reason: "\(what) stream: \(codedLength) range-coded bytes (at least 5)")
        }
        guard codedLength <= UInt64(reader.remaining), rawLength <= UInt64(reader.remaining) - codedLength else {
            throw .truncated(offset: reader.offset, needed: "a range-coded \(what) stream of \(codedLength) + \(rawLength) bytes")
        }
        let codedStart = reader.offset
        let coded = UnsafeRawBufferPointer(rebasing: reader.buffer[codedStart..<(codedStart + Int(codedLength))])
        let raw = UnsafeRawBufferPointer(rebasing: reader.buffer[(codedStart + Int(codedLength))..<(codedStart + Int(codedLength) + Int(rawLength))])
        var values = [UInt64](repeating: 0, count: ages.count)
        var probabilities = [UInt16](repeating: initialProbability, count: probabilityCount)
        var decoder = Decoder(coded)
        var rawReader = RawBitReader(raw)
        var failure: DecodeError?
        values.withUnsafeMutableBufferPointer { out in probabilities.withUnsafeMutableBufferPointer { table in
            let p = table.baseAddress!
            var previous = 0
            for index in 0..<ages.count {
                let age = Int(ages[index])
                let lengths = p + Self.lengths(age: age, previous: previous)
                var node = 1
                for _ in 0..<4 { node = node &* 2 &+ decoder.bit(lengths + node) }
                var n = node &- 16
                if n == 15 {
                    var escape = 1
                    for _ in 0..<6 { escape = escape &* 2 &+ decoder.bit(p + escapeBase + escape) }
                    n = 15 &+ escape &- 64
                    guard n <= 64 else {
                        failure = .malformed(offset: start, reason: "\(what) stream: integer \(index) has a bit length of \(n) (at most 64)")
                        return
                    }
                }
                var value: UInt64 = n == 0 ? 0 : 1
                var position = n - 2
                var topNode = 1
                let young = min(age, 1)
                while position >= 0 && position >= n - 3 {
                    let bit = decoder.bit(p + top(length: n, node: topNode, young: young))
                    topNode = topNode &* 2 &+ bit
                    value = (value << 1) | UInt64(bit)
                    position -= 1
                }
                let below = p + below(length: n, position: 0)
                while position >= 0 && position >= n - 5 {
                    value = (value << 1) | UInt64(decoder.bit(below + position))
                    position -= 1
                }
                if position >= 0 {
                    value = (value << UInt64(position + 1)) | rawReader.read(position + 1)
                }
                out[index] = value
                if age > 0 { previous = n }
            }
        } }
        if let failure { throw failure }
        guard decoder.next == coded.count else {
            throw .malformed(offset: start, reason: decoder.next > coded.count
                ? "\(what) stream: range-coded stream ends early (\(decoder.next) of \(coded.count) coded bytes needed)"
                : "\(what) stream: range-coded stream has bytes left (\(coded.count - decoder.next) of \(coded.count) coded bytes unread)")
        }
        guard rawReader.bitsRead <= raw.count * 8, rawReader.bitsRead + 8 > raw.count * 8 else {
            throw .malformed(offset: start, reason: rawReader.bitsRead > raw.count * 8
                ? "\(what) stream: range-coded stream ends early (\(rawReader.bitsRead) raw bits in \(raw.count) bytes)"
                : "\(what) stream: range-coded stream has bytes left (\(rawReader.bitsRead) raw bits in \(raw.count) bytes)")
        }
        try reader.skip(Int(codedLength) + Int(rawLength))
        return values
    }

    /// LZMA's range decoder; bytes past the coded ones read as zeros, and `next` tells the
    /// caller whether it read exactly the coded bytes.
    struct Decoder {
        private let bytes: UnsafeRawBufferPointer
        private var range: UInt32 = 0xFFFF_FFFF
        private var code: UInt32 = 0
        private(set) var next = 0

        init(_ bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
            for _ in 0..<5 { code = (code << 8) | UInt32(nextByte()) }
        }

        @inline(__always) private mutating func nextByte() -> UInt8 {
            defer { next += 1 }
            return next < bytes.count ? bytes[next] : 0
        }

        /// Branch-free but for the renormalisation: a residual's low bits are close to coin
        /// tosses, and a branch on them would be mispredicted half the time.
        @inline(__always) mutating func bit(_ probability: UnsafeMutablePointer<UInt16>) -> Int {
            let p = UInt32(probability.pointee)
            let bound = (range >> RangeCodedStream.probabilityBits) &* p
            let one = code >= bound
            code &-= one ? bound : 0
            range = one ? range &- bound : bound
            probability.pointee = UInt16(truncatingIfNeeded: one
                ? p &- (p >> RangeCodedStream.moveBits) : p &+ ((4096 &- p) >> RangeCodedStream.moveBits))
            if range < 1 << 24 {
                range <<= 8
                code = (code << 8) | UInt32(nextByte())
            }
            return one ? 1 : 0
        }
    }

    /// Reads `RawBitWriter`'s bits; past the end they read as zeros and `bitsRead` says so.
    struct RawBitReader {
        private let bytes: UnsafeRawBufferPointer
        private var window: UInt64 = 0
        private var windowBits = 0
        private var nextByte = 0
        private(set) var bitsRead = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        /// `width` in 1…59 bits as an integer.
        @inline(__always) mutating func read(_ width: Int) -> UInt64 {
            // Pieces of at most 32 bits: the window never needs more than 39.
            if width > 32 {
                let high = read(width - 32)
                return high << 32 | read(32)
            }
            while windowBits < width {
                let byte = nextByte < bytes.count ? bytes[nextByte] : 0
                nextByte += 1
                window |= UInt64(byte) << UInt64(56 - windowBits)
                windowBits += 8
            }
            let value = window >> UInt64(64 - width)
            window <<= UInt64(width)
            windowBits -= width
            bitsRead += width
            return value
        }
    }
}
