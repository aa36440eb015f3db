import JournalFormat
import JournalPlatform

/// Streams NDJSON from a file descriptor in large reads and parses it line by line.
///
/// Memory stays bounded by `maxLineLength` plus one read chunk, whatever the input: a line
/// longer than the limit is reported as soon as the limit is passed, and its remaining bytes
/// are then read and dropped, never buffered. After any error (a bad line, a long line) the
/// reader carries on with the next line, so a caller may skip invalid lines.
///
/// A copy of a reader shares its position with the original (the state is a reference).
public struct NDJSONReader {
    /// Bytes asked of each `read(2)` unless told otherwise.
    public static let chunkSize = 1 << 20

    /// The path, or the name given for a descriptor (e.g. `"<stdin>"`).
    public let source: String
    public let maxLineLength: Int
    private let state: State

    /// Opens `path` for reading; the reader closes it when the last copy goes away.
    /// Throws `"<path>: cannot open: <strerror>"` (line 0). `readSize` is the size of each
    /// `read(2)`; memory use is about `maxLineLength + readSize`.
    public init(
        path: String, maxLineLength: Int = LineParser.maxLineLength, readSize: Int = NDJSONReader.chunkSize
    ) throws(InputError) {
        let descriptor: FileDescriptor
        do { descriptor = try FileDescriptor.openForStreamingInput(path) } catch {
            throw InputError(source: path, line: 0, reason: "cannot open: \(error.message)")
        }
        self.source = path
        self.maxLineLength = maxLineLength
        self.state = State(descriptor: descriptor, owned: true, maxLineLength: maxLineLength, readSize: readSize)
    }

    /// Reads from an open descriptor (stdin, a pipe), which stays open: the caller owns it.
    public init(
        fileDescriptor: Int32, name: String, maxLineLength: Int = LineParser.maxLineLength,
        readSize: Int = NDJSONReader.chunkSize
    ) {
        self.source = name
        self.maxLineLength = maxLineLength
        self.state = State(
            descriptor: .borrowed(fileDescriptor, name: name), owned: false, maxLineLength: maxLineLength, readSize: readSize)
    }

    /// The number of the last line read (0 before the first).
    public var lineNumber: Int { state.lineNumber }

    /// The wall clock (ms since 1970) when the bytes of the last read arrived: every line they
    /// hold arrived then, so a recorder stamps its events with it and reads the clock once a
    /// read instead of once an event (0 before the first read).
    public var arrivedAtMilliseconds: Int64 { state.arrivedAt }

    /// Called when the next read would wait for the input (a pipe with nothing in it yet):
    /// the moment for a recorder to make what it has durable, instead of holding it for as
    /// long as the producer is quiet.
    public var whenIdle: (() -> Void)? {
        get { state.whenIdle }
        nonmutating set { state.whenIdle = newValue }
    }

    /// The next line that holds payloads, with its 1-based number; nil at the end of input.
    /// Blank lines are skipped. An error names its line; calling again resumes after it.
    public mutating func next() throws(InputError) -> (line: Int, payloads: [Payload])? {
        var payloads: [Payload] = []
        guard let line = try next(appendingTo: &payloads) else { return nil }
        return (line, payloads)
    }

