import Dispatch
import JournalFormat
import JournalPlatform

/// Decodes a replica's next block on another core while the merge folds the current one:
/// inflating and decoding are a third of replay, and the fold never waits for them unless it
/// runs ahead. At most one block per replica is decoded ahead, so memory stays bounded.
final class Prefetcher: @unchecked Sendable {
    // Touched by the background decode only between `start()` and the matching `wait()`.
    private var stream: ReplicaStream
    private var result: (columns: BlockColumns?, report: ReplayReport)?
    private let ready = DispatchSemaphore(value: 0)
    private var inFlight = false

    init(_ stream: ReplicaStream) { self.stream = stream }

    private func start() {
        inFlight = true
        // A leaf job on the shared worker thread (`WorkerThread` says why not Dispatch).
        WorkerThread.shared.submit {
            var report = ReplayReport()
            let columns = self.stream.next(report: &report)
            self.result = (columns, report)
            self.ready.signal()
        }
    }

    /// The next batch, merging what decoding it reported into `report`. `readAhead`, given
    /// the batch's event count, says whether to start decoding the batch after it now: a
    /// moment whose last event lies within this one never reads further, and a decode started
    /// for nothing would still be waited for.
    func next(report: inout ReplayReport, readAhead: (Int) -> Bool = { _ in true }) -> BlockColumns? {
        if !inFlight { start() }
        ready.wait()
        inFlight = false
        guard let (columns, found) = result else { return nil }
        result = nil
        report.problems += found.problems
        report.duplicateEvents += found.duplicateEvents
        report.quarantinedEvents += found.quarantinedEvents
        report.notMemberEvents += found.notMemberEvents
        if let found = found.lowestQuarantinedClock {
            report.lowestQuarantinedClock = min(report.lowestQuarantinedClock ?? found, found)
        }
        for fork in found.forks where report.forkSet.insert(fork).inserted { report.forks.append(fork) }
        if let columns, readAhead(columns.lamports.count) { start() }
        return columns
    }

    var summary: ReplayReport.ReplicaSummary {
        if inFlight {
            ready.wait()
            inFlight = false
        }
        return stream.summary
    }
}
