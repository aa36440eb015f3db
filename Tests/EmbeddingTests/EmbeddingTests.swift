import Foundation
import StrokeJournal
import Testing

/// The library as an app embeds it: one import, the README's example run
/// twice on the same folder, ids made from nothing or from Foundation's UUID.
@Suite struct EmbeddingTests {
    /// The README's "Using the library" code, verbatim apart from the folder.
    func readmeExample(_ folder: String) throws -> (visible: Int, digest: String) {
        let journal = try JournalDirectory.openOrCreate(at: folder)
        let writer = try JournalWriter(directory: journal)
        let stroke = StrokeID()
        try writer.append(.point(PointSample(stroke: stroke, x: 10, y: 20, pressure: 0.5, t: 0,
                                             style: Style(color: RGBA(red: 229, green: 57, blue: 53), width: 4))))
        try writer.append(.end(stroke))
        try writer.flush()          // durable when this returns
        try writer.close()          // seals the open segment
        let (drawing, report) = Replay.load(journal)
        #expect(report.problems.isEmpty)
        return (drawing.visibleStrokes.count, drawing.digest)
    }

    @Test func theReadmeExampleRunsTwice() throws {
        let folder = NSTemporaryDirectory() + "embedding-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try readmeExample(folder)
        let second = try readmeExample(folder)
        #expect(first.visible == 1 && second.visible == 2)
        #expect(first.digest != second.digest)
    }

    @Test func strokeIDsFromNothingOrFromFoundation() {
        let made = StrokeID()
        let other = StrokeID()
        #expect(made != other)
        #expect(made.uuidString.count == 36)
        #expect(UUID(uuidString: made.uuidString) != nil, "a version 4 UUID Foundation accepts")
        #expect(Array(made.uuidString)[14] == "4")
        let uuid = UUID()
        #expect(StrokeID(uuid: uuid.uuid).uuidString == uuid.uuidString)
    }

    /// The README's "Live boards" snippet, with a redraw that counts what it was told.
    @Test func theLiveBoardSnippetRuns() async throws {
        let folder = NSTemporaryDirectory() + "embedding-live-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let board = try Board(path: folder, create: true)
        let id = StrokeID()
        let style = Style(color: RGBA(red: 229, green: 57, blue: 53), width: 4)
        let updates = board.updates()
        let listener = Task { () -> [DrawingChange] in
            var seen: [DrawingChange] = []
            for await update in updates { seen += update.changes }   // redraw(update.changes)
            return seen
        }
        try board.append(.point(PointSample(stroke: id, x: 10, y: 20, style: style)))
        try board.append(.point(PointSample(stroke: id, x: 12, y: 21, style: style)))
        try await board.flush()
        try await board.close()
        #expect(await listener.value == [.reset, .added(id), .extended(id, from: 1)])
        #expect(Replay.load(try JournalDirectory.open(at: folder)).drawing.pointCount == 2)
    }
}
