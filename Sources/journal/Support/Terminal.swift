#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalPlatform

/// Buffered standard output (a 2-million-point JSON must not cost one syscall per line)
/// and an unbuffered standard error.
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

    static func flush() {
        var offset = 0
        buffer.withUnsafeBytes { raw in
            while offset < raw.count {
                let written = Glibc_write(1, raw.baseAddress! + offset, raw.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    static func standardError(_ text: String) {
        flush()
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc_write(2, $0.baseAddress!, $0.count) }
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

private func Glibc_write(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, pointer, count)
}
