import JournalPlatform

/// Buffered standard output (a 2-million-point JSON must not cost one syscall per line)
/// and an unbuffered standard error.
///
/// A failed write is never swallowed: output cut short by a full disk or a closed file would
/// otherwise look complete and exit 0. A reader that went away (`journal log | head`) ends the
/// process quietly with 141 (128 + SIGPIPE), as the shell expects; any other failure prints
/// one line and exits 74.
enum Terminal {
    nonisolated(unsafe) private static var buffer: [UInt8] = {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(1 << 16)
        return bytes
    }()

    static func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Writes a large buffer at once, after what is buffered (no copy into the buffer).
    static func writeDirectly(_ bytes: [UInt8]) {
        if bytes.count < 1 << 16 {
            buffer.append(contentsOf: bytes)
            if buffer.count >= 1 << 16 { flush() }
            return
        }
        flush()
        writeOut(bytes)
    }

    static func flush() {
        guard !buffer.isEmpty else { return }
        defer { buffer.removeAll(keepingCapacity: true) }
        writeOut(buffer)
    }

    private static func writeOut(_ bytes: [UInt8]) {
        do throws(IOError) {
            try FileDescriptor.standardOutput.writeAll(bytes)
        } catch {
            if FileDescriptor.isBrokenPipe(error) { ProcessInfoLite.terminate(status: 141) }
            buffer.removeAll()
            standardError("journal: cannot write to standard output: \(error.message)\n")
            ProcessInfoLite.terminate(status: CLIError.ioError)
        }
    }

    /// `word` as a shell reads it back: as it is when it holds only safe characters, else in
    /// single quotes (a command printed for a person to paste).
    static func shellQuoted(_ word: String) -> String {
        let safe = word.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "/._-+=:,@%".unicodeScalars.contains(scalar))
        }
        return safe && !word.isEmpty ? word : "'" + word.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    static func standardError(_ text: String) {
        flush()
        // Nothing sensible is left to do if standard error itself cannot be written.
        try? FileDescriptor.standardError.writeAll(Array(text.utf8))
    }

    static var isStandardErrorTerminal: Bool { ProcessInfoLite.isTerminal(2) }
}

/// A one-line progress indicator on stderr, shown only when stderr is a terminal.
struct Progress {
    let label: String
    let enabled = Terminal.isStandardErrorTerminal
    private var lastUpdate = 0.0

    init(_ label: String) { self.label = label }

    mutating func update(_ text: @autoclosure () -> String) {
        guard enabled else { return }
        let now = ProcessInfoLite.monotonicSeconds()
        guard now - lastUpdate >= 0.1 else { return }
        lastUpdate = now
        Terminal.standardError("\r\u{1B}[2K\(label): \(text())")
    }

    func finish() {
        guard enabled else { return }
        Terminal.standardError("\r\u{1B}[2K")
    }
}
