import JournalClient
import JournalFormat
import JournalIngest
import JournalLive
import JournalPlatform
@testable import JournalRelay
import JournalReplay
import JournalStorage
import JournalTestSupport
import JournalWire
import Testing

/// Who may do what on a relay (invariant 12): tokens signed by the relay's key, their scopes,
/// boards, expiry and revocation, enforced before a client's frames are read; and native
/// clients that can send events only as the replica of their own key (invariant 11).
@Suite struct RelayAccessTests {
    static func keys(_ temp: TemporaryDirectory) throws -> RelayKeys { try RelayKeys.openOrCreate(dataDirectory: temp.path) }

    static func token(_ keys: RelayKeys, _ boards: String, _ scope: Scope, expiresIn seconds: Int64 = 3600) throws -> String {
        try keys.mint(Capability(
            id: RelayKeys.newTokenID(), scope: scope, boards: try BoardPattern(boards),
            expiresAtSeconds: ProcessInfoLite.wallClockMilliseconds() / 1000 + seconds))
    }

    static func pointLine(_ index: Int) -> String {
        CanonicalJSON.line(for: .point(PointSample(
            stroke: StrokeID(UUIDBits(high: 0xACCE55, low: 1)), x: Double(index), y: 1, pressure: nil, t: nil,
            style: Style(color: RGBA(rawValue: 0x000000FF), width: 2))))
    }

    @Test func aTokenHoldsOnlyForItsBoardsScopeAndLifetimeAndOnlyWithThisRelaysKey() throws {
        let temp = TemporaryDirectory("relay-tokens")
        defer { temp.remove() }
        let keys = try Self.keys(temp)
        let access = RelayAccess.tokens(keys)
        let now = ProcessInfoLite.wallClockMilliseconds()
        let sketch = try BoardName("sketch")

        #expect(throws: AccessError.missing) { try access.authorize(nil, board: sketch, nowMilliseconds: now) }
        let draw = try Self.token(keys, "sketch", .draw)
        let grant = try access.authorize(draw, board: sketch, nowMilliseconds: now)
        #expect(grant.scope == .draw && grant.allows(.view) && !grant.allows(.admin))
        #expect(grant.board == sketch, "a token for exactly one board names it in its grant")
        #expect(throws: AccessError.self) { try access.authorize(draw, board: try BoardName("sketch2"), nowMilliseconds: now) }

        // A prefix covers the boards whose names start with it, and no others.
        let team = try Self.token(keys, "team-*", .view)
        #expect(try access.authorize(team, board: try BoardName("team-blue"), nowMilliseconds: now).scope == .view)
        #expect(try access.authorize(team, board: try BoardName("team-blue"), nowMilliseconds: now).board == nil)
        #expect(throws: AccessError.self) { try access.authorize(team, board: try BoardName("teamblue"), nowMilliseconds: now) }

        // A token whose scope was raised by hand, or signed by another relay, does not verify.
        let raised = draw.replacingFirst(".draw.", with: ".admin.")
        #expect(throws: AccessError.badSignature) { try access.authorize(raised, board: sketch, nowMilliseconds: now) }
        let elsewhere = TemporaryDirectory("relay-tokens-other")
        defer { elsewhere.remove() }
        let foreign = try Self.token(try Self.keys(elsewhere), "sketch", .draw)
        #expect(throws: AccessError.badSignature) { try access.authorize(foreign, board: sketch, nowMilliseconds: now) }

        // Expired; malformed.
        // An hour ago, not a second: `now` was read when the test began, and on a loaded machine
        // (108 s for this test once) a token minted a second in the past expired after it.
        let old = try Self.token(keys, "sketch", .draw, expiresIn: -3600)
        let oldID = try RelayKeys.parse(old).0.id
        #expect(throws: AccessError.expired(tokenID: oldID)) { try access.authorize(old, board: sketch, nowMilliseconds: now) }
        for bad in ["", "sjt1", "sjt1.0123.draw.sketch.1.00", "jwt.a.b", String(repeating: "x", count: 500)] {
            #expect(throws: AccessError.self) { try access.authorize(bad, board: sketch, nowMilliseconds: now) }
        }
        // One spelling per token: an uppercase signature or a zero-padded expiry is not the same
        // token spelled otherwise, it is refused.
        var fields = draw.split(separator: ".").map(String.init)
        let upper = (fields[0..<5] + [fields[5].uppercased()]).joined(separator: ".")
        #expect(throws: AccessError.self) { try access.authorize(upper, board: sketch, nowMilliseconds: now) }
        fields[4] = "0" + fields[4]
        #expect(throws: AccessError.self) { try access.authorize(fields.joined(separator: "."), board: sketch, nowMilliseconds: now) }

        // Revoked: refused from the next check on; the grant no longer holds.
        let (capability, _) = try RelayKeys.parse(draw)
        try keys.revoke(capability.id)
        #expect(throws: AccessError.revoked(tokenID: capability.id)) { try access.authorize(draw, board: sketch, nowMilliseconds: now) }
        #expect(access.stillHolds(grant, nowMilliseconds: now) == .revoked(tokenID: capability.id))

        // A rotated key refuses every token minted before it.
        let before = try Self.token(keys, "sketch", .view)
        try keys.rotate()
        #expect(throws: AccessError.badSignature) { try access.authorize(before, board: sketch, nowMilliseconds: now) }
        #expect(try access.authorize(try Self.token(keys, "sketch", .view), board: sketch, nowMilliseconds: now).scope == .view)

        // The key is its owner's only.
        #expect(FileSystem.linkStatus(temp.path + "/.relay/token-key") != nil)
    }

