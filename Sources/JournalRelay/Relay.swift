import JournalLive
import JournalPlatform
import JournalStorage

/// Boards served from one data directory: `DIR/<board>` is the journal of board `<board>`,
/// an ordinary journal (sync, merge and every command work on it). A board is opened on its
/// first connection and stays open, holding its journal's writer lock, until `close()`.
public final class Relay: Sendable {
    public let dataDirectory: String
    public let boardOptions: BoardOptions
    private let boards = Locked<[BoardName: RelayBoard]>([:])
    private let closed = Locked(false)

    public init(dataDirectory: String, boardOptions: BoardOptions = .relay) throws(RelayError) {
        self.dataDirectory = dataDirectory
        self.boardOptions = boardOptions
        do {
            if !FileSystem.exists(dataDirectory) { try FileSystem.createDirectory(dataDirectory) }
        } catch {
            throw .journal(board: "(data directory)", .io(error))
        }
    }

    /// The board named `name`, opened (and created, if new) on first use.
    public func board(_ name: BoardName) throws(RelayError) -> RelayBoard {
        // Opening a journal reads its files; under the lock, so two first connections to one
        // board never open its journal twice (the second would find it locked).
        try boards.withLock { boards throws(RelayError) -> RelayBoard in
            if closed.withLock({ $0 }) { throw .closed }
            if let board = boards[name] { return board }
            let path = FileSystem.join(dataDirectory, name.text)
            do throws(JournalError) {
                let board = try Board(path: path, create: true, options: boardOptions)
                let relayBoard = RelayBoard(name: name, board: board)
                relayBoard.start()
                boards[name] = relayBoard
                return relayBoard
            } catch {
                throw .journal(board: name.text, error)
            }
        }
    }

    /// Names of the boards open now.
    public var openBoards: [BoardName] { boards.withLock { Array($0.keys) } }

    /// Closes every board: what was acknowledged is durable already; this seals the open
    /// segments (so sync can publish them) and releases the writer locks. Connections still
    /// open get no more messages.
    public func close() async {
        closed.withLock { $0 = true }
        let all = boards.withLock { boards -> [RelayBoard] in
            let all = Array(boards.values)
            boards.removeAll()
            return all
        }
        for board in all { await board.close() }
    }
}
