// swift-tools-version:6.1
// StrokeJournal: an event-sourced, zlib-compressed journal of drawing sessions.
//
// Layers, bottom to top (a lower layer never imports a higher one; docs/ARCHITECTURE.md):
//   CZlib ⟶ JournalCompression (zlib, CRC-32)   JournalPlatform (POSIX files, processes)
//   ⟶ JournalFormat (events and bytes, no I/O) ⟶ JournalStorage (files, fsync, locks)
//   ⟶ JournalReplay (fold, digest, snapshots) ⟶ JournalSync (shared folders, rsync)
//   ⟶ journal (the command-line tool). Beside them: JournalIngest (text lines to events),
//   JournalRender (SVG), JournalSamples (the built-in demo session).
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
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // SHA-256 for segment names (a name must identify its bytes against forgery).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        // Atomic access to the clock a sync shares with a running writer (local/clock).
        .package(url: "https://github.com/apple/swift-atomics", from: "1.2.0"),
        // Typed errno and the descriptor calls it wraps (read, write, pread, ftruncate, close).
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // Child processes (rsync, rsvg-convert); without its Foundation trait, so the library
        // still links no Foundation.
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.0", traits: []),
    ],
    targets: [
        // MARK: C interop (the only modules that call C)
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        .target(name: "JournalCompression", dependencies: ["CZlib"], swiftSettings: strict),
        .target(
            name: "JournalPlatform",
            dependencies: [
                .product(name: "Atomics", package: "swift-atomics"), .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ],
            swiftSettings: strict),

        // MARK: Library layers
        .target(name: "JournalFormat", dependencies: ["JournalCompression"], swiftSettings: strict),
        .target(
            name: "JournalStorage",
            dependencies: [
                "JournalCompression", "JournalFormat", "JournalPlatform", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        .target(
            name: "JournalReplay",
            dependencies: [
                "JournalCompression", "JournalFormat", "JournalPlatform", "JournalStorage",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        .target(
            name: "JournalSync",
            dependencies: [
                "JournalFormat", "JournalPlatform", "JournalStorage", "JournalReplay",
                .product(name: "Atomics", package: "swift-atomics"),
            ],
            swiftSettings: strict),
        .target(
            name: "JournalLive",
            dependencies: ["JournalFormat", "JournalPlatform", "JournalStorage", "JournalReplay"],
            swiftSettings: strict),
        .target(name: "JournalIngest", dependencies: ["JournalFormat", "JournalPlatform"], swiftSettings: strict),
        .target(name: "JournalRender", dependencies: ["JournalFormat", "JournalReplay"], swiftSettings: strict),
        .target(name: "JournalSamples", dependencies: ["JournalFormat"], swiftSettings: strict),

        .target(
            name: "StrokeJournal",
            dependencies: [
                "JournalFormat", "JournalStorage", "JournalReplay", "JournalSync", "JournalIngest", "JournalRender",
                "JournalSamples", "JournalLive",
            ],
            swiftSettings: strict),

        // MARK: Command-line tool
        .executableTarget(
            name: "journal",
            dependencies: [
                "JournalFormat", "JournalPlatform", "JournalStorage", "JournalReplay", "JournalSync", "JournalIngest",
                "JournalRender", "JournalSamples", "JournalLive",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),

        // MARK: Tests
        // Event generators and byte-damage helpers shared by the test targets.
        .target(
            name: "JournalTestSupport", dependencies: ["JournalFormat", "JournalPlatform"], path: "Tests/Support",
            swiftSettings: strict),
        .testTarget(
            name: "JournalFormatTests",
            dependencies: ["JournalFormat", "JournalCompression", "JournalPlatform", "JournalTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "JournalStorageTests",
            dependencies: [
                "JournalStorage", "JournalReplay", "JournalFormat", "JournalCompression", "JournalPlatform", "JournalIngest",
                "JournalTestSupport",
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
            name: "JournalIngestTests", dependencies: ["JournalIngest", "JournalFormat", "JournalTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "JournalSyncTests",
            dependencies: [
                "JournalSync", "JournalStorage", "JournalReplay", "JournalFormat", "JournalCompression", "JournalPlatform",
                "JournalTestSupport",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "JournalLiveTests",
            dependencies: [
                "JournalLive", "JournalSync", "JournalStorage", "JournalReplay", "JournalFormat", "JournalPlatform",
                "JournalTestSupport",
            ],
            swiftSettings: strict),
        .testTarget(name: "CLITests", dependencies: ["journal", "JournalTestSupport"], swiftSettings: strict),
        // Depends on the umbrella module only, as an app does.
        .testTarget(name: "EmbeddingTests", dependencies: ["StrokeJournal"], swiftSettings: strict),
    ]
)