    @Test func aViewerCannotDrawAndOnlyAnAdminCreatesABoard() async throws {
        let temp = TemporaryDirectory("relay-scopes")
        defer { temp.remove() }
        let keys = try Self.keys(temp)
        let access = RelayAccess.tokens(keys)
        let relay = try Relay(dataDirectory: temp.path, access: access, boardOptions: BoardOptions(watchForSegments: false), idleBoardSeconds: nil)
        let board = try BoardName("plan")
        let now = ProcessInfoLite.wallClockMilliseconds()
        let view = try access.authorize(try Self.token(keys, "plan", .view), board: board, nowMilliseconds: now)
        let draw = try access.authorize(try Self.token(keys, "plan", .draw), board: board, nowMilliseconds: now)
        let admin = try access.authorize(try Self.token(keys, "*", .admin), board: board, nowMilliseconds: now)

        // No grant, or a grant below admin for a board that does not exist: refused, nothing made.
        await #expect(throws: RelayError.forbidden(.missing)) { _ = try await relay.connect(to: board) }
        await #expect(throws: RelayError.self) { _ = try await relay.connect(to: board, grant: draw) }
        #expect(!FileSystem.exists(temp.path + "/plan"))

        let owner = try await relay.connect(to: board, grant: admin)
        owner.goLive(caughtUp: 0)
        let viewer = try await relay.connect(to: board, grant: view)
        viewer.goLive(caughtUp: 0)
        let drawer = try await relay.connect(to: board, grant: draw)
        drawer.goLive(caughtUp: 0)
        var viewerMessages = viewer.outbound.makeAsyncIterator()
        var drawerMessages = drawer.outbound.makeAsyncIterator()

        // Each connection's first message is its caughtUp; a viewer's says it may only view.
        #expect(await viewerMessages.next() == ServerMessage.caughtUp(events: 0, have: Have(), viewOnly: true).text)
        #expect(await drawerMessages.next() == ServerMessage.caughtUp(events: 0, have: Have()).text)
        await viewer.receive(text: Self.pointLine(1))
        let refusal = await viewerMessages.next().map { try? ServerMessage(parsing: $0) }
        guard case .error(1?, .viewOnly, let reason)?? = refusal else { Issue.record("the viewer's frame was not refused: \(String(describing: refusal))"); return }
        #expect(reason.contains("may only view"))
        // A viewer cannot go native either.
        let sneaky = try await relay.connect(to: board, grant: view)
        await sneaky.receive(text: TestReplicaKeys.hello(TestReplicaKeys.newReplica()))
        #expect(sneaky.closeReason?.contains("may only view") == true)

        await drawer.receive(text: Self.pointLine(2))
        #expect(await drawerMessages.next() == ServerMessage.ack(upTo: 1).text)
        await relay.close()
        let (drawing, report) = Replay.load(JournalDirectory(root: temp.path + "/plan"))
        #expect(report.eventCount == 1)
        #expect(drawing.strokes.first?.points.map(\.x) == [2])
    }

