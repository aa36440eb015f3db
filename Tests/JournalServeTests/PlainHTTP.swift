import Foundation  // Thread: the blocking socket stays off Swift's cooperative pool.
import JournalTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A bare HTTP/1.1 GET on 127.0.0.1 for tests: the request goes out byte for byte as given
/// (no client library normalises `..` or percent escapes away), `Connection: close`, and the
/// reply is read to the end.
enum PlainHTTP {
    struct Reply {
        let status: Int
        /// Header names lowercased.
        let headers: [String: String]
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func get(port: Int, path: String, timeoutSeconds: Int = 60, sourceHost: UInt8? = nil) async throws -> Reply {
        let raw = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8], any Error>) in
            Thread.detachNewThread {
                continuation.resume(with: Result {
                    try exchange(port: port, request: "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n",
                                 timeoutSeconds: timeoutSeconds, sourceHost: sourceHost)
                })
            }
        }
        return try parse(raw)
    }

    /// Opens a WebSocket to `path` and sends `text` as its first frame, then never reads: a
    /// client that stalls. Returns the socket (the caller closes it); its receive buffer is
    /// kept small, so that the relay's writes stall after a few kilobytes.
    static func openNonReadingWebSocket(port: Int, path: String, text: String) throws -> Int32 {
        let fd = try connectedSocket(port: port, receiveBuffer: 4096)
        let payload = Array(text.utf8)
        precondition(payload.count < 126, "one short frame")
        // A masked text frame with the all-zero key: the payload goes as it is.
        let request = Array(("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
            + [0x81, 0x80 | UInt8(payload.count), 0, 0, 0, 0] + payload
        let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == request.count else {
            close(fd)
            throw Failure(description: "send: \(sent) of \(request.count) bytes, errno \(errno)")
        }
        return fd
    }

    /// Reads `fd` at about `bytesPerSecond` for `slowSeconds`, then as fast as it can, until
    /// `marker` has arrived (true) or the socket ends or `timeoutSeconds` pass (false). On a
    /// thread of its own: the reads block.
    static func readSlowly(_ fd: Int32, bytesPerSecond: Int, slowSeconds: Double, until marker: String,
                           timeoutSeconds: Int = 120) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread.detachNewThread {
                var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let wanted = Array(marker.utf8)
                let slice = max(1, bytesPerSecond / 25)
                let started = Date()
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                var tail: [UInt8] = []
                while Date().timeIntervalSince(started) < Double(timeoutSeconds) {
                    let slow = Date().timeIntervalSince(started) < slowSeconds
                    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, slow ? slice : $0.count, 0) }
                    guard n > 0 else { break }
                    tail += buffer[0..<n]
                    if tail.count >= wanted.count, tail.indices.contains(where: { tail[$0...].starts(with: wanted) }) {
                        return continuation.resume(returning: true)
                    }
                    tail = Array(tail.suffix(wanted.count))
                    if slow { usleep(40_000) }
                }
                continuation.resume(returning: false)
            }
        }
    }

    /// Opens a socket to 127.0.0.1:`port` from 127.0.0.`sourceHost` (any loopback address is this
    /// machine's, so a test can be two hosts) and sends the start of a request head it never
    /// finishes. The caller closes it.
    static func openUnfinishedRequest(port: Int, sourceHost: UInt8) throws -> Int32 {
        let fd = try connectedSocket(port: port, sourceHost: sourceHost)
        let start = Array("GET /boards/wall/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n".utf8)
        guard start.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == start.count else {
            close(fd)
            throw Failure(description: "send: errno \(errno)")
        }
        return fd
    }

    /// Everything `fd` receives until its peer closes it; nil if it is still open after
    /// `timeoutSeconds` (a bound for a test that would otherwise hang, not a measurement).
    static func readUntilClosed(_ fd: Int32, timeoutSeconds: Int = 60) async -> [UInt8]? {
        await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
            Thread.detachNewThread {
                var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if n > 0 {
                        received += buffer[0..<n]
                    } else {
                        // 0: closed; a reset is a close too; a timeout is not.
                        let closed = n == 0 || errno == ECONNRESET
                        return continuation.resume(returning: closed ? received : nil)
                    }
                }
            }
        }
    }

    /// A TCP socket connected to 127.0.0.1:`port` (`LoopbackSocket`).
    private static func connectedSocket(port: Int, receiveBuffer: Int32? = nil, sourceHost: UInt8? = nil) throws -> Int32 {
        do throws(LoopbackSocket.Failure) {
            return try LoopbackSocket.open(port: port, receiveBuffer: receiveBuffer, sourceHost: sourceHost)
        } catch {
            throw Failure(description: error.description)
        }
    }

    private static func exchange(port: Int, request: String, timeoutSeconds: Int, sourceHost: UInt8? = nil) throws -> [UInt8] {
        let fd = try connectedSocket(port: port, sourceHost: sourceHost)
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += n
        }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return reply }
            guard n > 0 else { throw Failure(description: "recv after \(reply.count) bytes: errno \(errno) (timeout?)") }
            reply.append(contentsOf: buffer[0..<n])
            guard reply.count < 1 << 24 else { throw Failure(description: "reply over 16 MiB") }
        }
    }

    /// Status line, headers, and the body by Content-Length (the relay's replies carry one).
    private static func parse(_ raw: [UInt8]) throws -> Reply {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = raw.indices.first(where: { raw[$0...].starts(with: separator) }) else {
            throw Failure(description: "no end of headers in \(raw.count) bytes")
        }
        let lines = String(decoding: raw[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw Failure(description: "not a status line: \(lines[0])")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { throw Failure(description: "not a header: \(line)") }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(raw[(headEnd + 4)...])
        if let length = headers["content-length"].flatMap({ Int($0) }) {
            guard body.count >= length else { throw Failure(description: "body of \(body.count) bytes, Content-Length \(length)") }
            body = Array(body[0..<length])
        }
        return Reply(status: status, headers: headers, body: body)
    }
}
