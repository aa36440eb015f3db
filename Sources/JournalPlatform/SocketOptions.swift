#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The socket options the relay's server sets or reads, so that its module needs no C library
/// of its own (SwiftNIO takes them as plain numbers and structs).
public enum SocketOptions {
    /// `IPPROTO_TCP`: the level of TCP's own options.
    public static let tcpLevel = Int32(IPPROTO_TCP)

    #if os(Linux)
    /// `TCP_INFO`: what the kernel knows of a connection, among it the bytes the peer acknowledged.
    public static let tcpInfo = Int32(TCP_INFO)
    #endif

    /// `SO_LINGER` on with a zero timeout: `close` resets the connection and drops what is
    /// queued for it, instead of sending it on.
    public static let resetOnClose = linger(l_onoff: 1, l_linger: 0)
}
