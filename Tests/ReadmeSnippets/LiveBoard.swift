import StrokeJournal

// README snippet: live-board ("Live boards"), verbatim but for its imports, which are above.
func readmeLiveBoard() async throws {
    let board = try Board(path: "board", create: true)
    let style = Style(color: RGBA(red: 30, green: 136, blue: 229), width: 4)
    let stroke = StrokeID()
    let updates = board.updates()                           // the drawing as it is, then each change
    let redrawing = Task {                                  // in a task of its own
        for await update in updates {
            print(update.origin, update.changes)            // redraw what changed
            if update.origin == .local, board.stroke(stroke)?.ended == true { break }
        }
    }
    try board.append(.point(PointSample(stroke: stroke, x: 10, y: 20, style: style)))   // on the pen thread
    try board.append(.end(stroke))
    try await board.flush()                                 // when you need "it is on disk"
    await redrawing.value
    try await board.close()                                 // seals; sync can publish it
}
