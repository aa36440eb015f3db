#!/usr/bin/env python3
"""One owner per board under frozen nodes: two `journal serve --share STORE --lease etcd://…`
nodes, an etcd of the campaign's own, and pens that never stop drawing on one board, each
connected to a node *directly* (no balancer: the case a balancer cannot prevent). Again and
again the node that serves the board is frozen (SIGSTOP) for longer than its lease lives, so
the other one claims the board and the pens move there, then thawed (SIGCONT): the thawed node
must acknowledge nothing more, and close its connections with `not-owner` (close 4421).

Each pen sends a point every `--pace` seconds as a text frame (with echo), whatever happens:
frames not acknowledged when a connection ends are sent again on the next one, to whichever
node takes it (tried in turn; a `not-owner` refusal says to try the other).

At the end both nodes are stopped (SIGTERM: boards sealed and published) and the store is
merged into a fresh journal. Checked:
- no acknowledged point is missing from it (with `--ack local`, the mode in which a node
  that acknowledges what another one also serves can lose it);
- the acks the pens got, in time order, switch between nodes no more often than the board
  changed owner (a thawed node acknowledging again would add switches): never two owners;
- every thaw ends the thawed node's connections with `not-owner`.
Reported: points recorded twice because a text frame was resent (text mode has no ids: the
frozen node recorded it, did not acknowledge it, and the client sent it again), and how long
the pens waited from a freeze to their next ack.

Needs etcd (apt-get install etcd-server).

  python3 Tools/ci/cluster/owners.py --journal-bin .build/debug/journal --flaps 4 --seed 1
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "relay-campaign"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "relay-load"))
from relay_campaign import Conn  # noqa: E402
from relay_load import free_port  # noqa: E402
from failover import Failure, Node  # noqa: E402

BOARD = "wall"


class Etcd:
    def __init__(self, root, lease_ttl=2):
        """`lease_ttl` 1 needs an election timeout of at most 666 ms: etcd grants no lease
        shorter than 1.5 times it, rounded up to a second."""
        self.port, peer = free_port(), free_port()
        self.log = open(os.path.join(root, "etcd.log"), "ab")
        timing = ["--heartbeat-interval", "50", "--election-timeout", "500"] if lease_ttl < 2 else []
        self.proc = subprocess.Popen(
            ["etcd", "--data-dir", os.path.join(root, "etcd"), "--name", "campaign"] + timing + [
             "--listen-client-urls", "http://127.0.0.1:%d" % self.port, "--advertise-client-urls", "http://127.0.0.1:%d" % self.port,
             "--listen-peer-urls", "http://127.0.0.1:%d" % peer, "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
             "--initial-cluster", "campaign=http://127.0.0.1:%d" % peer],
            stdout=self.log, stderr=self.log, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                request = urllib.request.Request("http://127.0.0.1:%d/v3/maintenance/status" % self.port, data=b"{}", method="POST")
                urllib.request.urlopen(request, timeout=1).read()
                return
            except OSError:
                time.sleep(0.2)
        raise Failure("etcd did not answer within 60 s: see %s" % self.log.name)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


class Pen:
    """A text client that never stops drawing: a point every `pace` seconds, one stroke of
    `points` after another; resends what was not acknowledged on its next connection."""

    def __init__(self, name, index, nodes, preferred, pace, points, log, patient=False):
        self.name, self.index, self.nodes, self.pace, self.points, self.log = name, index, nodes, pace, points, log
        # A patient pen never gives up on a quiet connection: it stays on a frozen node until
        # the node thaws (and closes it, or goes on acknowledging it).
        self.patient = patient
        self.order = [preferred] + [n for n in nodes if n is not preferred]
        self.pending = []  # points not yet acknowledged, in order: (stroke, x)
        self.acked = set()  # (stroke, x) acknowledged
        self.acks = []  # (monotonic time, node index)
        self.not_owner_closes = []  # (monotonic time, node index)
        self.refusals = 0
        self.conn = None
        self.node = None
        self.stop = threading.Event()
        self.stroke = None
        self.drawn = 0
        self.lock = threading.Lock()

    def connect(self):
        # The node that just failed is tried last.
        if self.node is not None:
            self.order = [n for n in self.order if n is not self.node] + [self.node]
        while not self.stop.is_set():
            for node in self.order:
                if not node.up:
                    continue
                try:
                    conn = Conn(node.port, BOARD)
                    conn.send_text(json.dumps({"type": "hello", "echo": True}))
                    got = conn.until(lambda m: m.get("type") in ("caughtUp", "error"), timeout=10)
                except (OSError, RuntimeError):
                    continue
                if got and got[-1].get("type") == "caughtUp":
                    self.conn, self.node, self.frames, self.in_flight = conn, node, 0, []
                    self.order = [node] + [n for n in self.order if n is not node]
                    if self.patient:
                        conn.ws.sock.settimeout(None)
                    # Resent first, in order: the points the last connection did not acknowledge.
                    for point in list(self.pending):
                        self.send(point)
                    return
                if got and got[-1].get("code") == "not-owner":
                    self.refusals += 1
                conn.close()
            time.sleep(0.1)

    def send(self, point):
        stroke, x = point
        self.conn.send_text(json.dumps({"type": "point", "stroke": stroke, "x": x, "y": self.index, "color": "#1E88E5FF", "width": 3}))
        self.frames += 1
        self.in_flight.append((self.frames, point))

    def take(self, m):
        if m.get("type") == "ack" and "replica" not in m:
            # When it arrived, not when this thread got to it: a patient pen blocks sending to
            # a frozen node, and takes acks the node sent before it froze only after the thaw.
            now = self.conn.received_at
            with self.lock:
                while self.in_flight and self.in_flight[0][0] <= m["upTo"]:
                    _, point = self.in_flight.pop(0)
                    self.acked.add(point)
                    if point in self.pending:
                        self.pending.remove(point)
                self.acks.append((now, self.node.index))
        elif m.get("type") == "error" and "frame" not in m:
            if m.get("code") == "not-owner":
                self.not_owner_closes.append((time.monotonic(), self.node.index))
        elif m.get("type") == "error":
            raise Failure("%s: a frame was refused: %s" % (self.name, m))

    def run(self):
        rng = random.Random(self.index)
        self.connect()
        next_at = time.monotonic()
        while not self.stop.is_set():
            if self.stroke is None or self.drawn == self.points:
                self.stroke, self.drawn = "%032x" % rng.getrandbits(128), 0
            point = (self.stroke, self.drawn)
            self.drawn += 1
            with self.lock:
                self.pending.append(point)
            try:
                self.send(point)
            except OSError:
                pass
            next_at += self.pace
            while True:
                m = self.conn.next(timeout=max(0.0, next_at - time.monotonic()))
                if m is None and self.conn.closed:
                    self.conn.close()
                    self.connect()
                    next_at = time.monotonic()
                    break
                if m is None:
                    break
                self.take(m)

    def finish(self, seconds):
        """Stops drawing, then waits up to `seconds` for what is pending to be acknowledged."""
        self.stop.set()
        deadline = time.monotonic() + seconds
        while self.pending and time.monotonic() < deadline:
            m = self.conn.next(timeout=0.5)
            if m is None and self.conn.closed:
                self.conn.close()
                self.stop.clear()
                self.connect()
                self.stop.set()
                continue
            if m is not None:
                self.take(m)
        self.conn.close()



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--journal-bin", type=journal_binary, required=True)
    parser.add_argument("--flaps", type=int, default=4, help="freezes of the board's owner")
    parser.add_argument("--freeze", type=float, default=4.0, help="seconds each freeze lasts (past the 2 s lease)")
    parser.add_argument("--pens", type=int, default=2)
    parser.add_argument("--pace", type=float, default=1 / 60, help="seconds between two points of a pen")
    parser.add_argument("--points", type=int, default=40, help="points per stroke")
    parser.add_argument("--ack", choices=["local", "shared"], default="local")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-lease", action="store_true", help="the baseline: the same nodes without --lease")
    parser.add_argument("--delete-disk", action="store_true", help="after each flap, kill the thawed node and delete its data folder")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if shutil.which("etcd") is None:
        print("owners: etcd is not installed (apt-get install etcd-server)", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    # A connection quiet this long (no ack, no ping) is taken for dead: a client cannot tell a
    # frozen node from a dead one, and moves on (the handshake too is bounded by it).
    socket.setdefaulttimeout(2.5)
    journal = os.path.abspath(args.journal_bin)
    root = tempfile.mkdtemp(prefix="cluster-owners-")
    store = os.path.join(root, "store")
    os.mkdir(store)
    etcd = Etcd(root)
    nodes = [Node(journal, i, root, store, 0.5, args.ack,
                  extra=[] if args.no_lease else ["--lease", "etcd://127.0.0.1:%d" % etcd.port, "--node", "node%d" % i])
             for i in range(2)]
    failed = []
    pens = []
    try:
        for node in nodes:
            node.start()
        pens = [Pen("pen%d" % i, i, nodes, nodes[0], args.pace, args.points, root, patient=(i == 0)) for i in range(args.pens)]
        threads = [threading.Thread(target=p.run, daemon=True) for p in pens]
        for t in threads:
            t.start()
        time.sleep(2)
        owner_changes = 0
        waits = []
        for flap in range(args.flaps):
            owner = max(nodes, key=lambda n: sum(1 for p in pens for (_, i) in p.acks[-20:] if i == n.index))
            frozen_at = time.monotonic()
            os.killpg(owner.proc.pid, signal.SIGSTOP)
            time.sleep(args.freeze + rng.uniform(0, 1))
            os.killpg(owner.proc.pid, signal.SIGCONT)
            thawed_at = time.monotonic()
            owner_changes += 1
            # The pens' first ack from the other node after the freeze: how long they waited.
            time.sleep(3)
            for p in pens:
                later = [t for (t, i) in p.acks if t > frozen_at and i != owner.index]
                if later and not p.patient:
                    waits.append(later[0] - frozen_at)
                elif not p.patient:
                    failed.append("flap %d: %s got no ack from another node after node%d froze" % (flap, p.name, owner.index))
                # The thawed node lost the board while frozen: it acknowledges nothing more.
                late = [t for (t, i) in p.acks if i == owner.index and t > thawed_at]
                if late:
                    failed.append("flap %d: %s was acknowledged %d times by node%d after it thawed" % (flap, p.name, len(late), owner.index))
            print("owners: flap %d: node%d frozen %.1f s; pens acknowledged again by node%d"
                  % (flap, owner.index, thawed_at - frozen_at, 1 - owner.index))
            if args.delete_disk:
                # The thawed node dies with its disk: what only it held is gone.
                owner.kill(delete_disk=True)
                owner.start()
        for p in pens:
            p.finish(60)
        for p in pens:
            if p.pending:
                failed.append("%s: %d points never acknowledged" % (p.name, len(p.pending)))
        # Acks in time order switch nodes only when the board changed owner.
        switches = 0
        last = None
        for (_, node) in sorted(a for p in pens for a in p.acks):
            if last is not None and node != last:
                switches += 1
            last = node
        # Pens move one by one: each owner change may show once per pen.
        if switches > owner_changes * len(pens):
            failed.append("acks switched nodes %d times for %d owner changes: two nodes acknowledged the board at once"
                          % (switches, owner_changes))
        for node in nodes:
            node.stop()
        check = os.path.join(root, "check")
        out = subprocess.run([journal, "merge", os.path.join(store, BOARD), "--into", check], capture_output=True, text=True)
        if out.returncode != 0:
            failed.append("merge: %s" % out.stderr.strip())
        log = subprocess.run([journal, "log", "-C", check], capture_output=True, text=True).stdout
        held = {}
        for line in log.splitlines():
            e = json.loads(line)
            if e.get("type") == "point":
                key = ((e["stroke"].replace("-", "").lower(), int(e["x"])), int(e["y"]))
                held[key] = held.get(key, 0) + 1
        lost = doubled = acknowledged = 0
        for p in pens:
            for point in p.acked:
                acknowledged += 1
                count = held.get((point, p.index), 0)
                if count == 0:
                    lost += 1
                elif count > 1:
                    doubled += 1
        if lost:
            failed.append("%d acknowledged points are in no journal" % lost)
        refusals = sum(p.refusals for p in pens)
        closes = sum(len(p.not_owner_closes) for p in pens)
        waits.sort()
        print("owners: %d pens, %d flaps (--ack %s): %d points acknowledged, %d lost, %d recorded twice (a text frame resent after "
              "the frozen node recorded it unacknowledged); %d not-owner refusals, %d not-owner closes; ack switches %d for %d owner changes"
              % (len(pens), args.flaps, args.ack, acknowledged, lost, doubled, refusals, closes, switches, owner_changes))
        if waits:
            print("owners: from a freeze to the next ack from the other node (pens that time out after 2.5 s): median %.2f s, max %.2f s"
                  % (waits[len(waits) // 2], waits[-1]))
    finally:
        for p in pens:
            p.stop.set()
        for node in nodes:
            if node.proc is not None:
                try:
                    os.killpg(node.proc.pid, signal.SIGCONT)
                except OSError:
                    pass
                node.proc.kill()
        etcd.stop()
        if not args.keep and not failed:
            shutil.rmtree(root, ignore_errors=True)
    if failed:
        print("owners: FAILED (scratch kept in %s):\n  %s" % (root, "\n  ".join(failed)), file=sys.stderr)
        return 1
    print("owners: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
