import JournalFormat
import JournalPlatform
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport

/// A machine in a sync scenario: a journal and a pen.
struct Machine {
    let journal: JournalDirectory
    var random: SeededGenerator

    init(_ path: String, seed: UInt64) throws {
        journal = try JournalDirectory.create(at: path)
        random = SeededGenerator(seed: seed)
    }

    /// Records `strokes` strokes (and now and then an undo or erase) and closes (seals).
    mutating func draw(strokes: Int, seal: Bool = true) throws {
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: seal))
        for _ in 0..<strokes {
            let stroke = StrokeID(UUIDBits(high: random.next(), low: random.next()))
            let style = Style(color: RGBA(rawValue: UInt32.random(in: 0...UInt32.max, using: &random)), width: Double(Int.random(in: 1...9, using: &random)))
            var x = Double(Int.random(in: 0...100_000, using: &random)) / 100
            for index in 0..<Int.random(in: 2...30, using: &random) {
                x += Double(Int.random(in: -300...300, using: &random)) / 100
                try writer.append(.point(PointSample(stroke: stroke, x: (x * 100).rounded() / 100, y: Double(index),
                                                     pressure: 0.5, t: Double(index) / 100, style: style)))
            }
            try writer.append(.end(stroke), flushingEvery: 50)
            if Int.random(in: 0..<6, using: &random) == 0 { try writer.append(.undo(stroke), flushingEvery: 50) }
        }
        try writer.close()
    }

    var digest: String { Replay.load(journal).drawing.digest }
}

/// Names, sizes, inodes and mtimes of every file under a folder: "changed no file" made exact.
func snapshot(_ root: String) -> [String: String] {
    var result: [String: String] = [:]
    func walk(_ path: String, _ relative: String) {
        guard let entries = try? FileSystem.list(path) else { return }
        for entry in entries {
            let child = path + "/" + entry.name
            let name = relative.isEmpty ? entry.name : relative + "/" + entry.name
            if entry.kind == .directory { walk(child, name) }
            else { result[name] = "\(entry.size) \(entry.inode) \(entry.modified)" }
        }
    }
    walk(root, "")
    return result
}

func copyFile(_ from: String, _ to: String, truncatedTo length: Int? = nil) throws {
    var bytes = try FileSystem.readFile(from)
    if let length { bytes = Array(bytes.prefix(length)) }
    try FileSystem.createDirectory(FileSystem.parent(of: to))
    try? FileSystem.remove(to)
    let descriptor = try FileDescriptor.open(to, .createNew)
    defer { descriptor.close() }
    try descriptor.writeAll(bytes)
}

func hasRsync() -> Bool { FileSystem.exists("/usr/bin/rsync") || FileSystem.exists("/usr/local/bin/rsync") }
