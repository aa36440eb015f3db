#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waits for something other tasks or threads do, in a test run where the test pool can be
/// starved: the synchronous CLI tests (child processes) have held both of its threads for over
/// 160 s in a fresh-clone CI. A plain deadline then expires while nothing, neither this task nor
/// the relay's or board's own tasks, could run, and a check right after it fails what would
/// have happened a second later. So the deadline is in wall time, and past it the wait still
/// goes on for `gracePolls` polls: polls advance only while this task runs, which is when the
/// others can run too.
public func eventually(
    within seconds: Double, every milliseconds: Int = 50, gracePolls: Int = 100,
    _ condition: () throws -> Bool
) async rethrows -> Bool {
    var patience = Patience(seconds: seconds, gracePolls: gracePolls)
    while true {
        if try condition() { return true }
        if patience.isSpent() { return false }
        try? await Task.sleep(for: .milliseconds(milliseconds))
    }
}

/// `eventually` for a caller that blocks its thread while it waits: a synchronous test (on
/// threads of its own, `.ownThreads`), or a helper that waits for a child process. The same
/// deadline in wall time, and past it the same `gracePolls` more polls: a poll happens only
/// when this thread runs, which is when what it waits for can run too.
public func eventuallyBlocking(
    within seconds: Double, every milliseconds: Int = 50, gracePolls: Int = 100,
    _ condition: () throws -> Bool
) rethrows -> Bool {
    var patience = Patience(seconds: seconds, gracePolls: gracePolls)
    while true {
        if try condition() { return true }
        if patience.isSpent() { return false }
        usleep(useconds_t(max(0, milliseconds) * 1000))
    }
}

/// A deadline in wall time, then `gracePolls` more polls (see `eventually`).
struct Patience {
    let deadline: ContinuousClock.Instant
    let gracePolls: Int
    var pollsPastDeadline = 0

    init(seconds: Double, gracePolls: Int) {
        deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        self.gracePolls = gracePolls
    }

    /// Counts a failed poll; true once the deadline and the grace polls are both past.
    mutating func isSpent() -> Bool {
        guard ContinuousClock.now >= deadline else { return false }
        pollsPastDeadline += 1
        return pollsPastDeadline > gracePolls
    }
}

/// Sleeps `seconds` of wall time, and as many 100 ms turns of this task: a timeout that a starved
/// test pool stretches along with what it waits for (see `eventually`). Ends early when the task
/// is cancelled.
public func patientSleep(seconds: Double) async {
    let tick = 100
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    let ticks = Int(seconds * 1000) / tick
    var ticked = 0
    while ticked < ticks || ContinuousClock.now < deadline {
        do { try await Task.sleep(for: .milliseconds(tick)) } catch { return }
        ticked += 1
    }
}

/// Waits for `body`, at most `seconds`; false when it took longer. `body` runs on in a task
/// of its own: what it waits for (a continuation, a task's value) ignores cancellation, and
/// a task group would wait for it whatever the deadline.
public func within(_ seconds: Double, _ body: @escaping @Sendable () async -> Void) async -> Bool {
    let (outcomes, outcome) = AsyncStream<Bool>.makeStream(bufferingPolicy: .bufferingOldest(1))
    Task {
        await body()
        outcome.yield(true)
    }
    let timer = Task {
        await patientSleep(seconds: seconds)
        outcome.yield(false)
    }
    defer { timer.cancel() }
    return await outcomes.first { _ in true } ?? false
}
