import StrokeJournal

// README snippet: library ("Using the library"), verbatim but for its imports, which are above.
func readmeLibrary() async throws {
    let journal = try JournalDirectory.openOrCreate(at: "board")
    let writer = try JournalWriter(directory: journal)
    let stroke = StrokeID()                       // or StrokeID(uuid: someUUID.uuid)
    try writer.append(.point(PointSample(stroke: stroke, x: 10, y: 20, pressure: 0.5, t: 0,
                                         style: Style(color: RGBA(red: 229, green: 57, blue: 53), width: 4))))
    try writer.append(.end(stroke))
    try writer.flush()          // durable when this returns
    try writer.close()          // seals the open segment
    let (drawing, report) = Replay.load(journal)
    print(drawing.visibleStrokes.count, drawing.digest, report.problems)
}