    @Test func oneTokenHoldsAtMostItsShareOfConnectionsAndLosesThemWhenRevokedOrExpired() async throws {
        let temp = TemporaryDirectory("relay-token-limits")
        defer { temp.remove() }
        let keys = try Self.keys(temp)
        let access = RelayAccess.tokens(keys)
        let relay = try Relay(
            dataDirectory: temp.path, access: access, boardOptions: BoardOptions(watchForSegments: false), idleBoardSeconds: nil,
            limits: RelayLimits(maxConnectionsPerToken: 2))
        let board = try BoardName("wall")
        let now = ProcessInfoLite.wallClockMilliseconds()
        let token = try Self.token(keys, "wall", .admin)
        let grant = try access.authorize(token, board: board, nowMilliseconds: now)
        let first = try await relay.connect(to: board, grant: grant)
        let second = try await relay.connect(to: board, grant: grant)
        await #expect(throws: RelayError.self) { _ = try await relay.connect(to: board, grant: grant) }
        // Another token is not held back by this one's share.
        let other = try access.authorize(try Self.token(keys, "wall", .view), board: board, nowMilliseconds: now)
        let watcher = try await relay.connect(to: board, grant: other)

        #expect(relay.closeConnectionsWithoutAccess() == 0)
        try keys.revoke(try RelayKeys.parse(token).0.id)
        #expect(relay.closeConnectionsWithoutAccess() == 2)
        #expect(first.closeReason?.contains("revoked") == true && second.closeReason?.contains("revoked") == true)
        #expect(watcher.closeReason == nil)

        // A grant past its expiry loses its connection at the next check.
        var expiring = other
        expiring.expiresAtMilliseconds = now - 1
        let late = try await relay.connect(to: board, grant: expiring)
        #expect(relay.closeConnectionsWithoutAccess() == 1)
        #expect(late.closeReason?.contains("expired") == true)
        await relay.close()
    }

    /// A native client of `replica` on `board`, after its hello, live, having sent `seqs`.
    static func nativeClient(_ board: RelayBoard, _ replica: ReplicaID, sending seqs: ClosedRange<UInt64>) async -> RelayConnection {
        let client = board.connect()
        await client.receive(text: TestReplicaKeys.hello(replica))
        client.goLive(caughtUp: 0)
        await client.receive(binary: TestReplicaKeys.frame(NativeModeTests.events(replica, seqs), on: board.name.text))
        return client
    }

    /// 1,700 clients naming a fresh replica each held a relay at 95% CPU for minutes (each
    /// new replica is a segment file, a writer and sealed files every reader lists): a board
    /// holds at most `maxNativeReplicasPerBoard` replicas over its life, however often it is
    /// reopened; replicas it took on go on.
    @Test func aBoardTakesOnABoundedNumberOfNewNativeReplicas() async throws {
        let temp = TemporaryDirectory("relay-native-replicas")
        defer { temp.remove() }
        let relay = try Relay(
            dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false), idleBoardSeconds: nil,
            limits: RelayLimits(maxNativeReplicasPerBoard: 2))
        let board = try relay.board(BoardName("crowd"))
        var accepted: [ReplicaID] = []
        for index in 0..<3 {
            let replica = TestReplicaKeys.newReplica()
            let client = board.connect()
            await client.receive(text: TestReplicaKeys.hello(replica))
            client.goLive(caughtUp: 0)
            await client.receive(binary: TestReplicaKeys.frame(NativeModeTests.events(replica, 1...2), on: "crowd"))
            if index < 1 {
                #expect(client.closeReason == nil, "\(client.closeReason ?? "")")
                accepted.append(replica)
            } else {
                #expect(client.closeReason?.contains("--max-native-replicas") == true, "\(client.closeReason ?? "accepted")")
                // The refusal names the board, never where the server keeps it.
                #expect(client.closeReason?.contains(temp.path) == false, "\(client.closeReason ?? "")")
            }
        }
        // A replica the board took on reconnects and goes on.
        let again = board.connect()
        await again.receive(text: TestReplicaKeys.hello(accepted[0]))
        again.goLive(caughtUp: 0)
        await again.receive(binary: TestReplicaKeys.frame(NativeModeTests.events(accepted[0], 3...4), on: "crowd"))
        #expect(again.closeReason == nil)
        await relay.close()
        let (_, report) = Replay.load(JournalDirectory(root: temp.path + "/crowd"))
        #expect(report.eventCount == 4)

