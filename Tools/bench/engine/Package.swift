// swift-tools-version:6.0
// journal-bench: StrokeJournal's benchmark harness, a package of its own so that the root
// `swift test` never builds it (swift-collections keeps its Benchmarks/ the same way).
//
//   cd Tools/bench/engine && swift run -c release journal-bench --workload .build-data/std
//
// See docs/PERFORMANCE.md for the rows, the JSON keys and the last results.
import PackageDescription

let package = Package(
    name: "journal-bench",
    platforms: [.macOS(.v13)],
    dependencies: [
        // The StrokeJournal package at the repository root (this is Tools/bench/engine).
        .package(name: "StrokeJournal", path: "../../.."),
    ],
    targets: [
        .executableTarget(
            name: "journal-bench",
            dependencies: [
                .product(name: "StrokeJournal", package: "StrokeJournal"),
                .product(name: "StrokeJournalSamples", package: "StrokeJournal"),
            ],
            swiftSettings: [
                // Compile-time switch of the "open from snapshot" row, which needs JournalReplay's
                // `SnapshotStore.create(_:)` and `Replay.load(_:useSnapshots:)`. Comment it out
                // to build against a library without them (the row then prints "n/a").
                .define("SNAPSHOTS"),
            ]
        ),
    ]
)
