import JournalPlatform
import Testing

/// `FileSystem.join` joins plain parts as text and everything else as swift-system's
/// `FilePath` does: both ways give one separator between parts and never escape the base.
@Suite struct PathJoinTests {
    @Test(arguments: [
        (["boards", "poster"], "boards/poster"),
        (["/data/boards", "poster", "replicas", "0a1b"], "/data/boards/poster/replicas/0a1b"),
        (["/", "etc"], "/etc"),
        (["boards/", "poster"], "boards/poster"),
        (["boards//x", "poster"], "boards/x/poster"),
        (["boards", "/etc/passwd"], "boards/etc/passwd"),
        (["boards", "a//b/"], "boards/a/b"),
        (["boards", ""], "boards"),
        (["boards", "./x"], "boards/./x"),
        (["", "x"], "x"),
    ])
    func partsJoinWithOneSeparatorAndNeverEscapeTheBase(_ parts: [String], _ expected: String) {
        let joined = parts.dropFirst().reduce(parts[0]) { FileSystem.join($0, $1) }
        #expect(joined == expected)
    }

    @Test func severalComponentsAtOnceJoinAsOneAtATime() {
        #expect(FileSystem.join("/data", "b", "/c/", "d") == "/data/b/c/d")
        #expect(FileSystem.join("/data", "b", "c") == FileSystem.join(FileSystem.join("/data", "b"), "c"))
    }
}
