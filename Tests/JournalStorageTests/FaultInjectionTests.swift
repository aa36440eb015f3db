#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import JournalFormat
import JournalPlatform
import JournalStorage
import JournalTestSupport
import Testing

/// What the fault hook saw. The hook is `@Sendable` (it is a task-local value), so its state
/// lives here, behind a lock, rather than in captured variables.
final class FaultLog: @unchecked Sendable {
    private let lock = NSLock()
    private let failAt: Int
    private let code: Int32
    private let prefix: String
    private var count = 0
    private var firedFlag = false
    private var syncedSizes: [String: Int64] = [:]
    private var writtenPaths = Set<String>()

    init(failAt: Int, code: Int32, prefix: String, synced: [String]) {
        self.failAt = failAt
        self.code = code
        self.prefix = prefix
        for path in synced { syncedSizes[path] = FileSystem.linkStatus(path)?.size }
    }

    var fired: Bool { lock.withLock { firedFlag } }
    var synced: [String: Int64] { lock.withLock { syncedSizes } }
    var written: Set<String> { lock.withLock { writtenPaths } }

    /// Counts operations under `prefix` only, and fails the `failAt`-th with `code`.
    var hook: @Sendable (FaultInjection.Operation, String) -> Int32? {
        { [self] operation, path in
            guard path.hasPrefix(prefix) else { return nil }
            return lock.withLock {
                if operation == .write { writtenPaths.insert(path) }
                if operation == .fsync { syncedSizes[path] = FileSystem.linkStatus(path)?.size }
                count += 1
                guard count == failAt else { return nil }
                firedFlag = true
                return code
            }
        }
    }
}

/// SQLite's `ioerr` loop: fail the Nth storage operation for N = 1, 2, … with EIO and ENOSPC,
/// optionally dropping whatever was not fsynced (LevelDB's fault-injection env), then reopen
/// and check that every acknowledged event is there exactly once and recording goes on.
@Suite(.serialized, .ownThreads, .enabled(if: FaultInjection.isCompiled, "the fault hook is built only by `swift test --traits FaultInjection`")) struct FaultInjectionTests {
    func payload(_ index: Int) -> Payload {
        .point(PointSample(stroke: StrokeID(UUIDBits(high: 7, low: UInt64(index / 20))), x: Double(index), y: Double(index) / 4,
                           pressure: 0.5, t: Double(index % 20) / 100, style: Style(color: RGBA(rawValue: 0x336699FF), width: 2)))
    }

    struct Outcome {
        var faults = 0
        var runs = 0
    }

    /// Runs the whole loop for one errno; returns how many faults were injected.
    func ioerrLoop(code: Int32, dropUnsynced: Bool) throws -> Outcome {
        var outcome = Outcome()
        var failAt = 1
        while true {
            let temp = TemporaryDirectory("ioerr")
            defer { temp.remove() }
            let journal = try JournalDirectory.create(at: temp.path + "/j")
            do {
                let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
                for index in 0..<20 { try writer.append(payload(index), flushingEvery: 8) }
                try writer.close()
            }
            var acknowledged = 20

            // Install the fault, for this task only: count operations under this journal only.
            let log = FaultLog(failAt: failAt, code: code, prefix: temp.path,
                               synced: [journal.openSegmentPath, journal.identityPath])
            do {
                try FaultInjection.$hook.withValue(log.hook) {
                    let writer = try JournalWriter(directory: journal, options: WriterOptions(sealEveryEvents: 40))
                    for index in 20..<100 {
                        try writer.append(payload(index), flushingEvery: 8)
                        acknowledged = max(acknowledged, Int(writer.durableSeq))
                    }
                    try writer.close()
                    acknowledged = 100
                }
            } catch {
                #expect(log.fired, "an error without an injected fault: \(error)")
                #expect("\(error)".contains(String(cString: strerror(code))), "the error names the cause: \(error)")
            }
            if !log.fired { break }
            let synced = log.synced
            let written = log.written
            outcome.faults += 1
            if dropUnsynced {
                // Power loss: appended bytes not yet fsynced vanish; files never fsynced too.
                for path in written where FileSystem.exists(path) {
                    if let size = synced[path] ?? nil {
                        let descriptor = try FileDescriptor.open(path, .readWrite)
                        try descriptor.truncate(to: size)
                        descriptor.close()
                    } else {
                        try FileSystem.remove(path)
                    }
                }
            }

            // Reopen: must work, keep every acknowledged event once, and go on.
            let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
            let next = Int(writer.nextSeq)
            #expect(next - 1 >= acknowledged, "fault \(failAt): acknowledged \(acknowledged) but only \(next - 1) survived")
            try writer.append(payload(next - 1))
            try writer.close()
            let set = SegmentSet.load(journal)
            let problems = set.problems.filter { $0.kind != .tornTail && $0.kind != .ignored }
            #expect(problems.isEmpty, "fault \(failAt): \(problems)")
            var seqs: [UInt64] = []
            var events: [UInt64: Event] = [:]
            for member in set.members {
                for event in member.scan.allEvents().events {
                    if events[event.id.seq] == nil { seqs.append(event.id.seq) }
                    #expect(events[event.id.seq].map { $0 == event } ?? true, "seq \(event.id.seq) has two contents")
                    events[event.id.seq] = event
                }
            }
            #expect(seqs.sorted() == Array(1...UInt64(next)), "fault \(failAt): seqs are not dense")
            for seq in 1...UInt64(next) {
                #expect(events[seq]?.payload == payload(Int(seq) - 1), "fault \(failAt): seq \(seq) changed")
            }
            failAt += 1
            outcome.runs += 1
        }
        return outcome
    }

    @Test func failingEveryOperationInTurnLosesNoAcknowledgedEvent() throws {
        var total = 0
        for code in [EIO, ENOSPC] {
            for drop in [false, true] {
                let outcome = try ioerrLoop(code: code, dropUnsynced: drop)
                #expect(outcome.faults > 20, "too few operations were exercised")
                total += outcome.faults
            }
        }
        print("fault injection: \(total) faults injected, 0 acknowledged events lost")
    }

    @Test func aWriterRefusesToGoOnAfterAFailedWrite() throws {
        let temp = TemporaryDirectory("poison")
        defer { temp.remove() }
        let journal = try JournalDirectory.create(at: temp.path + "/j")
        let writer = try JournalWriter(directory: journal, options: WriterOptions(sealOnClose: false))
        try writer.append(payload(0))
        let prefix = temp.path
        FaultInjection.$hook.withValue({ operation, path in operation == .write && path.hasPrefix(prefix) ? ENOSPC : nil }) {
            #expect(throws: JournalError.self) { try writer.flush() }
        }
        #expect { try writer.append(payload(1)) } throws: { error in
            guard case JournalError.writerFailed = error else { return false }
            return "\(error)".contains("reopen")
        }
        #expect(throws: JournalError.self) { try writer.close() }
        let reopened = try JournalWriter(directory: journal)
        #expect(reopened.recovery.bytesCut > 0)
        #expect(reopened.nextSeq == 1)
        try reopened.close()
    }
}
