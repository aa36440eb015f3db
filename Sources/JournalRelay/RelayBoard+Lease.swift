import JournalPlatform
import JournalWire

/// One owner per board (`BoardLeases`): what the board asks before it takes or acknowledges
/// anything in a cluster with leases.
extension RelayBoard {
    /// Whether an ack may go out now: this node holds the lease (or the relay has none) and has
    /// not found it lapsed. No side effects, so a connection's queue can ask it under its lock.
    var mayAcknowledge: Bool {
        guard let leaseHeld else { return true }
        return leaseHeld() && !leaseLost.withLock { $0 }
    }

    /// `mayAcknowledge`, for a connection's queue to ask as it hands an ack to the socket;
    /// nil without leases.
    public var acknowledgeGate: (@Sendable () -> Bool)? {
        guard leaseHeld != nil else { return nil }
        return { [self] in mayAcknowledge }
    }

    /// Whether this node may take and acknowledge the board's frames: it holds the lease, or
    /// the relay has none. The first time it does not, every connection is closed with
    /// `notOwner` and the relay is told.
    func holdsLease() -> Bool {
        if mayAcknowledge { return true }
        let first = leaseLost.withLock { lost -> Bool in
            defer { lost = true }
            return !lost
        }
        if first {
            let refusal = Refusal(.notOwner, "board \(name.text): this node no longer holds the board's lease; nothing more is acknowledged here: connect again (through the cluster's balancer) and resend what was not acknowledged")
            for connection in connections.withLock({ Array($0.values) }) { connection.close(refusal) }
            onLeaseLost(name)
        }
        return false
    }
}
