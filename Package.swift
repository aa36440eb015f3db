// swift-tools-version:6.0
// StrokeJournal: an event-sourced, zlib-compressed journal of drawing sessions.
//
// Layers, bottom to top (a lower layer never imports a higher one):
//   CZlib ⟶ JournalPlatform (the only C/POSIX interop) ⟶ JournalFormat (pure model + codec)
//   ⟶ JournalStorage (files, fsync, locks) ⟶ JournalReplay (fold to a drawing)
//   ⟶ JournalSync (shared folders, rsync) ⟶ journal (the command-line tool). JournalIngest parses text input into events.
import PackageDescription

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
    ],
    targets: [
        // MARK: C interop
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        .target(name: "JournalPlatform", dependencies: ["CZlib", .product(name: "Atomics", package: "swift-atomics")]),

        // MARK: Library layers
        .target(name: "JournalFormat", dependencies: ["JournalPlatform"]),
        .target(
            name: "JournalStorage",
            dependencies: ["JournalFormat", "JournalPlatform", .product(name: "Crypto", package: "swift-crypto")]),
        .target(
            name: "JournalReplay",
            dependencies: ["JournalFormat", "JournalStorage", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "JournalSync", dependencies: ["JournalFormat", "JournalPlatform", "JournalStorage", "JournalReplay"]),
        .target(name: "JournalIngest", dependencies: ["JournalFormat"]),

        .target(name: "StrokeJournal", dependencies: ["JournalFormat", "JournalStorage", "JournalReplay", "JournalSync", "JournalIngest"]),

        // MARK: Command-line tool
        .executableTarget(
            name: "journal",
            dependencies: [
                "JournalStorage", "JournalReplay", "JournalSync", "JournalIngest",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // MARK: Tests
        // Event generators and byte-damage helpers shared by the test targets.
        .target(name: "JournalTestSupport", dependencies: ["JournalFormat", "JournalPlatform"], path: "Tests/Support"),
        .testTarget(name: "JournalFormatTests", dependencies: ["JournalFormat", "JournalPlatform", "JournalTestSupport"]),
        .testTarget(
            name: "JournalStorageTests",
            dependencies: ["JournalStorage", "JournalReplay", "JournalFormat", "JournalIngest", "JournalTestSupport"],
            exclude: ["Golden"]),
        .testTarget(name: "JournalReplayTests", dependencies: ["JournalReplay", "JournalStorage", "JournalFormat", "JournalTestSupport"]),
        .testTarget(name: "JournalIngestTests", dependencies: ["JournalIngest", "JournalFormat", "JournalTestSupport"]),
        .testTarget(name: "JournalSyncTests", dependencies: ["JournalSync", "JournalStorage", "JournalReplay", "JournalFormat", "JournalTestSupport"]),
        .testTarget(name: "CLITests", dependencies: ["journal", "JournalTestSupport"]),
        // Depends on the umbrella module only, as an app does.
        .testTarget(name: "EmbeddingTests", dependencies: ["StrokeJournal"]),
    ]
)
