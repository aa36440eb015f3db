import JournalFormat
import JournalKeys
import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalTestSupport
import JournalWire
import Testing

/// Challenge–response (docs/PROTOCOL.md, "Proving a key"): a native hello on a challenged
/// socket must sign that socket's nonce with its key; a connection that proved its key cannot
/// be pushed off its replica by a hello that did not.
@Suite struct HelloProofTests {
    func hello(_ replica: ReplicaID, proof: [UInt8]? = nil) -> String {
        var hello = Hello(native: TestReplicaKeys.key(for: replica))
        hello.proof = proof
        return ClientFrame.helloText(hello)
    }

    @Test func aProvenKeyKeepsItsReplicaAndABadProofIsRefused() async throws {
        let temp = TemporaryDirectory("hello-proof")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open)
        let board = try relay.board(BoardName("proofs"))
        let alice = TestReplicaKeys.newReplica()
        let key = TestReplicaKeys.key(for: alice)

        let nonce = ProcessInfoLite.randomBytes(HelloProof.nonceBytes)
        let proven = board.connect(challenge: nonce)
        await proven.receive(text: hello(alice, proof: HelloProof.sign(nonce: nonce, board: "proofs", with: key)))
        #expect(proven.closeReason == nil && proven.provedKey)

        // Someone who knows only the public key: no proof on an unchallenged socket ...
        let stranger = board.connect()
        await stranger.receive(text: hello(alice))
        #expect(stranger.closeReason?.contains("proved its key") == true, "\(stranger.closeReason ?? "not refused")")
        #expect(proven.closeReason == nil)
        // ... a proof of another socket's nonce, or for another board, on a challenged one.
        let replayed = board.connect(challenge: ProcessInfoLite.randomBytes(HelloProof.nonceBytes))
        await replayed.receive(text: hello(alice, proof: HelloProof.sign(nonce: nonce, board: "proofs", with: key)))
        #expect(replayed.closeReason?.contains("does not verify") == true, "\(replayed.closeReason ?? "not refused")")
        let otherNonce = ProcessInfoLite.randomBytes(HelloProof.nonceBytes)
        let otherBoard = board.connect(challenge: otherNonce)
        await otherBoard.receive(text: hello(alice, proof: HelloProof.sign(nonce: otherNonce, board: "elsewhere", with: key)))
        #expect(otherBoard.closeReason?.contains("does not verify") == true)
        let unanswered = board.connect(challenge: ProcessInfoLite.randomBytes(HelloProof.nonceBytes))
        await unanswered.receive(text: hello(alice))
        #expect(unanswered.closeReason?.contains("missing") == true)
        #expect(proven.closeReason == nil)

        // The key's holder reconnecting with a proof takes the replica over, as before.
        let fresh = ProcessInfoLite.randomBytes(HelloProof.nonceBytes)
        let reconnected = board.connect(challenge: fresh)
        await reconnected.receive(text: hello(alice, proof: HelloProof.sign(nonce: fresh, board: "proofs", with: key)))
        #expect(reconnected.closeReason == nil)
        #expect(proven.closeReason?.contains("newer connection") == true)
        // A proof on a socket that asked for no challenge is named as such.
        let unasked = board.connect()
        await unasked.receive(text: hello(TestReplicaKeys.newReplica(), proof: Array(repeating: 0, count: 64)))
        #expect(unasked.closeReason?.contains("?challenge") == true)
        await relay.close()
    }
}
