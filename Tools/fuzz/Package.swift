// swift-tools-version:6.0
// StrokeJournal's libFuzzer harnesses, a package of their own so that the root `swift build`
// and `swift test` never build them (they only make sense with the fuzzer sanitizer).
//
//   cd Tools/fuzz && ./run.sh            # build with -sanitize=fuzzer,address and fuzz both
//
// See README.md for the targets, the corpora and the last measured run.
import PackageDescription

let package = Package(
    name: "journal-fuzz",
    platforms: [.macOS(.v13)],
    dependencies: [
        // The StrokeJournal package at the repository root.
        .package(name: "StrokeJournal", path: "../.."),
    ],
    targets: [
        // Segment bytes: SegmentScanner, BlockDecoder, BlockCodec, SegmentHeader, BlockFrame.
        .executableTarget(
            name: "fuzz-segment",
            dependencies: [.product(name: "StrokeJournal", package: "StrokeJournal")]
        ),
        // NDJSON lines: LineParser, and the CanonicalJSON round trip.
        .executableTarget(
            name: "fuzz-ndjson",
            dependencies: [.product(name: "StrokeJournal", package: "StrokeJournal")]
        ),
    ]
)
