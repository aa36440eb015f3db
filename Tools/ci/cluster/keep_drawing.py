#!/usr/bin/env python3
"""Pens that never stop, through a cluster that loses nodes (issue 40): `--nodes` `journal
serve --share STORE` nodes behind HAProxy (as failover.py sets them up), one native pen per
board (its own replica and Ed25519 key, signed blocks, as a drawing page) sending `--hz`
points a second whatever happens, and one viewer per board following it as a page does.

A pen never waits for an ack before its next point. When its connection ends, or nothing came
for `--silence` seconds while points wait (a live relay repeats its last ack every half
second, docs/PROTOCOL.md "Signs of life"; a frozen one says nothing), it
reconnects through HAProxy and sends again, under the same ids, every point not acknowledged,
with those drawn meanwhile (a pen keeps drawing while it reconnects). Meanwhile, every
`--every` seconds, one of `--disruptions` happens (kill: kill -9, the data folder deleted with
`--delete-disk`; freeze: SIGSTOP for `--freeze` seconds, then SIGCONT; damage: a store copy of
a board's sealed segment cut to half or one of its bytes flipped (its size kept); remove: one
deleted), until `--events` of them have.

At the end the pens stop drawing and wait for their last acks, the nodes stop (SIGTERM:
boards sealed and published), and each board's store copy is merged into a fresh journal.
Counted, per board and in all:
  lost      acknowledged points the store lacks (must be 0)
  doubled   a point drawn once held twice (two ids for one stroke, x and y; must be 0)
  phantom   events a viewer was shown that the store never got (must be 0)
  metrics   each node's `GET /metrics`, scraped every 0.25 s and before each kill: a damaged
            copy seen replaced, or a removed one seen back, must show in some node's
            `strokejournal_store_repairs_total` (what an operator would see of the harm)
and reported: ack latency (a point's due time to its ack) p50 and p99, also apart for the
points sent during their board's failovers (between the pen's last ack before a lost connection
and its first after: no node could acknowledge those sooner) and for the others; failover (a
pen's loss of its connection or silence to its next ack) p50 and p95, how long joining again
took, and the disruptions' counts. Pens and viewers say what they hold in their hellos, as a
page does, so a catch-up brings only what they lack.

With `--lease`, the nodes take board leases from an etcd of the campaign's own (`journal serve
--lease`, one owner per board), `--lease-ttl` seconds long. A kill with `--delete-disk` is a
lost machine (everything on it dies, the shell that would revoke its lease too), so its boards
move once etcd lets its lease lapse.

Needs haproxy (and etcd with --lease).

  python3 Tools/ci/cluster/keep_drawing.py --journal-bin .build/release/journal --ack shared \\
      --delete-disk --pens 3 --disruptions kill:30,freeze:4,damage:2,remove:1 --every 3 --lease --lease-ttl 1
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "relay-campaign"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "relay-load"))
sys.path.insert(0, os.path.join(HERE, ".."))
from relay_campaign import native_frame, norm, replica_key  # noqa: E402
from relay_load import free_port  # noqa: E402
from failover import HAPROXY, Failure, Node, conclude, join  # noqa: E402
from journal_bin import journal_binary  # noqa: E402
from owners import Etcd  # noqa: E402


def percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))] if values else 0.0


class Pen(threading.Thread):
    """A native client drawing `hz` points a second on `board` until told to stop."""

    BATCH = 200  # points in one resent frame

    def __init__(self, board, port, hz, silence, rng):
        super().__init__(daemon=True)
        self.board, self.port, self.hz, self.silence, self.rng = board, port, hz, silence, rng
        self.key, self.public, self.replica = replica_key()
        self.sent = {}  # seq -> (stroke, x, y)
        self.sent_at = {}  # seq -> when first sent
        self.acked = 0
        self.latencies = []
        self.failovers = []
        # Per failover: (what was lost, seconds to join again, seconds from joining to the ack).
        self.failover_parts = []
        # (when lost, seconds to join again, what was lost, the tries that failed) over 2.5 s.
        self.slow_joins = []
        self.failover_tries = []
        # (last ack before a connection was lost, first ack after): the points sent between
        # were held by the failover, whatever any node did.
        self.outages = []
        self.last_ack_at = None
        self.reconnects = 0
        self.stop_drawing = threading.Event()
        self.error = None
        self.next_seq = 1
        self.stroke = None
        self.unsent_from = 1  # the first seq not written on the current connection
        self.resend_from = None  # asked by a node that lacks earlier events of this replica

    @property
    def acknowledged(self):
        return {"%s#%d" % (self.replica, seq): v for seq, v in self.sent.items() if seq <= self.acked}

    def connect(self):
        self.join_tries = []
        # What it holds, as a page says it (the page keeps what it was shown and acknowledged):
        # a catch-up then brings only what it lacks, not its whole board again.
        hello = {"type": "hello", "replica": self.replica, "key": self.public.hex()}
        if self.acked:
            hello["have"] = {self.replica: [[1, self.acked]]}
        self.conn, _ = join("pen-" + self.board, self.port, self.board, hello, time.monotonic() + 120, tries=self.join_tries)
        # Everything not acknowledged goes again, under its own ids; from earlier when the node
        # said it lacks those (acknowledged by a node that had not published them yet: the
        # copies collapse by id).
        self.unsent_from = min(self.acked + 1, self.resend_from or self.acked + 1)
        self.resend_from = None

    def draw_point(self, now):
        seq = self.next_seq
        self.next_seq += 1
        if self.stroke is None or seq % 120 == 1:
            self.stroke = "%032x" % self.rng.getrandbits(128)
        self.sent[seq] = (self.stroke, round(self.rng.uniform(0, 800), 2), round(self.rng.uniform(0, 600), 2))
        self.sent_at[seq] = now

    def flush(self):
        """Writes every drawn point not yet written on this connection."""
        while self.unsent_from < self.next_seq:
            seqs = list(range(self.unsent_from, min(self.next_seq, self.unsent_from + self.BATCH)))
            events = [{"type": "point", "stroke": self.sent[s][0], "x": self.sent[s][1], "y": self.sent[s][2],
                       "color": "#E53935FF", "width": 2.0, "seq": s, "lamport": s, "time": 1_700_000_000_000 + s} for s in seqs]
            self.conn.send_binary(native_frame(self.key, self.board, self.replica, events))
            self.unsent_from = seqs[-1] + 1

    def run(self):
        try:
            self.connect()
            period = 1.0 / self.hz
            next_point = time.monotonic()
            last_progress = last_heard = time.monotonic()
            lost_at = joined_at = outage_from = None
            lost_kind = None
            while True:
                now = time.monotonic()
                drawing = not self.stop_drawing.is_set()
                # The pen draws on time, even while the last connection was being replaced: a
                # point is timed from when it was due, not from when this thread (which joins
                # a node in between) got round to it.
                while drawing and now >= next_point:
                    self.draw_point(next_point)
                    next_point += period
                if not drawing and self.acked >= self.next_seq - 1:
                    return
                if not drawing and now - last_progress > 120:
                    raise Failure("pen %s: %d points never acknowledged" % (self.board, self.next_seq - 1 - self.acked))
                lost = None
                try:
                    self.flush()
                except OSError as error:
                    lost = repr(error)
                m = None if lost else self.conn.next(timeout=max(0.001, min(period, next_point - time.monotonic())))
                if m is not None:
                    # Any message is a sign of life (a relay repeats its last ack while frames wait).
                    last_heard = time.monotonic()
                if m is not None and m.get("type") == "ack" and m.get("replica") == self.replica:
                    if m["upTo"] > self.acked:
                        at = time.monotonic()
                        for seq in range(self.acked + 1, m["upTo"] + 1):
                            self.latencies.append((self.sent_at[seq], at - self.sent_at[seq]))
                        self.acked = m["upTo"]
                        last_progress = self.last_ack_at = at
                        if lost_at is not None:
                            self.outages.append((outage_from, at))
                            self.failovers.append(at - lost_at)
                            self.failover_parts.append((lost_kind, joined_at - lost_at, at - joined_at))
                            if joined_at - lost_at > 2.5:
                                self.slow_joins.append((lost_at - STARTED, joined_at - lost_at, lost_kind, self.failover_tries))
                            lost_at = None
                elif m is not None and m.get("type") == "error":
                    lost = "refused: %s" % m.get("message")
                    found = re.search(r"send from seq (\d+)", m.get("message", ""))
                    if found:
                        self.resend_from = int(found.group(1))
                elif m is None and self.conn.closed:
                    lost = self.conn.why
                waiting = self.acked < self.unsent_from - 1
                if lost is None and waiting and time.monotonic() - max(last_progress, last_heard) > self.silence:
                    lost = "nothing heard for %.1f s with points waiting" % self.silence
                if lost is not None:
                    if lost_at is None:
                        lost_at = time.monotonic()
                        outage_from = self.last_ack_at or lost_at
                        lost_kind = "silence" if lost.startswith("nothing heard") else "refused" if lost.startswith("refused") else "closed"
                        self.failover_tries = []
                    self.reconnects += 1
                    self.conn.close()
                    self.connect()
                    joined_at = time.monotonic()
                    self.failover_tries += self.join_tries
                    last_progress = last_heard = time.monotonic()
                elif not waiting:
                    last_progress = time.monotonic()
        except Exception as error:  # a pen that dies is a failed campaign, said at the end
            self.error = "%s: %r" % (self.board, error)


class Viewer(threading.Thread):
    """A text client following a board as a page does: every event it is shown counts."""

    def __init__(self, board, port):
        super().__init__(daemon=True)
        self.board, self.port = board, port
        self.shown = set()
        self.done = threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.done.is_set():
                conn, got = join("viewer-" + self.board, self.port, self.board, {"type": "hello", "have": self.have()},
                                 time.monotonic() + 120)
                for m in got:
                    self.take(m)
                while not self.done.is_set():
                    m = conn.next(timeout=0.2)
                    if m is None and conn.closed:
                        break
                    if m is not None:
                        self.take(m)
                conn.close()
        except Exception as error:
            self.error = "%s: %r" % (self.board, error)

    def take(self, m):
        if "replica" in m and "seq" in m and m.get("type") not in ("ack", "error"):
            self.shown.add("%s#%d" % (m["replica"], m["seq"]))

    def have(self):
        """What it was shown, per replica as seq ranges: what a page's hello says it holds."""
        seqs = {}
        for shown in self.shown:
            replica, seq = shown.split("#")
            seqs.setdefault(replica, []).append(int(seq))
        have = {}
        for replica, numbers in seqs.items():
            ranges = []
            for seq in sorted(numbers):
                if ranges and seq == ranges[-1][1] + 1:
                    ranges[-1][1] = seq
                else:
                    ranges.append([seq, seq])
            # The page's rule: at most 64 ranges a replica, the longest.
            have[replica] = sorted(sorted(ranges, key=lambda r: r[0] - r[1])[:64])
        return have


