import JournalClient
import JournalFormat
import JournalLive
import JournalPlatform
import JournalRelay
import JournalReplay
import JournalStorage
import JournalSync
import JournalTestSupport
import JournalWire
import Testing

/// Native mode (docs/PROTOCOL.md): a client that owns a replica sends events it named itself;
/// the relay stores them under that replica, acknowledges by seq after fsync, dedups a resend
/// by id, and refuses a frame with a gap, a foreign replica or damage. Real sockets on 127.0.0.1.
@Suite(.serialized) struct NativeModeTests {
    typealias RunningRelay = RelayServerTests.RunningRelay

    static func events(_ replica: ReplicaID, _ seqs: ClosedRange<UInt64>, stroke: UInt64 = 7) -> [Event] {
        TestReplicaKeys.events(replica, seqs, stroke: stroke)
    }

    static func frame(_ events: [Event], on board: String) -> [UInt8] { TestReplicaKeys.frame(events, on: board) }

    func hello(_ replica: ReplicaID, have: Have = Have()) -> String { TestReplicaKeys.hello(replica, have: have) }

    /// A client of an empty board, caught up after sending `hello`.
    func joined(_ running: RunningRelay, _ board: String, hello: String) async throws -> RelayTestClient {
        let client = RelayTestClient(port: running.port, board: board)
        client.send(hello)
        #expect(try await client.next() == .caughtUp(events: 0))
        return client
    }

    /// Event messages until the first other message, which is returned too.
    func events(from client: RelayTestClient, count: Int) async throws -> [Event] {
        var events: [Event] = []
        while events.count < count, let message = try await client.next(within: 20) {
            if let event = try message.event() { events.append(event) }
        }
        return events
    }

