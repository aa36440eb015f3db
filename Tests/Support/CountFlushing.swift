import JournalFormat
import JournalStorage

extension JournalWriter {
    /// Appends, then hands the pending events to a background flush once `count` are pending:
    /// the count policy a committer applies (`Committer.Recording`), for tests that want blocks
    /// of a known size from the writer alone.
    @discardableResult
    public func append(_ payload: Payload, flushingEvery count: Int) throws(JournalError) -> EventID {
        let id = try append(payload)
        if pendingEvents >= count { try flushInBackground() }
        return id
    }
}