# (start, end) of every disruption, monotonic: a point sent near one waits for it, by design.
WINDOWS = []
# (node index, when) of every kill, and (node index, stopped, continued) of every freeze.
KILLED, FROZEN = [], []
# When the campaign began (monotonic), for the times its lines print.
STARTED = time.monotonic()


def disrupt(kind, nodes, store, args, rng, log, scrapes):
    start = time.monotonic()
    try:
        return disrupt_now(kind, nodes, store, args, rng, log, scrapes)
    finally:
        WINDOWS.append((start, time.monotonic(), kind))


def near(sent_at, margin):
    """The kind of the disruption a point sent then may have waited for (from 1 s before one
    began to `margin` seconds after it ended; the latest if several), or None."""
    kinds = [kind for start, end, kind in WINDOWS if start - 1 <= sent_at <= end + margin]
    return kinds[-1] if kinds else None


def disrupt_now(kind, nodes, store, args, rng, log, scrapes):
    up = [n for n in nodes if n.up]
    if kind in ("kill", "freeze") and len(up) < 2:
        for n in nodes:
            if not n.up:
                n.start()
        up = [n for n in nodes if n.up]
    if kind == "kill":
        victim = rng.choice(up)
        scrapes.scrape(victim)
        KILLED.append((victim.index, time.monotonic()))
        victim.kill(delete_disk=args.delete_disk)
        log("kill -9 node %d%s" % (victim.index, ", its data folder deleted" if args.delete_disk else ""))
        return victim
    if kind == "freeze":
        victim = rng.choice(up)
        scrapes.scrape(victim)  # its start time before, even if it was only just restarted
        victim.proc.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        time.sleep(args.freeze)
        FROZEN.append((victim.index, stopped, time.monotonic()))
        victim.proc.send_signal(signal.SIGCONT)
        log("node %d frozen %.1f s" % (victim.index, args.freeze))
        return None
    objects = store_of(store)
    segments = objects.segments()
    if not segments:
        log("%s: no sealed segment in the store yet" % kind)
        return None
    # The store cleans itself beside covers: an object listed a moment ago may be gone.
    for target in rng.sample(segments, min(3, len(segments))):
        if kind == "remove":
            if objects.remove(target):
                log("store copy %s removed" % target)
                HARMED.append(Harm("remove", target, None))
                return None
            continue
        whole = objects.read(target)
        if not whole:
            continue
        if rng.random() < 0.5:
            damaged = whole[:len(whole) // 2]
            what = "cut from %d to %d bytes" % (len(whole), len(damaged))
        else:
            # The same size: only a hash (a folder's bytes, an object store's MD5) tells.
            offset = rng.randrange(len(whole))
            damaged = whole[:offset] + bytes([whole[offset] ^ 0x40]) + whole[offset + 1:]
            what = "byte %d flipped, its size kept" % offset
        if objects.write(target, damaged):
            log("store copy %s %s" % (target, what))
            HARMED.append(Harm("damage", target, damaged))
            return None
    log("%s: the store copies chosen were gone before they could be harmed (cleaned beside covers)" % kind)
    return None


class Harm:
    """A store copy damaged or removed (`left`: the bytes left there, None: removed), and
    whether it was seen repaired: its bytes other than `left`, before anything cleaned it."""

    def __init__(self, kind, name, left):
        self.kind, self.name = kind, name
        self.left_md5 = hashlib.md5(left).hexdigest() if left is not None else None
        self.settled = False  # repaired, or gone (a copy cleaned beside a cover is not repaired)
        self.repaired = False
        self.at = time.monotonic()
        self.repaired_at = None

    def look(self, md5):
        """`md5`: the copy's MD5 now, None when there is none."""
        if self.settled:
            return
        if md5 is not None and md5 != self.left_md5:
            self.settled = self.repaired = True
            self.repaired_at = time.monotonic()
        elif md5 is None and self.left_md5 is not None:
            self.settled = True


# Every store copy the campaign damaged or removed.
HARMED = []


def harm_left_md5(name):
    """The MD5 of what the campaign left at `name` (the latest harm there)."""
    return next((harm.left_md5 for harm in reversed(HARMED) if harm.name == name), None)


def look_at_harm(objects):
    """Every harmed copy not settled yet, looked at once: one listing of the store."""
    unsettled = [harm for harm in list(HARMED) if not harm.settled]
    if unsettled:
        md5s = objects.md5s([harm.name for harm in unsettled])
        for harm in unsettled:
            harm.look(md5s.get(harm.name))


def watch_harm(objects, every, done):
    """`look_at_harm` every `every` seconds until `done`."""
    while not done.wait(every):
        look_at_harm(objects)


def store_of(address):
    return ObjectStore(address) if address.startswith("s3://") else FolderStore(address)


class FolderStore:
    def __init__(self, root):
        self.root = root

    def segments(self):
        found = []
        for folder, _, files in os.walk(self.root):
            found += [os.path.relpath(os.path.join(folder, f), self.root) for f in files if f.endswith(".sjs")]
        return sorted(found)

    def read(self, name):
        """The object's bytes, or None when there is none."""
        try:
            with open(os.path.join(self.root, name), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def md5s(self, names):
        """The MD5 of each of `names` that is there."""
        found = {}
        for name in names:
            data = self.read(name)
            if data is not None:
                found[name] = hashlib.md5(data).hexdigest()
        return found

    def write(self, name, data):
        """In place, as a disk or a careless tool damages a file (same name, same inode);
        false when it is gone."""
        try:
            with open(os.path.join(self.root, name), "r+b") as f:
                f.write(data)
                f.truncate(len(data))
            return True
        except FileNotFoundError:
            return False

    def remove(self, name):
        """False when it was gone already."""
        try:
            os.remove(os.path.join(self.root, name))
            return True
        except FileNotFoundError:
            return False


class ObjectStore:
    """An s3:// store through rclone, configured from the AWS variables as `journal` does."""

    def __init__(self, address):
        self.remote = ":s3:" + address[len("s3://"):].rstrip("/")
        self.env = dict(os.environ)
        self.env.setdefault("RCLONE_S3_ENV_AUTH", "true")
        if "AWS_ENDPOINT_URL" in os.environ:
            self.env.setdefault("RCLONE_S3_ENDPOINT", os.environ["AWS_ENDPOINT_URL"])
            self.env.setdefault("RCLONE_S3_PROVIDER", "Other")
            self.env.pop("AWS_CA_BUNDLE", None)

    def rclone(self, *args, data=None):
        return subprocess.run(["rclone"] + list(args), input=data, capture_output=True, env=self.env, check=True, timeout=60).stdout

    def segments(self):
        listing = self.rclone("lsf", "--recursive", "--files-only", self.remote).decode()
        return sorted(line for line in listing.splitlines() if line.endswith(".sjs"))

    def md5s(self, names):
        """The MD5 of each of `names` that is there, from one listing (S3's ETag of an object
        sent in one part)."""
        wanted = set(names)
        listing = self.rclone("lsf", "--recursive", "--files-only", "--format", "ph", "--hash", "MD5", self.remote).decode()
        found = {}
        for line in listing.splitlines():
            name, _, md5 = line.rpartition(";")
            if name in wanted:
                # No MD5 (an object sent in parts): there, its bytes unknown; not seen repaired.
                found[name] = md5 if re.fullmatch(r"[0-9a-f]{32}", md5) else harm_left_md5(name)
        return found

    def exists(self, name):
        folder, _, leaf = name.rpartition("/")
        return leaf in self.rclone("lsf", "--files-only", self.remote + "/" + folder).decode().splitlines()

    def read(self, name):
        # `rclone cat` of an object that is not there prints nothing and succeeds.
        if not self.exists(name):
            return None
        try:
            return self.rclone("cat", self.remote + "/" + name)
        except subprocess.CalledProcessError:
            if self.exists(name):
                raise
            return None

    def write(self, name, data):
        # An object store replaces whole objects: one that vanished since it was read would
        # be created again, so it is written only if it is still there (a race left, small).
        if not self.exists(name):
            return False
        self.rclone("rcat", self.remote + "/" + name, data=data)
        return True

    def remove(self, name):
        try:
            self.rclone("deletefile", self.remote + "/" + name)
            return True
        except subprocess.CalledProcessError:
            if self.exists(name):
                raise
            return False


class Scrapes:
    """What each node's `GET /metrics` said last, per incarnation (a restarted node's counters
    start at 0 again), as Prometheus keeps it: scraped every `every` seconds and just before a
    kill. A counter raised after a killed node's last scrape is lost with it, as it would be
    for Prometheus."""

    def __init__(self, nodes, every=0.25):
        self.nodes, self.every = nodes, every
        self.last = {}  # (node index, pid) -> {series: value}
        # node index -> [(monotonic time, its start time, or None: no answer)], every attempt
        self.answers = {}
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.wait(self.every):
            for node in self.nodes:
                self.scrape(node)

    def scrape(self, node):
        proc = node.proc
        if proc is None or proc.poll() is not None:
            return
        asked = time.monotonic()
        try:
            text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % node.port, timeout=1).read().decode()
        except OSError:
            # Frozen, starting or just killed: its last scrape stands (Prometheus' `up` is 0).
            with self.lock:
                self.answers.setdefault(node.index, []).append((asked, None))
            return
        series = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    series[name] = float(value)
                except ValueError:
                    pass
        with self.lock:
            self.last[(node.index, proc.pid)] = series
            self.answers.setdefault(node.index, []).append((asked, series.get("strokejournal_relay_start_time_seconds")))

    def stop(self):
        self.done.set()
        self.thread.join()

    def started_around(self, index, moment):
        """The start time `index` reported in its last answer before `moment` and in its first
        after it (None where there was none), and whether an attempt in between got no answer
        (`until`: the end of that window, else `moment` itself)."""
        return self.around(index, moment, moment)[:2]

    def around(self, index, since, until):
        with self.lock:
            answers = list(self.answers.get(index, []))
        before = [started for at, started in answers if at < since and started is not None]
        after = [started for at, started in answers if at > until and started is not None]
        unanswered = any(started is None for at, started in answers if since <= at <= until)
        return (before[-1] if before else None), (after[0] if after else None), unanswered

    def total(self, series):
        with self.lock:
            return sum(scraped.get(series, 0) for scraped in self.last.values())

    def total_of(self, name):
        """Every series of metric `name`, whatever its labels."""
        with self.lock:
            return sum(value for scraped in self.last.values() for series, value in scraped.items()
                       if series == name or series.startswith(name + "{"))


def what_the_metrics_show(scrapes, log):
    """Whether the nodes' metrics show the repairs of the harm the campaign did to the store:
    a damaged copy seen replaced (its bytes no longer the damaged ones) counted in
    `store_repairs_total{kind="damaged-replaced"}`, a removed one seen back in
    `{kind="lost-restored"}`. A copy gone (cleaned beside a cover) was not repaired. Each kind
    seen repaired must be counted at least once: a repair by a node killed before its next
    scrape dies with its counters (as it would for Prometheus), and a repair cleaned away
    between two looks is not seen, so the two need not be equal. A node counts a repair when
    the sync that made it ends, so one killed between its upload and that end repaired the
    store uncounted: a kind whose every repair raced a kill is not held to it."""
    seen = {kind: sum(1 for h in HARMED if h.kind == kind and h.repaired) for kind in ("damage", "remove")}
    # A node counts a repair when the sync that made it ends, which may be a second after the
    # copy is back in the store: a repair seen while a kill fell between the harm and a second
    # after it was seen may have been made by the node killed (its count died with it).
    raced = {kind: sum(1 for h in HARMED if h.kind == kind and h.repaired
                       and any(h.at <= at <= h.repaired_at + 1.0 for _, at in KILLED)) for kind in seen}
    harmed = {kind: sum(1 for h in HARMED if h.kind == kind) for kind in seen}
    counted = {"damage": scrapes.total('strokejournal_store_repairs_total{kind="damaged-replaced"}'),
               "remove": scrapes.total('strokejournal_store_repairs_total{kind="lost-restored"}')}
    log("metrics: damaged copies %d, seen replaced %d, counted %d; removed copies %d, seen back %d, counted %d; "
        "share rounds failed %d, store syncs failed %d, leases lost %d, over %d node incarnations" % (
            harmed["damage"], seen["damage"], counted["damage"], harmed["remove"], seen["remove"], counted["remove"],
            scrapes.total('strokejournal_share_rounds_total{outcome="failed"}'),
            scrapes.total('strokejournal_store_syncs_total{outcome="failed"}'),
            scrapes.total_of("strokejournal_leases_lost_total"), len(scrapes.last)))
    openings = {step: (scrapes.total('strokejournal_board_opening_seconds_count{step="%s"}' % step),
                       scrapes.total('strokejournal_board_opening_seconds_sum{step="%s"}' % step)) for step in ("lease", "store")}
    if openings["lease"][0] or openings["store"][0]:
        log("metrics: boards opened %d times, awaiting their lease %s, bringing them from the store %s (means over the scraped nodes); "
            "handed over to the node their clients were sent to %d times" % (
                max(openings["lease"][0], openings["store"][0]),
                *("%.2f s" % (total / count) if count else "n/a" for count, total in (openings["lease"], openings["store"])),
                scrapes.total("strokejournal_boards_handed_over_total")))
    for kind in seen:
        if raced[kind]:
            log("metrics: %d of the %d %s copies seen repaired raced a kill (one between the harm and a second after the repair was seen)"
                % (raced[kind], seen[kind], kind))
    failed = ["metrics: %d %s copies were seen repaired in the store (%d with no kill near), and no node's metrics counted one" % (
              seen[kind], kind, seen[kind] - raced[kind]) for kind in seen if seen[kind] > raced[kind] and counted[kind] == 0]
    # A kill shows as the node's start time changing once it is back (all are, before the last
    # scrape); a freeze as scrapes that get no answer while it lasts, then the same start time.
    restarts = 0
    for index, at in KILLED:
        before, after = scrapes.started_around(index, at)
        if after is not None and after != before:
            restarts += 1
        else:
            failed.append("metrics: node %d was killed at %.1f s and its start time did not change (%s, then %s)" % (
                index, at - STARTED, before, after))
    stalls = 0
    for index, stopped, continued in FROZEN:
        before, after, unanswered = scrapes.around(index, stopped, continued)
        if unanswered and before is not None and after == before:
            stalls += 1
        else:
            failed.append("metrics: node %d frozen from %.1f s to %.1f s: %s" % (
                index, stopped - STARTED, continued - STARTED,
                "every scrape meanwhile was answered" if not unanswered else "its start time went from %s to %s" % (before, after)))
    log("metrics: kills %d, seen as a new start time %d; freezes %d, seen as unanswered scrapes and the same start time after %d" % (
        len(KILLED), restarts, len(FROZEN), stalls))
    return failed


def record_stall(nodes, root, log):
    """A board that stopped being acknowledged: what each live node holds then, for whoever
    reads the kept scratch folder (its counters, its child processes and how long each has
    run, the seqs its boards lack below what they hold, its threads' stacks when gdb is
    installed). Both stalls seen so far were such a hole: a store copy removed, and every node
    holding it killed with its disk before putting it back."""
    for node in nodes:
        if node.proc is None or node.proc.poll() is not None:
            continue
        name = os.path.join(root, "node%d-stalled.txt" % node.index)
        with open(name, "w") as out:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % node.port, timeout=10) as answer:
                    out.write(answer.read().decode("utf-8", "replace"))
            except OSError as error:
                out.write("metrics: %r\n" % error)
            ps = subprocess.run(["ps", "-e", "-o", "pid,ppid,pgid,etimes,args"], capture_output=True, text=True)
            out.write("\n# processes of its group (pid ppid pgid seconds command)\n")
            out.write("\n".join(line for line in ps.stdout.splitlines()[1:] if line.split()[2:3] == [str(node.proc.pid)]) + "\n")
            out.write("\n# seqs missing below the last one held, per board and replica (from sealed names)\n")
            for board in sorted(os.listdir(node.data)) if os.path.isdir(node.data) else []:
                replicas = os.path.join(node.data, board, "replicas")
                for replica in sorted(os.listdir(replicas)) if os.path.isdir(replicas) else []:
                    spans = sorted((int(m.group(1)), int(m.group(2))) for m in
                                   (re.match(r"(\d+)-(\d+)-[0-9a-f]+\.sjs$", name) for name in os.listdir(os.path.join(replicas, replica))) if m)
                    held, holes = 0, []
                    for first, last in spans:
                        if first > held + 1:
                            holes.append("%d-%d" % (held + 1, first - 1))
                        held = max(held, last)
                    out.write("%s %s: up to %d, missing %s\n" % (board, replica, held, ", ".join(holes) or "nothing"))
            if shutil.which("gdb"):
                try:
                    stacks = subprocess.run(["gdb", "-p", str(node.proc.pid), "-batch", "-ex", "thread apply all bt"],
                                            capture_output=True, text=True, timeout=120)
                    out.write("\n# threads\n" + stacks.stdout[-400000:])
                except subprocess.TimeoutExpired:
                    out.write("\n# threads: gdb did not finish within 120 s\n")
        log("node %d stalled: its counters, processes and threads in %s" % (node.index, name))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--journal-bin", type=journal_binary, required=True)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--pens", type=int, default=3, help="boards, each with one pen and one viewer")
    parser.add_argument("--hz", type=float, default=60)
    parser.add_argument("--silence", type=float, default=2.0,
                        help="seconds without any message, points waiting, before a pen reconnects (the page's, "
                             "WireLimits.silentRelaySeconds: a relay gives signs of life every 0.5 s)")
    parser.add_argument("--events", type=int, default=10, help="disruptions in all")
    parser.add_argument("--every", type=float, default=3, help="seconds between two disruptions (± a third)")
    parser.add_argument("--disruptions", default="kill,freeze,damage,remove",
                        help="kinds, in turn then at random (--events in all), or KIND:COUNT each (exactly those, shuffled)")
    parser.add_argument("--freeze", type=float, default=3, help="seconds a frozen node stays stopped")
    parser.add_argument("--ack", choices=["local", "shared"], default="shared")
    parser.add_argument("--delete-disk", action="store_true")
    parser.add_argument("--share-interval", type=float, default=0.5)
    parser.add_argument("--store", help="the shared store: a folder (default: in the scratch folder) or s3://bucket/path "
                                        "(the keys and AWS_ENDPOINT_URL in the environment; damage and removal through rclone)")
    parser.add_argument("--lease", action="store_true",
                        help="one owner per board: the nodes take board leases from an etcd of the campaign's own "
                             "(journal serve --lease; needs etcd: apt-get install etcd-server)")
    parser.add_argument("--lease-ttl", type=int, default=2,
                        help="with --lease: the nodes' --lease-ttl (1 runs etcd with a 500 ms election timeout, "
                             "which it needs to grant 1 s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if args.lease and shutil.which("etcd") is None:
        print("keep-drawing: --lease needs etcd (apt-get install etcd-server)", file=sys.stderr)
        return 2
    if shutil.which("haproxy") is None:
        print("keep-drawing: haproxy is not installed (apt-get install haproxy)", file=sys.stderr)
        return 2
    if args.delete_disk and args.ack != "shared":
        print("keep-drawing: --delete-disk needs --ack shared", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    # "kill,freeze": those in turn, then at random, --events in all; "kill:30,freeze:4": exactly
    # that many of each, shuffled.
    kinds, plan = [], []
    for item in args.disruptions.split(","):
        kind, _, count = item.partition(":")
        kinds.append(kind)
        if count:
            plan += [kind] * int(count)
    if not set(kinds) <= {"kill", "freeze", "damage", "remove"}:
        print("keep-drawing: --disruptions takes kill, freeze, damage, remove (each may say :COUNT)", file=sys.stderr)
        return 2
    if plan:
        rng.shuffle(plan)
        args.events = len(plan)
    else:
        plan = [kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds) for i in range(args.events)]
    root = tempfile.mkdtemp(prefix="cluster-keep-drawing-")
    store = args.store or os.path.join(root, "store")
    if not args.store:
        os.mkdir(store)
    try:
        etcd = Etcd(root, args.lease_ttl) if args.lease else None
    except Failure as error:
        return conclude("keep-drawing", [str(error)], root, True, "")
    nodes = [Node(args.journal_bin, i, root, store, args.share_interval, args.ack,
                  extra=["--lease", "etcd://127.0.0.1:%d" % etcd.port, "--node", "node%d" % i,
                         "--lease-ttl", str(args.lease_ttl), "--behind-balancer"] if etcd else [])
             for i in range(args.nodes)]
    proxy_port = free_port()
    with open(os.path.join(root, "haproxy.cfg"), "w") as f:
        f.write(HAPROXY % {"port": proxy_port, "servers": "\n".join("    server n%d 127.0.0.1:%d" % (n.index, n.port) for n in nodes)})
    global STARTED
    started = STARTED = time.monotonic()

    def log(line):
        print("keep-drawing: %6.1f s  %s" % (time.monotonic() - started, line), flush=True)

    haproxy = None
    scrapes = watching = None
    failed = []
    done_kinds = {}
    pens, viewers = [], []
    try:
        for node in nodes:
            node.start()
        scrapes = Scrapes(nodes)
        # An object store is looked at through rclone (a process per look, on the machine the
        # nodes run on): less often.
        watching = threading.Event()
        watcher = threading.Thread(target=watch_harm, args=(store_of(store), 2.0 if store.startswith("s3://") else 0.2, watching), daemon=True)
        watcher.start()
        haproxy = subprocess.Popen(["haproxy", "-f", os.path.join(root, "haproxy.cfg"), "-db"],
                                   stdout=open(os.path.join(root, "haproxy.log"), "ab"), stderr=subprocess.STDOUT, start_new_session=True)
        boards = ["board%d" % i for i in range(args.pens)]
        pens = [Pen(b, proxy_port, args.hz, args.silence, random.Random(rng.getrandbits(32))) for b in boards]
        viewers = [Viewer(b, proxy_port) for b in boards]
        for thread in pens + viewers:
            thread.start()
        log("%d nodes (--ack %s%s%s), %d pens at %g Hz, haproxy on %d" % (
            len(nodes), args.ack, ", disks deleted" if args.delete_disk else "", ", board leases in etcd (TTL %d s)" % args.lease_ttl if etcd else "",
            len(pens), args.hz, proxy_port))
        time.sleep(args.every)
        restart_next = []
        for kind in plan:
            for node in restart_next:
                node.start()
            restart_next = []
            victim = disrupt(kind, nodes, store, args, rng, log, scrapes)
            if victim is not None:
                restart_next.append(victim)
            done_kinds[kind] = done_kinds.get(kind, 0) + 1
            time.sleep(args.every * rng.uniform(0.67, 1.33))
            dead = [p.error for p in pens + viewers if p.error]
            if dead:
                raise Failure("; ".join(dead))
        for node in nodes:
            if not node.up:
                node.start()
        for pen in pens:
            pen.stop_drawing.set()
        for pen in pens:
            pen.join(timeout=300)
        # What the nodes published reaches each board's node, and its viewer, within a few rounds.
        time.sleep(max(3.0, 8 * args.share_interval))
        for viewer in viewers:
            viewer.done.set()
            viewer.join(timeout=60)
        errors = [t.error for t in pens + viewers if t.error]
        if errors:
            if any("never acknowledged" in e for e in errors):
                record_stall(nodes, root, log)
            raise Failure("; ".join(errors))
        # The harmed copies looked at once more, then every node's counters: a repair seen
        # was made before the last scrape (the nodes' syncs at SIGTERM come after it).
        scrapes.stop()
        watching.set()
        watcher.join()
        look_at_harm(store_of(store))
        for node in nodes:
            scrapes.scrape(node)
        failed += what_the_metrics_show(scrapes, log)
        for node in nodes:
            node.stop()

        totals = {"acknowledged": 0, "lost": 0, "doubled": 0, "phantom": 0}
        for pen, viewer in zip(pens, viewers):
            check = os.path.join(root, "check-" + pen.board)
            out = subprocess.run([args.journal_bin, "merge", os.path.join(store, pen.board), "--into", check],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                failed.append("merge of %s: %s" % (pen.board, out.stderr.strip()))
                continue
            verify = subprocess.run([args.journal_bin, "verify", "-C", check], capture_output=True, text=True)
            if verify.returncode != 0:
                failed.append("verify of %s: %s" % (pen.board, verify.stdout.strip()[-300:]))
            events = [json.loads(line) for line in subprocess.run(
                [args.journal_bin, "log", "-C", check, "--json"], capture_output=True, text=True, check=True).stdout.splitlines()]
            held = {"%s#%d" % (e["replica"], e["seq"]): e for e in events}
            acknowledged = pen.acknowledged
            lost = [k for k in acknowledged if k not in held]
            drawn = {}
            for e in events:
                if e.get("type") == "point":
                    point = (norm(e["stroke"]), e["x"], e["y"])
                    drawn[point] = drawn.get(point, 0) + 1
            doubled = sum(n - 1 for n in drawn.values() if n > 1)
            phantom = sorted(viewer.shown - set(held))
            wrong = [k for k, v in acknowledged.items() if k in held and (norm(held[k]["stroke"]), held[k]["x"], held[k]["y"]) != v]
            totals["acknowledged"] += len(acknowledged)
            totals["lost"] += len(lost)
            totals["doubled"] += doubled
            totals["phantom"] += len(phantom)
            log("%s: %d points acknowledged, %d lost, %d doubled, %d phantom, %d reconnections" % (
                pen.board, len(acknowledged), len(lost), doubled, len(phantom), pen.reconnects))
            if lost:
                failed.append("%s: %d acknowledged points not in the store (first %s)" % (pen.board, len(lost), lost[:3]))
            if doubled:
                failed.append("%s: %d points held twice" % (pen.board, doubled))
            if phantom:
                failed.append("%s: the viewer was shown %d events no store holds (first %s)" % (pen.board, len(phantom), phantom[:3]))
            if wrong:
                failed.append("%s: %d points held other than drawn (first %s)" % (pen.board, len(wrong), wrong[:3]))
        latencies = [latency for p in pens for _, latency in p.latencies]
        by_kind = {}
        for p in pens:
            for sent, latency in p.latencies:
                by_kind.setdefault(near(sent, args.silence + 2) or "away", []).append(latency)
        calm = by_kind.get("away", [])
        failovers = [x for p in pens for x in p.failovers]
        log("disruptions: %s" % ", ".join("%s %d" % item for item in sorted(done_kinds.items())))
        log("ack latency (--ack %s): p50 %.0f ms, p99 %.0f ms, max %.0f ms over %d points" % (
            args.ack, 1000 * percentile(latencies, 0.5), 1000 * percentile(latencies, 0.99), 1000 * max(latencies or [0]), len(latencies)))
        log("ack latency away from disruptions (sent over %.1f s after one ended): p50 %.0f ms, p99 %.0f ms over %d points" % (
            args.silence + 2, 1000 * percentile(calm, 0.5), 1000 * percentile(calm, 0.99), len(calm)))
        for kind in sorted(k for k in by_kind if k != "away"):
            log("ack latency of points sent near a %s: p50 %.0f ms, p99 %.0f ms over %d points" % (
                kind, 1000 * percentile(by_kind[kind], 0.5), 1000 * percentile(by_kind[kind], 0.99), len(by_kind[kind])))
        log("failover (a lost connection or a silence to the next ack): p50 %.2f s, p95 %.2f s, max %.2f s over %d" % (
            percentile(failovers, 0.5), percentile(failovers, 0.95), max(failovers or [0]), len(failovers)))
        # A point sent while its board had no node (between the pen's last ack before a lost
        # connection and its first ack after) waits for the failover: over 1% of such points
        # and no p99 can be under the failover's time.
        held = [latency for p in pens for sent, latency in p.latencies if any(a < sent <= b for a, b in p.outages)]
        free = [latency for p in pens for sent, latency in p.latencies if not any(a < sent <= b for a, b in p.outages)]
        log("points sent during their board's failovers: %d of %d (%.1f%%), p50 %.0f ms; the others: p50 %.0f ms, p99 %.0f ms" % (
            len(held), len(latencies), 100.0 * len(held) / max(1, len(latencies)), 1000 * percentile(held, 0.5),
            1000 * percentile(free, 0.5), 1000 * percentile(free, 0.99)))
        for p in pens:
            for lost, took, kind, tries in p.slow_joins:
                log("  %s at %.1f s: joined again %.2f s after a connection %s; tries that failed: %s" % (
                    p.board, lost, took, kind, "; ".join("%.2f s %s" % t for t in tries) or "none"))
        parts = [x for p in pens for x in p.failover_parts]
        for kind in sorted({k for k, _, _ in parts}):
            joins = [j for k, j, _ in parts if k == kind]
            acks = [a for k, _, a in parts if k == kind]
            log("  after a connection %s: %d, joined again in p50 %.2f s / p95 %.2f s, then acknowledged in p50 %.2f s / p95 %.2f s" % (
                "that closed" if kind == "closed" else "refused" if kind == "refused" else "silent for --silence",
                len(joins), percentile(joins, 0.5), percentile(joins, 0.95), percentile(acks, 0.5), percentile(acks, 0.95)))
        log("%(acknowledged)d points acknowledged: %(lost)d lost, %(doubled)d doubled, %(phantom)d phantom" % totals)
    except Failure as error:
        failed.append(str(error))
    finally:
        for pen in pens:
            pen.stop_drawing.set()
        for viewer in viewers:
            viewer.done.set()
        for node in nodes:
            if node.up:
                try:
                    node.proc.send_signal(signal.SIGCONT)
                except ProcessLookupError:
                    pass
                node.proc.kill()
        if haproxy is not None:
            haproxy.kill()
        if etcd is not None:
            etcd.stop()
        if scrapes is not None:
            scrapes.stop()
            watching.set()
    return conclude("keep-drawing", failed, root, args.keep,
                    "passed: nothing acknowledged lost, nothing doubled, nothing shown that no store holds")


if __name__ == "__main__":
    sys.exit(main())
