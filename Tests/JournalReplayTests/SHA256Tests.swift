import Foundation
import Testing

@testable import JournalReplay

@Suite struct SHA256Tests {
    private func digest(_ text: String) -> String {
        SHA256.hex(SHA256.hash(Array(text.utf8)))
    }

    @Test func emptyMessage() {
        #expect(digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func abc() {
        #expect(digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func twoBlockMessage() {
        #expect(
            digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func oneMillionA() {
        var hasher = SHA256()
        let thousand = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { hasher.update(thousand) }
        #expect(SHA256.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // And in one go.
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hex(SHA256.hash(million)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Lengths around the padding boundaries (55, 56, 63, 64, 65 …) against a digest computed
    /// byte by byte, which goes through the pending buffer only.
    @Test func paddingBoundaries() {
        for length in [0, 1, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129] {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            var slow = SHA256()
            for byte in message { slow.update([byte]) }
            #expect(SHA256.hex(slow.finalize()) == SHA256.hex(SHA256.hash(message)), "length \(length)")
        }
        // 896-bit FIPS vector (two blocks once padded, 112 bytes).
        #expect(
            digest(
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")
                == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    @Test func randomChunkingGivesTheSameDigest() {
        var generator = SystemRandomNumberGenerator()
        let message = (0..<200_003).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let expected = SHA256.hash(message)
        for round in 0..<8 {
            var hasher = SHA256()
            var offset = 0
            while offset < message.count {
                // Mostly small chunks (exercising the pending buffer), sometimes big ones.
                let size = Bool.random(using: &generator)
                    ? Int.random(in: 0...130, using: &generator) : Int.random(in: 0...5000, using: &generator)
                let end = min(message.count, offset + size)
                if round % 2 == 0 {
                    hasher.update(Array(message[offset..<end]))
                } else {
                    message.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[offset..<end])) }
                }
                offset = end
            }
            #expect(hasher.finalize() == expected, "round \(round)")
        }
    }

    @Test func finalizeResetsTheHasher() {
        var hasher = SHA256()
        hasher.update(Array("garbage".utf8))
        _ = hasher.finalize()
        hasher.update(Array("abc".utf8))
        #expect(SHA256.hex(hasher.finalize()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func littleEndianIntegers() {
        var viaIntegers = SHA256()
        viaIntegers.update(littleEndian: UInt8(0xAB))
        viaIntegers.update(littleEndian: UInt16(0x0102))
        viaIntegers.update(littleEndian: UInt32(0x0304_0506))
        viaIntegers.update(littleEndian: UInt64(0x0708_090A_0B0C_0D0E))
        viaIntegers.update(littleEndian: Int64(-2))
        var viaBytes = SHA256()
        viaBytes.update([0xAB, 0x02, 0x01, 0x06, 0x05, 0x04, 0x03, 0x0E, 0x0D, 0x0C, 0x0B, 0x0A, 0x09, 0x08, 0x07])
        viaBytes.update([0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(viaIntegers.finalize() == viaBytes.finalize())
    }

    @Test func hexIsLowercaseTwoDigitsPerByte() {
        #expect(SHA256.hex([0x00, 0x0F, 0xA0, 0xFF]) == "000fa0ff")
        #expect(SHA256.hex([]) == "")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sha256sum")))
    func matchesSha256sumOnARandomMegabyte() throws {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 1 << 20)
        for index in stride(from: 0, to: bytes.count, by: 8) {
            let word = generator.next() as UInt64
            for offset in 0..<8 { bytes[index + offset] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(offset))) }
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("sha256-test-\(UInt64.random(in: 0...UInt64.max, using: &generator))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("random.bin")
        try Data(bytes).write(to: file)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let expected = String(decoding: output, as: UTF8.self).split(separator: " ").first.map(String.init)
        #expect(expected?.count == 64)
        #expect(SHA256.hex(SHA256.hash(bytes)) == expected)
    }
}
