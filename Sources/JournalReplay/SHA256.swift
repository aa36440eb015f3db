/// SHA-256 as specified in FIPS 180-4, in pure Swift (no Foundation, no C).
///
/// Streaming: feed bytes with any of the `update` overloads, then call `finalize()` once for
/// the 32-byte digest. Whole 64-byte blocks are compressed straight from the caller's buffer;
/// only the tail of an update that does not fill a block is copied, into a 64-byte pending
/// area kept inline in the struct (no heap allocation per hasher).
public struct SHA256 {
    /// The eight working hash words H0…H7.
    private var h0: UInt32 = 0x6a09_e667
    private var h1: UInt32 = 0xbb67_ae85
    private var h2: UInt32 = 0x3c6e_f372
    private var h3: UInt32 = 0xa54f_f53a
    private var h4: UInt32 = 0x510e_527f
    private var h5: UInt32 = 0x9b05_688c
    private var h6: UInt32 = 0x1f83_d9ab
    private var h7: UInt32 = 0x5be0_cd19

    /// Bytes of a block not yet complete: 64 bytes of inline storage.
    private var pending: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    /// Total message length in bytes so far.
    private var byteCount: UInt64 = 0

    public init() {}

    // MARK: Feeding bytes

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var source = bytes.baseAddress, bytes.count > 0 else { return }
        var remaining = bytes.count
        byteCount &+= UInt64(remaining)

        // Top up a partial block first.
        if pendingCount > 0 {
            let take = Swift.min(64 - pendingCount, remaining)
            let offset = pendingCount
            withUnsafeMutableBytes(of: &pending) { buffer in
                (buffer.baseAddress! + offset).copyMemory(from: source, byteCount: take)
            }
            pendingCount += take
            source += take
            remaining -= take
            guard pendingCount == 64 else { return }
            var block = pending
            withUnsafeBytes(of: &block) { buffer in compress(buffer.baseAddress!, blocks: 1) }
            pendingCount = 0
        }

        // Whole blocks straight from the input.
        let wholeBlocks = remaining >> 6
        if wholeBlocks > 0 {
            compress(source, blocks: wholeBlocks)
            source += wholeBlocks << 6
            remaining -= wholeBlocks << 6
        }

        // Keep the tail.
        if remaining > 0 {
            let tail = remaining
            withUnsafeMutableBytes(of: &pending) { buffer in
                buffer.baseAddress!.copyMemory(from: source, byteCount: tail)
            }
            pendingCount = tail
        }
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Appends the little-endian bytes of `value` (e.g. 8 bytes for a `UInt64`).
    public mutating func update<T: FixedWidthInteger>(littleEndian value: T) {
        withUnsafeBytes(of: value.littleEndian) { update($0) }
    }

    // MARK: Finishing

    /// Pads the message, returns the 32-byte digest and resets the hasher to its initial
    /// state (so it can be reused for a new message).
    public mutating func finalize() -> [UInt8] {
        let bitLength = byteCount &* 8
        // 0x80, then zeros up to 56 mod 64, then the 64-bit big-endian bit length.
        let padLength = pendingCount < 56 ? 56 - pendingCount : 120 - pendingCount
        var tail = [UInt8](repeating: 0, count: padLength + 8)
        tail[0] = 0x80
        for index in 0..<8 {
            tail[padLength + index] = UInt8(truncatingIfNeeded: bitLength >> (56 - 8 * UInt64(index)))
        }
        update(tail)
        precondition(pendingCount == 0, "SHA-256 padding must end on a block boundary")

        var digest = [UInt8](repeating: 0, count: 32)
        let words = [h0, h1, h2, h3, h4, h5, h6, h7]
        for (index, word) in words.enumerated() {
            digest[4 * index] = UInt8(truncatingIfNeeded: word >> 24)
            digest[4 * index + 1] = UInt8(truncatingIfNeeded: word >> 16)
            digest[4 * index + 2] = UInt8(truncatingIfNeeded: word >> 8)
            digest[4 * index + 3] = UInt8(truncatingIfNeeded: word)
        }
        self = SHA256()
        return digest
    }

    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Lowercase hex, two digits a byte (as `sha256sum` prints).
    public static func hex(_ digest: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(digest.count * 2)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    // MARK: Compression function

    /// Runs the compression function over `blocks` consecutive 64-byte blocks at `base`.
    private mutating func compress(_ base: UnsafeRawPointer, blocks: Int) {
        var a0 = h0, b0 = h1, c0 = h2, d0 = h3, e0 = h4, f0 = h5, g0 = h6, k0 = h7
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            SHA256.roundConstants.withUnsafeBufferPointer { k in
                var block = base
                for _ in 0..<blocks {
                    for t in 0..<16 {
                        w[t] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: t << 2, as: UInt32.self))
                    }
                    for t in 16..<64 {
                        let x = w[t - 15]
                        let y = w[t - 2]
                        let s0 = rotr(x, 7) ^ rotr(x, 18) ^ (x &>> 3)
                        let s1 = rotr(y, 17) ^ rotr(y, 19) ^ (y &>> 10)
                        w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
                    }

                    var a = a0, b = b0, c = c0, d = d0, e = e0, f = f0, g = g0, h = k0
                    for t in 0..<64 {
                        let sigma1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                        let choice = (e & f) ^ (~e & g)
                        let t1 = h &+ sigma1 &+ choice &+ k[t] &+ w[t]
                        let sigma0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        let t2 = sigma0 &+ majority
                        h = g
                        g = f
                        f = e
                        e = d &+ t1
                        d = c
                        c = b
                        b = a
                        a = t1 &+ t2
                    }
                    a0 &+= a; b0 &+= b; c0 &+= c; d0 &+= d
                    e0 &+= e; f0 &+= f; g0 &+= g; k0 &+= h
                    block += 64
                }
            }
        }
        h0 = a0; h1 = b0; h2 = c0; h3 = d0; h4 = e0; h5 = f0; h6 = g0; h7 = k0
    }

    /// The first 32 bits of the fractional parts of the cube roots of the first 64 primes.
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}

/// Rotate right; the masked shifts compile to a single rotate instruction.
@inline(__always)
private func rotr(_ value: UInt32, _ amount: UInt32) -> UInt32 {
    (value &>> amount) | (value &<< (32 &- amount))
}
