#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalPlatform
import JournalTestSupport
import Testing

/// Walks below a root never follow a symlink, files are created without replacing, and only
/// regular files are ever opened.
@Suite(.ownThreads) struct DirectoryHandleTests {
    @Test func aWalkBelowTheRootRefusesASymlinkAtAnyComponent() throws {
        let temp = TemporaryDirectory("walk")
        defer { temp.remove() }
        let root = temp.path + "/root"
        let outside = temp.path + "/outside"
        try FileSystem.createDirectory(root)
        try FileSystem.createDirectory(outside)
        // The root itself may be a symlink: the user chose it.
        try FileSystem.symlink(root, at: temp.path + "/chosen")
        let made = try DirectoryHandle.open("a/b", beneath: temp.path + "/chosen", create: true)
        try made.writeNewFileAtomically(name: "f", bytes: [1])
        #expect(try FileSystem.readFile(root + "/a/b/f") == [1])

        try FileSystem.symlink(outside, at: root + "/x")
        try FileSystem.createDirectory(root + "/y")
        try FileSystem.symlink(outside, at: root + "/y/z")
        for relative in ["x", "x/b", "y/z", "y/z/c"] {
            for create in [false, true] {
                #expect {
                    _ = try DirectoryHandle.open(relative, beneath: root, create: create)
                } throws: { error in
                    guard let error = error as? IOError else { return false }
                    return error.isSymbolicLink && error.description.contains("symbolic link: never followed")
                        && (error.path == root + "/x" || error.path == root + "/y/z")
                }
            }
        }
        #expect(try FileSystem.list(outside).isEmpty)
        #expect(throws: IOError.self) { try DirectoryHandle.open(root).openSubdirectory("..") }
        #expect(throws: IOError.self) { try DirectoryHandle.open(root).writeNewFileAtomically(name: "../escape", bytes: [1]) }
        #expect(!FileSystem.exists(temp.path + "/escape"))
    }

    /// Closing a descriptor twice (two owners of one, or a close in `close()` and again in a
    /// `deinit`) must not close the file that got its number in between.
    @Test func aDescriptorIsClosedOnceHoweverManyOwnersCloseIt() throws {
        let temp = TemporaryDirectory("close-once")
        defer { temp.remove() }
        try FileSystem.writeAtomically([1], to: temp.path + "/a")
        try FileSystem.writeAtomically([2], to: temp.path + "/b")
        let first = try FileDescriptor.open(temp.path + "/a", .readOnly)
        let owner = first
        first.close()
        #expect(first.rawValue == -1)
        let second = try FileDescriptor.open(temp.path + "/b", .readOnly)
        owner.close()
        #expect(try second.read(count: 1, at: 0) == [2], "a second close closed the next file's descriptor")
        second.close()
    }

    @Test func aNewFileNeverReplacesAnExistingEntry() throws {
        let temp = TemporaryDirectory("no-replace")
        defer { temp.remove() }
        let folder = try DirectoryHandle.open(temp.path)
        try folder.writeNewFileAtomically(name: "seg", bytes: [1, 2])
        #expect(throws: IOError.self) { try folder.writeNewFileAtomically(name: "seg", bytes: [3]) }
        try FileSystem.symlink(temp.path + "/target", at: temp.path + "/link")
        #expect(throws: IOError.self) { try folder.writeNewFileAtomically(name: "link", bytes: [3]) }
        #expect(!FileSystem.exists(temp.path + "/target"))
        #expect(try folder.readFile("seg") == [1, 2])
        #expect(try folder.list().map(\.name) == ["link", "seg"])
        #expect(folder.kind(of: "link") == .symlink)
    }

    @Test func onlyRegularFilesAreOpenedAndNeverThroughASymlink() throws {
        let temp = TemporaryDirectory("regular")
        defer { temp.remove() }
        let fifo = temp.path + "/fifo"
        #expect(mkfifo(fifo, 0o644) == 0)
        try FileSystem.writeAtomically([7], to: temp.path + "/file")
        try FileSystem.symlink(temp.path + "/file", at: temp.path + "/link")
        // Opening a FIFO for reading blocks until a writer comes: none will, so a refusal that
        // came too late would never come and the test would hang, not fail.
        for mode in [FileDescriptor.Mode.readOnly, .readWrite] {
            #expect { _ = try FileDescriptor.open(fifo, mode) } throws: { ($0 as? IOError)?.isNotRegularFile == true }
            #expect { _ = try FileDescriptor.open(temp.path + "/link", mode) } throws: { ($0 as? IOError)?.isSymbolicLink == true }
            #expect { _ = try FileDescriptor.open(temp.path, mode) } throws: { $0 is IOError }
        }
        #expect { _ = try FileSystem.readFile(fifo) } throws: { "\($0)" == "open \(fifo): not a regular file" }
        #expect { _ = try DirectoryHandle.open(temp.path).readFile("fifo") } throws: { ($0 as? IOError)?.isNotRegularFile == true }
        #expect(try FileSystem.readFile(temp.path + "/file") == [7])
        // Listing a symlinked folder is refused too; listing never follows entries.
        try FileSystem.symlink(temp.path, at: temp.path + "/self")
        #expect { _ = try FileSystem.list(temp.path + "/self") } throws: { ($0 as? IOError)?.isSymbolicLink == true }
        #expect(try FileSystem.list(temp.path).first { $0.name == "self" }?.kind == .symlink)
    }
}
