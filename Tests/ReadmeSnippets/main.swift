#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The README's Swift snippets, each verbatim in a function of its own (`ReadmeSnippetTests`
/// checks that each function's text is its snippet's, then runs `readme-snippets NAME` in a
/// folder of its own, as a reader would run the snippet in an app).
struct UnknownSnippet: Error, CustomStringConvertible {
    let description = "usage: readme-snippets library|live-board|relay-client"
}

let snippets: [String: () async throws -> Void] = [
    "library": readmeLibrary, "live-board": readmeLiveBoard, "relay-client": readmeRelayClient,
]
guard CommandLine.arguments.count == 2, let snippet = snippets[CommandLine.arguments[1]] else { throw UnknownSnippet() }
do {
    try await snippet()
} catch {
    // As an app would: the reason on stderr, a status that says it failed.
    let message = Array("readme-snippets: \(error)\n".utf8)
    _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}