    @Test func eventsAreStoredUnderTheClientsReplicaAckedBySeqAndDedupedById() async throws {
        let temp = TemporaryDirectory("relay-native")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let running = try await RunningRelay.start(data: data)
        let replica = TestReplicaKeys.newReplica()
        let sent = Self.events(replica, 1...12)

        let alice = try await joined(running, "atlas", hello: hello(replica))
        let viewer = try await joined(running, "atlas", hello: ClientFrame.helloText(have: Have()))

        alice.send(binary: Self.frame(Array(sent[0..<10]), on: "atlas"))
        #expect(try await alice.next() == .replicaAck(replica: replica, upTo: 10))
        // The frame's ack is one sample of the ack latency an operator watches (a page's).
        #expect(MetricsTests.sample(running.relay.metricsText, #"strokejournal_ack_seconds_count{mode="local"}"#) == 1)
        // The others get the events as the client named them: its id, seqs and clocks.
        #expect(try await events(from: viewer, count: 10) == Array(sent[0..<10]))

        // A resend overlapping what the relay holds: only the new events are stored and sent.
        alice.send(binary: Self.frame(Array(sent[4..<12]), on: "atlas"))
        #expect(try await alice.next() == .replicaAck(replica: replica, upTo: 12))
        #expect(try await events(from: viewer, count: 2) == Array(sent[10..<12]))
        // A resend of held events only: acknowledged at once, nothing sent to anyone.
        alice.send(binary: Self.frame(Array(sent[0..<3]), on: "atlas"))
        alice.send(ClientFrame.text(for: .clear))
        #expect(try await alice.next() == .ack(upTo: 1))
        let afterResend = try await viewer.next()
        #expect(afterResend.map { (try? $0.event())??.payload } == .some(.clear))

        // A gap: refused, the connection closed with the reason; nothing of the frame stored.
        alice.send(binary: Self.frame(Self.events(replica, 14...15), on: "atlas"))
        let gap = try await alice.next()
        guard case .error(nil, .refusedFrame, let reason)? = gap else {
            Issue.record("expected a connection error, got \(String(describing: gap))")
            return
        }
        #expect(reason.contains("seq 14") && reason.contains("send from seq 13"))
        #expect(try await alice.nextOrEnd() == .ended)

        // Another replica's events on this replica's connection, and damage: refused likewise.
        // Its address promises the hello: however late the relay reads it, the catch-up is exact.
        let bob = RelayTestClient(port: running.port, board: "atlas", promisingHello: true)
        bob.send(hello(replica, have: Have([replica: SeqRanges([1...12])])))
        // It lacks only the clear.
        let bobCatchUp = try await bob.collect { if case .caughtUp = $0 { true } else { false } }
        let lacked = bobCatchUp.before.compactMap { try? $0.event() }
        #expect(lacked.map(\.payload) == [.clear])
        guard case .caughtUp(_, let relayHas, _)? = bobCatchUp.last else { Issue.record("no caughtUp for bob"); return }
        #expect(relayHas[replica] == SeqRanges([1...12]))
        // Signed with this connection's key, but holding another replica's events.
        bob.send(binary: TestReplicaKeys.sign(SegmentMessage.encode(replica: ReplicaID.random(), events: Self.events(ReplicaID.random(), 1...2)[...]),
                                              on: "atlas", as: replica))
        guard case .error(nil, .refusedFrame, let foreign)? = try await bob.next() else { Issue.record("no error for a foreign replica"); return }
        #expect(foreign.contains("this connection's hello named \(replica.hex)"))
        let carol = RelayTestClient(port: running.port, board: "atlas")
        carol.send(hello(replica))
        _ = try await carol.collect { if case .caughtUp = $0 { true } else { false } }
        var damaged = SegmentMessage.encode(replica: replica, events: Self.events(replica, 13...14)[...])
        damaged[damaged.count - 3] ^= 0x40
        carol.send(binary: TestReplicaKeys.sign(damaged, on: "atlas", as: replica))
        guard case .error(nil, _, let damage)? = try await carol.next() else { Issue.record("no error for a damaged frame"); return }
        #expect(damage.contains("segment message") && damage.contains("offset"))

        // A text-mode client's binary frame is refused as that frame; the connection stays.
        viewer.send(binary: Self.frame(Self.events(replica, 13...13), on: "atlas"))
        guard case .error(1?, _, let textMode)? = try await viewer.next() else { Issue.record("no frame error in text mode"); return }
        #expect(textMode.contains("native mode"))
        // The relay's own replica is no native client's: no key names it.
        let board = try JournalDirectory.open(at: data + "/atlas")
        let impostor = RelayTestClient(port: running.port, board: "atlas")
        impostor.send(hello(try board.identity()))
        guard case .error(nil, .badRequest, let ownReplica)? = try await impostor.next() else { Issue.record("no error for the relay's replica"); return }
        #expect(ownReplica.contains("is not the replica its \"key\" names"))

        for client in [alice, viewer, bob, carol, impostor] { client.close() }
        await running.stop()

        // In the journal: exactly the 12 events as sent, under the client's replica, sealed
        // (the relay seals hosted segments when it closes); nothing of the refused frames.
        let set = SegmentSet.load(board)
        let replay = Replay.check(set)
        #expect(replay.problems.filter { $0.kind != .ignored }.isEmpty)
        let stored = set.members.filter { $0.replica == replica && $0.scan.eventCount > 0 }
        #expect(stored.allSatisfy(\.isSealed) && !stored.isEmpty)
        let storedEvents = stored.flatMap { member -> [Event] in
            let (events, _) = member.scan.allEvents()
            return events
        }.sorted { $0.id.seq < $1.id.seq }
        #expect(storedEvents == sent)
        #expect(board.hostedSegments().allSatisfy { (FileSystem.linkStatus($0.path)?.size ?? 0) <= Int64(FormatV1.fileHeaderSize) })
        let digest = Replay.replay(set).drawing.digest

        // The client's own journal holds the same events under the same ids: synced into the
        // board, they dedup (no fork, the same drawing).
        let own = try JournalDirectory.create(at: temp.path + "/client-own", replica: replica)
        let segment = SegmentEncoder.segment(replica: replica, events: sent)
        let name = SegmentName(firstSeq: 1, lastSeq: 12, contents: segment)
        try FileSystem.createDirectory(own.replicaPath(replica))
        try FileSystem.writeAtomically(segment, to: own.segmentPath(replica, name))
        _ = try await SyncEngine(journal: board).sync(.directory(temp.path + "/client-own"))
        let merged = Replay.check(SegmentSet.load(board))
        #expect(merged.forks.isEmpty)
        #expect(Replay.replay(SegmentSet.load(board)).drawing.digest == digest)
    }

