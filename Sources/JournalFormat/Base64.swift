/// Standard base64 (RFC 4648 §4, with padding): etcd's keys and values, an HTTP Basic
/// credential.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * $1.offset) }
            for position in 0..<4 {
                out.append(position <= chunk.count ? alphabet[Int(value >> (18 - 6 * position) & 63)] : UInt8(ascii: "="))
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Nil for a character outside the alphabet (padding is skipped wherever it stands).
    public static func decode(_ text: String) -> [UInt8]? {
        var lookup = [UInt8: UInt32]()
        for (index, byte) in alphabet.enumerated() { lookup[byte] = UInt32(index) }
        var out: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0
        for byte in text.utf8 where byte != UInt8(ascii: "=") {
            guard let value = lookup[byte] else { return nil }
            buffer = buffer << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(buffer >> UInt32(bits) & 0xFF))
            }
        }
        return out
    }
}
