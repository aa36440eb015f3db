#!/usr/bin/env python3
"""Membership travels with the board (issue 38), through a cluster: three
`journal serve --share STORE --ack shared --host-key HOST.KEY` nodes behind HAProxy, set up
as docs/DEPLOY.md ("Where keys and tokens live") tells an operator:

  - an admin key kept outside every data folder (`journal members keygen keys/admin.key`), and
    the board made by it in a journal of the admin's own (`journal init`, `journal members init
    --key`), published to the store (`journal sync --create`);
  - one host key for the cluster (`journal members keygen keys/host.key`), given to every node
    (`--host-key`), which the admin grants `relay` once;
  - tokens (the default, `--access tokens`): one relay signing key, made once and copied into
    every node's DATA/.relay/ before it first starts (`--access open` serves with `--open`:
    membership decides drawing on a board with membership either way);
  - members A and B (native clients, Ed25519 keys of their own) granted `draw` by the admin.

Checks (each prints one line with its numbers; the exit status is 1 if any failed):

  1. Forged files planted in the store never count on a node that adopts the board from it:
     (a) an unsealed version 1 segment of a fresh replica, (b) a version 3 segment of a
     non-member's journal, sealed by its own key, (c) membership statements signed by keys that
     are no admins (the non-member granting itself draw and revoking A, member A granting the
     non-member admin), (d) segments of A's replica at the seqs A is about to draw, sealed as
     host by the non-member's key. Every node starts with an empty data folder and adopts the
     board (through HAProxy, and directly); no client is ever sent a forged event (catch-up or
     live), and `journal log` of every node's board and of a fresh merge of the store hold none.
  2. A revocation reaches every node: A draws on one node, B on another, and B holds an idle
     connection on each other node. The admin revokes B in its own journal and syncs it to the
     store. For each node: the time from the revocation's file appearing in the node's board
     folder to B's connection there being closed (bound --max-revocation-seconds, 1 s); B's
     events after the revocation's cut count nowhere (every node's log, a merge of the store),
     its events acknowledged before the admin's sync still count, it is refused at a new hello,
     and no client is sent one of its post-cut events after its node dropped B.
  3. A node that loses its disk serves the same members: the node HAProxy sends the board to is
     killed (kill -9), its data folder deleted (with --access tokens, DATA/.relay/ is copied
     back from the cluster's copy, as an operator must), and it is started again with the same
     --host-key; A draws there and is acknowledged (its catch-up `have` holds all it was
     acknowledged before). An invitation (`journal members invite --json`, whose link must name
     the board, synced to the store) is redeemed on that node in a native hello's `redeem` (as
     identity.mjs makes it) as soon as the invitation's file is in the node's board folder: a
     refusal then fails the check (the drawing page forgets an invitation refused as "no
     invitation"; the campaign tries again for up to 10 s, to go on). The new key draws there;
     a node that did not redeem it lists the new member after its sync, and takes its drawing
     too (after what it lacks of it, resent from its catch-up's `have`).
  4. At the end every node is stopped (SIGTERM) and the store merged into a fresh journal: it
     holds every acknowledged point of the members exactly once, as drawn, none forged and none
     of B's after its cut; `journal verify` reports only the planted files and B's post-cut
     events as quarantined; every node's and the merge's `members list` agree; no client was
     sent a forged event, or one of B's post-cut events after its node dropped B.

The lines of checks 1-3 also give the nodes' CPU use and the machine's load average over the
check: the times of checks 2 and 3 are CPU-bound with debug binaries (a membership statement
makes a board reload its files; each share sync lists them), so a busy machine stretches them.

`--control-grant-outsider` is a control run: the admin grants the non-member draw, so its
planted segment counts, and checks 1 and 4 must fail. `--forgeries` plants a subset.

Needs haproxy and Python's cryptography (Debian: python3-cryptography). 1-2 minutes with the
debug binaries on 2 cores.

  python3 Tools/ci/cluster/membership.py --journal-bin .build/debug/journal --seed 1
  python3 Tools/ci/cluster/membership.py --journal-bin .build/debug/journal --access open --keep
"""

import argparse
import hashlib
import importlib.util
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # <repo>/Tools/ci/cluster
sys.path.insert(0, HERE)
from failover import HAPROXY, Failure, Node  # noqa: E402  (adds Tools/ci/relay-campaign to the path)
from relay_campaign import Conn, native_frame, norm  # noqa: E402
from relay_load import free_port  # noqa: E402
import segments  # noqa: E402  (Tools/ci/page-test, put on the path by relay_campaign)


