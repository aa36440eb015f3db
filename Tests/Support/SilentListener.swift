#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A socket on 127.0.0.1 that listens and never accepts: connections to it queue in its
/// backlog and get no answer (a frozen server), and its port is taken (a port in use).
public final class SilentListener: Sendable {
    public let descriptor: Int32
    /// Its port; 0 when it could not be made to listen.
    public let port: UInt16

    public init() {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        } && listen(descriptor, 64) == 0
        port = listening ? UInt16(bigEndian: address.sin_port) : 0
    }

    deinit { close(descriptor) }
}
