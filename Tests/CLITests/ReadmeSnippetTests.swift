#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import JournalTestSupport
import Testing

/// Every Swift snippet of README.md, as written: each is the text of a function of the
/// `readme-snippets` program (but for its imports, which head that function's file), and the
/// program runs it in a folder of its own, as an app would.
@Suite(.ownThreads, .serialized) struct ReadmeSnippetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// README.md's Swift blocks by the name in the `<!-- snippet: NAME -->` line above each.
    static func readmeSnippets() throws -> [String: [String]] {
        let lines = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var snippets: [String: [String]] = [:]
        var unnamed = 0
        var index = 0
        while index < lines.count {
            if lines[index] == "```swift" {
                let marker = index > 0 ? lines[index - 1] : ""
                let name = marker.hasPrefix("<!-- snippet: ") ? String(marker.dropFirst(14).dropLast(4)) : nil
                var body: [String] = []
                index += 1
                while index < lines.count, lines[index] != "```" {
                    body.append(lines[index])
                    index += 1
                }
                if let name { snippets[name] = body } else { unnamed += 1 }
            }
            index += 1
        }
        #expect(unnamed == 0, "a ```swift block of README.md without a <!-- snippet: NAME --> line above it")
        return snippets
    }

    /// The file of `readme-snippets` holding `name`: its imports, and the body of its function.
    static func programText(_ name: String) throws -> (imports: [String], body: [String]) {
        let folder = root.appendingPathComponent("Tests/ReadmeSnippets")
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let lines = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard let marker = lines.firstIndex(where: { $0.hasPrefix("// README snippet: \(name) ") }) else { continue }
            let imports = lines.filter { $0.hasPrefix("import ") }
            // The function's body: after its first line, up to the brace at column 0 that ends it.
            let start = marker + 2
            let end = lines[start...].firstIndex(of: "}") ?? lines.count
            let body = lines[start..<end].map { $0.hasPrefix("    ") ? String($0.dropFirst(4)) : $0 }
            return (imports, body)
        }
        return ([], [])
    }

    /// The built `readme-snippets` program, next to the test bundle.
    static let program = JournalProcess.builtExecutable("readme-snippets")

    /// Runs `readme-snippets name` in `folder`; its status, standard output and standard error.
    static func run(_ name: String, in folder: String) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = [name]
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let output = folder + "/.out", errors = folder + "/.err"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        try process.run()
        try process.waitForExit()
        return (process.terminationStatus, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "",
                (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")
    }

    @Test func everySnippetIsTheTextOfTheProgram() throws {
        let snippets = try Self.readmeSnippets()
        #expect(Set(snippets.keys) == ["manifest", "library", "live-board", "relay-client"])
        for (name, lines) in snippets where name != "manifest" {
            let (imports, body) = try Self.programText(name)
            var code = lines.filter { !$0.hasPrefix("import ") }
            while code.first == "" { code.removeFirst() }
            #expect(body == code, "README snippet \(name) differs from Tests/ReadmeSnippets")
            for line in lines where line.hasPrefix("import ") {
                #expect(imports.contains(line), "README snippet \(name): \(line)")
            }
        }
        // The manifest lines name the package's library product.
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(snippets["manifest"]?.joined().contains(#".product(name: "StrokeJournal", package: "StrokeJournal")"#) == true)
        #expect(manifest.contains(#".library(name: "StrokeJournal", targets: ["StrokeJournal"])"#))
    }

    /// The manifest lines, in a package of their own whose dependency is this clone (in a folder
    /// of any name, as `main` is on CI): SwiftPM finds the product by the package name they give.
    @Test func theManifestSnippetResolvesFromAFolderOfAnyName() throws {
        let temp = TemporaryDirectory("readme-manifest")
        defer { temp.remove() }
        let lines = try #require(try Self.readmeSnippets()["manifest"]).map {
            $0.replacingOccurrences(of: "path: \"../StrokeJournal\"", with: "path: \"\(Self.root.path)\"")
        }
        try FileManager.default.createDirectory(atPath: temp.path + "/Sources/MyApp", withIntermediateDirectories: true)
        try "print(1)\n".write(toFile: temp.path + "/Sources/MyApp/main.swift", atomically: false, encoding: .utf8)
        let manifest = "// swift-tools-version:6.0\nimport PackageDescription\nlet package = Package(\n    name: \"MyApp\",\n"
            + lines.joined(separator: "\n").replacingOccurrences(of: ".target(name:", with: ".executableTarget(name:") + "\n)\n"
        try manifest.write(toFile: temp.path + "/Package.swift", atomically: false, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "package", "--package-path", temp.path, "show-dependencies"]
        // A file, not a pipe: a pipe read to its end would wait for ever on a SwiftPM that hangs
        // (the bounded wait below could never end it).
        let errors = temp.path + "/.err"
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        try process.waitForExit()
        let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0 && !said.contains("unknown package"), "\(manifest)\n\(said)")
    }

    @Test func theLibrarySnippetRunsTwiceInOneFolder() throws {
        let temp = TemporaryDirectory("readme-library")
        defer { temp.remove() }
        let first = try Self.run("library", in: temp.path)
        #expect(first.status == 0)
        #expect(first.output.hasPrefix("1 "), "\(first.output)")
        let second = try Self.run("library", in: temp.path)
        #expect(second.status == 0)
        #expect(second.output.hasPrefix("2 "), "\(second.output)")
    }

    @Test func theLiveBoardSnippetEndsWithItsStrokeDrawn() throws {
        let temp = TemporaryDirectory("readme-live")
        defer { temp.remove() }
        let run = try Self.run("live-board", in: temp.path)
        #expect(run.status == 0)
        // First the drawing as it was, then the stroke as it changed, the change it promises.
        #expect(run.output.hasPrefix("current [JournalReplay.DrawingChange.reset]"), "\(run.output)")
        #expect(run.output.contains("\nlocal ["), "\(run.output)")
        let drawn = try JournalProcess.run(["strokes", "-C", temp.path + "/board"])
        #expect(drawn.status == 0 && drawn.stdout.contains("\"ended\":true"), "\(drawn.stdout)")
    }

    /// Whether nothing listens on 127.0.0.1:`port` (the relay snippet names port 8080).
    static func portIsFree(_ port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Without a relay the snippet does not wait for ever: it gives up after its 10 s with the
    /// reason, on stderr, and a status that says it failed.
    @Test(.enabled(if: portIsFree(8080), "port 8080, which the snippet names, is taken"))
    func theRelayClientSnippetSaysWhyWhenNoRelayAnswers() throws {
        let temp = TemporaryDirectory("readme-no-relay")
        defer { temp.remove() }
        let run = try Self.run("relay-client", in: temp.path)
        #expect(run.status == 1, "\(run.output) \(run.errors)")
        #expect(run.errors.contains("1 payload(s) not acknowledged within 10.0 s") && run.errors.contains("nothing accepts connections"),
                "\(run.errors)")
    }

    @Test(.enabled(if: portIsFree(8080), "port 8080, which the snippet names, is taken"))
    func theRelayClientSnippetIsAcknowledgedByARelayOnPort8080() async throws {
        let temp = TemporaryDirectory("readme-relay")
        defer { temp.remove() }
        let relay = try JournalProcess.Child(["serve", "--port", "8080", "--open", "--data", temp.path + "/boards"], label: "readme-relay")
        let listening = await eventually(within: 120) { relay.stdout.contains("journal: serving ") || !relay.process.isRunning }
        // The snippet's clients reconnect until a relay answers: run it only against one.
        guard listening, relay.process.isRunning else {
            Issue.record("journal serve --port 8080 did not start: \(relay.stderr)")
            return
        }
        let run = try Self.run("relay-client", in: temp.path)
        #expect(run.status == 0)
        #expect(run.output == "0\n" || run.output == "1\n", "\(run.output)")
        _ = await relay.stop(with: SIGTERM)
        // Both clients' events are in the board's journal: one text-mode, one native.
        let log = try JournalProcess.run(["log", "-C", temp.path + "/boards/poster"])
        #expect(log.stdout.split(separator: "\n").count == 2, "\(log.stdout) \(log.stderr)")
    }
}