        // Reopened: no new allowance. The board holds the relay's replica and one native one.
        let reopened = try Relay(
            dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false), idleBoardSeconds: nil,
            limits: RelayLimits(maxNativeReplicasPerBoard: 2))
        let crowd = try reopened.board(BoardName("crowd"))
        let lateClient = await Self.nativeClient(crowd, TestReplicaKeys.newReplica(), sending: 1...2)
        #expect(lateClient.closeReason?.contains("holds") == true, "\(lateClient.closeReason ?? "accepted")")
        await reopened.close()
    }

    /// A client that names another relay's replica (it is in every event message) and sends
    /// its next seqs with clock 1 would, if acknowledged, displace the honest, acknowledged
    /// events after a sync. A native replica is the replica of the client's key, and every
    /// frame is signed with it for the board: neither the relay's replica, nor another
    /// client's, nor a frame replayed from another board is taken.
    @Test func nobodyCanSendEventsAsAReplicaWhoseKeyTheyDoNotHold() async throws {
        let temp = TemporaryDirectory("relay-impersonation")
        defer { temp.remove() }
        let relay = try Relay(dataDirectory: temp.path, access: .open, boardOptions: BoardOptions(watchForSegments: false), idleBoardSeconds: nil)
        let board = try relay.board(BoardName("fed"))
        let alice = TestReplicaKeys.newReplica()
        _ = await Self.nativeClient(board, alice, sending: 1...20)
        #expect(await eventually(within: 60) { board.board.covered[alice]?.count == 20 || board.host.accepted[alice].count == 20 })

        // Naming alice's replica, or the relay's own, without the key: the hello is refused.
        for victim in [alice, board.board.replica] {
            let mallory = board.connect()
            await mallory.receive(text: TestReplicaKeys.impostorHello(victim))
            #expect(mallory.closeReason?.contains("is not the replica its \"key\" names") == true, "\(mallory.closeReason ?? "accepted")")
        }
        // Mallory's own key, alice's events (next seqs, clock 1): refused, never stored.
        let mallory = TestReplicaKeys.newReplica()
        let forger = board.connect()
        await forger.receive(text: TestReplicaKeys.hello(mallory))
        forger.goLive(caughtUp: 0)
        var forged = NativeModeTests.events(alice, 21...40)
        for index in forged.indices { forged[index].lamport = 1 }
        await forger.receive(binary: TestReplicaKeys.sign(SegmentMessage.encode(replica: alice, events: forged[...]), on: "fed", as: mallory))
        #expect(forger.closeReason?.contains("this connection's hello named") == true, "\(forger.closeReason ?? "accepted")")
        // Alice's own frame for another board, replayed here: the signature names that board.
        let replayer = board.connect()
        await replayer.receive(text: TestReplicaKeys.hello(alice))
        replayer.goLive(caughtUp: 0)
        await replayer.receive(binary: TestReplicaKeys.frame(NativeModeTests.events(alice, 21...22), on: "elsewhere"))
        #expect(replayer.closeReason?.contains("signature does not verify") == true, "\(replayer.closeReason ?? "accepted")")

        await relay.close()
        let (_, report) = Replay.load(JournalDirectory(root: temp.path + "/fed"))
        #expect(report.eventCount == 20)
    }
}