    /// Native text frames (the drawing page's): the same events as binary frames, signed over
    /// the body's bytes; stored under the client's replica, acknowledged by seq, a resend
    /// deduplicated by id; a changed byte, another board's signature, an event of another
    /// replica or a line without its envelope closes the connection and stores nothing.
    @Test func nativeTextFramesAreStoredAckedBySeqAndRefusedWhenAltered() async throws {
        let temp = TemporaryDirectory("relay-native-text")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let running = try await RunningRelay.start(data: data)
        let replica = TestReplicaKeys.newReplica()
        let key = TestReplicaKeys.key(for: replica)
        let sent = Self.events(replica, 1...8)

        let page = try await joined(running, "sketch", hello: hello(replica))
        let viewer = try await joined(running, "sketch", hello: ClientFrame.helloText(have: Have()))

        page.send(NativeTextFrame.frame(Array(sent[0..<5]), board: "sketch", with: key))
        #expect(try await page.next() == .replicaAck(replica: replica, upTo: 5))
        #expect(try await events(from: viewer, count: 5) == Array(sent[0..<5]))
        // The page resends after a lost ack: held events are skipped by id.
        page.send(NativeTextFrame.frame(Array(sent[2..<8]), board: "sketch", with: key))
        #expect(try await page.next() == .replicaAck(replica: replica, upTo: 8))
        #expect(try await events(from: viewer, count: 3) == Array(sent[5..<8]))

        func refusal(_ frame: String) async throws -> String? {
            let client = RelayTestClient(port: running.port, board: "sketch")
            defer { client.close() }
            client.send(hello(replica))
            _ = try await client.collect { if case .caughtUp = $0 { true } else { false } }
            client.send(frame)
            guard case .error(nil, _, let reason)? = try await client.next() else { return nil }
            #expect(try await client.nextOrEnd() == .ended)
            return reason
        }
        let next = Self.events(replica, 9...9)
        let good = NativeTextFrame.frame(next, board: "sketch", with: key)
        // One frame's signature over another frame's body (another stroke: one byte apart).
        let other = NativeTextFrame.frame(Self.events(replica, 9...9, stroke: 8), board: "sketch", with: key)
        let altered = String(good.prefix { $0 != "\n" }) + "\n" + String(other.drop { $0 != "\n" }.dropFirst())
        #expect(try await refusal(altered)?.contains("signature does not verify") == true)
        #expect(try await refusal(NativeTextFrame.frame(next, board: "other", with: key))?.contains("signature does not verify") == true)
        let foreign = Self.events(ReplicaID.random(), 1...1)
        #expect(try await refusal(NativeTextFrame.frame(foreign, board: "sketch", with: key))?.contains("this connection's hello named \(replica.hex)") == true)
        let bare = NativeTextFrame.headerPrefix + String(repeating: "0", count: 128) + "\"}\n{\"type\":\"clear\"}"
        #expect(try await refusal(bare)?.contains("signature does not verify") == true)
        // A malformed header is named as such (its layout, not its signature).
        #expect(try await refusal(NativeTextFrame.headerPrefix + "zz\"}\n")?.contains("starts with") == true)

        for client in [page, viewer] { client.close() }
        await running.stop()
        let board = try JournalDirectory.open(at: data + "/sketch")
        let stored = SegmentSet.load(board).members.filter { $0.replica == replica }.flatMap { $0.scan.allEvents().0 }
        #expect(stored.sorted { $0.id.seq < $1.id.seq } == sent)
    }

    /// A page reloaded while its old tab's last frames were being stored: its catch-up did not
    /// have them yet, so it names those seqs again with its own events. They are refused with
    /// the reason, never acknowledged as if the stored events were the new page's (its strokes
    /// would then exist on its screen only); catching up again brings the stored ones.
    @Test func aSeqNamedAgainWithOtherContentJustAfterItWasStoredIsRefused() async throws {
        let temp = TemporaryDirectory("relay-native-renamed")
        defer { temp.remove() }
        let running = try await RunningRelay.start(data: temp.path + "/boards")
        let replica = TestReplicaKeys.newReplica()
        let oldTab = try await joined(running, "tabs", hello: hello(replica))
        oldTab.send(binary: Self.frame(Self.events(replica, 1...5, stroke: 1), on: "tabs"))
        #expect(try await oldTab.next() == .replicaAck(replica: replica, upTo: 5))

        let newTab = RelayTestClient(port: running.port, board: "tabs")
        // Its hello claims 1...2: it lacks 3...5, as a catch-up read before they were stored.
        newTab.send(hello(replica, have: Have([replica: SeqRanges([1...2])])))
        _ = try await newTab.collect { if case .caughtUp = $0 { true } else { false } }
        newTab.send(binary: Self.frame(Self.events(replica, 3...5, stroke: 2), on: "tabs"))
        guard case .error(nil, .replicaConflict, let reason)? = try await newTab.next() else { Issue.record("the renamed seqs were not refused"); return }
        #expect(reason.contains("differs from the event of that id"), "\(reason)")
        for client in [oldTab, newTab] { client.close() }
        await running.stop()
    }

