import JournalPlatform
import JournalTestSupport
import JournalWire
import Testing

/// The crash campaigns' client must not wait for ever on a socket that never opens: the
/// WebSocket library's connect can, on a relay killed mid-handshake, and a suite run once sat
/// silent for 15 minutes with a crash campaign's relay alive.
@Suite struct ResendingClientTests {
    @Test func aSocketThatNeverOpensIsGivenUpOn() async throws {
        // Its backlog completes the TCP handshake; nobody ever answers the WebSocket upgrade.
        let listener = SilentListener()
        try #require(listener.port != 0, "no listening socket")
        let client = ResendingClient(name: "patient", frames: [])
        let caughtUp = Locked<Have??>(nil)
        let returned = await within(120) {
            let have = await client.catchUp(port: Int(listener.port), board: "none", seconds: 1)
            caughtUp.withLock { $0 = .some(have) }
        }
        #expect(returned, "the client still waits for a socket that never opens")
        #expect(caughtUp.withLock { $0 } == .some(nil))
        #expect(client.snapshot.connections == 0)
    }
}
