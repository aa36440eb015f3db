// swift-tools-version:6.1
// StrokeJournal: an event-sourced, zlib-compressed journal of drawing sessions.
//
// Layers, bottom to top (a lower layer never imports a higher one; docs/ARCHITECTURE.md):
//   CZlib ⟶ JournalCompression (zlib, CRC-32)   JournalPlatform (POSIX files, processes)
//   ⟶ JournalFormat (events and bytes, no I/O) ⟶ JournalStorage (files, fsync, locks)
//   ⟶ JournalReplay (fold, digest, snapshots) ⟶ JournalSync (shared folders, rsync, object stores)
//   ⟶ journal (the command-line tool; journal-relay for `serve` and `join`). Beside them: JournalIngest (text lines to events),
//   JournalRender (SVG), JournalSamples (the built-in demo session), JournalWire (the relay's
//   messages, shared by server and clients). The relay (JournalRelay, NIO-free) and its
//   server (JournalServe, Hummingbird) stay outside the library product: an app that embeds
//   StrokeJournal never builds SwiftNIO.
import PackageDescription

// Every module states the modules it uses: an import that its dependencies do not name
// fails to build, and members are visible only where their module is imported (SE-0444).
let strict: [SwiftSetting] = [.enableUpcomingFeature("MemberImportVisibility")]

