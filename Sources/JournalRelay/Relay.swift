#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalLive
import JournalPlatform
import JournalStorage

/// Boards served from one data directory: `DIR/<board>` is the journal of board `<board>`,
/// an ordinary journal (sync, merge and every command work on it). A board is opened on its
/// first connection and stays open, holding its journal's writer lock, until it has had no
/// connection for `idleBoardSeconds` (`closeIdleBoards`) or the relay closes.
public final class Relay: Sendable {
    public let dataDirectory: String
    public let boardOptions: BoardOptions
    /// A board without a connection this long is closed: its segments sealed (sync can then
    /// publish everything), its writer lock released, its threads ended. Nil: never.
    public let idleBoardSeconds: Double?

    private struct Boards {
        var open: [BoardName: RelayBoard] = [:]
        /// Boards being closed: a connection to one waits for the close, then opens it anew
        /// (the journal's lock is held until the close ends).
        var closing: [BoardName: Task<Void, Never>] = [:]
        var closed = false
    }

    private let boards = Locked(Boards())

    public init(dataDirectory: String, boardOptions: BoardOptions = .relay, idleBoardSeconds: Double? = 60) throws(RelayError) {
        self.dataDirectory = dataDirectory
        self.boardOptions = boardOptions
        self.idleBoardSeconds = idleBoardSeconds
        do {
            if !FileSystem.exists(dataDirectory) { try FileSystem.createDirectory(dataDirectory) }
        } catch {
            throw .journal(board: "(data directory)", .io(error))
        }
    }

    /// The board named `name`, opened (and created, if new) on first use. Throws while the
    /// board is being closed (`connect(to:)` waits instead).
    public func board(_ name: BoardName) throws(RelayError) -> RelayBoard {
        // Opening a journal reads its files; under the lock, so two first connections to one
        // board never open its journal twice (the second would find it locked).
        try boards.withLock { boards throws(RelayError) -> RelayBoard in try open(name, &boards) }
    }

    private func open(_ name: BoardName, _ boards: inout Boards) throws(RelayError) -> RelayBoard {
        if boards.closed { throw .closed }
        if let board = boards.open[name] { return board }
        guard boards.closing[name] == nil else { throw .disconnected("board \(name.text) is being closed; connect again") }
        let path = FileSystem.join(dataDirectory, name.text)
        do throws(JournalError) {
            // Boards are named by whoever connects: a symlink planted in the data folder (as
            // the board, or as its `local/` or `replicas/`) would send one board's strokes into
            // any journal it points to, writing as that journal's replica beside its writer.
            for planted in [path, path + "/local", path + "/replicas"] where FileSystem.linkStatus(planted)?.kind == .symlink {
                throw .io(IOError("open board", path: planted, code: ELOOP, reason: IOError.symbolicLinkReason))
            }
            let board = try Board(path: path, create: true, options: boardOptions)
            let relayBoard = RelayBoard(name: name, board: board)
            relayBoard.start()
            boards.open[name] = relayBoard
            return relayBoard
        } catch {
            throw .journal(board: name.text, error)
        }
    }

    /// A new connection to board `name`, which is opened if needed (after a close under way
    /// ends). Registered under the same lock that `closeIdleBoards` takes, so no connection
    /// ever lands on a board being closed.
    public func connect(to name: BoardName) async throws(RelayError) -> RelayConnection {
        while true {
            let outcome = try boards.withLock { boards throws(RelayError) -> Result<RelayConnection, Never>? in
                if boards.closing[name] != nil && boards.open[name] == nil { return nil }
                return .success(try open(name, &boards).connect())
            }
            if let outcome { return try outcome.get() }
            let closing = boards.withLock { $0.closing[name] }
            await closing?.value
        }
    }

    /// Names of the boards open now.
    public var openBoards: [BoardName] { boards.withLock { Array($0.open.keys) } }

    /// Closes every board without a connection for `idleBoardSeconds`. Returns their names.
    @discardableResult
    public func closeIdleBoards() -> [BoardName] {
        guard let idleBoardSeconds else { return [] }
        let now = ProcessInfoLite.monotonicSeconds()
        return boards.withLock { boards -> [BoardName] in
            var closed: [BoardName] = []
            for (name, board) in boards.open {
                guard let since = board.idleSince, now - since >= idleBoardSeconds else { continue }
                boards.open[name] = nil
                boards.closing[name] = Task { [weak self] in
                    await board.close()
                    _ = self?.boards.withLock { $0.closing.removeValue(forKey: name) }
                }
                closed.append(name)
            }
            return closed
        }
    }

    /// Calls `closeIdleBoards` every quarter of `idleBoardSeconds` (at most every 10 s) until
    /// the task is cancelled or the relay closes.
    public func closeIdleBoardsPeriodically() async {
        guard let idleBoardSeconds else { return }
        let interval = min(10, max(0.05, idleBoardSeconds / 4))
        while !Task.isCancelled && !boards.withLock({ $0.closed }) {
            closeIdleBoards()
            do { try await Task.sleep(for: .milliseconds(Int(interval * 1000))) } catch { return }
        }
    }

    /// Closes every board: what was acknowledged is durable already; this seals the open
    /// segments (so sync can publish them) and releases the writer locks. Connections still
    /// open get no more messages.
    public func close() async {
        let (open, closing) = boards.withLock { boards -> ([RelayBoard], [Task<Void, Never>]) in
            boards.closed = true
            defer { boards.open.removeAll() }
            return (Array(boards.open.values), Array(boards.closing.values))
        }
        for board in open { await board.close() }
        for task in closing { await task.value }
    }
}