/// Tokens over real sockets on 127.0.0.1: in the hello or an `Authorization` header, checked
/// before a board is opened.
@Suite(.serialized) struct RelayAccessServerTests {
    @Test func theServerTakesATokenFromTheHelloOrAHeaderBeforeItOpensABoard() async throws {
        let temp = TemporaryDirectory("relay-access-server")
        defer { temp.remove() }
        let keys = try RelayAccessTests.keys(temp)
        let running = try await RelayServerTests.RunningRelay.start(data: temp.path, access: .tokens(keys))

        // No token: told why, and no board is made.
        let anonymous = RelayTestClient(port: running.port, board: "gallery")
        anonymous.send(ClientFrame.helloText(Hello()))
        guard case .error(nil, .unauthorized, let why)? = try await anonymous.next() else { Issue.record("an anonymous client was served"); return }
        #expect(why.contains("needs a token"))
        #expect(!FileSystem.exists(temp.path + "/gallery"))
        // Silent for the whole token wait: still told why (the refusal is written before the
        // socket ends, whatever happens to the read that waited for its hello).
        let silent = RelayTestClient(port: running.port, board: "gallery")
        guard case .error(nil, _, let silence)? = try await silent.next(within: 120) else { Issue.record("a silent client was not told why"); return }
        #expect(silence.contains("needs a token"))
        // A forged token: told why, and the token itself is not repeated.
        let forged = "sjt1.0123456789abcdef.admin.gallery.9999999999." + String(repeating: "ab", count: 64)
        let forger = RelayTestClient(port: running.port, board: "gallery")
        forger.send(ClientFrame.helloText(Hello(token: forged)))
        guard case .error(nil, .unauthorized, let forgery)? = try await forger.next() else { Issue.record("a forged token was served"); return }
        #expect(forgery.contains("signature") && !forgery.contains(forged))

        // An admin's token in the hello: the board is made, and the admin draws.
        let admin = RelayTestClient(port: running.port, board: "gallery")
        admin.send(ClientFrame.helloText(Hello(token: try RelayAccessTests.token(keys, "gallery", .admin))))
        #expect(try await admin.next() == .caughtUp(events: 0))
        admin.send(RelayAccessTests.pointLine(1))
        #expect(try await admin.next() == .ack(upTo: 1))

        // A viewer's token in a header, no hello: it gets the board; its drawing is refused.
        let viewer = RelayTestClient(port: running.port, board: "gallery", bearer: try RelayAccessTests.token(keys, "gallery", .view))
        viewer.send(RelayAccessTests.pointLine(2))
        var sawEvent = false, sawCaughtUp = false, refusal: String?
        while !(sawEvent && sawCaughtUp && refusal != nil), let message = try await viewer.next(within: 30) {
            switch message {
            case .caughtUp: sawCaughtUp = true
            case .error(1?, _, let reason): refusal = reason
            default: if (try? message.event()) != nil { sawEvent = true }
            }
        }
        #expect(sawEvent && sawCaughtUp)
        #expect(refusal?.contains("may only view") == true)
        // The Swift client says so at its catch-up, before anything is sent: an app turns its
        // drawing off at once.
        for (scope, viewOnly) in [(Scope.view, true), (.draw, false)] {
            var options = RelayClient.Options()
            options.token = try RelayAccessTests.token(keys, "gallery", scope)
            let client = RelayClient(port: running.port, board: "gallery", options: options)
            let updates = client.updates
            let connection = Task { await client.run() }
            let bound = client.closing(after: 120)
            for await update in updates { if case .caughtUp = update { break } }
            bound.cancel()
            #expect(client.mayOnlyView == viewOnly, "\(scope)")
            client.close()
            await connection.value
        }

        for client in [anonymous, silent, forger, admin, viewer] { client.close() }
        await running.stop()
        let (_, report) = Replay.load(JournalDirectory(root: temp.path + "/gallery"))
        #expect(report.eventCount == 1)
    }
}

extension String {
    fileprivate func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = firstRange(of: target) else { return self }
        return String(self[..<range.lowerBound]) + replacement + String(self[range.upperBound...])
    }
}
