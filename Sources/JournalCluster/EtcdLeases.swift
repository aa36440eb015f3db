import JournalFormat
import JournalPlatform
import JournalRelay

/// Board leases from etcd, through its v3 JSON gateway (`journal serve --lease
/// etcd://HOST:PORT`, docs/DEPLOY.md "One owner per board").
///
/// The node holds one etcd lease of `ttlSeconds`, renewed every quarter of it on a thread of
/// its own. A board is this node's while the key `<prefix><board>` exists with the node's
/// name under that lease; it is created only where there is none (a transaction comparing its
/// create revision with 0), so a second node reads the first one's name and waits or
/// refuses. The revision that created the key is the claim's fence: a later claim of the
/// board, by any node, has a larger one.
///
/// etcd lets the lease lapse `ttlSeconds` after the last renewal it received. This node
/// stops counting itself the owner earlier, `ttlSeconds` × `validFraction` after it *sent*
/// the last renewal that succeeded, by its own monotonic clock: a node that froze, or lost
/// the network, stops acknowledging before another node can have claimed its boards. The
/// margin covers a difference in clock rate, not a clock jump (monotonic clocks never jump).
public final class EtcdLeases: BoardLeases, Sendable {
    public let host: String
    public let port: Int
    /// This node's name, written as the owner of its boards (what another node's refusal names).
    public let node: String
    public let ttlSeconds: Int
    /// Keys are `<prefix><board>`: one prefix per cluster sharing an etcd.
    public let prefix: String
    public let validFraction = 0.75
    /// Each request to etcd gives up after this long.
    public let requestTimeout: Double
    /// The nodes run behind a balancer that sends each board to one node: a claim that waits
    /// says the board is wanted, and `wantedElsewhere` reads it (`Relay.handOverWanted`). Off
    /// where clients pick a node themselves: there one client trying another node would pull
    /// the board away from the clients drawing on it.
    public let followsBalancer: Bool

    private struct State {
        var lease: Int64?
        /// Monotonic second until which the lease is this node's by its own clock.
        var validUntil = 0.0
        /// Boards held, with their fences.
        var claimed: [BoardName: UInt64] = [:]
        /// Why the last request failed, for `/healthz` and the log.
        var lastProblem: String?
        /// What etcd granted: never less than asked, more when its minimum is larger (1.5 ×
        /// its election timeout, rounded up: 2 s by default). Other nodes' leases last as long.
        var grantedSeconds: Int?
        var stopped = false
    }

    private let state = Locked(State())
    /// Renewals, on a thread of their own: a claim waiting for another node never delays one.
    private let renewer = WorkerThread()
    /// Claims and releases (blocking requests), off the concurrency pool.
    private let asker = WorkerThread()
    private let revocation: RevocationOnExit?

    /// `revokesWhenProcessEnds`: a shell beside this process revokes the lease when the process
    /// ends however it ends (`RevocationOnExit`), so that a node killed outright frees its boards
    /// at once rather than a time to live later. One per process: tests that run several
    /// "nodes" in one process leave it off (they cannot end their process).
    public init(host: String, port: Int, node: String, ttlSeconds: Int = 2, prefix: String = "/strokejournal/boards/",
                revokesWhenProcessEnds: Bool = false, followsBalancer: Bool = false) {
        self.followsBalancer = followsBalancer
        self.host = host
        self.port = port
        self.node = node
        self.ttlSeconds = max(1, ttlSeconds)
        self.prefix = prefix
        requestTimeout = max(0.2, Double(self.ttlSeconds) / 4)
        revocation = revokesWhenProcessEnds ? RevocationOnExit(host: host, port: port) : nil
    }

