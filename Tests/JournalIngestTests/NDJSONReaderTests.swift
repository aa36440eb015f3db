#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalFormat
import JournalIngest
import JournalPlatform
import JournalTestSupport
import Testing

@Suite(.ownThreads) struct NDJSONReaderTests {
    let end = #"{"type":"end","stroke":"\#(strokeText)"}"#
    let clear = #"{"type":"clear"}"#

    @Test func errorNamesItsLineAndReadingContinues() {
        let text = [clear, end, #"{"type":"end"}"#, clear, end].joined(separator: "\n") + "\n"
        let file = TemporaryFile(text)
        defer { file.remove() }
        let items: [ReadItem]
        do {
            var reader = try NDJSONReader(path: file.path)
            items = readAll(&reader)
        } catch {
            Issue.record("\(error)")
            return
        }
        #expect(items.count == 5)
        guard items.count == 5 else { return }
        #expect(items[0] == .line(1, [.clear]))
        #expect(items[1] == .line(2, [.end(stroke)]))
        guard case .error(let error) = items[2] else {
            Issue.record("line 3 should fail, got \(items[2])")
            return
        }
        #expect(error.line == 3)
        #expect(error.source == file.path)
        #expect(error.reason == "missing \"stroke\"")
        #expect(error.description == "\(file.path):3: missing \"stroke\"")
        #expect(items[3] == .line(4, [.clear]))
        #expect(items[4] == .line(5, [.end(stroke)]))
    }

    @Test func blankLinesAreSkippedButCounted() {
        let items = readAll(file: "\n\(clear)\n   \n\t\n\n\(end)\n\n")
        #expect(items == [.line(2, [.clear]), .line(6, [.end(stroke)])])
    }

    @Test func crlfLineEndings() {
        let items = readAll(file: "\(clear)\r\n\r\n\(end)\r\n")
        #expect(items == [.line(1, [.clear]), .line(3, [.end(stroke)])])
    }

    @Test func lastLineWithoutNewline() {
        #expect(readAll(file: "\(clear)\n\(end)") == [.line(1, [.clear]), .line(2, [.end(stroke)])])
        #expect(readAll(file: "\(end)\r") == [.line(1, [.end(stroke)])])
        #expect(readAll(file: "").isEmpty)
        #expect(readAll(file: "\n\n").isEmpty)
    }

    @Test func invalidUTF8LineThenGoodLine() {
        let bytes = Array("\(clear)\n".utf8) + [0x7B, 0x22, 0xFE, 0x22, 0x7D, 0x0A] + Array("\(end)\n".utf8)
        let items = readAll(file: bytes)
        #expect(items.count == 3)
        guard items.count == 3 else { return }
        #expect(items[0] == .line(1, [.clear]))
        if case .error(let error) = items[1] {
            #expect(error.line == 2)
            #expect(error.reason.contains("invalid UTF-8"))
        } else {
            Issue.record("expected an error, got \(items[1])")
        }
        #expect(items[2] == .line(3, [.end(stroke)]))
    }

    @Test(arguments: [NDJSONReader.chunkSize, 4096, 333, 1])
    func overlongLineIsRefusedAndTheNextLineStillParses(readSize: Int) {
        // Far longer than the limit; with small reads also far longer than the buffer, so
        // the reader must drop it as it goes.
        let long = "{\"type\":\"clear\",\"seq\":\"" + String(repeating: "x", count: 50_000) + "\"}"
        let text = "\(clear)\n\(long)\n\(end)\n\(long)\n\(long)"
        let items = readAll(file: text, maxLineLength: 1_000, readSize: readSize)
        #expect(items.count == 5)
        guard items.count == 5 else { return }
        #expect(items[0] == .line(1, [.clear]))
        for (index, line) in [(1, 2), (3, 4), (4, 5)] {
            guard case .error(let error) = items[index] else {
                Issue.record("expected an error for line \(line), got \(items[index])")
                continue
            }
            #expect(error.line == line)
            #expect(error.reason.contains("too long"))
        }
        #expect(items[2] == .line(3, [.end(stroke)]))
    }

    @Test func overlongLineWithTheDefaultLimit() {
        let long = "{\"type\":\"clear\",\"seq\":\"" + String(repeating: "y", count: 3 << 20) + "\"}"
        let items = readAll(file: "\(long)\n\(end)\n")
        #expect(items.count == 2)
        guard items.count == 2 else { return }
        if case .error(let error) = items[0] {
            #expect(error.line == 1)
            #expect(error.reason.contains("too long"))
            #expect(error.reason.contains("\(LineParser.maxLineLength)"))
        } else {
            Issue.record("expected an error, got \(items[0])")
        }
        #expect(items[1] == .line(2, [.end(stroke)]))
    }

    @Test(arguments: [NDJSONReader.chunkSize, 64, 1])
    func linesAtTheLimit(readSize: Int) {
        // Exactly the limit passes, with "\n" or "\r\n"; one byte more fails.
        let limit = 100
        let exact = clear + String(repeating: " ", count: limit - clear.utf8.count)
        let over = exact + " "
        let items = readAll(file: "\(exact)\n\(exact)\r\n\(over)\n\(exact)\n\(over)", maxLineLength: limit, readSize: readSize)
        #expect(items.count == 5)
        guard items.count == 5 else { return }
        #expect(items[0] == .line(1, [.clear]))
        #expect(items[1] == .line(2, [.clear]))
        if case .error(let error) = items[2] { #expect(error.line == 3) } else { Issue.record("line 3: \(items[2])") }
        #expect(items[3] == .line(4, [.clear]))
        if case .error(let error) = items[4] { #expect(error.line == 5) } else { Issue.record("line 5: \(items[4])") }
    }

    @Test(arguments: [(NDJSONReader.chunkSize, 3 * NDJSONReader.chunkSize + 12_345), (1000, 200_000), (7, 50_000), (1, 20_000)])
    func manyLinesAcrossReadChunks(readSize: Int, totalBytes: Int) {
        // Lines straddle the boundaries of the reads.
        var random = SeededGenerator(seed: 17)
        var text = ""
        var expected: [ReadItem] = []
        var lineNumber = 0
        while text.utf8.count < totalBytes {
            lineNumber += 1
            if random.next() % 50 == 0 {
                text += "\n"
                continue
            }
            let payload = CanonicalJSONTests.randomPayload(&random)
            text += CanonicalJSON.line(for: payload) + (random.next() % 7 == 0 ? "\r\n" : "\n")
            expected.append(.line(lineNumber, [payload]))
        }
        let items = readAll(file: text, readSize: readSize)
        #expect(items.count == expected.count)
        #expect(items == expected)
    }

    @Test func directoryGivesOneReadErrorThenEnds() throws {
        var reader = try NDJSONReader(path: "/tmp")
        let items = readAll(&reader, limit: 5)
        #expect(items.count == 1)
        if case .error(let error)? = items.first {
            #expect(error.description.hasPrefix("/tmp:1: read error: "))
        } else {
            Issue.record("expected a read error, got \(items)")
        }
    }

    @Test func appendingVariant() throws {
        let file = TemporaryFile("\(clear)\n\n\(end)\n{\"id\":\"\(strokeText)\",\"points\":[{\"x\":1,\"y\":2}],\"red\":0,\"green\":0,\"blue\":0,\"alpha\":1,\"lineWidth\":2}\n")
        defer { file.remove() }
        var reader = try NDJSONReader(path: file.path)
        var payloads: [Payload] = []
        var lines: [Int] = []
        while let line = try reader.next(appendingTo: &payloads) { lines.append(line) }
        #expect(lines == [1, 3, 4])
        #expect(payloads == [.clear, .end(stroke), point(x: 1, y: 2, width: 2), .end(stroke)])
        #expect(reader.lineNumber == 4)
    }

    @Test func readsFromADescriptor() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        let bytes = Array("\(clear)\n\(end)\n{\"type\":\"bogus\"}\n".utf8)
        let written = bytes.withUnsafeBytes { write(descriptors[1], $0.baseAddress, $0.count) }
        #expect(written == bytes.count)
        close(descriptors[1])
        var reader = NDJSONReader(fileDescriptor: descriptors[0], name: "<stdin>")
        let items = readAll(&reader)
        close(descriptors[0])
        #expect(items.count == 3)
        guard items.count == 3 else { return }
        #expect(items[0] == .line(1, [.clear]))
        #expect(items[1] == .line(2, [.end(stroke)]))
        if case .error(let error) = items[2] {
            #expect(error.description == "<stdin>:3: unknown type \"bogus\"")
        } else {
            Issue.record("expected an error, got \(items[2])")
        }
    }

    /// Lines carry the time their read returned: one written later arrives later, and lines
    /// of one read share it.
    @Test func eachReadIsStampedWithTheTimeItArrived() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        defer { close(descriptors[0]) }
        func send(_ text: String) {
            let bytes = Array(text.utf8)
            let written = bytes.withUnsafeBytes { write(descriptors[1], $0.baseAddress, $0.count) }
            #expect(written == bytes.count)
        }
        var reader = NDJSONReader(fileDescriptor: descriptors[0], name: "<stdin>")
        #expect(reader.arrivedAtMilliseconds == 0, "nothing read yet")
        let beforeFirst = ProcessInfoLite.wallClockMilliseconds()
        send("\(clear)\n\(clear)\n")
        var payloads: [Payload] = []
        _ = try reader.next(appendingTo: &payloads)
        let first = reader.arrivedAtMilliseconds
        _ = try reader.next(appendingTo: &payloads)
        #expect(reader.arrivedAtMilliseconds == first, "two lines of one read")
        #expect(first >= beforeFirst && first <= ProcessInfoLite.wallClockMilliseconds())
        // The next line is written once the clock has moved on: its read is stamped later.
        while ProcessInfoLite.wallClockMilliseconds() <= first { usleep(200) }
        let beforeSecond = ProcessInfoLite.wallClockMilliseconds()
        send("\(end)\n")
        close(descriptors[1])
        _ = try reader.next(appendingTo: &payloads)
        #expect(reader.arrivedAtMilliseconds >= beforeSecond)
        #expect(reader.arrivedAtMilliseconds > first)
    }

    @Test func cannotOpen() {
        do {
            _ = try NDJSONReader(path: "/nonexistent-dir/input.ndjson")
            Issue.record("opened a file that does not exist")
        } catch {
            #expect(error.line == 0)
            #expect(error.description == "/nonexistent-dir/input.ndjson: cannot open: No such file or directory")
        }
    }

    @Test func inputErrorDescription() {
        #expect(InputError(source: "a.ndjson", line: 3, reason: "bad").description == "a.ndjson:3: bad")
        #expect(InputError(source: "<stdin>", line: 0, reason: "cannot open: x").description == "<stdin>: cannot open: x")
        #expect(InputError(source: "f", line: 9, LineError(reason: "r")) == InputError(source: "f", line: 9, reason: "r"))
    }
}