    /// Like `next()`, but appends the payloads to `payloads` (saving an array per line) and
    /// returns the line's number; nil at the end of input. Nothing is appended for a bad line.
    public mutating func next(appendingTo payloads: inout [Payload]) throws(InputError) -> Int? {
        let before = payloads.count
        while true {
            guard let line = try state.nextLine(source: source) else { return nil }
            // Editors on some systems start a UTF-8 file with a byte-order mark: not JSON, but
            // not an error a person could see either.
            var bytes = line.bytes
            if line.number == 1, bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
                bytes = UnsafeRawBufferPointer(rebasing: bytes[3...])
            }
            do {
                try LineParser.parse(bytes, into: &payloads, maxLineLength: maxLineLength)
            } catch {
                throw InputError(source: source, line: line.number, error)
            }
            if payloads.count > before { return line.number }
        }
    }

    /// Passes over lines up to line `count` without parsing them: where a re-run starts after
    /// the lines an earlier run recorded (`journal record --from-line`).
    public mutating func skipLines(_ count: Int) throws(InputError) {
        while state.lineNumber < count, try state.nextLine(source: source) != nil {}
    }

    /// The buffer and descriptor behind a reader.
    private final class State {
        var whenIdle: (() -> Void)?
        let descriptor: FileDescriptor
        let owned: Bool
        let maxLineLength: Int
        let capacity: Int
        let readSize: Int
        let buffer: UnsafeMutablePointer<UInt8>
        /// Unconsumed bytes are `buffer[start..<end]`; `buffer[start..<scanned]` holds no newline.
        var start = 0
        var end = 0
        var scanned = 0
        var atEOF = false
        /// Dropping the rest of a too-long line.
        var discarding = false
        var lineNumber = 0
        var arrivedAt: Int64 = 0

        init(descriptor: FileDescriptor, owned: Bool, maxLineLength: Int, readSize: Int) {
            self.descriptor = descriptor
            self.owned = owned
            self.maxLineLength = max(0, maxLineLength)
            // Room for the longest line with its "\r\n", plus a whole read.
            self.readSize = max(1, readSize)
            self.capacity = self.maxLineLength + 2 + self.readSize
            self.buffer = .allocate(capacity: capacity)
        }

        deinit {
            buffer.deallocate()
            if owned { descriptor.close() }
        }

        /// The next line's bytes (without "\n"), valid until the next call.
        func nextLine(source: String) throws(InputError) -> (number: Int, bytes: UnsafeRawBufferPointer)? {
            if discarding { try discardRestOfLine(source: source) }
            while true {
                if scanned < end, let offset = newlineOffset(from: scanned) {
                    let newline = scanned + offset
                    let line = UnsafeRawBufferPointer(start: buffer + start, count: newline - start)
                    start = newline + 1
                    scanned = start
                    lineNumber += 1
                    return (lineNumber, line)
                }
                scanned = end
                // No newline yet. Past the limit (plus room for a "\r"), the line is too long.
                if end - start > maxLineLength + 1 {
                    lineNumber += 1
                    start = 0
                    end = 0
                    scanned = 0
                    discarding = true
                    throw InputError(
                        source: source, line: lineNumber,
                        reason: "line is too long (more than \(maxLineLength) bytes; the limit is \(maxLineLength))")
                }
                if atEOF {
                    guard start < end else { return nil }
                    // The last line has no newline.
                    let line = UnsafeRawBufferPointer(start: buffer + start, count: end - start)
                    start = end
                    scanned = end
                    lineNumber += 1
                    return (lineNumber, line)
                }
                try fill(source: source)
            }
        }

        /// Drops bytes through the next newline (or to the end of input).
        private func discardRestOfLine(source: String) throws(InputError) {
            while true {
                if start < end, let offset = newlineOffset(from: start) {
                    start += offset + 1
                    scanned = start
                    discarding = false
                    return
                }
                start = 0
                end = 0
                scanned = 0
                if atEOF {
                    discarding = false
                    return
                }
                try fill(source: source)
            }
        }

        /// Moves the unconsumed bytes to the front and reads more after them.
        private func fill(source: String) throws(InputError) {
            if start > 0 {
                let pending = end - start
                if pending > 0 { UnsafeMutableRawPointer(buffer).copyMemory(from: buffer + start, byteCount: pending) }
                end = pending
                scanned -= start
                start = 0
            }
            if let whenIdle {
                if descriptor.wouldWaitToRead { whenIdle() }
            }
            let count: Int
            do { count = try descriptor.readSome(into: buffer + end, count: min(readSize, capacity - end)) } catch {
                // Reported once; the input then ends, so a caller that skips errors stops.
                atEOF = true
                throw InputError(source: source, line: lineNumber + 1, reason: "read error: \(error.message)")
            }
            if count == 0 {
                atEOF = true
            } else {
                end += count
                arrivedAt = ProcessInfoLite.wallClockMilliseconds()
            }
        }

        /// Where the next "\n" at or after `from` is, relative to `from`.
        private func newlineOffset(from: Int) -> Int? {
            ByteSearch.firstIndex(
                of: UInt8(ascii: "\n"), in: UnsafeRawBufferPointer(start: buffer + from, count: end - from))
        }
    }
}