    /// `etcd://HOST:PORT` (or `http://HOST:PORT`).
    public convenience init(address: String, node: String, ttlSeconds: Int = 2, revokesWhenProcessEnds: Bool = false,
                            followsBalancer: Bool = false) throws(LeaseAddressError) {
        var rest = Substring(address)
        for scheme in ["etcd://", "http://"] where rest.hasPrefix(scheme) { rest = rest.dropFirst(scheme.count) }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port),
              !rest[..<colon].isEmpty else {
            throw LeaseAddressError(address: address)
        }
        self.init(host: String(rest[..<colon]), port: port, node: node, ttlSeconds: ttlSeconds, revokesWhenProcessEnds: revokesWhenProcessEnds,
                  followsBalancer: followsBalancer)
    }

    public struct LeaseAddressError: Error, CustomStringConvertible {
        public var address: String
        public var description: String { "\(address): expected etcd://HOST:PORT (etcd's client address, e.g. etcd://127.0.0.1:2379)" }
    }

    /// Takes the node's lease on the renewing thread, then renews it every quarter of its time
    /// to live until `stop()`. A node whose etcd is not reachable yet starts anyway, unhealthy
    /// (`isLive` false), and keeps trying.
    public func start() {
        renewer.submit { [self] in renew() }
    }

    /// Stops renewing and gives every claim up (the relay closed its boards first).
    public func stop() {
        state.withLock { $0.stopped = true }
        renewer.close()
        if let lease = state.withLock({ $0.lease }) {
            // Revoking deletes every key under the lease at once: the boards are free now, not
            // a time to live later.
            _ = try? request("/v3/lease/revoke", #"{"ID":"\#(lease)"}"#)
        }
        revocation?.closePipe()
        asker.close()
    }

    /// What a node killed outright looks like: renewals stop, nothing is given up here, and the
    /// pipe to the revoking shell closes as the kernel closes it for a process that ended.
    package func endAsAKilledProcessWould() {
        stopRenewing()
        revocation?.closePipe()
    }

    /// Why the shell that revokes the lease when this process ends is not running, if it is not.
    public var revocationProblem: String? { revocation?.lastProblem }

    /// Stops renewing and gives nothing up: what a frozen or vanished node looks like to etcd
    /// (its claims lapse a time to live later).
    package func stopRenewing() {
        state.withLock { $0.stopped = true }
    }

    // MARK: BoardLeases

    /// Another node's lease lapses at most its time to live after its last renewal: etcd's
    /// grant, when that is longer than this node asked.
    public var claimWait: Double { Double(max(ttlSeconds, state.withLock { $0.grantedSeconds } ?? 0)) + 1 }

    /// The time to live etcd granted, once it did (see `State.grantedSeconds`).
    public var grantedTtlSeconds: Int? { state.withLock { $0.grantedSeconds } }

    public func holds(_ board: BoardName) -> Bool {
        let now = ProcessInfoLite.monotonicSeconds()
        return state.withLock { $0.claimed[board] != nil && now < $0.validUntil }
    }

    public var isLive: Bool {
        let now = ProcessInfoLite.monotonicSeconds()
        return state.withLock { $0.lease != nil && now < $0.validUntil }
    }

    /// Why the service could not be asked last, if the last request failed.
    public var lastProblem: String? { state.withLock { $0.lastProblem } }

    public func claim(_ board: BoardName, wait: Double) async -> LeaseClaim {
        let deadline = ProcessInfoLite.monotonicSeconds() + wait
        var wantedAt = -Double.infinity
        while true {
            let outcome = await onAsker { [self] in claimOnce(board) }
            guard case .heldElsewhere = outcome else { return outcome }
            // Said (again) while a client waits here: the holder hands the board over if this
            // goes on (`wantedElsewhere`); a lost node's claim lapses meanwhile anyway. Said at
            // least once by any claim that was to wait, even one whose wait ran out during its
            // first request (a busy node): its client was refused here all the same.
            if followsBalancer, wait > 0, ProcessInfoLite.monotonicSeconds() - wantedAt >= 0.2 {
                wantedAt = ProcessInfoLite.monotonicSeconds()
                await onAsker { [self] in want(board) }
            }
            guard ProcessInfoLite.monotonicSeconds() < deadline else { return outcome }
            // Another node's claim lapses at most a time to live after its last renewal (etcd
            // notices every 0.5 s); asked again often, as its clients wait for this claim.
            do { try await Task.sleep(for: .milliseconds(50)) } catch { return outcome }
        }
    }

    /// A key or value as etcd's JSON gateway takes it (base64).
    private static func encoded(_ text: String) -> String { Base64.encode(Array(text.utf8)) }

    /// A key or value the gateway sent (base64), as text.
    private static func decoded(_ value: JSONValue?) -> String? {
        value?.text.flatMap(Base64.decode).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `<prefix>wanted/<board>`: which node's clients want the board (board names hold no `/`,
    /// so it is never a board's own key).
    private var wantedPrefix: String { prefix + "wanted/" }

    /// Puts (again) this node as wanting `board`, under its lease: gone if this node goes.
    private func want(_ board: BoardName) {
        guard let lease = state.withLock({ $0.lease }) else { return }
        _ = try? request("/v3/kv/put", #"{"key":"\#(Self.encoded(wantedPrefix + board.text))","value":"\#(Self.encoded(node))","lease":"\#(lease)"}"#)
    }

    public func wantedElsewhere() async -> [BoardName: UInt64] {
        let held = state.withLock { Set($0.claimed.keys) }
        guard followsBalancer, !held.isEmpty else { return [:] }
        return await onAsker { [self] in
            // Every key under the prefix: `range_end` is the prefix with its last byte plus one.
            var end = Array(wantedPrefix.utf8)
            end[end.count - 1] += 1
            guard let answer = try? request("/v3/kv/range", #"{"key":"\#(Self.encoded(wantedPrefix))","range_end":"\#(Base64.encode(end))"}"#)
            else { return [:] }
            var wanted: [BoardName: UInt64] = [:]
            for kv in answer.field("kvs")?.elements ?? [] {
                guard let key = Self.decoded(kv.field("key")),
                      key.hasPrefix(wantedPrefix), let board = try? BoardName(String(key.dropFirst(wantedPrefix.count))),
                      held.contains(board),
                      let by = Self.decoded(kv.field("value")), by != node,
                      let revision = kv.field("mod_revision")?.integer
                else { continue }
                wanted[board] = UInt64(revision)
            }
            return wanted
        }
    }

    public func release(_ board: BoardName) async {
        guard state.withLock({ $0.claimed.removeValue(forKey: board) }) != nil else { return }
        await onAsker { [self] in
            guard let lease = state.withLock({ $0.lease }) else { return }
            let key = Self.encoded(prefix + board.text)
            // Deleted only while it is still under this node's lease: never another node's claim.
            _ = try? request("/v3/kv/txn", #"{"compare":[{"key":"\#(key)","target":"LEASE","lease":"\#(lease)"}],"success":[{"requestDeleteRange":{"key":"\#(key)"}}]}"#)
        }
    }

    // MARK: Requests

    private func onAsker<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            // Without a thread (closed), `submit` runs the job on the caller.
            asker.submit { continuation.resume(returning: body()) }
        }
    }

    private func request(_ path: String, _ json: String) throws(LeaseRequestError) -> JSONValue {
        let response: HTTPExchange.Response
        do {
            response = try HTTPExchange.post(host: host, port: port, path: path, json: Array(json.utf8), timeoutSeconds: requestTimeout)
        } catch {
            throw LeaseRequestError(description: "etcd at \(host):\(port): \(error)")
        }
        let value: JSONValue
        do { value = try JSONValue.parse(response.body) } catch {
            throw LeaseRequestError(description: "etcd at \(host):\(port)\(path): HTTP \(response.status), not JSON: \(error)")
        }
        guard response.status == 200 else {
            let said = value["message"]?.text ?? value["error"]?.text ?? "HTTP \(response.status)"
            throw LeaseRequestError(description: "etcd at \(host):\(port)\(path): \(said)", notFound: said.contains("not found"))
        }
        return value
    }

    struct LeaseRequestError: Error, CustomStringConvertible {
        var description: String
        /// etcd no longer knows the lease (it lapsed).
        var notFound = false
    }

    /// A lease for this node: the current one, or a new one.
    private func currentLease() throws(LeaseRequestError) -> Int64 {
        if let lease = state.withLock({ $0.lease }) { return lease }
        let sent = ProcessInfoLite.monotonicSeconds()
        let granted = try request("/v3/lease/grant", #"{"TTL":"\#(ttlSeconds)"}"#)
        guard let lease = granted.field("ID")?.integer, let ttl = granted.field("TTL")?.integer, ttl > 0 else {
            throw LeaseRequestError(description: "etcd at \(host):\(port) granted no lease: \(granted)")
        }
        state.withLock { state in
            state.lease = lease
            state.validUntil = sent + Double(ttlSeconds) * validFraction
            state.lastProblem = nil
            state.grantedSeconds = Int(ttl)
        }
        revocation?.announce(lease)
        return lease
    }

    private func claimOnce(_ board: BoardName) -> LeaseClaim {
        do throws(LeaseRequestError) {
            let lease = try currentLease()
            // Renewals failing (etcd may still hold the lease): a claim now would be one this
            // node may not use.
            guard isLive else { return .unavailable(lastProblem ?? "the node's lease is not being renewed") }
            let key = Self.encoded(prefix + board.text)
            let value = Self.encoded(node)
            let answer = try request("/v3/kv/txn", """
                {"compare":[{"key":"\(key)","target":"CREATE","createRevision":"0"}],\
                "success":[{"requestPut":{"key":"\(key)","value":"\(value)","lease":"\(lease)"}},\
                {"requestDeleteRange":{"key":"\(Self.encoded(wantedPrefix + board.text))"}}],\
                "failure":[{"requestRange":{"key":"\(key)"}}]}
                """)
            if answer.field("succeeded")?.isTrue == true {
                let fence = UInt64(answer.field("header")?.field("revision")?.integer ?? 0)
                state.withLock { $0.claimed[board] = fence }
                return .held(fence: fence)
            }
            let held = answer.field("responses")?.elements.first?.field("response_range")?.field("kvs")?.elements.first
            let owner = Self.decoded(held?.field("value")) ?? "?"
            if held?.field("lease")?.integer == lease {
                // Already this node's, under its current lease (a board opened again here).
                let fence = UInt64(held?.field("create_revision")?.integer ?? 0)
                state.withLock { $0.claimed[board] = fence }
                return .held(fence: fence)
            }
            return .heldElsewhere(owner)
        } catch {
            state.withLock { $0.lastProblem = error.description }
            return .unavailable(error.description)
        }
    }

    /// One renewal, then the next one scheduled a quarter of the time to live later.
    private func renew() {
        guard !state.withLock({ $0.stopped }) else { return }
        let sent = ProcessInfoLite.monotonicSeconds()
        do throws(LeaseRequestError) {
            if let lease = state.withLock({ $0.lease }) {
                let answer = try request("/v3/lease/keepalive", #"{"ID":"\#(lease)"}"#)
                // A stream of answers; the gateway sends the one for this request as "result".
                let result = answer["result"] ?? answer
                guard let ttl = result.field("TTL")?.integer, ttl > 0 else { throw LeaseRequestError(description: "lease \(lease) lapsed", notFound: true) }
                state.withLock { state in
                    state.validUntil = max(state.validUntil, sent + Double(ttlSeconds) * validFraction)
                    state.lastProblem = nil
                }
            } else {
                _ = try currentLease()
            }
        } catch {
            state.withLock { state in
                state.lastProblem = error.description
                if error.notFound {
                    // etcd let the lease lapse (this node was frozen or cut off longer than its
                    // time to live): every claim went with it. A new lease is taken next time;
                    // boards are claimed again when they open again.
                    state.lease = nil
                    state.validUntil = 0
                    state.claimed.removeAll()
                }
            }
        }
        let next = sent + Double(ttlSeconds) / 4
        if !renewer.submit(at: next, { [self] in renew() }) { return }
    }
}
