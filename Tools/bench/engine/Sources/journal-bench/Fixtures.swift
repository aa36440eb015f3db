import JournalCommit
import JournalFormat
import JournalIngest
import JournalReplay
import JournalStorage
import JournalSync

/// Event and point counts of some input.
struct Counts {
    var events = 0
    var points = 0

    mutating func add(_ payload: Payload) {
        events += 1
        if case .point = payload { points += 1 }
    }

    static func + (lhs: Counts, rhs: Counts) -> Counts {
        Counts(events: lhs.events + rhs.events, points: lhs.points + rhs.points)
    }
}

/// What a user of the library does to record a file: NDJSONReader into a
/// `Committer.Recording` with the default flush policy, then close(), which seals.
@discardableResult
func recordWithLibrary(_ input: String, into journal: JournalDirectory) throws -> Counts {
    let writer = try Committer.Recording(directory: journal, options: RecordingOptions(automaticCompaction: false))
    var reader = try NDJSONReader(path: input)
    var payloads: [Payload] = []
    var counts = Counts()
    while try reader.next(appendingTo: &payloads) != nil {
        for payload in payloads {
            try writer.append(payload)
            counts.add(payload)
        }
        payloads.removeAll(keepingCapacity: true)
    }
    try writer.close()
    return counts
}

/// Journals recorded from each input file, at `<root>/m0`, `<root>/m1`, …
@discardableResult
func recordJournals(_ inputs: [String], under root: String) throws -> Counts {
    try Files.makeDirectories(root)
    var total = Counts()
    for (index, input) in inputs.enumerated() {
        let journal = try JournalDirectory.create(at: root + "/m\(index)")
        total = total + (try recordWithLibrary(input, into: journal))
    }
    return total
}

/// One journal holding every replica folder of `sources` (copied, as a user merging by hand
/// or by Syncthing would end up with).
func buildMerged(from sources: [String], at path: String) throws {
    try Files.removeTree(path)
    let merged = try JournalDirectory.create(at: path)
    for source in sources {
        for folder in Files.list(source + "/replicas") {
            try Files.copyTree(source + "/replicas/" + folder, to: merged.replicasPath + "/" + folder)
        }
    }
}

/// Sealed segment files (`replicas/*/*.sjs`) of a journal or shared folder.
func sealedFiles(_ root: String) -> [String] {
    var files: [String] = []
    for folder in Files.list(root + "/replicas") {
        for name in Files.list(root + "/replicas/" + folder) where name.hasSuffix(".sjs") && !name.hasPrefix(".") {
            files.append(root + "/replicas/" + folder + "/" + name)
        }
    }
    return files
}

func sealedBytes(_ roots: [String]) -> Int {
    roots.flatMap(sealedFiles).reduce(0) { $0 + Files.size($1) }
}

/// Counts the payloads of NDJSON files without recording them.
func countPayloads(_ inputs: [String]) throws -> Counts {
    var counts = Counts()
    for input in inputs {
        var reader = try NDJSONReader(path: input)
        var payloads: [Payload] = []
        while try reader.next(appendingTo: &payloads) != nil {
            for payload in payloads { counts.add(payload) }
            payloads.removeAll(keepingCapacity: true)
        }
    }
    return counts
}

/// The journals and folders the rows share, under the workload's `-work` folder. The
/// `recordLibrary` row rebuilds `lib/` on every run (and drops what derives from it);
/// `prepare` builds the rest, so that no timed row pays for setting up.
struct Fixtures {
    let workload: Workload

    var root: String { workload.workDir }
    var libRoot: String { root + "/lib" }
    var journals: [String] { workload.inputs.indices.map { libRoot + "/m\($0)" } }
    var merged: String { root + "/merged" }
    /// A copy of m0 with the +1% session recorded into it.
    var m0Plus: String { root + "/m0-plus" }
    var deflateCache: String { root + "/ndjson-deflate" }
    func scratch(_ row: String) -> String { root + "/tmp-" + row }

    var libraryReady: Bool {
        !journals.isEmpty && journals.allSatisfy { Files.exists($0 + "/local/replica") && !sealedFiles($0).isEmpty }
    }

    /// Forgets everything derived from `lib/`.
    func dropDerived() throws {
        try Files.removeTree(merged)
        try Files.removeTree(m0Plus)
    }

    func ensureLibrary() throws {
        if libraryReady { return }
        log("recording the library fixture journals into \(libRoot)")
        try dropDerived()
        try Files.removeTree(libRoot)
        try recordJournals(workload.inputs, under: libRoot)
    }

    func ensureMerged() throws {
        try ensureLibrary()
        if Files.exists(merged + "/local/replica") && !sealedFiles(merged).isEmpty { return }
        try buildMerged(from: journals, at: merged)
    }

    /// m0-plus, and the one sealed segment the +1% session added to it.
    ///
    /// Replica 0 first holds every other replica's segments (as after a sync), so that its
    /// writer's Lamport clock is past all of them and the +1% comes after them in the total
    /// order, as new strokes drawn after opening a shared board do.
    func ensureExtraSegment() throws -> (replica: ReplicaID, path: String) {
        try ensureLibrary()
        if !Files.exists(m0Plus + "/local/replica") {
            try Files.removeTree(m0Plus)
            try Files.copyTree(journals[0], to: m0Plus)
            for other in journals.dropFirst() {
                for name in Files.list(other + "/replicas") {
                    try Files.copyTree(other + "/replicas/" + name, to: m0Plus + "/replicas/" + name)
                }
            }
            try recordWithLibrary(workload.extraInput, into: try JournalDirectory.open(at: m0Plus))
        }
        // A copied journal never writes as the replica it was copied from (invariant 9): the
        // copy records under an identity of its own, so look in that replica's folder.
        let replica = try JournalDirectory(root: m0Plus).identity()
        let folder = "/replicas/" + replica.hex
        let before = Set(Files.list(journals[0] + folder))
        let added = Files.list(m0Plus + folder).filter { $0.hasSuffix(".sjs") && !$0.hasPrefix(".") && !before.contains($0) }
        guard added.count == 1 else { throw BenchError("expected one new segment in \(m0Plus + folder), found \(added.count)") }
        return (replica, m0Plus + folder + "/" + added[0])
    }

    /// The replica id each input file was recorded under.
    func replicaIDs() throws -> [ReplicaID] {
        try ensureLibrary()
        return try journals.map { try JournalDirectory(root: $0).identity() }
    }
}

/// Syncs each journal to a shared folder (which it creates).
func publish(_ journals: [String], to shared: String) throws {
    try Files.makeDirectories(shared)
    for journal in journals {
        _ = try syncBlocking(JournalDirectory(root: journal), .directory(shared))
    }
}
