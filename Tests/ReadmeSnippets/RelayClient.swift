import JournalClient
import StrokeJournal

// README snippet: relay-client ("The relay" (StrokeJournalClient)), verbatim but for its imports, which are above.
func readmeRelayClient() async throws {
    var options = RelayClient.Options()
    // options.token = "sjt1.…"             // from `journal token`, for a relay that needs tokens
    let client = RelayClient(port: 8080, board: "poster", options: options)
    Task { await client.run() }
    let strokeID = StrokeID()
    client.send(.end(strokeID))             // any Payload; resent until acknowledged
    try await client.waitUntilAcknowledged(within: 10)   // durable at the relay, or throws why not
    print(client.drawing.strokes.count)     // the board, as the relay recorded it

    options.replicaKey = ReplicaKey()       // native mode: events signed as this key's replica
    let native = RelayClient(port: 8080, board: "poster", options: options)
    Task { await native.run() }
    native.send(.end(StrokeID()))
    try await native.waitUntilAcknowledged(within: 10)
}
