import JournalPlatform
import JournalWire

/// Signs of life (docs/PROTOCOL.md): a relay that stopped keeps its clients' sockets open and
/// says nothing, and a client waiting for an ack cannot tell that from a slow round. So while a
/// client's frames wait and nothing else was sent to it for `WireLimits.signOfLifeSeconds`, it
/// is sent its last ack again; a client that hears nothing for `silentRelaySeconds` while its
/// frames wait reconnects, through the balancer, to a node that answers. A repeated ack says
/// nothing new (acks never shrink, and every client reads one that does not grow as nothing),
/// so clients older than it read it as they read any ack.
extension RelayConnection {
    /// Sends the last ack again if frames wait for theirs and nothing was queued for the client
    /// for `quietSeconds`. Goes through the same queue as every ack, so a node whose lease
    /// lapsed sends none.
    func signOfLifeIfQuiet(quietSeconds: Double, now: Double) {
        guard now - outbound.lastPushed >= quietSeconds else { return }
        let replica = nativeReplica
        state.withLock { state in
            guard case .live = state.phase else { return }
            // Native: frames not yet durable, or durable and waiting for a shared round (an
            // arrival leaves `nativeArrivals` only with the ack that covers it).
            if let replica, state.nativeInFlight > 0 || !state.nativeArrivals.isEmpty {
                send(.replicaAck(replica: replica, upTo: state.replicaAcked), answer: true, repeated: true, &state)
            } else if state.appendedThrough > state.acknowledged {
                send(.ack(upTo: state.acknowledged), answer: true, repeated: true, &state)
            }
        }
    }
}
