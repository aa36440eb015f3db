#!/usr/bin/env python3
"""Adversarial campaign against two federated relays (`journal serve` with tokens, and
`journal sync --watch` between each relay's board and one shared folder): honest clients draw on
both relays while outsiders attack, and after every step the campaign checks that

  - every event a relay acknowledged is in that relay's journal, exactly once, as sent;
  - nothing an attacker sent is in any journal;
  - an honest client's ack latency stays bounded (p99 reported; a step over --max-ack-ms fails);
  - each relay's resident memory stays under --max-rss-mb;

and at the end that both journals converge on one digest holding every acknowledged event, and
that a client joining each relay holds the journal's drawing. See README.md beside this file.

Attackers (one per step, drawn at random): no token, a forged token, a viewer drawing, a token of
another board, an expired token, a token revoked mid-connection, a native client naming another
replica without its key, a native client forging another replica's events with its own key, a
frame replayed from another board, one stroke of falling Lamport clocks, a flood of new native
replicas, 60 KB CollabSketch frames, and a folder writer without keys planting a segment that
reuses acknowledged ids (the board's membership, founded by the relays' shared host key, counts
only its members' signed segments).

Standard library, plus `cryptography` (Ed25519) for native clients: Debian's python3-cryptography.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import queue
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # <repo>/Tools/ci/relay-campaign
sys.path.insert(0, os.path.join(REPO, "Tools", "bench", "relay-load"))
sys.path.insert(0, os.path.join(REPO, "Tools", "ci", "page-test"))
from relay_load import RawSocket, free_port, proc_rss  # noqa: E402
import segments  # noqa: E402

BOARD = "mural"
REPLICA_LABEL = b"StrokeJournal replica key v1\0"
FRAME_LABEL = b"StrokeJournal native frame v1\0"


class Failure(Exception):
    pass


class Reconnect(Exception):
    pass


def run(journal, *args, env=None, check=True):
    out = subprocess.run([journal, *args], capture_output=True, text=True, env=env)
    if check and out.returncode != 0:
        raise Failure("journal %s: exit %d: %s" % (" ".join(args), out.returncode, out.stderr.strip()))
    return out


# ------------------------------------------------------------------------------ clients

class Conn:
    """One WebSocket connection whose messages a thread of its own reads as they come (as a
    page does: a client that stops reading is one the relay drops, by design), so the campaign
    takes them with a deadline: text messages parsed, None once the connection ended."""

    def __init__(self, port, board=BOARD):
        self.ws = RawSocket(port, "/boards/%s/ws" % board)
        self.messages = queue.Queue()
        # When the reading thread took the message `next` returned last (time.monotonic()):
        # a caller busy elsewhere (blocked sending to a frozen relay) takes it later.
        self.received_at = None
        self.lock = threading.Lock()
        self.closed = False
        self.why = "closed by the relay"
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        self.last = []
        try:
            for opcode, buf, a, b in self.ws.frames():
                self.last = (self.last + [(opcode, bytes(buf[a:min(b, a + 200)]))])[-4:]
                if opcode == 0x1:
                    self.messages.put((time.monotonic(), json.loads(bytes(buf[a:b]))))
                elif opcode == 0x9:
                    self._send(bytes(buf[a:b]), 0xA)  # the relay pings; a client that never answers is closed
                elif opcode == 0x8:
                    break
        except (OSError, ValueError) as error:
            self.why = repr(error)
        self.messages.put((time.monotonic(), None))

    def _send(self, payload, opcode):
        with self.lock:
            self.ws.send(payload, opcode)

    def send_text(self, text):
        self._send(text.encode(), 0x1)

    def send_binary(self, data):
        self._send(data, 0x2)

    def next(self, timeout=30):
        """The next text message (a dict), or None when the connection ended or none came."""
        if self.closed:
            return None
        try:
            self.received_at, message = self.messages.get(timeout=timeout)
        except queue.Empty:
            return None
        if message is None:
            self.closed = True
        return message

    def until(self, predicate, timeout=30):
        """Messages until one `predicate` accepts (returned last), or until the end."""
        seen = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.next(timeout=max(0.1, deadline - time.monotonic()))
            if message is None:
                if self.closed:
                    break
                continue
            seen.append(message)
            if predicate(message):
                break
        return seen

    def close(self):
        try:
            self.ws.close()
        except OSError:
            pass


def norm(stroke):
    """A stroke id as 32 lowercase hex digits (event messages spell it as a UUID)."""
    return (stroke or "").replace("-", "").lower()


def is_error(m):
    return m.get("type") == "error"


class Honest:
    """A text client that draws and keeps what the relay acknowledged (with echo, each of its
    events comes back with its id before the ack that covers it)."""

    # Read what came before each probe (`settle`); off (--probe-at-once): the probe's ack is
    # timed with the board's traffic still unread, as a client that draws on sees it.
    settle_before_probe = True

    def __init__(self, name, port, token, rng):
        self.name, self.port, self.token, self.rng = name, port, token, rng
        self.acknowledged = {}  # "replica#seq" -> (stroke, x, y)
        self.latencies = []
        self.stroke_index = 0
        self.reconnects = 0
        self.connect()

    def connect(self):
        self.conn = Conn(self.port)
        # The catch-up in blocks (binary, passed over here): the board is not what is checked.
        self.conn.send_text(json.dumps({"type": "hello", "echo": True, "blocks": True, "token": self.token}))
        got = self.conn.until(lambda m: m.get("type") in ("caughtUp", "error"), timeout=120)
        if not got or got[-1].get("type") != "caughtUp":
            raise Failure("%s could not join: %s" % (self.name, got[-1:] if got else "closed"))
        self.frames = 0

    def draw(self, points):
        """One stroke of `points` points, one frame each; waits for the ack of the last. A
        client the relay dropped for falling behind (it says "reconnect") reconnects, as the
        page and RelayClient do, and draws the stroke again: only acknowledged events count."""
        for attempt in range(3):
            try:
                return self._draw(points)
            except Reconnect as why:
                self.reconnects += 1
                self.conn.close()
                self.connect()
        raise Failure("%s: dropped three times in a row" % self.name)

    def _draw(self, points):
        self.stroke_index += 1
        stroke = hashlib.md5(("%s-%d" % (self.name, self.stroke_index)).encode()).hexdigest()
        sent = {}
        for i in range(points):
            x, y = round(self.rng.uniform(0, 800), 2), round(self.rng.uniform(0, 600), 2)
            self.conn.send_text(json.dumps({"type": "point", "stroke": stroke, "x": x, "y": y,
                                            "color": "#1E88E5FF", "width": 3}))
            sent[(x, y)] = True
        self.frames += points
        target = self.frames
        echoed = []
        ok = False
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            m = self.conn.next(timeout=max(0.1, deadline - time.monotonic()))
            if m is None and not self.conn.closed:
                continue
            if m is None:
                raise Failure("%s: the connection ended (%s; last frames %s)" % (self.name, self.conn.why, self.conn.last))
            if m.get("type") == "point" and norm(m.get("stroke")) == stroke:
                echoed.append(m)
            elif m.get("type") == "ack" and "replica" not in m and m["upTo"] >= target:
                ok = True
                break
            elif is_error(m) and "reconnect" in m.get("message", "") and "frame" not in m:
                raise Reconnect(m["message"])
            elif is_error(m):
                raise Failure("%s: refused: %s" % (self.name, m))
        if not ok:
            raise Failure("%s: no ack for frame %d within 120 s" % (self.name, target))
        if len(echoed) != points:
            raise Failure("%s: %d echoes for %d acknowledged points" % (self.name, len(echoed), points))
        for m in echoed:
            self.acknowledged["%s#%d" % (m["replica"], m["seq"])] = (norm(m["stroke"]), m["x"], m["y"])
        return echoed

    def settle(self, quiet=0.3, limit=180):
        """Reads until nothing has come for `quiet` seconds: what the relay broadcast before (an
        attacker's 35,000 points, say). The relay sends a client's acks ahead of traffic it has
        not written yet, but not ahead of what its socket already holds; draining that first
        measures the relay, not the client's reading."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            m = self.conn.next(timeout=quiet)
            if m is None:
                return
            if is_error(m) and "reconnect" in m.get("message", ""):
                self.reconnects += 1
                self.conn.close()
                self.connect()

    def probe(self):
        """One point, timed from send to ack (after `settle`, unless --probe-at-once): the
        latency an honest drawer sees."""
        if Honest.settle_before_probe:
            self.settle()
        t0 = time.monotonic()
        self.draw(1)
        ms = (time.monotonic() - t0) * 1000
        self.latencies.append(ms)
        return ms


# ------------------------------------------------------------------------------ native clients

def replica_key():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives import serialization
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    replica = hashlib.sha256(REPLICA_LABEL + public).digest()[:16].hex()
    return key, public, replica


def native_frame(key, board, replica_hex, events):
    message = segments.message_v1(replica_hex, [events])
    return message + key.sign(FRAME_LABEL + board.encode() + b"\0" + message)


def native_events(replica_hex, seqs, lamports, stroke=None):
    stroke = stroke or os.urandom(16).hex()
    return [{"type": "point", "stroke": stroke, "x": float(i % 700), "y": float(i % 500), "color": "#E53935FF",
             "width": 2.0, "seq": seq, "lamport": lamport, "time": 1_700_000_000_000 + seq}
            for i, (seq, lamport) in enumerate(zip(seqs, lamports))]


def native_hello(public, replica_hex, token):
    return json.dumps({"type": "hello", "replica": replica_hex, "key": public.hex(), "token": token})


# ------------------------------------------------------------------------------ the campaign

class Campaign:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.journal = os.path.abspath(args.journal_bin)
        self.root = tempfile.mkdtemp(prefix="relay-campaign-")
        self.shared = os.path.join(self.root, "shared")
        self.relays = {}
        self.watches = []
        self.attacker_strokes = set()
        self.counts = {}
        self.step_latencies = []

    # --- processes

    def start_relay(self, name):
        data = os.path.join(self.root, name)
        port = free_port()
        proc = subprocess.Popen([self.journal, "serve", "--port", str(port), "--data", data, "--close-idle-after", "0",
                                 "--max-native-replicas", "64", "--max-connections-per-token", "16"],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.root, name + ".log"), "w"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        self.relays[name] = {"data": data, "port": port, "proc": proc}

    def token(self, relay, board, scope, ttl="1h"):
        out = run(self.journal, "token", "--data", self.relays[relay]["data"], "--board", board, "--scope", scope,
                  "--ttl", ttl, "--json")
        return json.loads(out.stdout)

    def start_watch(self, name, create):
        """`journal sync --watch` between relay `name`'s board and the shared folder."""
        board = os.path.join(self.relays[name]["data"], BOARD)
        cmd = [self.journal, "sync", "-C", board, self.shared, "--watch", "--interval", "1"] + (["--create"] if create else [])
        self.watches.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if create:
            deadline = time.monotonic() + 60
            while not os.path.isdir(os.path.join(self.shared, "replicas")) and time.monotonic() < deadline:
                time.sleep(0.2)

    def open_board(self, name):
        """Makes relay `name`'s board a journal that relays do not found (one point recorded):
        with --open-boards, a board with no membership."""
        board = os.path.join(self.relays[name]["data"], BOARD)
        run(self.journal, "init", board)
        line = json.dumps({"type": "point", "stroke": os_uuid(), "x": 1.0, "y": 1.0})
        out = subprocess.run([self.journal, "record", "-C", board], input=line + "\n", capture_output=True, text=True)
        if out.returncode != 0:
            raise Failure("journal record: exit %d: %s" % (out.returncode, out.stderr.strip()))

    def stop(self):
        for p in self.watches:
            p.terminate()
        for r in self.relays.values():
            r["proc"].terminate()
        for p in self.watches + [r["proc"] for r in self.relays.values()]:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()

    # --- checks

    def log(self, relay):
        out = run(self.journal, "log", "-C", os.path.join(self.relays[relay]["data"], BOARD), check=False)
        events = {}
        for line in out.stdout.splitlines():
            e = json.loads(line)
            key = "%s#%d" % (e["replica"], e["seq"])
            if key in events:
                raise Failure("%s: event %s listed twice" % (relay, key))
            events[key] = e
        return events

    def check(self, step):
        for relay, client in self.honest.items():
            events = self.log(relay)
            for key, (stroke, x, y) in client.acknowledged.items():
                e = events.get(key)
                if e is None or (norm(e.get("stroke")), e.get("x"), e.get("y")) != (stroke, x, y):
                    raise Failure("step %d: acknowledged event %s of %s is %s in %s's journal" %
                                  (step, key, client.name, "missing" if e is None else "changed: %s" % e, relay))
            for e in events.values():
                if norm(e.get("stroke")) in self.attacker_strokes:
                    raise Failure("step %d: an attacker's stroke %s is in %s's journal" % (step, e["stroke"], relay))
            rss = proc_rss(self.relays[relay]["proc"].pid) / 2 ** 20
            if rss > self.args.max_rss_mb:
                raise Failure("step %d: relay %s holds %.0f MB, over %d" % (step, relay, rss, self.args.max_rss_mb))
            if self.relays[relay]["proc"].poll() is not None:
                raise Failure("relay %s died (its log: %s)" % (relay, os.path.join(self.root, relay + ".log")))
            ms = client.probe()
            self.step_latencies.append(ms)
            if ms > self.args.max_ack_ms:
                raise Failure("step %d: an honest ack took %.0f ms on %s (bound %d)" % (step, ms, relay, self.args.max_ack_ms))

    def expect_refused(self, conn, words, what):
        got = conn.until(is_error, timeout=30)
        if not got or not is_error(got[-1]):
            raise Failure("%s was not refused (%s)" % (what, got[-3:]))
        if not all(w in got[-1].get("message", "") for w in words):
            raise Failure("%s: refused for another reason: %s" % (what, got[-1]))
        conn.close()
        return got[-1]

    # --- attacks

    def attack_no_token(self, relay):
        conn = Conn(self.relays[relay]["port"], board="nobody-made-me")
        conn.send_text(json.dumps({"type": "hello"}))
        self.expect_refused(conn, ["needs a token"], "a client without a token")
        if os.path.exists(os.path.join(self.relays[relay]["data"], "nobody-made-me")):
            raise Failure("a client without a token made a board")

    def attack_forged_token(self, relay):
        view = self.token(relay, BOARD, "view")["token"]
        forged = view.replace(".view.", ".admin.", 1)
        conn = Conn(self.relays[relay]["port"])
        conn.send_text(json.dumps({"type": "hello", "token": forged}))
        m = self.expect_refused(conn, ["signature"], "a forged token")
        if forged in m["message"]:
            raise Failure("a refusal repeated the token")

    def attack_viewer_draws(self, relay):
        conn = Conn(self.relays[relay]["port"])
        conn.send_text(json.dumps({"type": "hello", "token": self.token(relay, BOARD, "view")["token"]}))
        stroke = os.urandom(16).hex()
        self.attacker_strokes.add(stroke)
        conn.send_text(json.dumps({"type": "point", "stroke": stroke, "x": 1, "y": 2}))
        self.expect_refused(conn, ["may only view"], "a viewer's point")

    def attack_other_board(self, relay):
        conn = Conn(self.relays[relay]["port"])
        conn.send_text(json.dumps({"type": "hello", "token": self.token(relay, "elsewhere", "admin")["token"]}))
        self.expect_refused(conn, ["not %s" % BOARD], "a token of another board")

    def attack_expired(self, relay):
        token = self.token(relay, BOARD, "draw", ttl="1")["token"]
        time.sleep(1.2)
        conn = Conn(self.relays[relay]["port"])
        conn.send_text(json.dumps({"type": "hello", "token": token}))
        self.expect_refused(conn, ["expired"], "an expired token")

    def attack_revoked(self, relay):
        minted = self.token(relay, BOARD, "draw")
        conn = Conn(self.relays[relay]["port"])
        conn.send_text(json.dumps({"type": "hello", "token": minted["token"]}))
        got = conn.until(lambda m: m.get("type") in ("caughtUp", "error"))
        if not got or got[-1].get("type") != "caughtUp":
            raise Failure("a valid draw token was refused: %s" % got[-1:])
        run(self.journal, "token", "--data", self.relays[relay]["data"], "--revoke", minted["id"])
        self.expect_refused(conn, ["revoked"], "a connection whose token was revoked")
        again = Conn(self.relays[relay]["port"])
        again.send_text(json.dumps({"type": "hello", "token": minted["token"]}))
        self.expect_refused(again, ["revoked"], "a revoked token")

    def victim_replica(self, relay):
        """The replica the honest client's events are recorded under on `relay` (the relay's own,
        seen in every event message)."""
        keys = list(self.honest[relay].acknowledged)
        return keys[-1].split("#")[0]

    def attack_impersonate(self, relay):
        key, public, _ = replica_key()
        victim = self.victim_replica(relay)
        conn = Conn(self.relays[relay]["port"])
        conn.send_text(native_hello(public, victim, self.draw_tokens[relay]))
        self.expect_refused(conn, ["is not the replica its"], "a native hello naming another replica")

    def attack_forge_native(self, relay):
        key, public, mine = replica_key()
        victim = self.victim_replica(relay)
        last = max(int(k.split("#")[1]) for k in self.honest[relay].acknowledged if k.startswith(victim))
        conn = Conn(self.relays[relay]["port"])
        conn.send_text(native_hello(public, mine, self.draw_tokens[relay]))
        conn.until(lambda m: m.get("type") in ("caughtUp", "error"))
        events = native_events(victim, range(last + 1, last + 21), [1] * 20)
        self.attacker_strokes.add(events[0]["stroke"])
        conn.send_binary(native_frame(key, BOARD, victim, events))
        self.expect_refused(conn, ["hello named"], "another replica's events signed with the attacker's key")

    def attack_replayed_frame(self, relay):
        key, public, mine = replica_key()
        conn = Conn(self.relays[relay]["port"])
        conn.send_text(native_hello(public, mine, self.draw_tokens[relay]))
        conn.until(lambda m: m.get("type") in ("caughtUp", "error"))
        events = native_events(mine, range(1, 4), range(1, 4))
        self.attacker_strokes.add(events[0]["stroke"])
        conn.send_binary(native_frame(key, "elsewhere", mine, events))
        self.expect_refused(conn, ["signature"], "a frame signed for another board")

    def attack_falling_clocks(self, relay):
        """Valid, but hostile in shape: one stroke whose clocks fall with seq (every point sorts
        first). Accepted; the honest client's acks must not wait on it."""
        key, public, mine = replica_key()
        conn = Conn(self.relays[relay]["port"])
        conn.send_text(native_hello(public, mine, self.draw_tokens[relay]))
        conn.until(lambda m: m.get("type") in ("caughtUp", "error"))
        n, per = self.args.falling_points, 1000
        stroke = os.urandom(16).hex()
        for start in range(1, n + 1, per):
            seqs = range(start, min(n + 1, start + per))
            conn.send_binary(native_frame(key, BOARD, mine, native_events(mine, seqs, [(1 << 22) - s for s in seqs], stroke)))
        ms = self.honest[relay].probe()
        got = conn.until(lambda m: m.get("type") == "ack" and m.get("replica") == mine and m["upTo"] >= n or is_error(m), timeout=120)
        conn.close()
        if got and is_error(got[-1]) and "--max-native-replicas" in got[-1]["message"]:
            self.counts["falling clocks refused (replica limit)"] = self.counts.get("falling clocks refused (replica limit)", 0) + 1
            return
        if not got or is_error(got[-1]) or got[-1].get("upTo", 0) < n:
            raise Failure("falling clocks: not acknowledged: %s" % got[-1:])
        self.counts["honest ack ms during falling clocks"] = max(self.counts.get("honest ack ms during falling clocks", 0), round(ms))

    def attack_replica_flood(self, relay):
        refused = 0
        for _ in range(self.args.flood_replicas):
            key, public, mine = replica_key()
            conn = Conn(self.relays[relay]["port"])
            conn.send_text(native_hello(public, mine, self.draw_tokens[relay]))
            # Refused at the hello (the board's membership names as many keys as the relay
            # admits by token) or at the first frame (the board holds as many replicas).
            got = conn.until(lambda m: m.get("type") in ("caughtUp", "error"))
            if not (got and is_error(got[-1])):
                conn.send_binary(native_frame(key, BOARD, mine, native_events(mine, [1], [1])))
                got = conn.until(lambda m: (m.get("type") == "ack" and "replica" in m) or is_error(m), timeout=30)
            if got and is_error(got[-1]):
                if "--max-native-replicas" not in got[-1]["message"]:
                    raise Failure("a new replica was refused for another reason: %s" % got[-1])
                refused += 1
            conn.close()
        if refused == 0:
            raise Failure("%d new native replicas were all taken on (limit 64)" % self.args.flood_replicas)
        self.counts["replicas refused"] = self.counts.get("replicas refused", 0) + refused

    def attack_big_frames(self, relay):
        conn = Conn(self.relays[relay]["port"])
        conn.send_text(json.dumps({"type": "hello", "token": self.draw_tokens[relay]}))
        conn.until(lambda m: m.get("type") in ("caughtUp", "error"))
        pts = ",".join('{"x":%d,"y":%d}' % (i % 1000, i % 777) for i in range(3500))
        stroke = os_uuid()
        frame = ('{"id":"%s","points":[%s],"red":0,"green":0.5,"blue":1,"alpha":1,"lineWidth":2}' % (stroke, pts))
        for _ in range(self.args.big_frames):
            conn.send_text(frame)
        conn.until(lambda m: m.get("type") == "ack" and m["upTo"] >= self.args.big_frames or is_error(m), timeout=300)
        conn.close()

    def attack_folder_forger(self, relay):
        """Anyone who can write the shared folder, without a key: a segment of the victim relay's
        replica reusing the first seqs it acknowledged, with clock 1 and the smallest wall times,
        the variant every fork rule would pick (FORMAT.md §8.8). Sync brings it into both boards;
        their membership (FORMAT.md §17.4: only signed segments count) must quarantine it, so
        nothing acknowledged changes."""
        victim = self.victim_replica(relay)
        held = sorted(int(k.split("#")[1]) for k in self.honest[relay].acknowledged if k.startswith(victim))
        run_ = [held[0]]
        while len(run_) < 20 and run_[-1] + 1 in held:
            run_.append(run_[-1] + 1)
        events = native_events(victim, run_, [1] * len(run_))
        for event in events:
            event["time"] = -(1 << 60)
        self.attacker_strokes.add(events[0]["stroke"])
        data = segments.message_v1(victim, [events])
        name = "%020d-%020d-%s.sjs" % (run_[0], run_[-1], hashlib.sha256(data).hexdigest()[:32])
        folder = os.path.join(self.shared, "replicas", victim)
        os.makedirs(folder, exist_ok=True)
        temporary = os.path.join(folder, ".forged-" + name)
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.rename(temporary, os.path.join(folder, name))
        # Wait until both boards' syncs have taken it in: checked before that, it proves nothing.
        deadline = time.monotonic() + 120
        while not all(os.path.exists(os.path.join(r["data"], BOARD, "replicas", victim, name)) for r in self.relays.values()):
            if time.monotonic() > deadline:
                raise Failure("the forged segment %s was not imported by both boards within 120 s" % name)
            time.sleep(0.2)

    def check_membership(self):
        """Both boards have the membership relay a founded (its host key the first admin), and
        each relay's text-mode writer is a member that draws."""
        founders = set()
        for name, r in self.relays.items():
            board = os.path.join(r["data"], BOARD)
            deadline = time.monotonic() + 60
            while True:
                listed = json.loads(run(self.journal, "members", "list", "-C", board, "--json").stdout)
                own = run(self.journal, "trust", "key", "-C", board).stdout.strip()
                mine = [m for m in listed["members"] if m["key"] == own and m["active"] and m["role"] in ("draw", "relay", "admin")]
                if not listed["open"] and mine:
                    break
                if time.monotonic() > deadline:
                    raise Failure("relay %s's board: membership %s, its own key %s not an active drawer" % (
                        name, "open" if listed["open"] else listed["board"], own))
                time.sleep(0.5)
            founders.add((listed["board"], listed["founder"]))
        if len(founders) != 1:
            raise Failure("the two relays' boards have different geneses: %s" % founders)

    ATTACKS = ["no_token", "forged_token", "viewer_draws", "other_board", "expired", "revoked", "impersonate",
               "forge_native", "replayed_frame", "falling_clocks", "replica_flood", "big_frames", "folder_forger"]

    # --- the run

    def run(self):
        t0 = time.monotonic()
        self.start_relay("a")
        # One relay folder for the federation (docs/DEPLOY.md, "Where keys and tokens live"):
        # tokens are valid on both relays, and the board both serve has one founder, their host
        # key (a board a relay creates gets membership: `journal serve --help`).
        shutil.copytree(os.path.join(self.relays["a"]["data"], ".relay"), os.path.join(self.root, "b", ".relay"))
        self.start_relay("b")
        self.draw_tokens = {}
        self.honest = {}
        if self.args.open_boards:
            for name in ("a", "b"):
                self.open_board(name)
        for name, who in (("a", "alice"), ("b", "bob")):
            if name == "b" and not self.args.open_boards:
                # b serves the board a founded: it starts from the shared folder's copy.
                board = os.path.join(self.relays["b"]["data"], BOARD)
                run(self.journal, "init", board)
                run(self.journal, "sync", "-C", board, self.shared)
            admin = self.token(name, BOARD, "admin")["token"]
            self.honest[name] = Honest(who, self.relays[name]["port"], admin, random.Random(self.rng.random()))
            self.draw_tokens[name] = self.token(name, BOARD, "draw")["token"]
            self.honest[name].draw(5)
            if not self.args.open_boards:
                self.start_watch(name, create=name == "a")
        if self.args.open_boards:
            for name in ("a", "b"):
                self.start_watch(name, create=name == "a")
        else:
            self.check_membership()
        done = {a: 0 for a in self.ATTACKS}
        worst = {}  # the slowest honest ack measured right after each kind of attack
        order = list(self.ATTACKS)  # every attack at least once, then at random
        for step in range(1, self.args.steps + 1):
            attack = order[step - 1] if step <= len(order) else self.rng.choice(self.ATTACKS)
            relay = self.rng.choice(["a", "b"])
            for client in self.honest.values():
                client.draw(self.rng.randint(1, 8))
            getattr(self, "attack_" + attack)(relay)
            done[attack] += 1
            probed = len(self.step_latencies)
            self.check(step)
            worst[attack] = max([worst.get(attack, 0)] + self.step_latencies[probed:])
            if not self.args.quiet:
                print("step %d: %s on %s ok" % (step, attack, relay), flush=True)
        # Both journals converge on every acknowledged event.
        deadline = time.monotonic() + 120
        while True:
            digests = [run(self.journal, "digest", "-C", os.path.join(r["data"], BOARD)).stdout.strip()
                       for r in self.relays.values()]
            logs = [self.log(name) for name in self.relays]
            everything = set().union(*(c.acknowledged for c in self.honest.values()))
            if digests[0] == digests[1] and all(everything <= set(log) for log in logs):
                break
            if time.monotonic() > deadline:
                raise Failure("the relays did not converge within 120 s: %s" % digests)
            time.sleep(1)
        # A client joining each relay holds the journal's drawing.
        for name, relay in self.relays.items():
            token = self.token(name, BOARD, "view")["token"]
            joined = run(self.journal, "join", "ws://127.0.0.1:%d/boards/%s/ws" % (relay["port"], BOARD), "--json",
                         env=dict(os.environ, JOURNAL_TOKEN=token))
            if json.loads(joined.stdout)["digest"] != digests[0]:
                raise Failure("a client joining %s holds %s, the journal %s" % (name, joined.stdout, digests[0]))
        lat = sorted(self.step_latencies)
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        acked = sum(len(c.acknowledged) for c in self.honest.values())
        self.counts["honest reconnections (dropped for falling behind)"] = sum(c.reconnects for c in self.honest.values())
        self.counts["slowest honest ack ms after each attack"] = {a: round(ms) for a, ms in worst.items()}
        print("relay campaign: %d steps (%s) in %.0f s; %d acknowledged events present once in both journals, "
              "none of the attackers'; honest ack p50 %.0f ms, p99 %.0f ms, max %.0f ms; relay RSS at most %d MB "
              "(bound %d); %s" % (
                  self.args.steps, ", ".join("%s %d" % (a, n) for a, n in done.items()), time.monotonic() - t0, acked,
                  lat[len(lat) // 2], p99, lat[-1], self.max_rss(), self.args.max_rss_mb, self.counts))

    def max_rss(self):
        return max(proc_rss(r["proc"].pid) // 2 ** 20 for r in self.relays.values())


def os_uuid():
    b = bytearray(os.urandom(16))
    b[6] = b[6] & 0x0F | 0x40
    b[8] = b[8] & 0x3F | 0x80
    h = b.hex().upper()
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="example: python3 Tools/ci/relay-campaign/relay_campaign.py "
                                       "--journal-bin .build/debug/journal --steps 40 --seed 3")
    p.add_argument("--journal-bin", type=journal_binary, required=True)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-ack-ms", type=int, default=5000,
                   help="an honest client's ack slower than this fails the step (default 5000: a debug "
                        "build on a loaded 2-core machine; the release target is 100)")
    p.add_argument("--max-rss-mb", type=int, default=1024)
    p.add_argument("--falling-points", type=int, default=20000)
    p.add_argument("--flood-replicas", type=int, default=70)
    p.add_argument("--big-frames", type=int, default=40)
    p.add_argument("--probe-at-once", action="store_true",
                   help="time honest acks without first reading what the relay sent before (the attackers' floods)")
    p.add_argument("--open-boards", action="store_true",
                   help="boards made (with a point) before the relays open them, so no relay founds their membership: "
                        "the folder forger's segment then wins its fork "
                        "and the campaign must fail (a check that the check can fail)")
    p.add_argument("--keep", action="store_true", help="keep the campaign's folder")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args()
    Honest.settle_before_probe = not args.probe_at_once
    try:
        import cryptography  # noqa: F401
    except ImportError:
        print("relay campaign: skipped: Python's cryptography (Debian: python3-cryptography) is missing")
        return 0
    campaign = Campaign(args)
    try:
        campaign.run()
        return 0
    except Failure as e:
        print("relay campaign FAILED: %s (folder kept: %s)" % (e, campaign.root), file=sys.stderr)
        args.keep = True
        return 1
    finally:
        campaign.stop()
        if not args.keep:
            shutil.rmtree(campaign.root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
