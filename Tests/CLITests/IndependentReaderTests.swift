import Foundation
import JournalTestSupport
import Testing

/// Conformance: Tools/conformance/sjread/sjread.py, a reader written from docs/FORMAT.md alone,
/// must print byte for byte what the built `journal` prints. A difference means the document or
/// a reader is wrong.
@Suite(.ownThreads) struct IndependentReaderTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    static let script = root + "/Tools/conformance/sjread/sjread.py"
    static let python: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        .split(separator: ":").map { $0 + "/python3" }
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    /// The test bundle sits in the build folder next to the `journal` executable.
    static let journal: String = {
        var folder = Bundle.main.bundleURL
        for _ in 0..<3 where !FileManager.default.isExecutableFile(atPath: folder.path + "/journal") {
            folder.deleteLastPathComponent()
        }
        return folder.path + "/journal"
    }()

    /// Runs a program and returns its exit status and standard output (stdout goes through a
    /// file: a pipe that fills up would block the child).
    func run(_ executable: String, _ arguments: [String], stdin: String = "") throws -> (status: Int32, out: String) {
        let scratch = TemporaryDirectory("sjread-io")
        defer { scratch.remove() }
        _ = FileManager.default.createFile(atPath: scratch.path + "/out", contents: nil)
        let out = FileHandle(forWritingAtPath: scratch.path + "/out")!
        let input = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = input
        try process.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        try process.waitForExit()
        try out.close()
        let data = FileManager.default.contents(atPath: scratch.path + "/out") ?? Data()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// `sjread.py log|digest` against `journal log|digest`, byte for byte.
    func expectSameReading(_ directory: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let python = Self.python else {
            Issue.record("python3 is not on PATH: the independent reader cannot run (CI installs python3)",
                         sourceLocation: sourceLocation)
            return
        }
        for command in ["log", "digest"] {
            let reference = try run(Self.journal, [command, "-C", directory])
            let independent = try run(python, [Self.script, command, directory])
            #expect(reference.status == 0 && independent.status == 0 && !reference.out.isEmpty,
                    "\(command) \(directory)", sourceLocation: sourceLocation)
            // Name the first differing line rather than printing whole logs.
            let lines = (reference.out.split(separator: "\n"), independent.out.split(separator: "\n"))
            let first = zip(lines.0, lines.1).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(lines.0.count, lines.1.count)
            let identical = independent.out == reference.out
            #expect(identical, """
                \(command) \(directory): line \(first + 1) differs
                  journal: \(lines.0.dropFirst(first).first ?? "<end>")
                  sjread:  \(lines.1.dropFirst(first).first ?? "<end>")
                """, sourceLocation: sourceLocation)
        }
    }

    /// Version 4 needs Ed25519, which Python's standard library lacks: the reader then uses the
    /// `cryptography` package (Debian's python3-cryptography, which .ci/run installs).
    static let hasEd25519: Bool = {
        guard let python else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", "import cryptography"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil, (try? process.waitForExit(within: 60)) != nil else { return false }
        return process.terminationStatus == 0
    }()

    /// A board whose membership (FORMAT.md §17) grants, revokes and leaves a stranger out: the
    /// independent reader computes the same members, log and digest from the files alone.
    @Test(.enabled(if: hasEd25519, "python3's cryptography package is missing (apt-get install python3-cryptography)"))
    func readsAMembershipBoardLikeJournal() throws {
        let temp = TemporaryDirectory("sjread-members")
        defer { temp.remove() }
        let cli = CLITests()
        let (alice, bob, carol, shared) = (temp.path + "/alice", temp.path + "/bob", temp.path + "/carol", temp.path + "/shared")
        for journal in [alice, bob, carol] {
            #expect(try cli.journal(["init", journal]).status == 0)
            #expect(try cli.journal(["record", "-C", journal], stdin: CLITests.sample).status == 0)
        }
        let bobKey = try cli.journal(["trust", "key", "-C", bob]).stdout.trimmingCharacters(in: .newlines)
        #expect(try cli.journal(["members", "init", "-C", alice, "--label", "Alice"]).status == 0)
        #expect(try cli.journal(["members", "grant", "-C", alice, bobKey, "--role", "draw", "--label", "Bob ✏️"]).status == 0)
        for journal in [alice, bob, carol, alice] { #expect(try cli.journal(["sync", "-C", journal, shared, "--create"]).status == 0) }
        #expect(try cli.journal(["members", "revoke", "-C", alice, bobKey]).status == 0)
        #expect(try cli.journal(["record", "-C", bob], stdin: CLITests.sample).status == 0)
        for journal in [bob, alice] { #expect(try cli.journal(["sync", "-C", journal, shared]).status == 0) }
        try expectSameReading(alice)

        let python = try #require(Self.python)
        let independent = try run(python, [Self.script, "members", alice])
        let reference = try run(Self.journal, ["members", "list", "-C", alice, "--json"])
        #expect(independent.status == 0 && reference.status == 0)
        let theirs = try #require(try JSONSerialization.jsonObject(with: Data(independent.out.utf8)) as? [String: Any])
        let ours = try #require(try JSONSerialization.jsonObject(with: Data(reference.out.utf8)) as? [String: Any])
        for field in ["open", "board", "founder"] {
            #expect(String(describing: theirs[field] ?? "nil") == String(describing: ours[field] ?? "nil"), "\(field)")
        }
        func members(_ object: [String: Any]) -> [String] {
            ((object["members"] as? [[String: Any]]) ?? []).map { member in
                ["key", "role", "label", "active", "revoked", "admitted"].map { String(describing: member[$0] ?? "nil") }
                    .joined(separator: " ")
            }.sorted()
        }
        #expect(members(theirs) == members(ours))
        #expect(members(ours).count == 2)
    }

    @Test func readsTheDemoJournalsLikeJournal() throws {
        let temp = TemporaryDirectory("sjread-demo")
        defer { temp.remove() }
        #expect(try run(Self.journal, ["demo", temp.path + "/demo"]).status == 0)
        try expectSameReading(temp.path + "/demo/board")
        try expectSameReading(temp.path + "/demo/machines/alice")
        if let python = Self.python {
            let verify = try run(python, [Self.script, "verify", temp.path + "/demo/board"])
            #expect(verify.status == 0 && verify.out.hasPrefix("clean: 3 segments"), "\(verify.out)")
        }
    }

    @Test func readsEdgeValuesAndAnOpenSegmentLikeJournal() throws {
        let temp = TemporaryDirectory("sjread-edge")
        defer { temp.remove() }
        let board = temp.path + "/board"
        #expect(try run(Self.journal, ["init", board]).status == 0)
        let stroke = #""stroke":"0E000000-0000-4000-8000-000000000001""#
        // -0.0, subnormals, values off the decimal grid, 2^53 < |x| < 1e16 (Swift writes an
        // exponent where Python would not), missing pressure and t, width -0.0.
        let sealed = """
            {"type":"point",\(stroke),"x":-0.0,"y":5e-324,"color":"#E53935FF","width":2,"pressure":1e300,"t":0.30000000000000004}
            {"type":"point",\(stroke),"x":0.1,"y":-2.5e-310,"color":"#E53935FF","width":-0.0}
            {"type":"point",\(stroke),"x":9007199254740994,"y":-1e16,"color":"#00000000","width":0,"t":1e-05}
            {"type":"point",\(stroke),"x":123456.789,"y":1.7976931348623157e308,"color":"#FFFFFFFF","width":1e-7,"pressure":0.5}
            {"type":"end",\(stroke)}

            """
        #expect(try run(Self.journal, ["record", "-C", board], stdin: sealed).status == 0)
        // Left in the open segment as several small blocks.
        let open = """
            {"type":"point","stroke":"0E000000-0000-4000-8000-000000000002","x":1,"y":2,"color":"#0080FFFF","width":3}
            {"type":"undo","stroke":"0E000000-0000-4000-8000-000000000002"}
            {"type":"clear"}
            {"type":"redo","stroke":"0E000000-0000-4000-8000-000000000002"}
            {"type":"point",\(stroke),"x":1e-7,"y":-123.456,"color":"#E53935FF","width":2,"t":4.35}

            """
        #expect(try run(Self.journal, ["record", "-C", board, "--no-seal", "--flush-every", "2"], stdin: open).status == 0)
        try expectSameReading(board)
    }

    @Test func dropsTheSameDataFromADamagedSegment() throws {
        let temp = TemporaryDirectory("sjread-damage")
        defer { temp.remove() }
        #expect(try run(Self.journal, ["demo", temp.path + "/demo"]).status == 0)
        let board = temp.path + "/demo/board"
        let folder = board + "/replicas/" + (try FileManager.default.contentsOfDirectory(atPath: board + "/replicas")).sorted()[0]
        let file = folder + "/" + (try FileManager.default.contentsOfDirectory(atPath: folder)).sorted()[0]
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        bytes[bytes.count / 2] ^= 0x10
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        try expectSameReading(board)
        if let python = Self.python {
            #expect(try run(python, [Self.script, "verify", board]).status == 1)
            #expect(try run(Self.journal, ["verify", "-C", board]).status == 1)
        }
    }
}