    /// Bounds and the one-writer rule: a frame that would inflate to too many events, a clock
    /// replay would quarantine, and a second connection of one replica.
    @Test func oversizedFramesWildClocksAndASecondConnectionOfAReplica() async throws {
        let temp = TemporaryDirectory("relay-native-bounds")
        defer { temp.remove() }
        let running = try await RunningRelay.start(data: temp.path + "/boards")
        let replica = TestReplicaKeys.newReplica()

        // 5000 events in one frame (a few KB compressed): refused before it is inflated.
        let flood = try await joined(running, "bounds", hello: hello(replica))
        let many = Self.events(replica, 1...5000)
        flood.send(binary: TestReplicaKeys.sign(
            SegmentMessage.encode(replica: replica, version: FormatVersion.current,
                                  frames: [SegmentEncoder.block(many[0..<2500])[...], SegmentEncoder.block(many[2500...])[...]]),
            on: "bounds", as: replica))
        guard case .error(nil, _, let tooMany)? = try await flood.next() else { Issue.record("no error for 5000 events"); return }
        #expect(tooMany.contains("more than 4096 events"))

        // A Lamport clock far past what the board could have seen.
        let wild = try await joined(running, "bounds", hello: hello(replica))
        var far = Self.events(replica, 1...1)
        far[0].lamport = 1 << 40
        wild.send(binary: Self.frame(far, on: "bounds"))
        guard case .error(nil, .refusedFrame, let clock)? = try await wild.next() else { Issue.record("no error for a wild clock"); return }
        #expect(clock.contains("Lamport clock \(1 << 40)"))

        // The newer connection of a replica closes the older one; it goes on alone.
        let older = try await joined(running, "bounds", hello: hello(replica))
        let newer = RelayTestClient(port: running.port, board: "bounds")
        newer.send(hello(replica))
        guard case .error(nil, .replaced, let replaced)? = try await older.next() else { Issue.record("the older connection stayed open"); return }
        #expect(replaced.contains("newer connection of replica \(replica.hex)"))
        #expect(try await newer.next() == .caughtUp(events: 0))
        newer.send(binary: Self.frame(Self.events(replica, 1...3), on: "bounds"))
        #expect(try await newer.next() == .replicaAck(replica: replica, upTo: 3))

        for client in [flood, wild, older, newer] { client.close() }
        await running.stop()
    }

    /// A board nobody is connected to is closed (sealed, unlocked: a writer can open it) and
    /// opened again, whole, by the next connection.
    @Test func anIdleBoardIsClosedAndOpensAgainOnTheNextConnection() async throws {
        let temp = TemporaryDirectory("relay-idle")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let running = try await RunningRelay.start(data: data, idleBoardSeconds: 0.3)
        let replica = TestReplicaKeys.newReplica()
        let first = try await joined(running, "nap", hello: hello(replica))
        first.send(binary: Self.frame(Self.events(replica, 1...4), on: "nap"))
        first.send(ClientFrame.text(for: .clear))
        // Two commits (the host's, the board's): their acks come in either order.
        let acks = [try await first.next(), try await first.next()].compactMap { $0?.text }
        #expect(Set(acks) == [ServerMessage.replicaAck(replica: replica, upTo: 4).text, ServerMessage.ack(upTo: 1).text])
        // Open while someone is connected, however long: a pass of the idle closer leaves it.
        #expect(running.relay.closeIdleBoards().isEmpty)
        #expect(running.relay.openBoards.map(\.text) == ["nap"])
        first.close()

        #expect(await eventually(within: 60) { running.relay.openBoards.isEmpty })
        // Closed means unlocked and sealed: a writer opens it, and nothing is left unsealed.
        let directory = try JournalDirectory.open(at: data + "/nap")
        var sealedEvents = 0
        let sealed = try await eventually(within: 10) {
            guard let writer = try? JournalWriter(directory: directory) else { return false }
            try writer.close()
            sealedEvents = SegmentSet.load(directory).members.filter(\.isSealed).reduce(0) { $0 + $1.scan.eventCount }
            return sealedEvents == 5
        }
        #expect(sealed, "\(sealedEvents) events sealed")

        let second = RelayTestClient(port: running.port, board: "nap")
        second.send(ClientFrame.helloText(have: Have()))
        let (before, last) = try await second.collect { if case .caughtUp = $0 { true } else { false } }
        #expect(before.count == 5)
        guard case .caughtUp(5, let have, _)? = last else { Issue.record("no caughtUp after reopening: \(String(describing: last))"); return }
        #expect(have[replica] == SeqRanges([1...4]))
        second.close()
        await running.stop()
    }