def _membership_campaign():
    """Statement bytes and file helpers of Tools/ci/membership/campaign.py (loaded under a name
    of its own: that folder's module is called `campaign`)."""
    path = os.path.join(REPO, "Tools", "ci", "membership", "campaign.py")
    spec = importlib.util.spec_from_file_location("membership_campaign", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mc = _membership_campaign()

BOARD = "mural"
SEAL_LABEL = b"StrokeJournal sealed segment v1\0"


# ------------------------------------------------------------------------------ keys and files

class Key:
    """An Ed25519 key: a member's, an outsider's, an invitation's."""

    def __init__(self, seed):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives import serialization
        self.seed = bytes(seed)
        self.private = Ed25519PrivateKey.from_private_bytes(self.seed)
        self.public = self.private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.hex = self.public.hex()
        self.replica = mc.drawing_replica(self.public).hex()  # the replica it draws as (FORMAT.md §15.1)

    def sign(self, message):
        return self.private.sign(message)

    @classmethod
    def from_file(cls, path):
        """A `strokejournal-key v1` file (`journal members keygen`, local/replica.key)."""
        with open(path) as f:
            lines = f.read().split("\n")
        if lines[0] != "strokejournal-key v1":
            raise Failure("%s is no key file" % path)
        return cls(bytes.fromhex(lines[1]))


def statement_file(signer, seq, lamport, action, role, board_id, subject, label="", draw_cut=0, member_cut=0):
    """(membership replica hex, canonical name, bytes): a version 4 file of one statement
    signed by `signer` as `seq` of its membership replica (FORMAT.md §17.1-17.2)."""
    unsigned = mc.statement_bytes(lamport, int(time.time() * 1000), action, role, board_id, subject,
                                  draw_cut, member_cut, label, signer.public)
    replica = mc.membership_replica(signer.public, board_id)
    signature = signer.sign(mc.STATEMENT_LABEL + replica + struct.pack("<Q", seq) + unsigned)
    data = mc.file_header(4, replica) + mc.block(1, seq, lamport, unsigned + signature)
    return replica.hex(), mc.canonical_name(data, seq, seq), data


def redemption(code, member, wall_ms=None):
    """The hex of an invitation's redemption for `member` (FORMAT.md §17.6; as identity.mjs's
    makeRedemption): a grant of the invitation's role to `member`, signed by the invitation's
    key as seq 1 of its membership replica, its clock the invitation's + 1."""
    raw = bytes.fromhex(code)
    if len(raw) != 89:
        raise Failure("an invitation code of %d bytes (89 expected)" % len(raw))
    invitation = Key(raw[:32])
    if invitation.public != raw[32:64]:
        raise Failure("the invitation code's public key is not its secret's")
    board_id, lamport, role = raw[64:80], struct.unpack_from("<Q", raw, 80)[0], raw[88]
    statement = (struct.pack("<QqBB", lamport + 1, wall_ms or int(time.time() * 1000), 2, role) + board_id
                 + member.public + struct.pack("<QQB", 0, 0, 0) + invitation.public)
    replica = mc.membership_replica(invitation.public, board_id)
    signature = invitation.sign(mc.STATEMENT_LABEL + replica + struct.pack("<Q", 1) + statement)
    return (statement + signature).hex(), invitation


# The header versions of files that end in a seal record (FORMAT.md §15, §18).
SIGNED_VERSIONS = (b"\x03\x00", b"\x07\x00")


def reseal_as_host(segment, replica_hex, host):
    """A signed segment's (version 3 or 7) blocks under another replica's header, sealed by
    `host` with role host (FORMAT.md §15.1): what a relay whose key is no relay member would
    publish."""
    if segment[8:10] not in SIGNED_VERSIONS:
        raise Failure("not a signed segment (version 3 or 7): version %d" % struct.unpack_from("<H", segment, 8)[0])
    head = segment[:12] + bytes.fromhex(replica_hex)
    head += struct.pack("<I", zlib.crc32(head) & 0xFFFFFFFF)
    body = head + segment[32:-108]
    signature = host.sign(SEAL_LABEL + bytes([2]) + hashlib.sha256(body).digest())
    record = b"SJSG" + bytes([2, 0, 0, 0]) + host.public + signature
    return body + record + struct.pack("<I", zlib.crc32(record) & 0xFFFFFFFF)


def segment_name(data):
    """The canonical name of a drawing segment: its seq range from its block frames."""
    _, frames = segments.split(data[:-108] if data[8:10] in SIGNED_VERSIONS else data)
    first = frames[0]["first"]
    last = frames[-1]["first"] + frames[-1]["count"] - 1
    return "%020d-%020d-%s.sjs" % (first, last, hashlib.sha256(data).hexdigest()[:32])


# ------------------------------------------------------------------------------ clients

CLIENTS = []  # every connection the campaign opened: what each was sent is checked
CLIENTS_LOCK = threading.Lock()


class Client:
    """One WebSocket connection (to a node, or through HAProxy), read by a thread of its own:
    every event it is sent is kept with the time it came, the acks of its replica, and when and
    why the connection ended."""

    def __init__(self, name, port, node, hello):
        self.name, self.port, self.node = name, port, node
        self.events = []  # (monotonic time, replica, seq, stroke, x, y)
        self.acked = 0
        self.caught_up = None  # the caughtUp message
        self.error = None  # the connection's error message (the relay closes it after)
        self.error_at = None
        self.ended_at = None
        self.changed = threading.Condition()
        self.conn = Conn(port, BOARD)
        self.conn.send_text(json.dumps(hello))
        with CLIENTS_LOCK:
            CLIENTS.append(self)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        while True:
            m = self.conn.next(timeout=1)
            now = time.monotonic()
            if m is None:
                if not self.conn.closed:
                    continue
                with self.changed:
                    self.ended_at = now
                    self.changed.notify_all()
                return
            with self.changed:
                kind = m.get("type")
                if kind == "caughtUp":
                    self.caught_up = m
                elif kind == "ack":
                    if "replica" in m:
                        self.acked = max(self.acked, m["upTo"])
                elif kind == "error" and "frame" not in m:  # (a refused text frame: none sent here)
                    self.error = m.get("message", "")
                    self.error_at = now
                elif "replica" in m and "seq" in m:
                    self.events.append((now, m["replica"], m["seq"], norm(m.get("stroke")), m.get("x"), m.get("y")))
                self.changed.notify_all()

    def wait(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(min(left, 0.5))
            return True

    def wait_joined(self, timeout=60):
        """True once caught up; False when refused (the error is kept) or nothing came."""
        self.wait(lambda: self.caught_up is not None or self.ended_at is not None or self.error is not None, timeout)
        return self.caught_up is not None and self.error is None

    @property
    def ended(self):
        return self.ended_at is not None

    def close(self):
        self.conn.close()


class Member:
    """A native client's identity (its own key and replica) and what it sent, by seq. It may
    hold connections on several nodes; it draws on one at a time."""

    def __init__(self, name, key, rng):
        self.name, self.key, self.rng = name, key, rng
        self.replica = key.replica
        self.sent = {}  # seq -> (stroke, x, y)
        self.events = {}  # seq -> the event as sent (a resend sends the same bytes)
        self.next_seq = 1
        self.clients = []
        self.resent = 0  # events sent again because a node's catch-up said it lacked them

    @property
    def acked(self):
        return max([c.acked for c in self.clients] or [0])

    def connect(self, port, node, token=None, redeem=None, timeout=60):
        hello = {"type": "hello", "replica": self.replica, "key": self.key.hex}
        if token:
            hello["token"] = token
        if redeem:
            hello["redeem"] = redeem
        client = Client("%s@%s" % (self.name, node), port, node, hello)
        self.clients.append(client)
        if client.wait_joined(timeout):
            self.resend_lacking(client, timeout)
        return client

    def resend_lacking(self, client, timeout):
        """What this member sent that the node's catch-up `have` says it lacks, sent again under
        the same ids (PROTOCOL.md, native mode: a node that had the board open already may not
        have synced in yet what another node acknowledged). Raises a Failure if not acknowledged."""
        held = client.caught_up.get("have", {}).get(self.replica, [])
        lacking = [seq for seq in sorted(self.sent) if not any(lo <= seq <= hi for lo, hi in held)]
        if not lacking:
            return 0
        runs = []
        for seq in lacking:
            if runs and runs[-1][-1] + 1 == seq:
                runs[-1].append(seq)
            else:
                runs.append([seq])
        for run in runs:
            events = [self.events[seq] for seq in run]
            for start in range(0, len(events), 512):
                client.conn.send_binary(native_frame(self.key, BOARD, self.replica, events[start:start + 512]))
        last = lacking[-1]
        client.wait(lambda: client.acked >= last or client.ended or client.error is not None, timeout)
        if client.acked < last:
            raise Failure("%s: %d events resent (seqs %d-%d, the node held %s) not acknowledged: %s" % (
                client.name, len(lacking), lacking[0], last, held, client.error or "no ack"))
        self.resent += len(lacking)
        return len(lacking)

    def send_stroke(self, client, points):
        """One stroke of `points` points in one signed binary frame; the last seq it names."""
        stroke = "%032x" % self.rng.getrandbits(128)
        now = int(time.time() * 1000)
        events = []
        for i in range(points):
            seq = self.next_seq
            self.next_seq += 1
            x, y = round(self.rng.uniform(0, 800), 2), round(self.rng.uniform(0, 600), 2)
            self.sent[seq] = (stroke, x, y)
            events.append({"type": "point", "stroke": stroke, "x": x, "y": y, "color": "#E53935FF", "width": 2.0,
                           "seq": seq, "lamport": seq, "time": now + i})
            self.events[seq] = events[-1]
        client.conn.send_binary(native_frame(self.key, BOARD, self.replica, events))
        return self.next_seq - 1

    def draw(self, client, strokes=1, points=8, timeout=60):
        """Strokes, each acknowledged before the next; a Failure naming why not."""
        for _ in range(strokes):
            try:
                last = self.send_stroke(client, points)
            except OSError as error:
                raise Failure("%s: could not send (%r; the connection's error: %s)" % (client.name, error, client.error))
            if not client.wait(lambda: client.acked >= last or client.ended or client.error is not None, timeout):
                raise Failure("%s: seq %d not acknowledged within %d s" % (client.name, last, timeout))
            if client.acked < last:
                raise Failure("%s: seq %d not acknowledged: %s" % (client.name, last, client.error or "the connection ended"))

    def draw_on(self, client, stop, points=5, pause=0.1):
        """Strokes sent without waiting for acks until `stop` is set or the connection ends."""
        while not stop.is_set() and not client.ended and client.error is None:
            try:
                self.send_stroke(client, points)
            except OSError:
                return
            stop.wait(pause)

    def acknowledged(self, upto=None):
        """'replica#seq' -> (stroke, x, y) of every event acknowledged (at most `upto`)."""
        top = self.acked if upto is None else min(self.acked, upto)
        return {"%s#%d" % (self.replica, s): v for s, v in self.sent.items() if s <= top}


def cpu_seconds(node):
    """A running node's user + system CPU time so far (0 when it is not running)."""
    try:
        with open("/proc/%d/stat" % node.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, IndexError, ValueError):
        return 0.0


class CPU:
    """The nodes' CPU use (one core = 100%) over a window, and the machine's load average."""

    def __init__(self, nodes):
        self.nodes = list(nodes)
        self.start = {n.index: cpu_seconds(n) for n in self.nodes}
        self.t0 = time.monotonic()

    def __str__(self):
        seconds = max(1e-3, time.monotonic() - self.t0)
        return "nodes' CPU %s, load average %.1f" % (
            " ".join("n%d %.0f%%" % (n.index, 100 * (cpu_seconds(n) - self.start[n.index]) / seconds) for n in self.nodes),
            os.getloadavg()[0])


class Arrivals:
    """When a new file (a name not in `before`) first appears in each node's copy of one
    replica folder: a thread per node looks every 3 ms."""

    def __init__(self, folders, before):
        self.at = {}
        self.stopped = threading.Event()
        for index, folder in folders.items():
            threading.Thread(target=self._poll, args=(index, folder, set(before)), daemon=True).start()

    def _poll(self, index, folder, before):
        while not self.stopped.is_set():
            try:
                names = os.listdir(folder)
            except OSError:
                names = []
            if any(n.endswith(".sjs") and not n.startswith(".") and n not in before for n in names):
                self.at[index] = time.monotonic()
                return
            time.sleep(0.003)

    def wait(self, index, timeout):
        deadline = time.monotonic() + timeout
        while index not in self.at and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.at.get(index)

    def stop(self):
        self.stopped.set()


# ------------------------------------------------------------------------------ the campaign

class Campaign:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.journal = os.path.abspath(args.journal_bin)
        self.root = tempfile.mkdtemp(prefix="cluster-membership-")
        self.store = os.path.join(self.root, "store")
        self.keys = os.path.join(self.root, "keys")  # outside every data folder
        # The admin's own copy of the board, named as the board: `members invite` names the
        # board of its link after the journal's folder.
        self.admin_board = os.path.join(self.root, "admin", BOARD)
        os.mkdir(self.store)
        os.mkdir(self.keys)
        self.nodes = []
        self.haproxy = None
        self.failed = []  # (check number, line)
        self.planted = {}  # "replica/name" -> what it is
        self.forged_replicas = set()
        self.forged_strokes = set()
        self.tokens = {}  # scope -> a token for BOARD (--access tokens)

    # --- helpers

    def run(self, *args, stdin=None, check=True):
        out = subprocess.run([self.journal, *args], input=stdin, capture_output=True, text=True)
        if check and out.returncode != 0:
            raise Failure("journal %s: exit %d: %s" % (" ".join(args), out.returncode, (out.stderr or out.stdout).strip()[-600:]))
        return out

    def check(self, number, ok, text):
        line = "membership: check %s %s: %s" % (number, "ok" if ok else "FAILED", text)
        print(line, flush=True)
        if not ok:
            self.failed.append((str(number), line))

    def say(self, text):
        print("membership: " + text, flush=True)

    def members(self, journal):
        out = self.run("members", "list", "-C", journal, "--json")
        return json.loads(out.stdout)

    def member(self, journal, key_hex):
        return next((m for m in self.members(journal)["members"] if m["key"] == key_hex), None)

    def log(self, journal):
        """Every event `journal log` prints, as 'replica#seq' -> event."""
        out = self.run("log", "-C", journal, "--json")
        events = {}
        for line in out.stdout.splitlines():
            e = json.loads(line)
            key = "%s#%d" % (e["replica"], e["seq"])
            if key in events:
                raise Failure("%s: event %s printed twice" % (journal, key))
            events[key] = e
        return events

    def merged(self, label):
        """A fresh journal holding the store's board (`journal merge`)."""
        into = os.path.join(self.root, "merge-" + label)
        self.run("merge", os.path.join(self.store, BOARD), "--into", into)
        return into

    def forged(self, replica, seq, stroke, x, y):
        """Why an event is forged (or changed), or None."""
        if replica in self.forged_replicas:
            return "replica %s is a forger's" % replica[:12]
        if stroke in self.forged_strokes:
            return "a forged stroke"
        for m in self.people:
            if m.replica == replica:
                sent = m.sent.get(seq)
                if sent is None:
                    return "%s never sent seq %d" % (m.name, seq)
                if sent != (stroke, x, y):
                    return "%s sent %s at seq %d" % (m.name, sent, seq)
        return None

    def forged_in(self, events):
        return [(k, why) for k, e in events.items()
                for why in [self.forged(e["replica"], e["seq"], norm(e.get("stroke")), e.get("x"), e.get("y"))] if why]

    def forged_sent(self):
        """(client, replica#seq, why) of every forged event a client was sent."""
        found = []
        with CLIENTS_LOCK:
            clients = list(CLIENTS)
        for c in clients:
            for _, replica, seq, stroke, x, y in list(c.events):
                why = self.forged(replica, seq, stroke, x, y)
                if why:
                    found.append((c.name, "%s#%d" % (replica, seq), why))
        return found

    def node_board(self, node):
        return os.path.join(node.data, BOARD)

    def admin_folder(self, journal):
        """The folder of the admin key's statements in a journal of the board."""
        return os.path.join(journal, "replicas", self.admin_mreplica)

    def admin_folders(self, nodes):
        return {n.index: self.admin_folder(self.node_board(n)) for n in nodes}

    def viewer(self, node):
        """A text client that only watches, directly on `node` (it keeps the board open there)."""
        hello = {"type": "hello", **({"token": self.tokens["view"]} if self.tokens else {})}
        client = Client("viewer@n%d" % node.index, node.port, "n%d" % node.index, hello)
        if not client.wait_joined(60):
            raise Failure("%s could not join: %s" % (client.name, client.error or "closed"))
        return client

    # --- setup, as docs/DEPLOY.md says

    def setup(self):
        a = self.args
        admin_key = os.path.join(self.keys, "admin.key")
        host_key = os.path.join(self.keys, "host.key")
        self.admin_hex = self.run("members", "keygen", admin_key).stdout.strip()
        self.host_hex = self.run("members", "keygen", host_key).stdout.strip()
        self.admin_key_file, self.host_key_file = admin_key, host_key
        self.admin = Key.from_file(admin_key)
        seeds = random.Random(self.rng.getrandbits(64))
        self.A = Member("A", Key(seeds.randbytes(32)), random.Random(self.rng.getrandbits(64)))
        self.B = Member("B", Key(seeds.randbytes(32)), random.Random(self.rng.getrandbits(64)))
        self.E = Member("E", Key(seeds.randbytes(32)), random.Random(self.rng.getrandbits(64)))
        self.people = [self.A, self.B, self.E]
        os.mkdir(os.path.dirname(self.admin_board))
        self.run("init", self.admin_board)
        self.run("members", "init", "-C", self.admin_board, "--key", admin_key, "--label", "admin")
        self.run("members", "grant", "-C", self.admin_board, "--key", admin_key, self.host_hex, "--role", "relay", "--label", "cluster")
        for m in (self.A, self.B):
            self.run("members", "grant", "-C", self.admin_board, "--key", admin_key, m.key.hex, "--role", "draw", "--label", m.name)
        self.run("sync", "-C", self.admin_board, os.path.join(self.store, BOARD), "--create")
        view = self.members(self.admin_board)
        self.board_id = bytes.fromhex(view["board"])
        self.admin_mreplica = mc.membership_replica(self.admin.public, self.board_id).hex()
        if not os.path.isdir(os.path.join(self.store, BOARD, "replicas", self.admin_mreplica)):
            raise Failure("the store holds no folder of the admin's statements (%s)" % self.admin_mreplica)
        self.node_args = ["--host-key", host_key]
        access = ["--open"] if a.access == "open" else []
        self.nodes = [Node(self.journal, i, self.root, self.store, a.share_interval, a.ack, access=access, extra=self.node_args)
                      for i in range(3)]
        if a.access == "tokens":
            # One relay signing key for the cluster, made once and copied into each node's
            # DATA/.relay/ before it first starts (DEPLOY.md); a copy is kept outside too.
            for scope in ("view", "draw"):
                self.tokens[scope] = json.loads(self.run("token", "--data", self.nodes[0].data, "--board", BOARD, "--scope", scope,
                                                         "--ttl", "2h", "--json").stdout)["token"]
            self.relay_secret = os.path.join(self.keys, "relay-secret")
            shutil.copytree(os.path.join(self.nodes[0].data, ".relay"), self.relay_secret)
            for node in self.nodes[1:]:
                os.makedirs(node.data)
                shutil.copytree(self.relay_secret, os.path.join(node.data, ".relay"))
            shutil.rmtree(os.path.join(self.nodes[0].data))
            os.makedirs(self.nodes[0].data)
            shutil.copytree(self.relay_secret, os.path.join(self.nodes[0].data, ".relay"))

    def plant(self, replica_hex, name, data, what):
        folder = os.path.join(self.store, BOARD, "replicas", replica_hex)
        os.makedirs(folder, exist_ok=True)
        temporary = os.path.join(folder, ".planting-" + name)
        with open(temporary, "wb") as f:
            f.write(data)
        os.rename(temporary, os.path.join(folder, name))
        self.planted[replica_hex + "/" + name] = what

    def plant_forgeries(self):
        rng = random.Random(self.rng.getrandbits(64))
        # (a) an unsealed version 1 segment of a fresh replica (no key names it).
        fresh = rng.randbytes(16).hex()
        stroke = "%032x" % rng.getrandbits(128)
        events = [{"type": "point", "stroke": stroke, "x": float(i), "y": float(i), "color": "#000000FF", "width": 9.0,
                   "seq": i, "lamport": i, "time": -(1 << 40) + i} for i in range(1, 21)]
        data = segments.message_v1(fresh, [events])
        if "a" in self.args.forgeries:
            self.plant(fresh, segment_name(data), data, "(a) unsealed segment of a fresh replica")
        self.forged_replicas.add(fresh)
        self.forged_strokes.add(stroke)
        # (b) a non-member's own journal: version 3, sealed by its key (`journal record`, `sync`).
        outsider = os.path.join(self.root, "outsider")
        self.run("init", outsider)
        lines = []
        for _ in range(3):
            sid = str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper()
            self.forged_strokes.add(norm(sid))
            for i in range(4):
                lines.append(json.dumps({"type": "point", "stroke": sid, "x": rng.uniform(0, 800), "y": rng.uniform(0, 600),
                                         "color": "#00FF00FF", "width": 12}))
            lines.append(json.dumps({"type": "end", "stroke": sid}))
        self.run("record", "-C", outsider, stdin="\n".join(lines) + "\n")
        published = os.path.join(self.root, "outsider-published")
        self.run("sync", "-C", outsider, published, "--create")
        X = Key.from_file(os.path.join(outsider, "local", "replica.key"))
        self.X = X
        self.forged_replicas.add(X.replica)
        x_files = []
        for name in sorted(os.listdir(os.path.join(published, "replicas", X.replica))):
            with open(os.path.join(published, "replicas", X.replica, name), "rb") as f:
                x_files.append(f.read())
            if "b" in self.args.forgeries:
                self.plant(X.replica, name, x_files[-1], "(b) a non-member's segment, sealed by its own key")
        # (c) statements by keys that are no admins: the outsider grants itself draw and revokes
        # A; A (a drawing member, no admin) grants the outsider admin.
        genesis_lamport = 1
        for replica, name, data in (
                statement_file(X, 1, genesis_lamport + 10, "grant", "draw", self.board_id, X.public, "forged"),
                statement_file(X, 2, genesis_lamport + 11, "revoke", "none", self.board_id, self.A.key.public),
                statement_file(self.A.key, 1, genesis_lamport + 12, "grant", "admin", self.board_id, X.public, "forged")):
            if "c" in self.args.forgeries:
                self.plant(replica, name, data, "(c) a statement signed by a key that is no admin")
        # (d) A's replica, at the seqs A is about to draw, sealed as host by the outsider.
        self.a_forged_seqs = None
        for data in x_files if "d" in self.args.forgeries else []:
            forged = reseal_as_host(data, self.A.replica, X)
            name = segment_name(forged)
            self.a_forged_seqs = "%d-%d" % (int(name[:20]), int(name[21:41]))
            self.plant(self.A.replica, segment_name(forged), forged, "(d) A's replica sealed as host by a non-member")
        if self.args.control_grant_outsider:
            # The control: the admin makes the non-member a drawing member, so its segment (b)
            # counts and check 1 must fail.
            self.run("members", "grant", "-C", self.admin_board, "--key", self.admin_key_file, X.hex, "--role", "draw",
                     "--label", "control")
            self.run("sync", "-C", self.admin_board, os.path.join(self.store, BOARD))
        counts = {}
        for what in self.planted.values():
            counts[what[:3]] = counts.get(what[:3], 0) + 1
        self.say("planted %d forged files in the store (%s)" % (len(self.planted), ", ".join("%s %d" % kv for kv in sorted(counts.items()))))

    def start_cluster(self):
        for node in self.nodes:
            node.start()
        self.proxy_port = free_port()
        servers = "\n".join("    server n%d 127.0.0.1:%d" % (n.index, n.port) for n in self.nodes)
        config = os.path.join(self.root, "haproxy.cfg")
        with open(config, "w") as f:
            f.write(HAPROXY % {"port": self.proxy_port, "servers": servers})
        self.haproxy = subprocess.Popen(["haproxy", "-f", config, "-db"], stdout=open(os.path.join(self.root, "haproxy.log"), "ab"),
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def restore_relay_secret(self, node):
        """A node that lost its disk lost DATA/.relay/ (the token key) too: without the cluster's
        key it would make a new one and refuse every token. The operator copies it back."""
        if self.args.access == "tokens":
            os.makedirs(node.data, exist_ok=True)
            shutil.copytree(self.relay_secret, os.path.join(node.data, ".relay"))

    # --- check 1

    def check_adoption(self):
        t0 = time.monotonic()
        # Through HAProxy: the node it sends the board to adopts it from the store.
        deadline = time.monotonic() + 30
        while True:
            hello = {"type": "hello", **({"token": self.tokens["view"]} if self.tokens else {})}
            try:
                self.proxy_viewer = Client("viewer@haproxy", self.proxy_port, "haproxy", hello)
                if self.proxy_viewer.wait_joined(30):
                    break
                self.proxy_viewer.close()
                why = self.proxy_viewer.error
            except (OSError, RuntimeError) as error:  # HAProxy not up yet, or no node seen up yet
                why = repr(error)
            if time.monotonic() > deadline:
                raise Failure("no viewer joined through HAProxy within 30 s: %s" % why)
            time.sleep(0.3)
        holding = [n for n in self.nodes if os.path.isdir(self.node_board(n))]
        if len(holding) != 1:
            raise Failure("after one connection through HAProxy, %d nodes hold the board" % len(holding))
        self.h = holding[0]
        adopted_in = time.monotonic() - t0
        # Every other node adopts it too (a viewer on each, kept: the boards stay open and sync).
        self.viewers = {n.index: self.viewer(n) for n in self.nodes}
        # A draws through HAProxy (on node h), B on another node q, and holds an idle connection
        # on the third node r (and on h).
        self.q = self.nodes[(self.h.index + 1) % 3]
        self.r = self.nodes[(self.h.index + 2) % 3]
        token = self.tokens.get("draw")
        a = self.A.connect(self.proxy_port, "haproxy->n%d" % self.h.index, token=token)
        if a.caught_up is None:
            raise Failure("member A was refused through HAProxy: %s" % a.error)
        self.a_client = a
        self.A.draw(a, strokes=3)
        b = self.B.connect(self.q.port, "n%d" % self.q.index, token=token)
        if b.caught_up is None:
            raise Failure("member B was refused on node %d: %s" % (self.q.index, b.error))
        self.b_client = b
        self.B.draw(b, strokes=3)
        self.b_idle = {}
        for node in (self.h, self.r):
            c = self.B.connect(node.port, "n%d" % node.index, token=token)
            if c.caught_up is None:
                raise Failure("member B was refused on node %d: %s" % (node.index, c.error))
            self.b_idle[node.index] = c
        # What the nodes published reaches the others within a few share intervals (nobody
        # draws meanwhile: the nodes' CPU then is what serving an idle board costs).
        idle = CPU(self.nodes)
        time.sleep(max(3.0, 6 * self.args.share_interval))
        self.idle_cpu = str(idle)
        sent = self.forged_sent()
        per_node = {}
        for node in self.nodes:
            events = self.log(self.node_board(node))
            per_node[node.index] = (len(events), self.forged_in(events))
            view = self.members(self.node_board(node))
            roles = {m["key"]: (m["role"], m["active"]) for m in view["members"]}
            if view["open"] or self.X.hex in roles:
                self.check(1, False, "node %d's membership is open (%s) or counts a forged statement: the outsider is %s" % (
                    node.index, view["open"], roles.get(self.X.hex)))
            if not (roles.get(self.A.key.hex) == ("draw", True) and roles.get(self.B.key.hex) == ("draw", True)
                    and roles.get(self.host_hex) == ("relay", True)):
                self.check(1, False, "node %d's membership lacks a grant: %s" % (node.index, roles))
        merge = self.merged("adopted")
        merged_events = self.log(merge)
        merged_forged = self.forged_in(merged_events)
        lacking = {k for k in set(self.A.acknowledged()) | set(self.B.acknowledged()) if k not in merged_events}
        ok = not sent and not merged_forged and not lacking and all(not f for _, f in per_node.values())
        self.check(1, ok, "%d forged files in the store; board adopted through HAProxy by node %d in %.2f s, then by every node; "
                   "A drew %d points through HAProxy%s, B %d on node %d; "
                   "forged events sent to clients: %d%s; in the nodes' logs: %s; in a merge of the store: %d of %d events%s; "
                   "idle: %s" % (
                       len(self.planted), self.h.index, adopted_in, self.A.acked,
                       " (seqs %s of its replica were planted with other points, sealed as host by the non-member)" % self.a_forged_seqs
                       if self.a_forged_seqs else "", self.B.acked, self.q.index,
                       len(sent), " (first %s)" % (sent[:3],) if sent else "",
                       ", ".join("n%d %d forged of %d" % (i, len(f), n) for i, (n, f) in sorted(per_node.items())),
                       len(merged_forged), len(merged_events),
                       "; acknowledged but missing from the merge: %d (first %s)" % (len(lacking), sorted(lacking)[:3]) if lacking else "",
                       self.idle_cpu))
        if any(f for _, f in per_node.values()) or merged_forged:
            for i, (_, f) in sorted(per_node.items()):
                if f:
                    self.say("  node %d counts: %s" % (i, f[:3]))
            if merged_forged:
                self.say("  the merge counts: %s" % merged_forged[:3])

    # --- check 2

    def check_revocation(self):
        a = self.args
        arrivals = Arrivals(self.admin_folders(self.nodes), os.listdir(self.admin_folder(self.admin_board)))
        arrival = arrivals.at
        stop = threading.Event()
        window = CPU(self.nodes)
        drawers = [threading.Thread(target=self.A.draw_on, args=(self.a_client, stop), kwargs={"pause": a.draw_pause}, daemon=True),
                   threading.Thread(target=self.B.draw_on, args=(self.b_client, stop), kwargs={"pause": a.draw_pause}, daemon=True)]
        for t in drawers:
            t.start()
        time.sleep(1.5)
        b_acked_before_sync = self.B.acked
        self.run("sync", "-C", self.admin_board, os.path.join(self.store, BOARD))
        self.run("members", "revoke", "-C", self.admin_board, "--key", self.admin_key_file, self.B.key.hex)
        revoked_at = time.monotonic()
        self.run("sync", "-C", self.admin_board, os.path.join(self.store, BOARD))
        published_at = time.monotonic()
        record = self.member(self.admin_board, self.B.key.hex)
        if not record or not record["revoked"]:
            raise Failure("the admin's journal does not show B revoked: %s" % record)
        self.cut = max([r[1] for r in record["admitted"]] or [0])
        b_connections = {self.q.index: self.b_client, **self.b_idle}
        # Every B connection is closed once the revocation reached its node.
        deadline = time.monotonic() + 30
        for c in b_connections.values():
            c.wait(lambda: c.ended or c.error is not None, max(0.1, deadline - time.monotonic()))
        stop.set()
        for t in drawers:
            t.join()
        arrivals.stop()
        delays, problems = {}, []
        for index, c in sorted(b_connections.items()):
            closed = c.error_at if c.error is not None else c.ended_at
            if index not in arrival:
                problems.append("the revocation never appeared in node %d's board folder" % index)
            elif closed is None:
                problems.append("node %d: B's connection still open %.1f s after the revocation arrived" % (
                    index, time.monotonic() - arrival[index]))
            else:
                delays[index] = closed - arrival[index]
                if c.error is None or "member" not in c.error:
                    problems.append("node %d closed B's connection without naming its membership: %s" % (index, c.error))
        # A is not disturbed: its connection stays and every event it sent is acknowledged.
        last = self.A.next_seq - 1
        self.a_client.wait(lambda: self.a_client.acked >= last or self.a_client.ended, 60)
        if self.a_client.ended or self.a_client.acked < last:
            problems.append("A (on node %d) was disturbed: acked %d of %d, %s" % (
                self.h.index, self.a_client.acked, last, self.a_client.error or "connection ended" if self.a_client.ended else "open"))
        # A new hello of B is refused.
        again = self.B.connect(self.r.port, "n%d-again" % self.r.index, token=self.tokens.get("draw"), timeout=30)
        if again.caught_up is not None and again.error is None:
            problems.append("node %d let revoked B join again" % self.r.index)
        again.close()
        worst = max(delays.values()) if delays else float("nan")
        ordered = sorted(delays.values())
        p50 = ordered[len(ordered) // 2] if ordered else float("nan")
        late = {i: d for i, d in delays.items() if d > a.max_revocation_seconds}
        self.check("2a", not problems and not late and len(delays) == 3,
                   "B revoked (cut at seq %d; B had %d acknowledged before the admin's sync, sent %d); the revocation reached "
                   "nodes %s after the admin's sync (%s s from the revoke command); B's connection closed after arrival: %s; "
                   "p50 %.0f ms, max %.0f ms (bound %.0f ms); %s%s" % (
                       self.cut, b_acked_before_sync, self.B.next_seq - 1,
                       ", ".join("n%d +%.2f s" % (i, t - published_at) for i, t in sorted(arrival.items())),
                       "%.2f" % (published_at - revoked_at),
                       ", ".join("n%d %.0f ms" % (i, 1000 * d) for i, d in sorted(delays.items())),
                       1000 * p50, 1000 * worst, 1000 * a.max_revocation_seconds, window,
                       "; " + "; ".join(problems) if problems else ""))
        self.b_closed = {i: (c.error_at if c.error is not None else c.ended_at) for i, c in b_connections.items()}
        self.b_acked_before_sync = b_acked_before_sync
        # B's events after the cut count nowhere; those acknowledged before the admin's sync do.
        time.sleep(max(2.0, 6 * a.share_interval))
        self.check_b_cut("2b", [(n.index, self.node_board(n)) for n in self.nodes] + [("merge", self.merged("revoked"))])

    def check_b_cut(self, number, journals):
        after = {"%s#%d" % (self.B.replica, s) for s in self.B.sent if s > self.cut}
        kept = set(self.B.acknowledged(upto=self.cut))
        before_sync = {"%s#%d" % (self.B.replica, s) for s in self.B.sent if s <= self.b_acked_before_sync}
        counted, lost = {}, {}
        for label, journal in journals:
            events = self.log(journal)
            counted[label] = sorted(k for k in after if k in events)
            lost[label] = sorted(k for k in kept | before_sync if k not in events)
        late = self.late_b_events()
        acked_after = len([s for s in self.B.sent if self.cut < s <= self.B.acked])
        ok = not any(counted.values()) and not any(lost.values()) and not late and self.cut >= self.b_acked_before_sync
        self.check(number, ok, "B sent %d events after its cut (seq %d), %d of them acknowledged before its node knew; counted: %s; "
                   "B's events up to the cut missing: %s; post-cut events sent to a client after its node dropped B: %d%s%s" % (
                       len(after), self.cut, acked_after,
                       ", ".join("%s %d" % (k, len(v)) for k, v in counted.items()),
                       ", ".join("%s %d" % (k, len(v)) for k, v in lost.items()),
                       len(late), " (first %s)" % late[:3] if late else "",
                       "" if self.cut >= self.b_acked_before_sync else
                       "; the cut (%d) is below what B had acknowledged before the admin's sync (%d)" % (self.cut, self.b_acked_before_sync)))

    def late_b_events(self, margin=0.25):
        """(client, seq, seconds late) of B's post-cut events a client was sent after its node had
        dropped B (catch-ups and forwarding then hold only what the membership counts; `margin`
        for messages already on their way on another socket)."""
        late = []
        with CLIENTS_LOCK:
            clients = list(CLIENTS)
        for c in clients:
            closed = None
            for node in self.nodes:
                if c.port == node.port:
                    closed = self.b_closed.get(node.index)
            if c.port == self.proxy_port:
                closed = self.b_closed.get(self.h.index)
            if closed is None:
                continue
            for t, replica, seq, *_ in list(c.events):
                if replica == self.B.replica and seq > self.cut and t > closed + margin:
                    late.append((c.name, seq, round(t - closed, 2)))
        return late

    # --- check 3

    def check_lost_disk(self):
        a = self.args
        v = self.h
        token = self.tokens.get("draw")
        # A moves off the node first: everything it sent is acknowledged (in the store).
        self.a_client.close()
        self.proxy_viewer.close()
        self.viewers[v.index].close()
        for c in self.B.clients:
            c.close()
        v.kill(delete_disk=True)
        self.restore_relay_secret(v)
        t0 = time.monotonic()
        v.start()
        restarted_in = time.monotonic() - t0
        self.viewers[v.index] = self.viewer(v)
        window = CPU(self.nodes)
        problems = []
        a_client = self.A.connect(v.port, "n%d-after-disk-loss" % v.index, token=token)
        if a_client.caught_up is None:
            raise Failure("member A was refused on node %d after it lost its disk: %s (see %s)" % (v.index, a_client.error, v.log.name))
        held = a_client.caught_up.get("have", {}).get(self.A.replica, [])
        if not any(lo <= 1 and hi >= self.A.acked for lo, hi in held):
            problems.append("A's catch-up on the new node %d says it holds %s of A's acknowledged 1-%d" % (v.index, held, self.A.acked))
        before = self.A.acked
        self.A.draw(a_client, strokes=2)
        a_drew = self.A.acked - before
        # An invitation, written by the admin and synced to the store.
        arrivals = Arrivals(self.admin_folders([v]), os.listdir(self.admin_folder(self.admin_board)))
        out = self.run("members", "invite", "-C", self.admin_board, "--key", self.admin_key_file, "--role", "draw",
                       "--label", "Erin", "--ttl", "1h", "--json")
        invite = json.loads(out.stdout)
        path, code = invite["link"].split("#invite=", 1)
        if not path.endswith("/boards/" + BOARD):
            problems.append("the invitation's link names %s, not board %s" % (path, BOARD))
        self.run("sync", "-C", self.admin_board, os.path.join(self.store, BOARD))
        synced_at = time.monotonic()
        # The node learns of it through its share sync: its file appears in the board's folder.
        arrived = arrivals.wait(v.index, 30)
        arrivals.stop()
        if arrived is None:
            raise Failure("the invitation did not reach node %d's board folder within 30 s of the admin's sync" % v.index)
        invitation_in = arrived - synced_at
        # E redeems it in its hello as soon as the node's files hold it; a refusal saying the
        # invitation has not reached the relay yet is tried again (a page would forget it: it
        # reads "no invitation" as final), for up to 10 s.
        refusals = []
        while True:
            redeem, _ = redemption(code, self.E.key)
            attempt = time.monotonic()
            e_client = self.E.connect(v.port, "n%d" % v.index, token=token, redeem=redeem)
            redeemed_at = time.monotonic()
            if e_client.caught_up is not None or "reached this relay yet" not in (e_client.error or "") \
                    or redeemed_at - arrived > 10:
                break
            refusals.append((attempt - arrived, e_client.error))
            self.E.clients.remove(e_client)
            time.sleep(0.05)
        redeem_delay = redeemed_at - arrived
        # Where E's redemption (seq 1 of the invitation key's membership replica) goes: node v
        # stores it, its share sync publishes it, node o's imports it.
        o = self.r
        _, invitation = redemption(code, self.E.key)
        redemption_replica = mc.membership_replica(invitation.public, self.board_id).hex()
        travel = Arrivals({"store": os.path.join(self.store, BOARD, "replicas", redemption_replica),
                           o.index: os.path.join(self.node_board(o), "replicas", redemption_replica)}, [])
        if e_client.caught_up is None:
            problems.append("node %d refused E's redemption: %s" % (v.index, e_client.error))
        if refusals:
            # The node's files held the invitation, its relay did not yet: a drawing page refused
            # so forgets its invitation for good (page.mjs: "no invitation" reads as final).
            problems.append("E's first redemption, %.0f ms after the invitation's file was in node %d's board folder, was "
                            "refused (\"%s…\"), as were %d more over %.2f s: a drawing page forgets its invitation on that "
                            "refusal" % (1000 * refusals[0][0], v.index, refusals[0][1][:150], len(refusals) - 1, redeem_delay))
        # A node that did not redeem it (r, whose board is open: its viewer) lists E after sync.
        deadline = time.monotonic() + 30
        seen = None
        while time.monotonic() < deadline:
            record = self.member(self.node_board(o), self.E.key.hex)
            if record and record["active"] and record["role"] == "draw":
                seen = time.monotonic() - redeemed_at
                if record["label"] != "Erin":
                    problems.append("node %d lists E with label %r, the invitation said 'Erin'" % (o.index, record["label"]))
                break
            time.sleep(0.1)
        if seen is None:
            problems.append("node %d did not list E as a drawing member within 30 s of the redemption" % o.index)
        if e_client.caught_up is not None:
            self.E.draw(e_client, strokes=2)
        travel.stop()
        in_store, in_o = travel.at.get("store"), travel.at.get(o.index)
        route = "the redemption was in the store %s and in node %d's folder %s after it was accepted" % (
            "%.2f s" % (in_store - redeemed_at) if in_store else "never", o.index, "%.2f s" % (in_o - redeemed_at) if in_o else "never")
        e_on_o = 0
        if e_client.caught_up is not None:
            e_client.close()
            e2 = self.E.connect(o.port, "n%d" % o.index, token=token)
            if e2.caught_up is None:
                problems.append("node %d refused E (redeemed on node %d): %s" % (o.index, v.index, e2.error))
            else:
                before = self.E.acked
                self.E.draw(e2, strokes=1)
                e_on_o = self.E.acked - before
        self.a_client = a_client
        self.check(3, not problems and a_drew > 0 and e_on_o > 0,
                   "node %d killed (kill -9), its data folder deleted, started again in %.1f s; A drew %d points there, acknowledged; "
                   "the invitation reached its folder %.2f s after the admin's sync; E redeemed it there %.2f s after that "
                   "(%d earlier attempt(s) refused as not there yet) and drew %d points; %s; node %d's `members list` showed E "
                   "%s after the redemption; E drew %d points on node %d (%d resent that it lacked); %s%s" % (
                       v.index, restarted_in, a_drew, invitation_in, redeem_delay, len(refusals), len(self.E.sent) - e_on_o, route,
                       o.index, "%.2f s" % seen if seen is not None else "never", e_on_o, o.index, self.E.resent,
                       window,
                       "; " + "; ".join(problems) if problems else ""))

    # --- check 4

    def check_end(self):
        time.sleep(max(2.0, 4 * self.args.share_interval))
        sent = self.forged_sent()
        with CLIENTS_LOCK:
            clients = list(CLIENTS)
        for c in clients:
            c.close()
        for node in self.nodes:
            node.stop()
        merge = self.merged("end")
        events = self.log(merge)
        acknowledged = {}
        acknowledged.update(self.A.acknowledged())
        acknowledged.update(self.B.acknowledged(upto=self.cut))
        acknowledged.update(self.E.acknowledged())
        lost = sorted(k for k in acknowledged if k not in events)
        changed = sorted(k for k, v in acknowledged.items() if k in events and
                         (norm(events[k].get("stroke")), events[k].get("x"), events[k].get("y")) != v)
        forged = self.forged_in(events)
        after_cut = sorted(k for k in events if k.startswith(self.B.replica + "#") and int(k.split("#")[1]) > self.cut)
        verify = self.run("verify", "-C", merge, "--json", check=False)
        report = json.loads(verify.stdout)
        unexpected = []
        for p in report.get("problems", []):
            name = os.path.basename(p.get("file", ""))
            planted = (p.get("replica"), name) in {tuple(k.split("/")) for k in self.planted}
            post_cut = p.get("replica") == self.B.replica and p.get("firstSeq", 0) > self.cut
            if p.get("kind") != "quarantined" or not (planted or post_cut):
                unexpected.append(p)
        quarantined = len(report.get("problems", [])) - len(unexpected)
        # Every node's board and the merge: one membership.
        views = {}
        for node in self.nodes:
            views["n%d" % node.index] = self.members(self.node_board(node))
        views["merge"] = self.members(merge)

        def essence(view):
            return (view["open"], view["board"], view["founder"],
                    sorted((m["key"], m["role"], m["label"], m["active"], m["revoked"], json.dumps(m["admitted"]))
                           for m in view["members"]))
        differing = [k for k, v in views.items() if essence(v) != essence(views["merge"])]
        node_counts = {}
        for node in self.nodes:
            node_events = self.log(self.node_board(node))
            node_counts[node.index] = (len(self.forged_in(node_events)),
                                       len([k for k in node_events if k.startswith(self.B.replica + "#") and int(k.split("#")[1]) > self.cut]))
        late = self.late_b_events()
        ok = (not lost and not changed and not forged and not after_cut and not unexpected and not differing and not sent
              and not late and all(f == 0 and c == 0 for f, c in node_counts.values()))
        self.check(4, ok, "nodes stopped (SIGTERM); the store merged: %d events, %d acknowledged points of A, B (to its cut) and E, "
                   "missing %d, changed %d; forged %d; B after its cut %d; verify: %d problem(s), %d of them the planted files or "
                   "B's post-cut events quarantined, %d other%s; nodes' logs (forged, B post-cut): %s; forged events sent to clients "
                   "over the run: %d; B's post-cut events sent to a client after its node dropped B: %d; members lists differ "
                   "from the merge's: %s" % (
                       len(events), len(acknowledged), len(lost), len(changed), len(forged), len(after_cut),
                       len(report.get("problems", [])), quarantined, len(unexpected),
                       " (first %s)" % json.dumps(unexpected[:2]) if unexpected else "",
                       ", ".join("n%d %d/%d" % (i, f, c) for i, (f, c) in sorted(node_counts.items())),
                       len(sent), len(late), differing or "none"))
        if lost:
            self.say("  missing: %s" % lost[:5])
        if changed:
            self.say("  changed: %s" % changed[:5])

    # --- the run

    def run_campaign(self):
        t0 = time.monotonic()
        self.setup()
        self.plant_forgeries()
        self.start_cluster()
        self.say("3 nodes (--ack %s, --share-interval %g, --host-key, %s), haproxy on %d; scratch %s" % (
            self.args.ack, self.args.share_interval, "tokens" if self.args.access == "tokens" else "--open", self.proxy_port, self.root))
        for number, step in ((1, self.check_adoption), (2, self.check_revocation), (3, self.check_lost_disk), (4, self.check_end)):
            try:
                step()
            except (Failure, OSError, RuntimeError) as error:  # (a socket that would not open)
                self.check(number, False, str(error) if isinstance(error, Failure) else repr(error))
                if number < 3:
                    # The later checks need what this one set up (connections, the revocation).
                    raise
        self.say("%.0f s in all" % (time.monotonic() - t0))

    def stop(self):
        for node in self.nodes:
            if node.up:
                node.proc.kill()
                node.proc.wait()
                node.proc = None
        if self.haproxy is not None:
            self.haproxy.kill()
            self.haproxy.wait()



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--journal-bin", type=journal_binary, default=".build/debug/journal")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--share-interval", type=float, default=1.0,
                        help="the nodes' --share-interval (DEPLOY.md's default is 2)")
    parser.add_argument("--ack", choices=["local", "shared"], default="shared",
                        help="the nodes' --ack (shared: an acknowledged event is in the store; check 3 relies on it)")
    parser.add_argument("--access", choices=["tokens", "open"], default="tokens",
                        help="tokens (one relay key copied to every node, DEPLOY.md) or --open")
    parser.add_argument("--max-revocation-seconds", type=float, default=1.0,
                        help="from a revocation's arrival in a node's board folder to B's connection there being closed")
    parser.add_argument("--draw-pause", type=float, default=0.1,
                        help="seconds between two strokes of A and of B while the revocation travels (each sent without "
                             "waiting for its ack)")
    parser.add_argument("--forgeries", default="abcd",
                        help="which forged files to plant (check 1): a unsealed, b a non-member's, c statements of "
                             "non-admins, d A's replica sealed as host by a non-member (default: all)")
    parser.add_argument("--control-grant-outsider", action="store_true",
                        help="a control run: the admin grants the non-member draw, so that its planted segment counts and "
                             "check 1 must fail")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    if shutil.which("haproxy") is None:
        print("membership: haproxy is not installed (apt-get install haproxy)", file=sys.stderr)
        return 2
    try:
        import cryptography  # noqa: F401
    except ImportError:
        print("membership: Python's cryptography (Debian: python3-cryptography) is missing", file=sys.stderr)
        return 2
    if not os.access(args.journal_bin, os.X_OK):
        print("membership: %s is not an executable" % args.journal_bin, file=sys.stderr)
        return 2
    campaign = Campaign(args)
    try:
        campaign.run_campaign()
    except (Failure, OSError, RuntimeError) as error:
        if not campaign.failed:
            campaign.failed.append(("setup", str(error)))
            print("membership: FAILED: %s" % error, flush=True)
    finally:
        campaign.stop()
    if campaign.failed:
        print("membership: FAILED: check(s) %s (scratch folder kept: %s)" % (
            ", ".join(sorted({number for number, _ in campaign.failed})), campaign.root))
        return 1
    print("membership: every check passed")
    if not args.keep:
        shutil.rmtree(campaign.root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
