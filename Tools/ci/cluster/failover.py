#!/usr/bin/env python3
"""A relay cluster losing nodes: N `journal serve --share STORE` nodes behind HAProxy, which
sends each board to one node by consistent hashing of its path, with health checks. Clients
draw on several boards through HAProxy; at random moments one node is killed (kill -9) and
started again later. A text client whose connection ends reconnects through HAProxy (to
whichever node has the board now), and draws the stroke it was drawing again: only
acknowledged points count. A native client (`--native-boards`: its own replica and key,
signed blocks) sends again exactly what was not acknowledged, under the same ids.

At the end every node is stopped (SIGTERM: boards sealed and published), and for each board
the store is merged into a fresh journal, which must hold every acknowledged point exactly
once, with what was drawn, hold exactly the events the board's client was sent (catch-ups,
echoes and live events, over all its connections), and verify clean.

Needs haproxy (apt-get install haproxy). Prints the failover times (from a kill to the first
acknowledgement of a client that was on the killed node) and exits non-zero on any failed
check.

  python3 Tools/ci/cluster/failover.py --journal-bin .build/debug/journal --kills 6 --seed 1
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "Tools", "ci", "relay-campaign"))
from relay_campaign import Conn, native_events, native_frame, norm, replica_key  # noqa: E402
from relay_load import free_port  # noqa: E402


class Failure(Exception):
    pass


class Node:
    def __init__(self, journal, index, root, store, interval, ack, access=("--open",), extra=()):
        """`access`: how clients are let in (`--open`, or nothing: tokens); `extra`: more
        `journal serve` options (Tools/ci/cluster/membership.py: `--host-key FILE`)."""
        self.journal, self.index, self.ack = journal, index, ack
        self.data = os.path.join(root, "node%d" % index)
        self.port = free_port()
        self.store, self.interval = store, interval
        self.access, self.extra = list(access), list(extra)
        self.log = open(os.path.join(root, "node%d.log" % index), "ab")
        self.proc = None

    def command(self):
        return ([self.journal, "serve", "--port", str(self.port), "--data", self.data] + self.access +
                ["--share", self.store, "--share-interval", str(self.interval), "--ack", self.ack, "--close-idle-after", "3",
                 "--log-level", "info"] + self.extra)

    def start(self):
        self.proc = subprocess.Popen(self.command(), stdout=self.log, stderr=self.log, start_new_session=True)
        # Up once it listens (it publishes what it holds first): killed earlier, it would not
        # be the node the campaign means to kill.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failure("node %d ended at start (exit %s): see %s" % (self.index, self.proc.returncode, self.log.name))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise Failure("node %d not listening 120 s after its start" % self.index)

    cpu_seconds = 0.0  # every node's user + system time, read just before it was stopped

    def account(self):
        try:
            with open("/proc/%d/stat" % self.proc.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            Node.cpu_seconds += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass

    def kill(self, delete_disk=False):
        if self.proc.poll() is not None:
            raise Failure("node %d had ended by itself (exit %s): see %s" % (self.index, self.proc.returncode, self.log.name))
        self.account()
        if delete_disk:
            # The machine is lost: everything on it dies, the store syncs it started (rclone)
            # included, which would otherwise go on writing into the folder deleted below.
            os.killpg(self.proc.pid, signal.SIGKILL)
        else:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        if delete_disk:
            shutil.rmtree(self.data)

    def stop(self):
        if self.proc is None:
            return
        self.account()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Failure("node %d did not stop within 120 s of SIGTERM" % self.index)
        self.proc = None

    @property
    def up(self):
        return self.proc is not None


HAPROXY = """global
    maxconn 4096
defaults
    mode http
    timeout connect 1s
    timeout http-request 5s
    timeout client 60s
    timeout server 60s
    timeout tunnel 1h
    # A board's node that refuses the connection (down, not yet seen so): try another.
    retries 3
    option redispatch 1
frontend boards
    bind 127.0.0.1:%(port)d
    default_backend relays
backend relays
    # /boards/<board>/… and /boards/<board>: the first two path parts pick the node.
    balance uri depth 2
    hash-type consistent
    option httpchk GET /healthz
    http-check expect status 200
    default-server check inter 300 fall 2 rise 2