    /// A node that adopts a board from a store that lost a copy of the client's replica holds
    /// the events after the lost ones: an ack by seq can never pass the hole, and the client,
    /// hearing the same ack as a sign of life, waited for ever (the keep-drawing campaign: 671
    /// points never acknowledged in 2 minutes). The frame is refused with the seqs to send, and
    /// a client that still holds them fills the hole and is acknowledged past it.
    @Test func aHoleBelowAClientsFrameIsAskedForNotWaitedOn() async throws {
        let temp = TemporaryDirectory("relay-native-hole")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let running = try await RunningRelay.start(data: data, options: .relay)
        let replica = TestReplicaKeys.newReplica()
        let sent = Self.events(replica, 1...12)
        let opener = try await joined(running, "h", hello: ClientFrame.helloText(have: Have()))
        // What the store brought: 1...3 and 7...10, the copy of 4...6 lost.
        let board = try JournalDirectory.open(at: data + "/h")
        for range in [0..<3, 6..<10] { try QuarantinedEventRelayTests.plant(Array(sent[range]), in: board) }
        let relayBoard = try running.relay.board(BoardName("h"))
        #expect(await eventually(within: 60) { relayBoard.board.covered[replica]?.count == 7 }, "the board never folded the planted segments")

        // The client resumes after what it was acknowledged for (10).
        let client = RelayTestClient(port: running.port, board: "h")
        client.send(hello(replica, have: Have([replica: SeqRanges([1...10])])))
        _ = try await client.collect(until: { if case .caughtUp = $0 { true } else { false } })
        client.send(binary: Self.frame(Array(sent[10..<12]), on: "h"))
        let (before, last) = try await client.collect(until: { if case .error = $0 { true } else { false } }, within: 30)
        guard case .error(nil, .refusedFrame, let reason)? = last else {
            Issue.record("expected the frame refused, got \(before) then \(String(describing: last))")
            return
        }
        #expect(reason.contains("seqs 4-6 of replica \(replica.hex)") && reason.contains("send from seq 4"), "\(reason)")
        #expect(!before.contains { if case .replicaAck(_, let upTo) = $0 { upTo > 3 } else { false } }, "\(before)")

        // It sends from 4: the hole is filled, and the ack covers everything.
        let again = RelayTestClient(port: running.port, board: "h")
        again.send(hello(replica, have: Have([replica: SeqRanges([1...3])])))
        _ = try await again.collect(until: { if case .caughtUp = $0 { true } else { false } })
        again.send(binary: Self.frame(Array(sent[3..<12]), on: "h"))
        let acked = try await again.collect(until: { if case .replicaAck(_, 12) = $0 { true } else { false } }, within: 30)
        #expect(acked.last == .replicaAck(replica: replica, upTo: 12), "\(acked)")
        opener.close()
        again.close()
        await running.stop()
    }

