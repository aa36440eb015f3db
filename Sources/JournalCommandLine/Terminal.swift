import JournalPlatform

/// Buffered standard output (a 2-million-point JSON must not cost one syscall per line)
/// and an unbuffered standard error.
///
/// A failed write is never swallowed: output cut short by a full disk or a closed file would
/// otherwise look complete and exit 0. A reader that went away (`journal log | head`) ends the
/// process quietly with 141 (128 + SIGPIPE), as the shell expects; any other failure prints
/// one line and exits 74.
package enum Terminal {
    nonisolated(unsafe) private static var buffer: [UInt8] = {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(1 << 16)
        return bytes
    }()

    package static func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Writes a large buffer at once, after what is buffered (no copy into the buffer).
    package static func writeDirectly(_ bytes: [UInt8]) {
        if bytes.count < 1 << 16 {
            buffer.append(contentsOf: bytes)
            if buffer.count >= 1 << 16 { flush() }
            return
        }
        flush()
        writeOut(bytes)
    }

    package static func flush() {
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
    package static func shellQuoted(_ word: String) -> String {
        let safe = word.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "/._-+=:,@%".unicodeScalars.contains(scalar))
        }
        return safe && !word.isEmpty ? word : "'" + word.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    package static func standardError(_ text: String) {
        flush()
        // Nothing sensible is left to do if standard error itself cannot be written.
        try? FileDescriptor.standardError.writeAll(Array(text.utf8))
    }

    package static var isStandardErrorTerminal: Bool { ProcessInfoLite.isTerminal(2) }
}

/// A one-line progress indicator on stderr, shown only when stderr is a terminal.
package struct Progress {
    package let label: String
    package let enabled = Terminal.isStandardErrorTerminal
    private var lastUpdate = 0.0

    package init(_ label: String) { self.label = label }

    package mutating func update(_ text: @autoclosure () -> String) {
        guard enabled else { return }
        let now = ProcessInfoLite.monotonicSeconds()
        guard now - lastUpdate >= 0.1 else { return }
        lastUpdate = now
        Terminal.standardError("\r\u{1B}[2K\(label): \(text())")
    }

    package func finish() {
        guard enabled else { return }
        Terminal.standardError("\r\u{1B}[2K")
    }
}

/// A duration for a person: milliseconds under a second, else seconds with three decimals.
package func formatSeconds(_ seconds: Double) -> String {
    let milliseconds = Int((seconds * 1000).rounded())
    return milliseconds < 1000 ? "\(milliseconds) ms" : "\(milliseconds / 1000).\(String(repeating: "0", count: 3 - String(milliseconds % 1000).count))\(milliseconds % 1000) s"
}
