#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalPlatform
import JournalTestSupport
import Testing

/// `FileSystem.writeAtomically` writes through a temporary of a unique name, removed when the
/// write fails, so a temporary left by a killed process never blocks a later write; the name
/// says which host and process wrote it, so a stale one (its writer gone) is told apart.
@Suite(.ownThreads) struct AtomicWriteTests {
    @Test(.enabled(if: FaultInjection.isCompiled, "the fault hook is built only by `swift test --traits FaultInjection`"))
    func writeAtomicallyReplacesAndLeavesNoTemporary() throws {
        let temp = TemporaryDirectory("atomic")
        defer { temp.remove() }
        let path = temp.path + "/file"
        try FileSystem.writeAtomically([1, 2, 3], to: path)
        try FileSystem.writeAtomically([4], to: path)
        #expect(try FileSystem.readFile(path) == [4])
        #expect(try FileSystem.list(temp.path).map(\.name) == ["file"])
        // A failed rename or fsync removes its temporary: the next write still works.
        for operation in [FaultInjection.Operation.rename, .fsync, .write] {
            FaultInjection.$hook.withValue({ op, _ in op == operation ? EIO : nil }) {
                #expect(throws: IOError.self) { try FileSystem.writeAtomically([9], to: path) }
            }
            #expect(try FileSystem.list(temp.path).map(\.name) == ["file"], "\(operation)")
        }
        try FileSystem.writeAtomically([5], to: path)
        #expect(try FileSystem.readFile(path) == [5])
    }

    @Test func temporaryNamesAreUniqueAndTellWhetherTheirWriterIsGone() {
        let first = FileSystem.temporaryName(for: "index")
        let second = FileSystem.temporaryName(for: "index")
        #expect(first != second)
        #expect(first.hasPrefix(".tmp-index." + ProcessInfoLite.hostName + "." + String(ProcessInfoLite.processID) + "."))
        #expect(!FileSystem.isStaleTemporary(first), "this process is alive")
        let host = ProcessInfoLite.hostName
        #expect(FileSystem.isStaleTemporary(".tmp-index.\(host).999999999.0123456789abcdef"))
        #expect(FileSystem.isStaleTemporary(".tmp-a.sjs.\(host).999999999"), "the older form without a random part")
        #expect(!FileSystem.isStaleTemporary(".tmp-index.other-host.999999999.0123456789abcdef"), "another machine's")
        #expect(!FileSystem.isStaleTemporary(".tmp-index.\(host).1.0123456789abcdef"), "pid 1 is alive")
        #expect(!FileSystem.isStaleTemporary("index.tmp"))
        #expect(!FileSystem.isStaleTemporary(".tmp-x.sjs"))
    }
}