    /// Anyone who can write into the folder a relay syncs with can put a segment of a native
    /// client's replica there (every event message names the replica), seqs above what the
    /// relay holds. Skipping the client's own events under those seqs as held (and
    /// acknowledging them) would keep the forger's and leave the client's drawing different
    /// from the board's for good. So an event under an id the board holds from elsewhere is
    /// compared: the same is dedup, a different one is a fork, refused with its reason, never
    /// acknowledged; and the client is not sent events of its own replica that it did not make.
    @Test func aForgedSegmentOfAClientsReplicaIsAForkNeverAnAck() async throws {
        let temp = TemporaryDirectory("relay-native-forged")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        let running = try await RunningRelay.start(data: data, options: .relay)
        let replica = TestReplicaKeys.newReplica()
        let real = Self.events(replica, 1...8, stroke: 7)
        let client = try await joined(running, "p", hello: hello(replica))
        client.send(binary: Self.frame(Array(real[0..<2]), on: "p"))
        #expect(try await client.next() == .replicaAck(replica: replica, upTo: 2))

        // The forger's 3...6 and an honest copy of 7...8 (the client's own journal, synced).
        let board = try JournalDirectory.open(at: data + "/p")
        for events in [Self.events(replica, 3...6, stroke: 666), Array(real[6..<8])] {
            try QuarantinedEventRelayTests.plant(events, in: board)
        }
        let relayBoard = try running.relay.board(BoardName("p"))
        #expect(await eventually(within: 60) { relayBoard.board.covered[replica]?.count == 8 }, "the board never folded the planted segments")

        client.send(binary: Self.frame(Array(real[2..<6]), on: "p"))
        let (before, last) = try await client.collect(until: { if case .error = $0 { true } else { false } }, within: 30)
        guard case .error(nil, _, let reason) = last else {
            Issue.record("expected the frame refused, got \(before) then \(String(describing: last))")
            return
        }
        #expect(reason.contains("seq 3 of replica \(replica.hex)") && reason.contains("fork"), "\(reason)")
        #expect(!before.contains { if case .replicaAck(_, let upTo) = $0 { upTo > 2 } else { false } }, "\(before)")
        #expect(try before.compactMap { try $0.event() }.allSatisfy { $0.id.replica != replica }, "the client was sent events of its own replica")

        // Once forked, nothing more of the replica is taken on this board: an ack by seq would
        // count the forger's 3...6 among what it says is stored, even for 7...8, which the
        // journal holds exactly as the client does.
        let again = RelayTestClient(port: running.port, board: "p")
        again.send(hello(replica, have: Have([replica: SeqRanges([1...2])])))
        _ = try await again.collect(until: { if case .caughtUp = $0 { true } else { false } })
        again.send(binary: Self.frame(Array(real[6..<8]), on: "p"))
        let refused = try await again.collect(until: { if case .error = $0 { true } else { false } })
        #expect(!refused.before.contains { if case .replicaAck(_, let upTo) = $0 { upTo > 2 } else { false } }, "\(refused.before)")
        if case .error(nil, _, let reason) = refused.last { #expect(reason.contains("fork"), "\(reason)") } else { Issue.record("\(refused)") }
        client.close()
        again.close()
        await running.stop()
    }

    @Test func aNativeRelayClientResendsExactlyAcrossARelayRestart() async throws {
        let temp = TemporaryDirectory("relay-native-client")
        defer { temp.remove() }
        let data = temp.path + "/boards"
        var running = try await RunningRelay.start(data: data)
        let port = running.port
        var options = RelayClient.Options()
        options.replicaKey = ReplicaKey()
        let alice = RelayClient(port: port, board: "mural", options: options)
        let bob = RelayClient(port: port, board: "mural")
        let runs = [Task { await alice.run() }, Task { await bob.run() }]

        let first = RelayClientTests().stroke(11, points: 50)
        for payload in first { alice.send(payload) }
        // Bounded: a client that is never acknowledged fails here with what it still holds and why.
        try await alice.waitUntilAcknowledged(within: 120)
        #expect(alice.pending.isEmpty)
        #expect(await RelayClientTests().waitFor(bob, points: 50))

        // Sent while the relay is gone, and while it comes back: named once, stored once.
        await running.stop()
        let second = RelayClientTests().stroke(12, points: 40)
        for payload in second { alice.send(payload) }
        running = try await RunningRelay.start(data: data, port: port)
        try await alice.waitUntilAcknowledged(within: 120)
        #expect(await RelayClientTests().waitFor(bob, points: 90))
        await running.stop()

        let board = try JournalDirectory.open(at: data + "/mural")
        let set = SegmentSet.load(board)
        let replay = Replay.check(set)
        #expect(replay.problems.filter { $0.kind != .ignored }.isEmpty && replay.forks.isEmpty)
        // Every event is the client's, seqs 1…92 (two strokes, their ends), each once.
        let ids = set.members.flatMap { member -> [EventID] in
            let (events, _) = member.scan.allEvents()
            return events.map(\.id)
        }
        #expect(Set(ids).count == 92 && ids.allSatisfy { $0.replica == options.replicaKey?.replica })
        let digest = Replay.replay(set).drawing.digest
        #expect(alice.drawing.digest == digest)
        #expect(bob.drawing.digest == digest)

        alice.close()
        bob.close()
        for run in runs { await run.value }
    }
}