%(servers)s
"""


def join(name, port, board, hello, deadline, tries=None):
    """A connection to `board` through HAProxy that got its catch-up, and the messages until
    `caughtUp`; tried again until `deadline` (the board's node may be dying or starting).
    `tries`, a list, gets (seconds taken, what failed) of every try that failed."""
    last = None
    while time.monotonic() < deadline:
        began = time.monotonic()
        try:
            conn = Conn(port, board)
            conn.send_text(json.dumps(hello))
            got = conn.until(lambda m: m.get("type") in ("caughtUp", "error"), timeout=30)
            if got and got[-1].get("type") == "caughtUp":
                return conn, got
            last = got[-1:] if got else "closed"
            conn.close()
        except (OSError, RuntimeError) as error:
            last = repr(error)
        if tries is not None:
            tries.append((time.monotonic() - began, str(last)[:160]))
        time.sleep(0.2)
    raise Failure("%s could not join %s: %s" % (name, board, last))


def messages(conn, seconds):
    """What the relay sends, for up to `seconds`; a connection that ends is a ConnectionError."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        m = conn.next(timeout=max(0.1, deadline - time.monotonic()))
        if m is None and not conn.closed:
            continue
        if m is None:
            raise ConnectionError(conn.why)
        yield m


class Drawer:
    """A text client on one board through HAProxy, keeping what was acknowledged."""

    def __init__(self, name, board, port, rng):
        self.name, self.board, self.port, self.rng = name, board, port, rng
        self.acknowledged = {}  # "replica#seq" -> (stroke, x, y)
        self.strokes = 0
        self.reconnects = 0
        self.ack_seconds = []  # per stroke: from its last point sent to its ack
        self.held = set()  # "replica#seq" of every event this client was sent (catch-ups, echoes, live)
        self.connect(deadline=time.monotonic() + 60)

    def connect(self, deadline):
        # The catch-up as text events, so that the client knows which events it holds.
        self.conn, got = join(self.name, self.port, self.board, {"type": "hello", "echo": True}, deadline)
        for m in got:
            self.take(m)
        self.frames = 0

    def take(self, m):
        if "replica" in m and "seq" in m and m.get("type") not in ("ack", "error"):
            self.held.add("%s#%d" % (m["replica"], m["seq"]))

    def settle(self, seconds):
        """Reads what the relay sends for `seconds` (events another node published come late)."""
        for m in self.conn.until(lambda m: False, timeout=seconds):
            self.take(m)

    def draw(self, points):
        """One stroke; on a lost connection, reconnects and draws it again (a new stroke).
        Returns the seconds spent reconnecting, or None if none was needed."""
        lost_at = None
        for attempt in range(5):
            try:
                self._draw(points)
                return None if lost_at is None else time.monotonic() - lost_at
            except ConnectionError:
                if lost_at is None:
                    lost_at = time.monotonic()
                self.reconnects += 1
                self.conn.close()
                self.connect(deadline=time.monotonic() + 60)
        raise Failure("%s: lost the connection five times in a row" % self.name)

    def _draw(self, points):
        self.strokes += 1
        stroke = "%032x" % self.rng.getrandbits(128)
        for _ in range(points):
            x, y = round(self.rng.uniform(0, 800), 2), round(self.rng.uniform(0, 600), 2)
            try:
                self.conn.send_text(json.dumps({"type": "point", "stroke": stroke, "x": x, "y": y,
                                                "color": "#1E88E5FF", "width": 3}))
            except OSError as error:
                raise ConnectionError(repr(error))
        self.frames += points
        sent_at = time.monotonic()
        echoed = []
        for m in messages(self.conn, 60):
            self.take(m)
            if m.get("type") == "point" and norm(m.get("stroke")) == stroke:
                echoed.append(m)
            elif m.get("type") == "ack" and "replica" not in m and m["upTo"] >= self.frames:
                self.ack_seconds.append(time.monotonic() - sent_at)
                for e in echoed:
                    self.acknowledged["%s#%d" % (e["replica"], e["seq"])] = (stroke, e["x"], e["y"])
                if len(echoed) != points:
                    raise Failure("%s: %d echoes for %d acknowledged points" % (self.name, len(echoed), points))
                return
            elif m.get("type") == "error" and "frame" not in m:
                raise ConnectionError(m.get("message"))
            elif m.get("type") == "error":
                raise Failure("%s: refused: %s" % (self.name, m))
        raise ConnectionError("no ack within 60 s")


class NativeDrawer:
    """A native client (its own replica and Ed25519 key, signed blocks) on one board through
    HAProxy. Unlike a text client it names its events itself, so after a lost connection it
    sends again exactly the events not acknowledged, under the same ids: the relay's hosted
    path, acks by seq, and dedup by event id across nodes."""

    def __init__(self, name, board, port, rng):
        self.name, self.board, self.port, self.rng = name, board, port, rng
        self.key, self.public, self.replica = replica_key()
        self.sent = {}  # seq -> (stroke, x, y), in order
        self.acked = 0
        self.reconnects = 0
        self.ack_seconds = []
        self.held = None  # not followed: only what it sent is checked
        self.next_seq = 1
        self.resend_from = None
        self.last_loss = None
        self.connect(deadline=time.monotonic() + 60)

    @property
    def acknowledged(self):
        return {"%s#%d" % (self.replica, seq): v for seq, v in self.sent.items() if seq <= self.acked}

    def connect(self, deadline):
        # An open relay: no token (native_hello always names one).
        self.conn, _ = join(self.name, self.port, self.board,
                            {"type": "hello", "replica": self.replica, "key": self.public.hex()}, deadline)

    def draw(self, points):
        stroke = "%032x" % self.rng.getrandbits(128)
        seqs = list(range(self.next_seq, self.next_seq + points))
        self.next_seq += points
        for e in native_events(self.replica, seqs, seqs, stroke):
            self.sent[e["seq"]] = (stroke, e["x"], e["y"])
        lost_at = None
        for attempt in range(5):
            try:
                # Everything not acknowledged yet, under its own ids (a resend is idempotent).
                # A node that lacks earlier events of this replica (its previous node acknowledged
                # them but had not published them: --ack local) names the seq to send from; this
                # client keeps its events, so it sends from there, the acknowledged ones under
                # the same ids (the copies collapse by id once the other node publishes).
                start = min(self.acked + 1, self.resend_from or self.acked + 1)
                self.resend_from = None
                self._send_pending([seq for seq in self.sent if seq >= start])
                return None if lost_at is None else time.monotonic() - lost_at
            except ConnectionError as why:
                self.last_loss = str(why)
                if lost_at is None:
                    lost_at = time.monotonic()
                self.reconnects += 1
                self.conn.close()
                self.connect(deadline=time.monotonic() + 60)
        raise Failure("%s: lost the connection five times in a row (last: %s)" % (self.name, self.last_loss))

    def _send_pending(self, pending):
        runs = []
        for seq in pending:
            if runs and runs[-1][-1] + 1 == seq:
                runs[-1].append(seq)
            else:
                runs.append([seq])
        sent_at = time.monotonic()
        try:
            for run in runs:
                events = [{"type": "point", "stroke": self.sent[seq][0], "x": self.sent[seq][1], "y": self.sent[seq][2],
                           "color": "#E53935FF", "width": 2.0, "seq": seq, "lamport": seq,
                           "time": 1_700_000_000_000 + seq} for seq in run]
                self.conn.send_binary(native_frame(self.key, self.board, self.replica, events))
        except OSError as error:
            raise ConnectionError(repr(error))
        target = pending[-1]
        for m in messages(self.conn, 60):
            if m.get("type") == "ack" and m.get("replica") == self.replica:
                self.acked = max(self.acked, m["upTo"])
                if self.acked >= target:
                    self.ack_seconds.append(time.monotonic() - sent_at)
                    return
            elif m.get("type") == "error":
                found = re.search(r"send from seq (\d+)", m.get("message", ""))
                if found:
                    self.resend_from = int(found.group(1))
                raise ConnectionError(m.get("message"))
        raise ConnectionError("no ack within 60 s")

    def settle(self, seconds):
        pass



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--journal-bin", type=journal_binary, required=True)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--boards", type=int, default=4)
    parser.add_argument("--native-boards", type=int, default=1,
                        help="boards (of --boards) drawn on by a native client (own replica, signed blocks) instead of a text client")
    parser.add_argument("--kills", type=int, default=6)
    parser.add_argument("--strokes-between", type=int, default=3, help="strokes each client draws between two kills")
    parser.add_argument("--points", type=int, default=20)
    parser.add_argument("--share-interval", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--store", help="the shared store (default: a folder in the scratch folder)")
    parser.add_argument("--ack", choices=["local", "shared"], default="local",
                        help="the relays' --ack: shared acknowledges only what the store holds")
    parser.add_argument("--delete-disk", action="store_true",
                        help="delete a killed node's data folder too (with --ack shared: nothing acknowledged may be lost)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    if shutil.which("haproxy") is None:
        print("failover: haproxy is not installed (apt-get install haproxy)", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    journal = os.path.abspath(args.journal_bin)
    root = tempfile.mkdtemp(prefix="cluster-failover-")
    store = args.store or os.path.join(root, "store")
    if not args.store:
        os.mkdir(store)
    if args.delete_disk and args.ack != "shared":
        print("failover: --delete-disk needs --ack shared (with local acks a lost disk loses what was not yet published)",
              file=sys.stderr)
        return 2
    nodes = [Node(journal, i, root, store, args.share_interval, args.ack) for i in range(args.nodes)]
    proxy_port = free_port()
    servers = "\n".join("    server n%d 127.0.0.1:%d" % (n.index, n.port) for n in nodes)
    config = os.path.join(root, "haproxy.cfg")
    with open(config, "w") as f:
        f.write(HAPROXY % {"port": proxy_port, "servers": servers})
    haproxy = None
    failed = []
    failovers = []
    try:
        for node in nodes:
            node.start()
        haproxy = subprocess.Popen(["haproxy", "-f", config, "-db"], stdout=open(os.path.join(root, "haproxy.log"), "ab"),
                                   stderr=subprocess.STDOUT, start_new_session=True)
        boards = ["board%d" % i for i in range(args.boards)]
        drawers = [(NativeDrawer if i < args.native_boards else Drawer)("client-%s" % b, b, proxy_port, random.Random(rng.getrandbits(32)))
                   for i, b in enumerate(boards)]
        print("failover: %d nodes (--ack %s), %d boards, haproxy on %d, store %s" % (len(nodes), args.ack, len(boards), proxy_port, store))

        def round_of_strokes(samples):
            errors = []

            def run(drawer):
                try:
                    for _ in range(args.strokes_between):
                        took = drawer.draw(args.points)
                        if took is not None:
                            samples.append(took)
                except Failure as error:
                    errors.append(str(error))

            threads = [threading.Thread(target=run, args=(d,)) for d in drawers]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise Failure("; ".join(errors))

        round_of_strokes(failovers)
        for kill in range(args.kills):
            # A node is killed only while another one is up: losing every node is an outage,
            # not a failover.
            for node in nodes:
                if sum(n.up for n in nodes) >= 2:
                    break
                if not node.up:
                    node.start()
            victim = rng.choice([n for n in nodes if n.up])
            victim.kill(delete_disk=args.delete_disk)
            killed_at = time.monotonic()
            samples = []
            round_of_strokes(samples)
            failovers += samples
            print("failover: kill %d: node %d (kill -9%s); %d clients reconnected, slowest %.2f s; %s" % (
                kill + 1, victim.index, ", data folder deleted" if args.delete_disk else "", len(samples), max(samples) if samples else 0,
                "restarted" if kill % 2 == 0 else "left down for a round"))
            if kill % 2 == 0:
                victim.start()
            for node in nodes:
                if not node.up and rng.random() < 0.5:
                    node.start()
            del killed_at
        for node in nodes:
            if not node.up:
                node.start()
        round_of_strokes(failovers)
        # What restarted nodes published reaches the node serving each board within a few
        # share intervals, and it forwards that to its clients.
        settle = max(3.0, 8 * args.share_interval)
        threads = [threading.Thread(target=d.settle, args=(settle,)) for d in drawers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for d in drawers:
            d.conn.close()
        for node in nodes:
            node.stop()

        # Every acknowledged point is in the store, once, as drawn.
        total = 0
        for d in drawers:
            check = os.path.join(root, "check-" + d.board)
            out = subprocess.run([journal, "merge", os.path.join(store, d.board), "--into", check],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                failed.append("merge of %s: %s" % (d.board, out.stderr.strip()))
                continue
            verify = subprocess.run([journal, "verify", "-C", check], capture_output=True, text=True)
            if verify.returncode != 0:
                failed.append("verify of %s: %s" % (d.board, verify.stdout.strip()[-300:]))
            log = subprocess.run([journal, "log", "-C", check, "--json"], capture_output=True, text=True, check=True)
            held = {}
            every = set()
            for line in log.stdout.splitlines():
                e = json.loads(line)
                every.add("%s#%d" % (e["replica"], e["seq"]))
                if e.get("type") == "point":
                    key = "%s#%d" % (e["replica"], e["seq"])
                    held[key] = held.get(key, 0) + 1
                    if key in d.acknowledged and d.acknowledged[key] != (norm(e["stroke"]), e["x"], e["y"]):
                        failed.append("%s: %s holds %s, %s was acknowledged" % (d.board, key, e, d.acknowledged[key]))
            lost = [k for k in d.acknowledged if k not in held]
            twice = [k for k, n in held.items() if n > 1]
            if lost:
                failed.append("%s: %d acknowledged points not in the store (first %s)" % (d.board, len(lost), lost[:3]))
            if twice:
                failed.append("%s: %d points twice" % (d.board, len(twice)))
            # The client holds the same events as the journal: none it was sent is missing
            # from the store, none in the store passed it by. (A native drawer follows only
            # what it sent; its resends must still land once: "twice" above.)
            if d.held is not None and d.held != every:
                failed.append("%s: the client holds %d events the journal lacks (first %s) and lacks %d it holds (first %s)" % (
                    d.board, len(d.held - every), sorted(d.held - every)[:3], len(every - d.held), sorted(every - d.held)[:3]))
            total += len(d.acknowledged)
        acks = sorted(a for d in drawers for a in d.ack_seconds)
        if acks:
            print("failover: ack after a stroke's last point (--ack %s): p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d strokes" % (
                args.ack, 1000 * acks[len(acks) // 2], 1000 * acks[min(len(acks) - 1, int(0.99 * len(acks)))],
                1000 * acks[-1], len(acks)))
        if total:
            print("failover: the nodes' CPU: %.2f s in all, %.1f s per million acknowledged points (start-ups, "
                  "syncs and catch-ups included)" % (Node.cpu_seconds, Node.cpu_seconds / total * 1e6))
        failovers.sort()
        p95 = failovers[min(len(failovers) - 1, int(0.95 * len(failovers)))] if failovers else 0
        print("failover: %d acknowledged points on %d boards, %d checked in the store; %d reconnections, "
              "failover p50 %.2f s, p95 %.2f s, max %.2f s" % (
                  total, len(drawers), total, sum(d.reconnects for d in drawers),
                  failovers[len(failovers) // 2] if failovers else 0, p95, failovers[-1] if failovers else 0))
    except Failure as error:
        failed.append(str(error))
    finally:
        for node in nodes:
            if node.up:
                node.proc.kill()
        if haproxy is not None:
            haproxy.kill()
    return conclude("failover", failed, root, args.keep,
                    "every acknowledged point is in the store exactly once, every client holds the journal's events; verify clean")


def conclude(label, failed, root, keep, passed):
    """Says what failed (and keeps the scratch folder) or that the campaign passed (and removes
    it unless `keep`); the exit status."""
    if failed:
        print("%s: FAILED (scratch folder kept: %s)" % (label, root))
        for line in failed:
            print("  " + line)
        return 1
    print("%s: %s" % (label, passed))
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
