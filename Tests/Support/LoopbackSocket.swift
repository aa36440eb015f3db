#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Plain TCP sockets to this machine for tests that need bytes no client library sends. (Kept
/// out of the test targets that import SwiftNIO: there the C socket types resolve to NIO's
/// module and need imports a test cannot name.)
public enum LoopbackSocket {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A TCP socket connected to 127.0.0.1:`port`: with `receiveBuffer` set before connecting,
    /// and from 127.0.0.`sourceHost` when given (every loopback address is this machine's, so
    /// one test can be clients on several hosts). The caller closes it.
    public static func open(port: Int, receiveBuffer: Int32? = nil, sourceHost: UInt8? = nil) throws(Failure) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        if let sourceHost, with(loopback(sourceHost, port: 0), bind, on: fd) != 0 {
            let code = errno
            close(fd)
            throw Failure(description: "bind to 127.0.0.\(sourceHost): errno \(code)")
        }
        let connected = with(loopback(1, port: port), connect, on: fd)
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): errno \(code)")
        }
        return fd
    }

    /// 127.0.0.`host`:`port`.
    private static func loopback(_ host: UInt8, port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr = in_addr(s_addr: (UInt32(0x7F00_0000) | UInt32(host)).bigEndian)
        return address
    }

    /// `call(fd, address, length)`: bind or connect.
    private static func with(_ address: sockaddr_in, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32, on fd: Int32) -> Int32 {
        var address = address
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}
