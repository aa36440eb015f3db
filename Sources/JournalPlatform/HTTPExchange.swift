#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One HTTP/1.1 request and its answer over a TCP connection of its own, blocking, every step
/// bounded by a deadline: for a coordination service on the cluster's network (etcd's JSON
/// gateway, rclone's remote control on this machine), asked from a thread that does nothing
/// else. Not a general client: no TLS, no redirects, no proxies, answers up to
/// `maxResponseBytes` unless a caller allows more.
public enum HTTPExchange {
    public struct Response: Sendable {
        public var status: Int
        public var body: [UInt8]
    }

    public static let maxResponseBytes = 1 << 20

    /// POSTs `body` (JSON) to `path` on `host:port` and returns the answer. Throws when the
    /// connection, the request or the answer does not complete within `timeoutSeconds` in all,
    /// naming `host:port` and the step that failed. `headers` are added as given (an
    /// `Authorization`); they must hold no line break.
    public static func post(host: String, port: Int, path: String, json body: [UInt8], headers: [(name: String, value: String)] = [],
                            timeoutSeconds: Double, maxResponseBytes: Int = HTTPExchange.maxResponseBytes) throws(IOError) -> Response {
        let address = host + ":" + String(port)
        let deadline = ProcessInfoLite.monotonicSeconds() + timeoutSeconds
        let fd = try openConnection(host: host, port: port, address: address, deadline: deadline)
        defer { close(fd) }
        let extra = headers.map { "\($0.name): \($0.value)\r\n" }.joined()
        let head = "POST \(path) HTTP/1.1\r\nHost: \(address)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\(extra)Connection: close\r\n\r\n"
        try sendAll(Array(head.utf8) + body, on: fd, address: address, deadline: deadline)
        let raw = try receiveAll(fd, address: address, deadline: deadline, limit: maxResponseBytes)
        return try parse(raw, address: address)
    }

    /// A TCP port on 127.0.0.1 that nothing listens on now, for a server this process starts
    /// beside it (rclone's remote control): another process may take it first, so the caller
    /// must be ready for its server not to start.
    public static func unusedLocalPort() throws(IOError) -> Int {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw IOError("socket", path: "127.0.0.1", code: errno) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(fd, generic, length) == 0 && getsockname(fd, generic, &length) == 0
            }
        }
        guard bound else { throw IOError("bind", path: "127.0.0.1:0", code: errno) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func remaining(_ deadline: Double, _ operation: String, _ address: String) throws(IOError) -> Int32 {
        let left = deadline - ProcessInfoLite.monotonicSeconds()
        guard left > 0 else { throw IOError(operation, path: address, code: ETIMEDOUT) }
        return Int32(min(left * 1000, 60_000).rounded(.up))
    }

    /// Waits until `socket` is ready for `events`, or the deadline.
    private static func wait(_ fd: Int32, for events: Int16, _ operation: String, _ address: String, deadline: Double) throws(IOError) {
        while true {
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&descriptor, 1, try remaining(deadline, operation, address))
            if ready > 0 { return }
            if ready == 0 { continue }
            if errno != EINTR { throw IOError(operation, path: address, code: errno) }
        }
    }

    private static func openConnection(host: String, port: Int, address: String, deadline: Double) throws(IOError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0, let first = found else {
            throw IOError("resolve", path: address, code: EHOSTUNREACH, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(first) }
        var lastError = IOError("connect", path: address, code: ECONNREFUSED)
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            let fd = socket(current.pointee.ai_family, current.pointee.ai_socktype, current.pointee.ai_protocol)
            guard fd >= 0 else { lastError = IOError("socket", path: address, code: errno); continue }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            if connect(fd, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 { return fd }
            guard errno == EINPROGRESS else { lastError = IOError("connect", path: address, code: errno); close(fd); continue }
            do throws(IOError) {
                try wait(fd, for: Int16(POLLOUT), "connect", address, deadline: deadline)
                var failure: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
                guard failure == 0 else { throw IOError("connect", path: address, code: failure) }
                return fd
            } catch {
                lastError = error
                close(fd)
            }
        }
        throw lastError
    }

    private static func sendAll(_ bytes: [UInt8], on fd: Int32, address: String, deadline: Double) throws(IOError) {
        var sent = 0
        while sent < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                send(fd, buffer.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if written > 0 { sent += written; continue }
            if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                try wait(fd, for: Int16(POLLOUT), "send to", address, deadline: deadline)
                continue
            }
            throw IOError("send to", path: address, code: written < 0 ? errno : EPIPE)
        }
    }

    private static func receiveAll(_ fd: Int32, address: String, deadline: Double, limit: Int) throws(IOError) -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received.append(contentsOf: chunk[..<count])
                guard received.count <= limit else {
                    throw IOError("read from", path: address, code: EMSGSIZE, reason: "an answer of more than \(limit) bytes")
                }
                continue
            }
            if count == 0 { return received }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { throw IOError("read from", path: address, code: errno) }
            try wait(fd, for: Int16(POLLIN), "read from", address, deadline: deadline)
        }
    }

    /// The status and body of a complete answer (its body sized by Content-Length, chunked, or
    /// ended by the connection's close).
    static func parse(_ raw: [UInt8], address: String) throws(IOError) -> Response {
        func malformed(_ why: String) -> IOError { IOError("read from", path: address, code: EPROTO, reason: "not an HTTP answer: \(why)") }
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = raw.indices.first(where: { raw[$0...].starts(with: separator) }) else { throw malformed("no end of headers") }
        let lines = String(decoding: raw[..<headEnd], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw malformed("status line \(lines.first.map { String($0.prefix(60)) } ?? "")")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingSpaces()
        }
        var body = Array(raw[(headEnd + 4)...])
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            var decoded: [UInt8] = []
            var at = 0
            while true {
                guard let lineEnd = body[at...].indices.first(where: { body[$0...].starts(with: [13, 10]) }) else { throw malformed("a cut chunk") }
                let sizeText = String(decoding: body[at..<lineEnd], as: UTF8.self).split(separator: ";").first.map(String.init) ?? ""
                guard let size = Int(sizeText.trimmingSpaces(), radix: 16), size >= 0 else { throw malformed("chunk size \(sizeText.prefix(20))") }
                at = lineEnd + 2
                if size == 0 { break }
                guard at + size <= body.count else { throw malformed("a cut chunk") }
                decoded.append(contentsOf: body[at..<(at + size)])
                at += size + 2
            }
            body = decoded
        } else if let lengthText = headers["content-length"], let length = Int(lengthText) {
            guard body.count >= length else { throw malformed("\(body.count) of \(length) bytes") }
            body = Array(body.prefix(length))
        }
        return Response(status: status, body: body)
    }
}

extension StringProtocol {
    fileprivate func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
