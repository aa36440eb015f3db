import Foundation
import JournalTestSupport
import Testing

/// Output that cannot be written is an error, never a silent truncation: through the built binary, with standard output on /dev/full and on a closed pipe.
@Suite(.ownThreads) struct OutputFailureTests {
    /// Runs the binary with standard output connected to `stdout` and returns (status, stderr).
    func run(_ arguments: [String], stdout: FileHandle) throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLITests.binary)
        process.arguments = arguments
        let errors = Pipe()
        process.standardOutput = stdout
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = errors.fileHandleForReading.readDataToEndOfFile()
        try process.waitForExit()
        return (process.terminationStatus, String(decoding: text, as: UTF8.self))
    }

    func demoBoard(_ temp: TemporaryDirectory) throws -> String { try CLITests().sampleBoard(temp) }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/full"), "needs /dev/full"))
    func everyCommandThatWritesFailsOnAFullDevice() throws {
        let temp = TemporaryDirectory("cli-full")
        defer { temp.remove() }
        let board = try demoBoard(temp)
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        for arguments in [["log"], ["strokes"], ["stats", "--json"], ["render", "-"], ["verify"], ["digest"]] {
            let result = try run(arguments + ["-C", board], stdout: full)
            #expect(result.status == 74, "\(arguments): \(result.status)")
            #expect(result.stderr.contains("cannot write to standard output: No space left on device"), "\(arguments): \(result.stderr)")
        }
    }

    @Test func aReaderThatGoesAwayEndsTheCommandQuietly() throws {
        let temp = TemporaryDirectory("cli-pipe")
        defer { temp.remove() }
        let board = try demoBoard(temp)
        // Enough lines that the writer outlives its reader.
        let many = String(repeating: CLITests.sample, count: 400)
        #expect(try CLITests().journal(["record", "-C", board], stdin: many).status == 0)
        let pipe = Pipe()
        try pipe.fileHandleForReading.close()
        let result = try run(["log", "-C", board], stdout: pipe.fileHandleForWriting)
        #expect(result.status == 141 || result.status == 13, "\(result.status)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }

    @Test(.enabled(if: getuid() == 0 && FileManager.default.fileExists(atPath: "/dev/full"), "only root could replace a device"))
    func renderWritesIntoADeviceAndNeverReplacesIt() throws {
        let temp = TemporaryDirectory("cli-render-device")
        defer { temp.remove() }
        let board = try demoBoard(temp)
        // A device node of our own (the same one as /dev/full), so that a regression cannot
        // break the machine's /dev.
        let device = temp.path + "/full"
        #expect(mknod(device, S_IFCHR | 0o666, dev_t((1 << 8) | 7)) == 0)
        let result = try CLITests().journal(["render", device, "-C", board])
        #expect(result.status == 74)
        #expect(result.stderr.contains("cannot write \(device)"), "\(result.stderr)")
        #expect(!result.stderr.contains(".tmp"))
        var info = stat()
        #expect(lstat(device, &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR, "the device was replaced")
        // A regular file is still replaced atomically and says so.
        let svg = temp.path + "/b.svg"
        let ok = try CLITests().journal(["render", svg, "-C", board])
        #expect(ok.status == 0 && FileManager.default.fileExists(atPath: svg))
    }
}
