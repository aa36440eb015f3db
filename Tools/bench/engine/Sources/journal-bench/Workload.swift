#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the harness finds the repository, the generator and a workload's files.
struct Layout {
    /// The StrokeJournal repository (holds Package.swift and Sources/JournalStorage).
    let repoRoot: String

    static func locate() throws -> Layout {
        for start in [Paths.parent(Paths.executable), Paths.currentDirectory] {
            var directory = Paths.absolute(start)
            while directory != "/" && !directory.isEmpty {
                if Files.exists(directory + "/Package.swift") && Files.isDirectory(directory + "/Sources/JournalStorage") {
                    return Layout(repoRoot: directory)
                }
                directory = Paths.parent(directory)
            }
        }
        throw BenchError("cannot find the StrokeJournal repository above \(Paths.executable) or \(Paths.currentDirectory)")
    }

    /// The team's standard generator, with which docs/PERFORMANCE.md was measured:
    /// `$SHARED_BENCH/gen_session.py`, else `<repo>/../shared/bench/gen_session.py`.
    var standardGenerator: String {
        if let shared = getenvString("SHARED_BENCH") { return shared + "/gen_session.py" }
        return Paths.parent(repoRoot) + "/shared/bench/gen_session.py"
    }

    var hasStandardGenerator: Bool { Files.exists(standardGenerator) }

    /// The generator run: the standard one when it is there, else the repository's own
    /// `Tools/bench/workload/session.py` (same arguments, no `--hershey`; figures measured on
    /// its sessions are not comparable with docs/PERFORMANCE.md).
    var generator: String {
        hasStandardGenerator ? standardGenerator : repoRoot + "/Tools/bench/workload/session.py"
    }

    var defaultJournalBinary: String { repoRoot + "/.build/release/journal" }
}

/// A workload folder and the folders the harness derives from its name.
struct Workload {
    /// Absolute path of the folder holding replica-*.ndjson.
    let dir: String

    init(_ path: String) {
        var trimmed = path
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        dir = Paths.lexicallyAbsolute(trimmed)
    }

    /// The +1% session (one replica, 100 strokes of 200 points, seed 7).
    var extraDir: String { dir + "-extra" }
    var extraInput: String { extraDir + "/replica-0.ndjson" }
    /// Scratch journals and fixtures; safe to delete.
    var workDir: String { dir + "-work" }
    var hersheyDir: String { dir + "-hershey" }
    func precisionDir(_ mode: String) -> String { dir + "-precision-" + mode }
    var growthDir: String { dir + "-growth" }

    /// replica-0.ndjson, replica-1.ndjson, … in replica order.
    var inputs: [String] { Self.inputs(in: dir) }

    static func inputs(in dir: String) -> [String] {
        let names = Files.list(dir).filter { $0.hasPrefix("replica-") && $0.hasSuffix(".ndjson") }
        let numbered = names.compactMap { name -> (Int, String)? in
            guard let number = Int(name.dropFirst("replica-".count).dropLast(".ndjson".count)) else { return nil }
            return (number, dir + "/" + name)
        }
        return numbered.sorted { $0.0 < $1.0 }.map(\.1)
    }

    var exists: Bool { !inputs.isEmpty }
}

/// What gen_session.py is asked for.
struct Generation: CustomStringConvertible {
    var replicas: Int
    var strokes: Int
    var points: Int? = 200
    var seed = 1
    var hershey: String? = nil
    /// gen_session.py --precision (nil: its default, 2 decimals).
    var precision: String? = nil

    static let standard = Generation(replicas: 4, strokes: 2500)
    static let extra = Generation(replicas: 1, strokes: 100, seed: 7)

    var arguments: [String] {
        var result = ["--replicas", String(replicas), "--strokes", String(strokes)]
        if let points { result += ["--points", String(points)] }
        result += ["--seed", String(seed)]
        if let hershey { result += ["--hershey", hershey] }
        if let precision { result += ["--precision", precision] }
        return result
    }

    var description: String { arguments.map { $0.contains(" ") ? "\"\($0)\"" : $0 }.joined(separator: " ") }

    /// Runs the generator into `dir` unless it already holds replica files. Writes to a
    /// temporary folder first, so that an interrupted run never leaves a partial workload.
    func ensure(in dir: String, layout: Layout) throws {
        if !Workload.inputs(in: dir).isEmpty { return }
        if hershey != nil && !layout.hasStandardGenerator {
            throw BenchError("cannot generate \(dir): --hershey needs \(layout.standardGenerator) (set SHARED_BENCH to its folder)")
        }
        guard Files.exists(layout.generator) else {
            throw BenchError("cannot generate \(dir): \(layout.generator) not found")
        }
        var note = ""
        if !layout.hasStandardGenerator {
            note = " (no \(layout.standardGenerator): the repository's own generator; figures are not comparable with docs/PERFORMANCE.md)"
        }
        let partial = dir + ".partial"
        try Files.removeTree(partial)
        try Files.makeDirectories(Paths.parent(dir))
        let command = ["python3", layout.generator] + arguments + ["--out", partial]
        log("generating: \(command.joined(separator: " "))" + note)
        let (_, seconds) = try Clock.time { try Spawn.check(command, stdout: .discard) }
        if Files.isDirectory(dir) {
            // An existing folder without replica files: fill it.
            for name in Files.list(partial) { try Files.rename(partial + "/" + name, to: dir + "/" + name) }
            try Files.removeTree(partial)
        } else {
            try Files.rename(partial, to: dir)
        }
        log("generated \(dir) in \(formatSeconds(seconds))")
    }
}

func getenvString(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    let text = String(cString: value)
    return text.isEmpty ? nil : text
}

/// Progress and notes go to standard error; standard output carries results only.
func log(_ message: String) {
    var line = "journal-bench: " + message + "\n"
    line.withUTF8 { buffer in _ = write(2, buffer.baseAddress, buffer.count) }
}
