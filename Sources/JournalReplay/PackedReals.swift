import JournalFormat

/// A column of Doubles on a decimal grid (value = n / 10^scale, the smallest scale that makes
/// every value of the column exact, like the block codec's real columns), predicted from the
/// previous one (order 1) or two (order 2) values. The first `order` residuals are zigzag
/// varints; the rest are zigzag residuals bit-packed at one width (0–56, or 64: raw 8 bytes
/// each), so a decoder reads them without a branch per byte. A value the grid cannot
/// reproduce bit for bit is an exception stored as its raw 64 bits: lossless, never rounded.
///
/// `scale:u8 width:u8 head:svarint{min(n, order)} packed:ceil((n-head)*width/8) bytes
///  exceptionCount:varint (gap:varint bits:u64le)*`
enum PackedReals {
    static func write(_ values: [Double], order: UInt8, to out: inout ByteWriter) {
        guard !values.isEmpty else { return }
        let scale = RealGrid.smallestScale(values)
        var residuals = [UInt64](repeating: 0, count: values.count)
        var exceptions: [Int] = []
        var previous: Int64 = 0, delta: Int64 = 0
        for (index, value) in values.enumerated() {
            let predicted = index == 0 ? 0 : (order == 2 ? previous &+ delta : previous)
            let integer: Int64
            if let onGrid = RealGrid.integer(value, scale: scale) {
                integer = onGrid
            } else {
                exceptions.append(index)
                integer = predicted
            }
            let residual = integer &- predicted
            residuals[index] = UInt64(bitPattern: (residual << 1) ^ (residual >> 63))
            delta = index == 0 ? 0 : integer &- previous
            previous = integer
        }
        let head = min(values.count, Int(order))
        let union = residuals[head...].reduce(0, |)
        var width = UInt8(64 - union.leadingZeroBitCount)
        if width > 56 { width = 64 }
        out.append(scale)
        out.append(width)
        for index in 0..<head { out.appendVarint(residuals[index]) }
        if width == 64 {
            for index in head..<values.count { out.appendLE(residuals[index]) }
        } else if width > 0 {
            var word: UInt64 = 0, used: UInt64 = 0
            for index in head..<values.count {
                word |= residuals[index] << used
                used += UInt64(width)
                while used >= 8 {
                    out.append(UInt8(truncatingIfNeeded: word))
                    word >>= 8
                    used -= 8
                }
            }
            if used > 0 { out.append(UInt8(truncatingIfNeeded: word)) }
        }
        out.appendVarint(UInt64(exceptions.count))
        var last = -1
        for index in exceptions {
            out.appendVarint(UInt64(index - last - 1))
            out.appendLE(values[index].bitPattern)
            last = index
        }
    }

    /// Decodes `count` values into `target[0]`, `target[stride]`, …
    static func read(
        _ reader: inout ByteReader, count: Int, order: UInt8, into target: UnsafeMutablePointer<Double>, stride: Int
    ) throws(DecodeError) {
        guard count > 0 else { return }
        let scale = try reader.readByte()
        let width = try reader.readByte()
        guard scale <= FormatV1.maxDecimalScale, width <= 56 || width == 64 else {
            throw .malformed(offset: reader.offset, reason: "packed column header")
        }
        let divisor = FormatV1.powersOfTen[Int(scale)]
        let head = min(count, Int(order))
        // Integers first, their bits held in the target's slots, then one pass of divisions: the
        // divisions, most of the cost, are independent and overlap, away from the serial
        // predictor chain.
        @inline(__always) func hold(_ index: Int, _ integer: Int64) { target[index] = Double(bitPattern: UInt64(bitPattern: integer)) }
        var previous: Int64 = 0, delta: Int64 = 0
        @inline(__always) func unzig(_ raw: UInt64) -> Int64 { Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1) }
        for index in 0..<head {
            let predicted = index == 0 ? 0 : previous
            let integer = predicted &+ unzig(try reader.readVarint())
            delta = index == 0 ? 0 : integer &- previous
            previous = integer
            hold(index * stride, integer)
        }
        let rest = count - head
        let packed = try reader.readBytes(width == 64 ? rest * 8 : (rest * Int(width) + 7) / 8)
        if width == 64 {
            for index in 0..<rest {
                let residual = unzig(UInt64(littleEndian: packed.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)))
                let integer = (order == 2 ? previous &+ delta : previous) &+ residual
                delta = integer &- previous
                previous = integer
                hold((head &+ index) &* stride, integer)
            }
        } else if width == 0 {
            // Every residual is 0: the values follow the prediction exactly.
            for index in 0..<rest {
                let integer = order == 2 ? previous &+ delta : previous
                delta = integer &- previous
                previous = integer
                hold((head &+ index) &* stride, integer)
            }
        } else {
            let bits = Int(width)
            let mask: UInt64 = (1 << UInt64(width)) &- 1
            let bytes = packed.count
            var bit = 0
            var slot = target + head &* stride
            // Values whose 8-byte window lies inside the packed bytes need no bounds check:
            // the hot loop, one unaligned load per value, specialised per predictor order.
            let unchecked = bytes >= 8 ? min(rest, ((bytes - 8) * 8 + 7) / bits + 1) : 0
            if unchecked > 0, let base = packed.baseAddress {
                if order == 2 {
                    for _ in 0..<unchecked {
                        let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: bit &>> 3, as: UInt64.self))
                        let integer = previous &+ delta &+ unzig((word &>> UInt64(bit & 7)) & mask)
                        delta = integer &- previous
                        previous = integer
                        slot.pointee = Double(bitPattern: UInt64(bitPattern: integer))
                        slot += stride
                        bit &+= bits
                    }
                } else {
                    for _ in 0..<unchecked {
                        let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: bit &>> 3, as: UInt64.self))
                        previous = previous &+ unzig((word &>> UInt64(bit & 7)) & mask)
                        slot.pointee = Double(bitPattern: UInt64(bitPattern: previous))
                        slot += stride
                        bit &+= bits
                    }
                    delta = 0
                }
            }
            for _ in unchecked..<rest {
                let byte = bit >> 3
                var word: UInt64 = 0
                for offset in 0..<min(8, bytes - byte) { word |= UInt64(packed[byte + offset]) << UInt64(8 * offset) }
                let residual = unzig((word >> UInt64(bit & 7)) & mask)
                bit &+= bits
                let integer = (order == 2 ? previous &+ delta : previous) &+ residual
                delta = integer &- previous
                previous = integer
                slot.pointee = Double(bitPattern: UInt64(bitPattern: integer))
                slot += stride
            }
        }
        var slot = target
        for _ in 0..<count {
            slot.pointee = Double(Int64(bitPattern: slot.pointee.bitPattern)) / divisor
            slot += stride
        }
        let exceptionCount = try reader.readCount(minimumItemSize: 9, what: "exception")
        guard exceptionCount <= count else { throw .malformed(offset: reader.offset, reason: "exception count") }
        var index = -1
        for _ in 0..<exceptionCount {
            let gap = try reader.readVarint()
            guard gap < UInt64(count), index + Int(gap) + 1 < count else {
                throw .malformed(offset: reader.offset, reason: "exception index")
            }
            index += Int(gap) + 1
            target[index * stride] = Double(bitPattern: try reader.readLE(UInt64.self))
        }
    }
}