let package = Package(
    name: "StrokeJournal",
    platforms: [.macOS(.v13)],
    products: [
        // `import StrokeJournal` re-exports every library layer; an app that depends only on
        // this product never builds the command-line tool's dependencies.
        .library(name: "StrokeJournal", targets: ["StrokeJournal"]),
        .executable(name: "journal", targets: ["journal"]),
        // `journal serve` and `journal join` (SwiftNIO, Hummingbird): journal runs it for them.
        .executable(name: "journal-relay", targets: ["journal-relay"]),
        // A client of `journal serve` that stays connected (SwiftNIO): a product of its own, so
        // that an app embedding only the journal never builds a network stack.
        .library(name: "StrokeJournalClient", targets: ["JournalClient"]),
        // The built-in demo session (and its seeded generator), for an app or a benchmark that
        // wants sample data; not re-exported by `StrokeJournal`.
        .library(name: "StrokeJournalSamples", targets: ["JournalSamples"]),
    ],
    // `swift test --traits FaultInjection` (the README's test command) builds the storage layer
    // with its fault hook, so that tests can fail writes, fsyncs and renames; every other build,
    // debug ones included, carries no hook and no check.
    traits: [.trait(name: "FaultInjection", description: "The tests' storage fault hook (JournalPlatform's FaultInjection).")],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // SHA-256 for segment names (a name must identify its bytes against forgery); Ed25519
        // for the relay's tokens.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        // Atomic access to the clock a sync shares with a running writer (local/clock).
        .package(url: "https://github.com/apple/swift-atomics", from: "1.2.0"),
        // Typed errno and the descriptor calls it wraps (read, write, pread, ftruncate, close).
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // Child processes (rsync, rsvg-convert); without its Foundation trait, so the library
        // still links no Foundation.
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.0", traits: []),
        // `journal serve`: HTTP and WebSocket on SwiftNIO. Without Hummingbird's default traits
        // (swift-configuration, full Foundation): the relay needs neither.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        // Named because JournalServe and its tests import their modules directly (WebSocket
        // close codes, the client's logger); Hummingbird brings them in any case.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.14.0"),
        // The relay's metrics: swift-metrics' counters and histograms, exposed in Prometheus'
        // text format at /metrics.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The relay tests' client sets an Authorization header (HTTPFields); Hummingbird
        // brings the package in any case.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        // `journal serve` stops on SIGTERM through a service group of its own, whose first step
        // closes the relay's connections; Hummingbird brings the package in any case.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.8.0"),
    ],
    targets: [
        // MARK: C interop (the only modules that call C)
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        .target(name: "JournalCompression", dependencies: ["CZlib"], swiftSettings: strict),
        // glibc's mallopt, for JournalPlatform's `Allocator` (a header, no library to link).
        .systemLibrary(name: "CMalloc"),
        .target(
            name: "JournalPlatform",
            dependencies: [
                "CMalloc",
                .product(name: "Atomics", package: "swift-atomics"), .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ],
            // The tests' fault hook (FaultInjection) exists only in builds with the trait of the
            // same name, which the README's test command turns on.
            swiftSettings: strict + [.define("JOURNAL_FAULT_INJECTION", .when(traits: ["FaultInjection"]))]),

        // MARK: Library layers
        .target(name: "JournalFormat", dependencies: ["JournalCompression"], swiftSettings: strict),
        // Ed25519 replica keys: the ids derived from them, and the signatures of native frames
        // and sealed segments.
        .target(
            name: "JournalKeys", dependencies: ["JournalFormat", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict),
        .target(
            name: "JournalStorage",
            dependencies: [
                "JournalCompression", "JournalFormat", "JournalKeys", "JournalPlatform",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        .target(
            name: "JournalReplay",
            dependencies: [
                "JournalCompression", "JournalFormat", "JournalPlatform", "JournalStorage",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // The one writer of a live journal: when events become durable, sealed and compacted.
        .target(
            name: "JournalCommit", dependencies: ["JournalFormat", "JournalPlatform", "JournalStorage"],
            swiftSettings: strict),
        .target(
            name: "JournalSync",
            dependencies: [
                "JournalFormat", "JournalPlatform", "JournalStorage", "JournalCommit", "JournalReplay",
                .product(name: "Atomics", package: "swift-atomics"),
                // MD5, only to compare an object store's copies with ours (S3 reports ETags).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        .target(
            name: "JournalLive",
            dependencies: ["JournalFormat", "JournalPlatform", "JournalStorage", "JournalCommit", "JournalReplay"],
            swiftSettings: strict),
        .target(name: "JournalIngest", dependencies: ["JournalFormat", "JournalPlatform"], swiftSettings: strict),
        .target(name: "JournalRender", dependencies: ["JournalFormat", "JournalReplay"], swiftSettings: strict),
        .target(name: "JournalSamples", dependencies: ["JournalFormat"], swiftSettings: strict),
        .target(
            name: "JournalWire", dependencies: ["JournalFormat", "JournalIngest", "JournalKeys"],
            swiftSettings: strict),

        .target(
            name: "StrokeJournal",
            dependencies: [
                "JournalFormat", "JournalStorage", "JournalCommit", "JournalReplay", "JournalSync", "JournalIngest",
                "JournalRender", "JournalLive", "JournalWire", "JournalKeys",
            ],
            swiftSettings: strict),

        // MARK: The relay (not in the library product)
        // Boards, connections, acks and catch-up, without any network code (testable alone).
        .target(
            name: "JournalRelay",
            dependencies: [
                "JournalFormat", "JournalKeys", "JournalPlatform", "JournalStorage", "JournalCommit", "JournalReplay", "JournalLive",
                "JournalWire",
                // Ed25519: the relay's tokens (who may view, draw, create a board).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict),
        // A cluster's relays hand boards to one another through a shared store
        // (`journal serve --share`): the relay's `BoardSharing`, done by `journal sync`'s engine.
        .target(
            name: "JournalCluster",
            dependencies: ["JournalFormat", "JournalPlatform", "JournalRelay", "JournalStorage", "JournalSync"],
            swiftSettings: strict),
        // A reconnecting client of the relay (hummingbird-websocket's client).
        .target(
            name: "JournalClient",
            dependencies: [
                "JournalFormat", "JournalIngest", "JournalPlatform", "JournalReplay", "JournalWire",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The relay on HTTP and WebSocket (Hummingbird): with JournalClient, the only modules
        // that import SwiftNIO.
        .target(
            name: "JournalServe",
            dependencies: [
                "JournalPlatform", "JournalRelay", "JournalWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            // The drawing page as files (HTML, CSS, JavaScript), compiled into the binary as byte
            // arrays: no bundle and no Foundation at run time.
            resources: [
                .embedInCode("Web/board.html"), .embedInCode("Web/board.css"),
                .embedInCode("Web/board.mjs"), .embedInCode("Web/page.mjs"), .embedInCode("Web/fold.mjs"),
                .embedInCode("Web/identity.mjs"), .embedInCode("Web/view.mjs"), .embedInCode("Web/picture.mjs"),
                .embedInCode("Web/connection.mjs"),
                .embedInCode("Web/tools.mjs"), .embedInCode("Web/history.mjs"), .embedInCode("Web/presence.mjs"),
                .embedInCode("Web/segment-reader.js"), .embedInCode("Web/segment-worker.js"),
                .embedInCode("Web/index.html"), .embedInCode("Web/index.css"), .embedInCode("Web/index.js"),
            ],
            swiftSettings: strict),

        // MARK: Command-line tools
        // What both programs share: errors and exit codes, the terminal, `-C`, "did you mean".
        .target(
            name: "JournalCommandLine",
            dependencies: [
                "JournalIngest", "JournalPlatform", "JournalReplay", "JournalStorage",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),
        // `journal`: every command but the relay's. It builds no network stack, so the first
        // `swift run journal demo` compiles only what the library needs.
        .executableTarget(
            name: "journal",
            dependencies: [
                "JournalCommandLine", "JournalFormat", "JournalPlatform", "JournalStorage", "JournalCommit", "JournalReplay", "JournalSync",
                "JournalIngest", "JournalRender", "JournalSamples", "JournalLive", "JournalRelay", "JournalWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // `journal serve` and `journal join`, which journal runs as this program (as git runs
        // its subcommands): the only program that links SwiftNIO and Hummingbird.
        .executableTarget(
            name: "journal-relay",
            dependencies: [
                "JournalCommandLine", "JournalFormat", "JournalIngest", "JournalKeys", "JournalPlatform", "JournalReplay", "JournalRelay",
                "JournalServe", "JournalClient", "JournalWire",
                // `journal serve --share`: boards synced with a cluster's store.
                "JournalCluster", "JournalStorage", "JournalSync",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // `journal serve --log-level`.
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // MARK: Tests
        // Event generators and byte-damage helpers shared by the test targets.
        .target(
            name: "JournalTestSupport", dependencies: ["JournalFormat", "JournalKeys", "JournalPlatform", "JournalStorage", "JournalWire"],
            path: "Tests/Support",
            swiftSettings: strict),
        .testTarget(name: "JournalPlatformTests", dependencies: ["JournalPlatform", "JournalTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "JournalFormatTests",
            dependencies: ["JournalFormat", "JournalCompression", "JournalPlatform", "JournalTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "JournalStorageTests",
            dependencies: [
                "JournalStorage", "JournalReplay", "JournalFormat", "JournalCompression", "JournalPlatform", "JournalIngest",
                "JournalKeys", "JournalTestSupport",
            ],
            exclude: ["Golden"],
            swiftSettings: strict),
        .testTarget(
            name: "JournalReplayTests",
            dependencies: [
                "JournalReplay", "JournalStorage", "JournalFormat", "JournalCompression", "JournalPlatform",
                "JournalTestSupport",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "JournalRenderTests",
            dependencies: ["JournalRender", "JournalSamples", "JournalReplay", "JournalFormat", "JournalTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "JournalIngestTests", dependencies: ["JournalIngest", "JournalFormat", "JournalPlatform", "JournalTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "JournalSyncTests",
            dependencies: [
                "JournalSync", "JournalStorage", "JournalReplay", "JournalFormat", "JournalCompression", "JournalPlatform",
                "JournalKeys", "JournalTestSupport", .product(name: "Atomics", package: "swift-atomics"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "JournalLiveTests",
            dependencies: [
                "JournalLive", "JournalCommit", "JournalSync", "JournalStorage", "JournalReplay", "JournalFormat",
                "JournalPlatform", "JournalTestSupport",
            ],
            swiftSettings: strict),
        // The README's Swift snippets, verbatim, as one program (run by CLITests' ReadmeSnippetTests).
        .executableTarget(
            name: "readme-snippets", dependencies: ["StrokeJournal", "JournalClient"], path: "Tests/ReadmeSnippets",
            swiftSettings: strict),
        .testTarget(name: "CLITests", dependencies: ["journal", "journal-relay", "readme-snippets", "JournalTestSupport"], swiftSettings: strict),
        // The relay without sockets or the binary: connections, hosted rounds, limits, messages.
        .testTarget(
            name: "JournalRelayTests",
            dependencies: [
                "JournalRelay", "JournalWire", "JournalLive", "JournalCommit", "JournalReplay", "JournalStorage", "JournalFormat", "JournalIngest",
                "JournalPlatform", "JournalTestSupport",
            ],
            swiftSettings: strict),
        // The cluster adapter: `Relay` driven through a `BoardSharing` the test plays (rounds that
        // fail, rounds that take their time, adoption), and `SyncedBoardSharing` on a folder store.
        .testTarget(
            name: "JournalClusterTests",
            dependencies: [
                "JournalCluster", "JournalRelay", "JournalWire", "JournalLive", "JournalCommit", "JournalReplay", "JournalStorage", "JournalSync",
                "JournalFormat", "JournalPlatform", "JournalTestSupport",
            ],
            swiftSettings: strict),
        // Real sockets on 127.0.0.1: relays in this process or as `journal` child processes, and WebSocket clients.
        .testTarget(
            name: "JournalServeTests",
            dependencies: [
                "JournalServe", "JournalRelay", "JournalWire", "JournalLive", "JournalClient", "JournalReplay", "JournalStorage",
                "JournalFormat", "JournalIngest", "JournalPlatform", "JournalSync", "JournalTestSupport",
                // The crash and federation tests run the built binaries (`journal serve`, `sync --watch`).
                "journal", "journal-relay",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "NIOWebSocket", package: "swift-nio"), .product(name: "NIOCore", package: "swift-nio"),
                // A WebSocket server of the tests' own that never answers (RelayClientCloseTests).
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                // The admission handlers, on a channel whose clock the test moves.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"), .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict),
        // Depends on the umbrella module only, as an app does.
        .testTarget(name: "EmbeddingTests", dependencies: ["StrokeJournal"], swiftSettings: strict),
    ]
)
