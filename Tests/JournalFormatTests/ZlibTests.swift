import Foundation
import JournalFormat
import JournalPlatform
import JournalTestSupport
import Testing
import JournalCompression

@Suite(.ownThreads) struct ZlibTests {
    @Test func rawDeflateRoundTrips() throws {
        var random = SeededGenerator(seed: 5)
        for size in [0, 1, 100, 65_536, 300_000] {
            let input = (0..<size).map { _ in UInt8.random(in: 0...15, using: &random) }
            let compressed = try RawDeflate.compress(input)
            let output = try compressed.withUnsafeBytes { try RawDeflate.decompress($0, expectedCount: size) }
            #expect(output == input)
        }
    }

    @Test func bombIsRefusedAtTheDeclaredSize() throws {
        let zeros = [UInt8](repeating: 0, count: 10_000_000)
        let compressed = try RawDeflate.compress(zeros, level: 9)
        #expect(compressed.count < 20_000)
        #expect(throws: ZlibError.outputTooLarge(limit: 4096)) {
            _ = try compressed.withUnsafeBytes { try RawDeflate.decompress($0, expectedCount: 4096) }
        }
    }

    @Test func shortAndGarbageStreamsAreErrors() throws {
        let input = Array("hello, hello, hello, strokes".utf8)
        let compressed = try RawDeflate.compress(input)
        #expect(throws: ZlibError.self) {
            _ = try compressed.withUnsafeBytes { try RawDeflate.decompress($0, expectedCount: input.count + 5) }
        }
        let garbage: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x00]
        #expect(throws: ZlibError.self) {
            _ = try garbage.withUnsafeBytes { try RawDeflate.decompress($0, expectedCount: 10) }
        }
    }

    /// A stream's first bytes alone: any prefix of a long stream, the whole stream, and an
    /// error for more than it holds or for garbage.
    @Test func aPrefixIsInflatedWithoutTheRest() throws {
        var random = SeededGenerator(seed: 7)
        let input = (0..<300_000).map { _ in UInt8.random(in: 0...15, using: &random) }
        let compressed = try RawDeflate.compress(input)
        for count in [0, 1, 17, 65_536, 299_999, 300_000] {
            var output = [UInt8](repeating: 0xAA, count: count)
            try compressed.withUnsafeBytes { stream in
                try output.withUnsafeMutableBytes { try RawDeflate.decompressPrefix(stream, into: $0) }
            }
            #expect(output == Array(input.prefix(count)), "\(count) bytes")
        }
        var tooMany = [UInt8](repeating: 0, count: 300_001)
        #expect(throws: ZlibError.lengthMismatch(expected: 300_001, actual: 300_000)) {
            try compressed.withUnsafeBytes { stream in
                try tooMany.withUnsafeMutableBytes { try RawDeflate.decompressPrefix(stream, into: $0) }
            }
        }
        var some = [UInt8](repeating: 0, count: 10)
        let garbage: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x00]
        #expect(throws: ZlibError.self) {
            try garbage.withUnsafeBytes { stream in try some.withUnsafeMutableBytes { try RawDeflate.decompressPrefix(stream, into: $0) } }
        }
    }

    @Test func crc32MatchesTheStandardCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
    }

    /// FORMAT.md promises that any zlib can inflate a block body: check with Python's.
    @Test func pythonZlibInflatesOurBlocks() throws {
        let input = Array(String(repeating: "pen points ", count: 500).utf8)
        let compressed = try RawDeflate.compress(input)
        let directory = TemporaryDirectory("zlib")
        defer { directory.remove() }
        let path = directory.path + "/block.bin"
        try Data(compressed).write(to: URL(fileURLWithPath: path))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sys,zlib; d=zlib.decompressobj(-15); sys.stdout.buffer.write(d.decompress(open(sys.argv[1],'rb').read()))", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        try process.waitForExit()
        #expect(process.terminationStatus == 0)
        #expect(Array(output) == input)
    }
}
