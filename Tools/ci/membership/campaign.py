#!/usr/bin/env python3
"""Adversarial convergence campaign for board membership (docs/FORMAT.md §17, docs/DESIGN.md
invariant 16).

In a temporary folder: four machines m0..m3 (journals made with `journal init`, one person
each) that `journal sync` with one shared folder (m0 first, with --create). m0 runs
`journal members init --label m0` and grants m1 admin and m2 draw (m3 starts as no member,
and joins late: its first sync is at step --late-join, a quarter of --steps by default);
every machine gets a different local trust list, which must make no difference once the board
has membership. Then seeded random steps chosen among:

  record    a machine records 1-3 strokes (`journal record --json`, NDJSON on stdin)
  sync      1-3 machines sync with the shared folder, in random order (so they see late)
  grant     a machine signs a grant (its journal key, or a `members keygen` key it holds;
            mostly one the latest membership seen says is an admin) of
            another machine's key, a key it holds, or a fresh keygen key a machine will
            hold, with a random role (view, draw, admin, rarely relay) and label
  revoke    a machine signs a revocation of a known key (rarely: of itself)
  rotate    a keygen key is rotated to a fresh keygen key (rarely a journal's own key is
            rotated: its drawing then stops counting)
  trust     a machine adds or removes random keys in its local/trust
  attack:*  an outsider with write access to the shared folder plants files (--attacks):
     flip          a version 4 file with one statement byte flipped (re-deflated, CRC fixed),
                   or its statement moved to another seq or another membership folder;
                   planted under its new canonical name
     other-board   the version 4 files of another board (a scratch journal's
                   `members init` and grants naming this board's keys)
     into-other    this board's version 4 files copied into the other board's journal,
                   whose membership must not change
     nonmember     version 3 segments of a scratch journal that is no member
     wrong-folder  a non-member's signed segment planted in a member's replica folder
     rival-late    a rival genesis made now (`members init` in a fresh scratch journal)
     rival-early   a rival genesis made at setup, just before m0's `members init`
     forge         statements the outsider signs with its own key (Ed25519, needs the
                   `cryptography` package): a grant of admin to itself, a revocation of m0
     forge-genesis the same: a create with lamport 1 and wall time 0 (a back-dated rival genesis)
     same-key      an admin key of this board (m0's own, or a keygen key a machine holds) that
                   also administers a second board (`members init --key` in a scratch
                   journal): the outsider copies that board's version 4 files here
     insider-cut   not an outsider: a drawing member that expects to be revoked publishes one of
                   its blocks again at a far seq, signed with its own key; an admin who synced
                   it revokes it; the member then records and syncs as usual (its own journal,
                   which never imports its own replica, is then left out of the drawing checks)

After every accepted statement (exit 0) the signer's own `members list` must show its effect
(the statement is the newest the signer holds). Every --check-every steps and at the end, every
machine syncs twice in a round, and it is a violation if:

  1. `journal digest` differs between machines (that played no insider);
  2. `sjread.py digest` differs from `journal digest` on a machine, or `sjread.py members` from
     `journal members list --json` (open, board, founder; per member key, role, label,
     active, revoked, admitted);
  3. `journal members list --json` differs between machines (same fields);
  4. counted events that must not count: log line counts differ (idem), an event of a replica no
     machine draws as is in a log, an event outside the admitted seqs of the key drawing as
     its replica, or a stroke a machine recorded after its key was revoked or rotated;
  5. a `journal` command crashed (exit status other than 0, 1, 64, 65) or a command that is
     no refusal (record, sync, digest, log, list, trust) failed;
  6. the planted files changed something: a control journal holding the same files minus
     every planted one folds another membership or digest (m0 compared with a control pinned
     like it, m1..m3 with an unpinned one), or a machine's board is not m0's genesis;
  7. a statement the CLI accepted has no effect on the signer's own membership.

Usage: campaign.py --journal-bin PATH [--steps 60] [--seed 1] [--check-every 20]
                   [--attacks all|LIST] [--keep] [--workdir DIR]
Exit 0 when no check found a violation, 1 otherwise.
"""
import argparse
import collections
import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import uuid
import zlib

try:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives import serialization
except ImportError:  # the `forge` attack is then skipped
    Ed25519PrivateKey = None

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # <repo>/Tools/ci/membership
SJREAD = os.path.join(REPO, "Tools", "conformance", "sjread", "sjread.py")

MACHINES = 4
OK_CODES = (0, 1, 64, 65)  # anything else from `journal` is a crash
CRASH_MARKS = ("Fatal error", "Program crashed", "Segmentation fault", "Illegal instruction",
               "Precondition failed", "Assertion failed", "Stack dump")
MEMBER_LABEL = b"StrokeJournal member key v1\0"
REPLICA_LABEL = b"StrokeJournal replica key v1\0"
STATEMENT_LABEL = b"StrokeJournal membership v1\0"
ACTIONS = {"create": 1, "grant": 2, "revoke": 3, "rotate": 4}
ROLES = {"none": 0, "view": 1, "draw": 2, "relay": 3, "admin": 4}
LABELS = ["Alice", "Bob", "Zoë", "李雷", "", "m-%d", "night shift", "o'neil \"quoted\"", "x" * 64]

STEP_WEIGHTS = [("record", 24), ("sync", 18), ("grant", 14), ("revoke", 6), ("rotate", 4),
                ("trust", 5), ("attack", 20)]
ATTACKS = ["flip", "other-board", "into-other", "nonmember", "wrong-folder", "rival-late",
           "rival-early", "forge", "forge-genesis", "same-key", "insider-cut"]
MEMBER_FIELDS = ("key", "role", "label", "active", "revoked", "admitted")


class Result:
    def __init__(self, argv, rc, out, err, seconds):
        self.argv, self.rc, self.out, self.err, self.seconds = argv, rc, out, err, seconds

    def describe(self, limit=1500):
        def cut(text):
            text = text.strip()
            return text if len(text) <= limit else text[:limit // 2] + "\n…\n" + text[-limit // 2:]
        return "$ %s\nexit %s after %.2f s\n--- stdout\n%s\n--- stderr\n%s" % (
            " ".join(self.argv), self.rc, self.seconds, cut(self.out), cut(self.err))


# ----------------------------------------------------------------------------------------------
# Segment bytes (FORMAT.md §2.1, §4, §5, §17)

def crc32(data, start=0):
    return zlib.crc32(data, start) & 0xFFFFFFFF


def deflate(raw):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(raw) + c.flush()


def inflate(body, raw_length):
    d = zlib.decompressobj(-15)
    raw = d.decompress(body, raw_length + 1)
    return raw if len(raw) == raw_length and d.eof and not d.unused_data else None


def file_header(version, replica):
    head = b"SJOURNAL" + struct.pack("<HH", version, 32) + replica
    return head + struct.pack("<I", crc32(head))


def block(count, first_seq, max_lamport, raw):
    body = deflate(raw)
    head = b"SJBK" + struct.pack("<IIIQQ", len(body), len(raw), count, first_seq, max_lamport)
    return head + struct.pack("<I", crc32(body, crc32(head))) + body


def parse_segment(data):
    """Header and blocks of a segment (no checks beyond what is needed to cut it up)."""
    if len(data) < 32 or data[:8] != b"SJOURNAL":
        return None
    version = struct.unpack_from("<H", data, 8)[0]
    blocks, offset = [], 32
    while offset + 36 <= len(data) and data[offset:offset + 4] == b"SJBK":
        clen, rlen, count, first, max_lamport, _ = struct.unpack_from("<IIIQQI", data, offset + 4)
        blocks.append({"count": count, "first": first, "maxLamport": max_lamport, "rawLength": rlen,
                       "body": data[offset + 36:offset + 36 + clen]})
        offset += 36 + clen
    return {"version": version, "replica": data[12:28], "blocks": blocks, "tail": data[offset:]}


def canonical_name(data, first, last):
    return "%020d-%020d-%s.sjs" % (first, last, hashlib.sha256(data).hexdigest()[:32])


def name_seqs(name):
    try:
        first, last, _ = name[:-4].split("-")
        return int(first), int(last)
    except ValueError:
        return None


def membership_replica(key, board):
    """FORMAT.md §17.1: the replica of `key`'s statements about `board`."""
    return hashlib.sha256(MEMBER_LABEL + board + key).digest()[:16]


def drawing_replica(key):
    return hashlib.sha256(REPLICA_LABEL + key).digest()[:16]


def statement_bytes(lamport, wall, action, role, board, subject, draw_cut, member_cut, label, signer):
    lb = label.encode("utf-8")
    return (struct.pack("<QqBB", lamport, wall, ACTIONS[action], ROLES[role]) + board + subject
            + struct.pack("<QQB", draw_cut, member_cut, len(lb)) + lb + signer)


class Outsider:
    """An Ed25519 key of the campaign's own (deterministic from the seed) that signs statements."""

    def __init__(self, seed_bytes):
        self.private = Ed25519PrivateKey.from_private_bytes(seed_bytes)
        self.public = self.private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    def segment(self, seq, unsigned, lamport):
        """A version 4 file of one statement at `seq` of this key's membership replica."""
        replica = membership_replica(self.public, unsigned[18:34])
        signature = self.private.sign(STATEMENT_LABEL + replica + struct.pack("<Q", seq) + unsigned)
        data = file_header(4, replica) + block(1, seq, lamport, unsigned + signature)
        return replica.hex(), canonical_name(data, seq, seq), data


def read_key_file(path):
    """The public key of a `strokejournal-key v1` file (needs `cryptography`), else None."""
    if Ed25519PrivateKey is None:
        return None
    with open(path) as f:
        lines = f.read().split("\n")
    private = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(lines[1]))
    return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


# ----------------------------------------------------------------------------------------------

class Machine:
    def __init__(self, index, path):
        self.index, self.name, self.path = index, "m%d" % index, path
        self.key = self.replica = None
        self.external = []      # keygen key files this machine signs with (--key)
        self.records = []       # (op, [stroke ids])
        self.key_ended_ops = []  # ops of accepted revocations or rotations of its journal key
        # It played the insider (attack insider-cut): it lacks its own events written outside its
        # writer (a journal never imports its own replica), so its drawing is not compared.
        self.insider = False
        self.joined = False     # synced with the shared folder at least once


class Campaign:
    def __init__(self, a):
        self.a = a
        self.bin = os.path.abspath(a.journal_bin)
        self.rng = random.Random(a.seed)
        self.work = os.path.abspath(a.workdir) if a.workdir else tempfile.mkdtemp(prefix="membership-campaign-")
        os.makedirs(self.work, exist_ok=True)
        self.shared = os.path.join(self.work, "shared")
        self.keys_dir = os.path.join(self.work, "keys")
        self.scratch = os.path.join(self.work, "scratch")
        self.cwd = os.path.join(self.work, "cwd")
        for d in (self.keys_dir, self.scratch, self.cwd):
            os.makedirs(d, exist_ok=True)
        self.machines = [Machine(i, os.path.join(self.work, "m%d" % i)) for i in range(MACHINES)]
        self.attacks = ATTACKS if a.attacks == "all" else [k.strip() for k in a.attacks.split(",") if k.strip()]
        unknown = [k for k in self.attacks if k not in ATTACKS]
        if unknown:
            sys.exit("unknown attack(s): %s (known: %s)" % (", ".join(unknown), ", ".join(ATTACKS)))
        if Ed25519PrivateKey is None and set(self.attacks) & {"forge", "forge-genesis", "insider-cut"}:
            print("[membership] `cryptography` does not import: the forge and insider-cut attacks are skipped", flush=True)
            self.attacks = [k for k in self.attacks if not k.startswith("forge") and k != "insider-cut"]
        self.started = time.monotonic()
        self.step = 0
        self.op = 0
        self.stats = collections.Counter()
        self.refusals = collections.Counter()
        self.plants = collections.Counter()
        self.cmd_count = collections.Counter()
        self.cmd_time = collections.Counter()
        self.planted = set()        # "replica/name" of every file the outsider planted in shared/
        self.foreign = set()        # replica ids (hex) no machine draws as: outsiders, scratch journals
        self.key_files = {}         # public key hex -> key file (keygen keys)
        self.known_keys = []        # every key a statement may name
        self.violations = collections.Counter()
        self.violation_first = {}
        self.violation_count = collections.Counter()
        self.details_printed = 0
        self.checks = 0
        self.contests = 0
        self.step_log = []
        self.attack_cycle = []
        self.forge_variant = None
        self.last_view = None       # the latest membership seen (to pick signers that are admins)
        self.scratch_count = 0
        self.outsider = Outsider(bytes(self.rng.getrandbits(8) for _ in range(32))) if Ed25519PrivateKey else None

    # -- processes ------------------------------------------------------------------------------

    def run(self, args, stdin=None, refusable=False, cwd=None):
        """Runs `journal ARGS`; a crash (exit not in 0, 1, 64, 65, or a crash message) is a
        violation, and so is any failure of a command that is not `refusable`. Retries while the
        binary is being rebuilt (missing, or not yet executable)."""
        argv = [self.bin] + list(args)
        what = args[0] if args[0] not in ("members", "trust") else " ".join(args[:2])
        for attempt in range(60):
            t0 = time.monotonic()
            try:
                p = subprocess.run(argv, input=stdin, capture_output=True, cwd=cwd or self.cwd,
                                   timeout=self.a.timeout)
            except (FileNotFoundError, PermissionError) as error:
                time.sleep(3)
                continue
            except OSError as error:  # ENOEXEC, ETXTBSY while the linker writes it
                time.sleep(3)
                continue
            except subprocess.TimeoutExpired as error:
                r = Result(argv, "timeout", (error.stdout or b"").decode("utf-8", "replace"),
                           (error.stderr or b"").decode("utf-8", "replace"), time.monotonic() - t0)
                self.violation("crash", "a `journal %s` ran over %g s" % (what, self.a.timeout), r)
                return r
            r = Result(argv, p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"),
                       time.monotonic() - t0)
            if p.returncode < 0 and attempt < 3 and ("No such file" in r.err or "format" in r.err or not r.err):
                time.sleep(3)  # a half-written binary killed by a signal: try again once rebuilt
                continue
            break
        else:
            sys.exit("%s could not be run for 3 minutes" % self.bin)
        self.cmd_count[what] += 1
        self.cmd_time[what] += r.seconds
        if r.rc not in OK_CODES or any(mark in r.err for mark in CRASH_MARKS):
            self.violation("crash", "`journal %s` exited %s" % (what, r.rc), r, signature=(what, r.rc))
        elif r.rc != 0 and not refusable:
            self.violation("crash", "`journal %s` failed (exit %s) where nothing is refused" % (what, r.rc), r,
                           signature=(what, r.rc, r.err.strip().splitlines()[-1][:80] if r.err.strip() else ""))
        return r

    def sjread(self, command, m):
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, SJREAD, command, m.path], capture_output=True, cwd=self.cwd)
        r = Result(["sjread.py", command, m.path], p.returncode, p.stdout.decode("utf-8", "replace"),
                   p.stderr.decode("utf-8", "replace"), time.monotonic() - t0)
        self.cmd_count["sjread " + command] += 1
        self.cmd_time["sjread " + command] += r.seconds
        if r.rc != 0:
            if "has a trust list" in r.err and "refusing" in r.err:
                # An open board with a trust list: sjread.py does not apply trust lists (the board
                # being open is reported by the checks).
                self.stats["sjread refusals (open board with a trust list)"] += 1
                return None
            self.violation("reader", "sjread.py %s refused %s (exit %s)" % (command, m.name, r.rc), r,
                           signature=("sjread", command, r.rc))
            return None
        return r

    def violation(self, check, message, result=None, signature=None):
        self.violations[check] += 1
        sig = (check, str(signature if signature is not None else message))
        self.violation_count[sig] += 1
        if sig in self.violation_first:
            return
        self.violation_first[sig] = (self.step, message)
        if self.details_printed < self.a.max_details:
            self.details_printed += 1
            print("\n[membership] VIOLATION (%s) at step %d: %s" % (check, self.step, message), flush=True)
            if result is not None:
                print(result.describe(), flush=True)
            print("last steps:\n  " + "\n  ".join(self.step_log[-12:]) + "\n", flush=True)

    # -- helpers --------------------------------------------------------------------------------

    def members(self, m, refusable=False):
        r = self.run(["members", "list", "-C", m.path, "--json"], refusable=refusable)
        try:
            return json.loads(r.out) if r.rc == 0 else None
        except ValueError:
            self.violation("crash", "`members list --json` printed no JSON", r)
            return None

    def keygen(self, owner):
        self.stats["keys made"] += 1
        path = os.path.join(self.keys_dir, "%s-%d.key" % (owner.name, self.stats["keys made"]))
        r = self.run(["members", "keygen", path])
        key = r.out.strip()
        if r.rc != 0 or len(key) != 64:
            return None, None
        self.key_files[key] = path
        self.known_keys.append(key)
        return key, path

    def new_scratch(self, label):
        self.scratch_count += 1
        path = os.path.join(self.scratch, "%s-%d" % (label, self.scratch_count))
        self.run(["init", path])
        with open(os.path.join(path, "local", "replica")) as f:
            self.foreign.add(f.read().strip())
        return path

    def v4_files(self, root, replica_hex=None):
        """(replica hex, name, path) of every version 4 file under root/replicas."""
        found = []
        base = os.path.join(root, "replicas")
        for rid in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            if replica_hex and rid != replica_hex:
                continue
            folder = os.path.join(base, rid)
            for name in sorted(os.listdir(folder)):
                path = os.path.join(folder, name)
                if not name.endswith(".sjs") or not os.path.isfile(path):
                    continue
                with open(path, "rb") as f:
                    head = f.read(10)
                if head[8:10] == b"\x04\x00":
                    found.append((rid, name, path))
        return found

    def plant(self, kind, rid, name, data, control=True):
        folder = os.path.join(self.shared, "replicas", rid)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return False
        with open(path + ".part", "wb") as f:
            f.write(data)
        os.rename(path + ".part", path)
        if control:  # left out of the control journals
            self.planted.add(rid + "/" + name)
        self.plants[kind] += 1
        return True

    def plant_tree(self, kind, source_root, only_v4=True, replica_hex=None):
        n = 0
        files = self.v4_files(source_root, replica_hex) if only_v4 else self.all_files(source_root)
        for rid, name, path in files:
            with open(path, "rb") as f:
                n += self.plant(kind, rid, name, f.read())
        return n

    @staticmethod
    def all_files(root):
        found = []
        base = os.path.join(root, "replicas")
        for rid in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            for name in sorted(os.listdir(os.path.join(base, rid))):
                if name.endswith(".sjs"):
                    found.append((rid, name, os.path.join(base, rid, name)))
        return found

    def strokes_ndjson(self, strokes=None):
        lines, ids = [], []
        for _ in range(strokes or self.rng.randint(1, 3)):
            sid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4)).upper()
            ids.append(sid)
            color = "#%02X%02X%02XFF" % tuple(self.rng.randrange(256) for _ in range(3))
            for _ in range(self.rng.randint(1, 4)):
                lines.append(json.dumps({"type": "point", "stroke": sid, "x": round(self.rng.uniform(0, 800), 2),
                                         "y": round(self.rng.uniform(0, 600), 2), "color": color,
                                         "width": round(self.rng.uniform(0.5, 8), 1)}))
            lines.append(json.dumps({"type": "end", "stroke": sid}))
        return ("\n".join(lines) + "\n").encode(), ids

    def pick_signer(self, admin=True):
        """(machine, [--key FILE] or [], key): mostly a key the latest membership seen says is an
        active admin (`admin`) or member, held by a machine; otherwise any machine's key."""
        held = self.held_keys()
        view = self.last_view
        if view is not None and self.rng.random() < 0.75:
            good = [h for h in held if (view["members"].get(h[2]) or {}).get("active")
                    and (not admin or view["members"][h[2]]["role"] == "admin")]
            if good:
                return self.rng.choice(good)
        m = self.rng.choice(self.machines)
        key_args, key = self.signer_of(m)
        return m, key_args, key

    def signer_of(self, m):
        """([--key FILE] or [], public key hex) of a key machine m may sign with."""
        options = [None] + list(m.external)
        choice = self.rng.choice(options)
        if choice is None:
            return [], m.key
        return ["--key", choice], next(k for k, p in self.key_files.items() if p == choice)

    def pin(self):
        with open(os.path.join(self.machines[0].path, "local", "board")) as f:
            board, founder = f.read().split("\n")[1].split()
        return board, founder

    # -- setup ----------------------------------------------------------------------------------

    def setup(self):
        for m in self.machines:
            self.run(["init", m.path])
            r = self.run(["trust", "key", "-C", m.path, "--json"])
            info = json.loads(r.out)
            m.key, m.replica = info["key"], info["replica"]
            self.known_keys.append(m.key)
        # A rival genesis prepared before the board's own (the `rival-early` attack plants it).
        self.early_rival = None
        if "rival-early" in self.attacks:
            self.early_rival = self.new_scratch("rival-early")
            self.run(["members", "init", "-C", self.early_rival, "--label", "rival"])
            time.sleep(0.005)
        # Another board (the `other-board` and `into-other` attacks), with statements naming our keys.
        self.other = None
        m0 = self.machines[0]
        self.run(["members", "init", "-C", m0.path, "--label", "m0"])
        # A second admin and a drawer to start with (m3 is no member until a step grants it).
        self.run(["members", "grant", "-C", m0.path, self.machines[1].key, "--role", "admin", "--label", "m1"])
        self.run(["members", "grant", "-C", m0.path, self.machines[2].key, "--role", "draw", "--label", "m2"])
        self.stats["grants"] += 2
        self.run(["sync", "-C", m0.path, self.shared, "--create"])
        # m3 joins late (--late-join): its first sync adopts the genesis it finds then.
        m0.joined = True
        for m in self.machines[1:MACHINES - 1] + ([self.machines[-1]] if self.a.late_join == 0 else []):
            self.run(["sync", "-C", m.path, self.shared])
            m.joined = True
        if "other-board" in self.attacks or "into-other" in self.attacks:
            self.other = self.new_scratch("other-board")
            self.run(["members", "init", "-C", self.other, "--label", "other"])
            for m in self.machines[1:]:
                self.run(["members", "grant", "-C", self.other, m.key, "--role", "admin", "--label", "hijack"])
            self.run(["members", "grant", "-C", self.other, m0.key, "--role", "view", "--label", "demoted"])
            self.other_members = self.members_view(self.other)
        # The outsider: a journal that draws but is no member.
        self.nonmember = self.new_scratch("outsider")
        # Different local trust lists: must make no difference once the board has membership.
        pool = [m.key for m in self.machines]
        for m in self.machines[1:]:
            for key in self.rng.sample(pool, self.rng.randint(0, 3)):
                if key != m.key:
                    self.run(["trust", "add", "-C", m.path, key, "--label", "setup"])
        self.m0_board, self.m0_founder = self.pin()
        self.last_view = normalise_members(self.members(m0))

    def members_view(self, path):
        r = self.run(["members", "list", "-C", path, "--json"])
        try:
            return normalise_members(json.loads(r.out))
        except ValueError:
            return None

    # -- steps ----------------------------------------------------------------------------------

    def do_record(self):
        m = self.rng.choice(self.machines)
        data, ids = self.strokes_ndjson()
        self.op += 1
        r = self.run(["record", "-C", m.path, "--json"], stdin=data)
        if r.rc == 0:
            m.records.append((self.op, ids))
            self.stats["strokes recorded"] += len(ids)
        return "%s records %d stroke(s)" % (m.name, len(ids))

    def do_join(self):
        m = self.machines[-1]
        self.run(["sync", "-C", m.path, self.shared])
        m.joined = True
        if os.path.exists(os.path.join(m.path, "local", "board")):
            return "%s joins: its first sync (one genesis: pinned)" % m.name
        # Rival geneses were already there: nothing in the files tells the real board, so the
        # journal pinned none and says so (FORMAT.md §17.5). A person asks the owner for the id.
        verify = self.run(["verify", "-C", m.path], refusable=True)
        if "rival geneses" not in verify.out:
            self.violation("contest", "%s joined with no pin, yet verify does not report rival geneses" % m.name, verify,
                           signature="contest unreported")
        self.run(["members", "pin", "-C", m.path, self.m0_board])
        self.contests += 1
        return "%s joins: its first sync met rival geneses; a person pinned m0's board" % m.name

    def do_sync(self):
        joined = [m for m in self.machines if m.joined]
        order = self.rng.sample(joined, min(len(joined), self.rng.choice([1, 1, 1, 2, 2, 3])))
        for m in order:
            self.run(["sync", "-C", m.path, self.shared])
        return "sync " + " ".join(m.name for m in order)

    def statement(self, m, action, args, signer, expect):
        """Runs a members change; on exit 0 checks its effect on the signer's own membership."""
        self.op += 1
        r = self.run(["members", action, "-C", m.path] + args, refusable=True)
        if r.rc != 0:
            self.refusals["%s (exit %d)" % (action, r.rc)] += 1
            self.refused_now = True
            return r, False
        self.stats[{"grant": "grants", "revoke": "revocations", "rotate": "rotations"}[action]] += 1
        view = self.members(m)
        if view is not None:
            self.last_view = normalise_members(view)
            problem = expect(self.last_view)
            if problem:
                self.violation("accepted-but-void",
                               "%s: `members %s` exited 0 but %s's own membership does not show it: %s"
                               % (m.name, action, m.name, problem), r, signature=(action, problem.split(":")[0]))
        return r, True

    def do_grant(self):
        m, key_args, signer = self.pick_signer()
        roll = self.rng.random()
        holder = None
        if roll < 0.55:
            subject = self.rng.choice([x.key for x in self.machines if x is not m] or [m.key])
        elif roll < 0.85:
            holder = self.rng.choice(self.machines)
            subject, path = self.keygen(holder)
            if subject is None:
                return "keygen failed"
        else:
            subject = self.rng.choice(self.known_keys)
        role = self.rng.choices(["view", "draw", "admin", "relay"], [20, 45, 30, 5])[0]
        label = self.rng.choice(LABELS)
        label = label % self.step if "%d" in label else label
        if self.rng.random() < 0.04:
            label = "y" * 65  # longer than §17.2 allows: must be refused, never written
        args = [subject, "--role", role] + (["--label", label] if label or self.rng.random() < 0.5 else []) + key_args

        def expect(view):
            member = view["members"].get(subject)
            if member is None:
                return "no member record for %s" % subject[:16]
            if not member["active"] or member["role"] != role:
                return "role: %s, active %s (granted %s)" % (member["role"], member["active"], role)
            if member["label"] != label:
                return "label: %r (granted %r)" % (member["label"], label)
            return None
        r, ok = self.statement(m, "grant", args, signer, expect)
        if ok and len(label.encode()) > 64:
            self.violation("accepted-but-void", "a label of %d bytes was accepted" % len(label.encode()), r)
        if ok and holder is not None:
            holder.external.append(self.key_files[subject])
        return "%s (%s) grants %s %s to %s%s" % (m.name, signer[:8], role, repr(label)[:20], subject[:8],
                                                ", held by " + holder.name if holder else "")

    def do_revoke(self):
        m, key_args, signer = self.pick_signer()
        subject = self.rng.choice([k for k in self.known_keys if k != signer] or self.known_keys)
        if self.rng.random() < 0.08:
            subject = signer

        def expect(view):
            member = view["members"].get(subject)
            if member is None or not member["revoked"] or member["active"]:
                return "revoked: %s, active %s" % (member and member["revoked"], member and member["active"])
            return None
        r, ok = self.statement(m, "revoke", [subject] + key_args, signer, expect)
        if ok:
            for x in self.machines:
                if x.key == subject:
                    x.key_ended_ops.append(self.op)
        return "%s (%s) revokes %s%s" % (m.name, signer[:8], subject[:8], " (itself)" if subject == signer else "")

    def do_rotate(self):
        holders = [x for x in self.machines if x.external]
        journal_key = not holders or self.rng.random() < 0.15
        m = self.rng.choice(self.machines if journal_key else holders)
        if journal_key:
            key_args, signer, old_file = [], m.key, None
        else:
            old_file = self.rng.choice(m.external)
            key_args = ["--key", old_file]
            signer = next(k for k, p in self.key_files.items() if p == old_file)
        new_key, new_file = self.keygen(m)
        if new_key is None:
            return "keygen failed"

        def expect(view):
            old, new = view["members"].get(signer), view["members"].get(new_key)
            if old is None or old["rotatedTo"] != new_key or new is None or not new["active"]:
                return "old rotatedTo %s, new %s" % (old and old["rotatedTo"], new and (new["role"], new["active"]))
            return None
        r, ok = self.statement(m, "rotate", [new_key] + key_args, signer, expect)
        if ok:
            if old_file:
                m.external.remove(old_file)
            else:
                m.key_ended_ops.append(self.op)
            m.external.append(new_file)
        return "%s rotates %s%s to %s" % (m.name, signer[:8], " (its journal key)" if journal_key else "", new_key[:8])

    def do_trust(self):
        m = self.rng.choice(self.machines)
        roll = self.rng.random()
        if roll < 0.7:
            pool = self.known_keys + ([self.outsider.public.hex()] if self.outsider else [])
            key = self.rng.choice(pool)
            args = ["trust", "add", "-C", m.path, key] + (["--host"] if self.rng.random() < 0.3 else [])
            desc = "%s trusts %s" % (m.name, key[:8])
        elif roll < 0.9:
            key = self.rng.choice(self.known_keys)
            args = ["trust", "remove", "-C", m.path, key]
            desc = "%s stops trusting %s" % (m.name, key[:8])
        else:
            args = ["trust", "remove", "-C", m.path, "--all"]
            desc = "%s deletes its trust list" % m.name
        self.stats["trust changes"] += 1
        r = self.run(args, refusable=True)  # removing a key that is not listed may be refused
        if r.rc != 0:
            self.refusals["trust (exit %d)" % r.rc] += 1
            self.refused_now = True
        return desc

    # -- attacks --------------------------------------------------------------------------------

    def do_attack(self):
        if not self.attack_cycle:  # every kind once, in random order, then again
            self.attack_cycle = self.rng.sample(self.attacks, len(self.attacks))
            if self.stats["attack cycles"] == 0:
                # The first attack plants a rival genesis, most likely before m3 joins (trust on first use).
                first = [k for k in ("rival-early", "forge-genesis") if k in self.attack_cycle]
                if first:
                    self.attack_cycle.remove(first[0])
                    self.attack_cycle.append(first[0])  # popped first
            self.stats["attack cycles"] += 1
        kind = self.attack_cycle.pop()
        return "attack:" + kind + " " + getattr(self, "attack_" + kind.replace("-", "_"))()

    def attack_flip(self):
        files = self.v4_files(self.shared)
        files = [f for f in files if f[0] + "/" + f[1] not in self.planted]
        if not files:
            return "(no version 4 file yet)"
        rid, name, path = self.rng.choice(files)
        with open(path, "rb") as f:
            seg = parse_segment(f.read())
        b = seg["blocks"][0]
        raw = inflate(b["body"], b["rawLength"])
        if raw is None:
            return "(a block that does not inflate)"
        variant = self.rng.choice(["byte", "byte", "seq", "folder"])
        first, target_rid = b["first"], rid
        if variant == "byte":
            at = self.rng.randrange(len(raw))
            raw = raw[:at] + bytes([raw[at] ^ (1 << self.rng.randrange(8))]) + raw[at + 1:]
            what = "bit flipped at statement byte %d" % at
        elif variant == "seq":
            first = b["first"] + self.rng.randint(1, 50)
            what = "moved from seq %d to %d" % (b["first"], first)
        else:
            others = [f[0] for f in files if f[0] != rid] or [os.urandom(16).hex()]
            target_rid = self.rng.choice(others)
            what = "moved to folder %s" % target_rid[:8]
        data = file_header(4, bytes.fromhex(target_rid)) + block(b["count"], first, b["maxLamport"], raw)
        last = first + b["count"] - 1
        self.plant("flip", target_rid, canonical_name(data, first, last), data)
        return "%s/%s: %s" % (rid[:8], name[:20], what)

    def attack_other_board(self):
        n = self.plant_tree("other-board", self.other)
        return "%d file(s) of board %s" % (n, os.path.basename(self.other))

    def attack_into_other(self):
        n = 0
        for rid, name, path in self.v4_files(self.shared):
            folder = os.path.join(self.other, "replicas", rid)
            os.makedirs(folder, exist_ok=True)
            if not os.path.exists(os.path.join(folder, name)):
                shutil.copyfile(path, os.path.join(folder, name))
                n += 1
        self.plants["into-other"] += 1
        after = self.members_view(self.other)
        if after != self.other_members:
            self.violation("attack-effect", "copying this board's statements into another board's journal "
                                            "changed that board's membership: %s -> %s"
                           % (short(self.other_members), short(after)), signature="into-other")
            self.other_members = after
        return "%d file(s) copied into %s" % (n, os.path.basename(self.other))

    def attack_nonmember(self):
        data, ids = self.strokes_ndjson()
        self.run(["record", "-C", self.nonmember, "--json"], stdin=data)
        n = self.plant_tree("nonmember", self.nonmember, only_v4=False)
        return "%d segment(s) of a non-member" % n

    def attack_wrong_folder(self):
        data, ids = self.strokes_ndjson(1)
        self.run(["record", "-C", self.nonmember], stdin=data)
        files = self.all_files(self.nonmember)
        rid, name, path = files[-1]
        target = self.rng.choice(self.machines).replica
        with open(path, "rb") as f:
            body = f.read()
        self.plant("wrong-folder", target, name, body)
        return "a non-member's segment in %s's folder" % target[:8]

    def attack_rival_late(self):
        rival = self.new_scratch("rival-late")
        self.run(["members", "init", "-C", rival, "--label", "rival"])
        n = self.plant_tree("rival-late", rival)
        return "%d file(s)" % n

    def attack_rival_early(self):
        n = self.plant_tree("rival-early", self.early_rival)
        return "%d file(s) made before m0's genesis" % n

    def attack_forge(self):
        o = self.outsider
        board = bytes.fromhex(self.m0_board)
        mine = membership_replica(o.public, board).hex()
        held = [name_seqs(f[1])[1] for f in self.v4_files(self.shared, mine)]
        seq = max(held, default=0) + 1
        variant = self.forge_variant or self.rng.choice(["grant-self", "revoke-m0"])
        self.forge_variant = None
        if variant == "grant-self":
            unsigned = statement_bytes(1, 0, "grant", "admin", board, o.public, 0, 0, "outsider", o.public)
        elif variant == "revoke-m0":
            unsigned = statement_bytes(2, 0, "revoke", "none", board, bytes.fromhex(self.m0_founder), 0, 0, "", o.public)
        else:
            unsigned = statement_bytes(1, 0, "create", "admin", bytes(16), o.public, 0, 0, "outsider", o.public)
        rid, name, data = o.segment(seq, unsigned, struct.unpack_from("<Q", unsigned)[0])
        self.plant("forge-genesis" if variant == "create-backdated" else "forge", rid, name, data)
        return variant

    def attack_forge_genesis(self):
        self.forge_variant = "create-backdated"
        return self.attack_forge()

    def attack_same_key(self):
        choices = [(self.machines[0].key, os.path.join(self.machines[0].path, "local", "replica.key"))]
        for m in self.machines:
            for path in m.external:
                choices.append((next(k for k, p in self.key_files.items() if p == path), path))
        # Keys that signed statements of this board first: theirs are the seqs a second board reuses.
        board = bytes.fromhex(self.m0_board)
        signed = [c for c in choices if self.v4_files(self.shared, membership_replica(bytes.fromhex(c[0]), board).hex())]
        key, path = self.rng.choice(signed if signed and self.rng.random() < 0.95 else choices)
        board2 = self.new_scratch("same-key")
        self.run(["members", "init", "-C", board2, "--key", path, "--label", "second board"], refusable=True)
        self.run(["members", "grant", "-C", board2, "--key", path, self.machines[-1].key, "--role", "draw"],
                 refusable=True)
        n = self.plant_tree("same-key", board2)
        return "%d file(s) of a second board administered by key %s" % (n, key[:8])

    def attack_insider_cut(self):
        """A member expecting to be revoked (an insider, not an outsider: it holds its own key)
        publishes one of its blocks again at a far seq, signed by its key; an admin who synced it
        revokes it (the revocation's drawCut is the highest seq the admin held); then the member
        records and syncs as usual. Its strokes recorded after the revocation must not count."""
        view = self.last_view or {"members": {}}
        candidates = [m for m in self.machines[1:] if (view["members"].get(m.key) or {}).get("active")
                      and view["members"][m.key]["role"] in ("draw", "relay", "admin")]
        if not candidates:
            return "(no drawing member to play the insider)"
        x = self.rng.choice(candidates)
        admins = [h for h in self.held_keys() if h[0] is not x and h[2] != x.key
                  and (view["members"].get(h[2]) or {}).get("active") and view["members"][h[2]]["role"] == "admin"]
        if not admins:
            return "(no admin on another machine)"
        a, key_args, signer = self.rng.choice(admins)
        data, ids = self.strokes_ndjson(1)
        self.op += 1
        if self.run(["record", "-C", x.path, "--json"], stdin=data).rc == 0:
            x.records.append((self.op, ids))
        folder = os.path.join(x.path, "replicas", x.replica)
        names = sorted((n for n in os.listdir(folder) if name_seqs(n)), key=lambda n: name_seqs(n)[1])
        with open(os.path.join(folder, names[-1]), "rb") as f:
            seg = parse_segment(f.read())
        if seg is None or seg["version"] not in (3, 7) or not seg["blocks"]:
            return "(no signed segment, version 3 or 7, of %s)" % x.name
        b = seg["blocks"][0]
        raw = inflate(b["body"], b["rawLength"])
        far = 10 ** 9 + self.rng.randrange(10 ** 6)
        with open(os.path.join(x.path, "local", "replica.key")) as f:
            private = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(f.read().split("\n")[1]))
        public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        body = file_header(seg["version"], bytes.fromhex(x.replica)) + block(b["count"], far, b["maxLamport"], raw)
        signature = private.sign(b"StrokeJournal sealed segment v1\0" + b"\x01" + hashlib.sha256(body).digest())
        record = b"SJSG" + b"\x01\0\0\0" + public + signature
        data = body + record + struct.pack("<I", crc32(record))
        # Its own events, signed by its own key: the control journals keep them.
        self.plant("insider-cut", x.replica, canonical_name(data, far, far + b["count"] - 1), data, control=False)
        x.insider = True
        self.run(["sync", "-C", a.path, self.shared])

        def expect(v):
            member = v["members"].get(x.key)
            return None if member and member["revoked"] else "revoked: %s" % (member and member["revoked"])
        r, ok = self.statement(a, "revoke", [x.key] + key_args, signer, expect)
        if ok:
            x.key_ended_ops.append(self.op)
        data, ids = self.strokes_ndjson(2)
        self.op += 1
        if self.run(["record", "-C", x.path, "--json"], stdin=data).rc == 0:
            x.records.append((self.op, ids))
        self.run(["sync", "-C", x.path, self.shared])
        return "%s republished a block at seq %d; %s (%s) revoked it%s; it drew 2 strokes after" % (
            x.name, far, a.name, signer[:8], "" if ok else " (refused)")

    def held_keys(self):
        held = [(m, [], m.key) for m in self.machines]
        for m in self.machines:
            held += [(m, ["--key", path], next(k for k, p in self.key_files.items() if p == path)) for path in m.external]
        return held

    # -- checks ---------------------------------------------------------------------------------

    def control(self, pinned):
        """A journal holding m0's files minus every planted one (and m0's pin, if `pinned`)."""
        self.scratch_count += 1
        path = os.path.join(self.scratch, "control-%d" % self.scratch_count)
        self.run(["init", path])
        src = os.path.join(self.machines[0].path, "replicas")
        for rid in os.listdir(src):
            for name in os.listdir(os.path.join(src, rid)):
                if rid + "/" + name in self.planted or not name.endswith(".sjs"):
                    continue
                os.makedirs(os.path.join(path, "replicas", rid), exist_ok=True)
                shutil.copyfile(os.path.join(src, rid, name), os.path.join(path, "replicas", rid, name))
        if pinned:
            shutil.copyfile(os.path.join(self.machines[0].path, "local", "board"), os.path.join(path, "local", "board"))
        digest = self.run(["digest", "-C", path]).out.strip()
        view = self.members_view(path)
        shutil.rmtree(path, ignore_errors=True)
        return digest, view

    def check(self, final):
        label = "final" if final else "after step %d" % self.step
        self.checks += 1
        # A machine that has not joined yet joins now, as a person does (its first sync may
        # meet rival geneses, which the person settles: `do_join`).
        if not self.machines[-1].joined:
            self.do_join()
        for _ in range(2):
            for m in self.machines:
                self.run(["sync", "-C", m.path, self.shared])
        digests, views, logs = {}, {}, {}
        for m in self.machines:
            d = self.run(["digest", "-C", m.path])
            digests[m.name] = d.out.strip()
            s = self.sjread("digest", m)
            if s is not None and s.out.strip() != digests[m.name]:
                self.violation("reader-digest", "%s: sjread.py digest %s, journal digest %s"
                               % (m.name, s.out.strip()[:16], digests[m.name][:16]), s, signature="digest")
            raw = self.members(m)
            view = normalise_members(raw) if raw else None
            views[m.name] = view
            s = self.sjread("members", m)
            if s is not None and view is not None:
                try:
                    theirs = normalise_members(json.loads(s.out))
                except ValueError:
                    theirs = None
                # sjread prints rotatedTo (not replica) since it reads version 5: compared too.
                if theirs != strip_rotation(view, keep_rotated=True):
                    self.violation("reader-members", "%s: sjread.py members differs from journal members list: %s"
                                   % (m.name, diff_views(strip_rotation(view, keep_rotated=True), theirs)), s, signature="members")
            lg = self.run(["log", "-C", m.path])
            logs[m.name] = [json.loads(line) for line in lg.out.splitlines() if line.strip()]
        # 1, 3: the same on every machine (the drawing: on every machine that played no insider)
        peers = [m.name for m in self.machines if not m.insider]
        if len({digests[n] for n in peers}) > 1:
            self.violation("digest", "%s: digests differ: %s" % (label, ", ".join(
                "%s=%s" % (n, digests[n][:12]) for n in peers)), signature="digests differ")
        ref = views["m0"]
        self.last_view = ref or self.last_view
        for n, v in views.items():
            if v != ref:
                self.violation("members", "%s: members list of %s differs from m0's: %s" % (label, n, diff_views(ref, v)),
                               signature=("members differ", n == "m0"))
        # 6: the board is m0's genesis everywhere
        for n, v in views.items():
            if v is not None and (v["open"] or v["board"] != self.m0_board or v["founder"] != self.m0_founder):
                self.violation("hijack", "%s: %s follows board %s founded by %s, not m0's board %s (founder %s)"
                               % (label, n, v["board"], (v["founder"] or "-")[:16], self.m0_board, self.m0_founder[:16]),
                               signature=("hijack", n == "m0", v["open"]))
        # 4: what counts
        counts = {n: len(lines) for n, lines in logs.items()}
        if len({counts[n] for n in peers}) > 1:
            self.violation("log", "%s: log line counts differ: %s" % (label, counts), signature="log counts")
        ours = {m.replica for m in self.machines}
        for n, lines in logs.items():
            view = views[n]
            admitted = {}
            if view is not None:
                for member in view["members"].values():
                    admitted.setdefault(member["replica"], []).extend(member["admitted"])
            seen = collections.Counter()
            for e in lines:
                rid, seq = e.get("replica"), e.get("seq")
                if rid not in ours:
                    seen["an event of replica %s, which no machine draws as%s" % (
                        rid, " (a scratch journal's)" if rid in self.foreign else "")] += 1
                elif view is not None and not view["open"] and not any(a <= seq <= b for a, b in admitted.get(rid, [])):
                    seen["an event of %s at seq %d, outside its key's admitted seqs %s" % (
                        rid[:8], seq, admitted.get(rid, []))] += 1
            for what, count in seen.items():
                self.violation("counted", "%s: %s's log holds %s (%d such)" % (label, n, what, count),
                               signature=("counted", what.split(",")[0][:30]))
        self.check_finality(label, views, logs)
        # 6: the planted files change nothing
        if self.planted:
            for pinned in (True, False):
                digest, view = self.control(pinned)
                # Each machine against the control pinned as it is (a sync that brought one
                # genesis pins it; a contest is pinned by a person, above).
                who = [m.name for m in self.machines
                       if os.path.exists(os.path.join(m.path, "local", "board")) == pinned]
                for n in who:
                    if digests[n] != digest and n in peers:
                        self.violation("attack-effect", "%s: %s's digest %s, but %s (its files minus the %d planted) "
                                       "give %s" % (label, n, digests[n][:16], "a pinned control" if pinned else
                                                    "an unpinned control", len(self.planted), digest[:16]),
                                       signature=("digest", pinned))
                    if views[n] != view:
                        self.violation("attack-effect", "%s: %s's membership differs from %s (its files minus the "
                                       "planted): %s" % (label, n, "a pinned control" if pinned else "an unpinned control",
                                                         diff_views(view, views[n])), signature=("members", pinned))
        print("[membership] check %s: %d distinct digest(s), %d log lines on m0, %d members on m0, "
              "%d files planted, %d violation(s) so far, %.0f s" % (
                  label, len(set(digests.values())), counts["m0"], len((ref or {}).get("members", {})),
                  len(self.planted), sum(self.violations.values()), time.monotonic() - self.started), flush=True)

    def check_finality(self, label, views, logs):
        """A stroke a machine recorded after its journal key was revoked or rotated never counts
        (if the key is now inactive): the cuts are seqs its signers held, all below it."""
        ref = views.get("m0")
        if ref is None or ref["open"]:
            return
        for m in self.machines:
            member = ref["members"].get(m.key)
            if member is None or member["active"] or not m.key_ended_ops:
                continue
            ended = max(m.key_ended_ops)
            late = {sid for op, ids in m.records if op > ended for sid in ids}
            if not late:
                continue
            for n, lines in logs.items():
                hits = {e.get("stroke") for e in lines if e.get("replica") == m.replica and e.get("stroke") in late}
                if hits:
                    self.violation("counted", "%s: %s's log holds %d stroke(s) %s recorded after its key was %s"
                                   % (label, n, len(hits), m.name, "revoked" if member["revoked"] else "rotated"),
                                   signature="after revocation")

    # -- main loop ------------------------------------------------------------------------------

    def one_step(self):
        names = [k for k, _ in STEP_WEIGHTS if k != "attack" or self.attacks]
        weights = [w for k, w in STEP_WEIGHTS if k != "attack" or self.attacks]
        kind = self.rng.choices(names, weights)[0]
        if not self.machines[-1].joined and self.step >= self.a.late_join:
            kind = "join"
        t0 = time.monotonic()
        before = sum(self.violations.values())
        self.step_log.append("%d: %s ..." % (self.step, kind))
        self.refused_now = False
        desc = getattr(self, "do_" + kind)() + (": refused" if self.refused_now else "")
        self.stats["steps: " + kind] += 1
        self.step_log[-1] = "%d: %s (%.2f s%s)" % (self.step, desc, time.monotonic() - t0,
                                                  ", VIOLATION" if sum(self.violations.values()) > before else "")
        if self.a.verbose:
            print("[membership] " + self.step_log[-1], flush=True)

    def run_campaign(self):
        self.binary_stamp = binary_stamp(self.bin)
        self.setup()
        print("[membership] %d steps, seed %d, check every %d, attacks %s, journal %s, in %s" % (
            self.a.steps, self.a.seed, self.a.check_every, ",".join(self.attacks) or "none", self.bin, self.work),
            flush=True)
        for self.step in range(1, self.a.steps + 1):
            self.one_step()
            if self.step % self.a.check_every == 0 and self.step != self.a.steps:
                self.check(final=False)
        self.check(final=True)

    def summary(self):
        seconds = time.monotonic() - self.started
        s = self.stats
        print("\n=== membership campaign summary")
        print("steps: %d in %.1f s (seed %d)" % (self.step, seconds, self.a.seed))
        if binary_stamp(self.bin) != self.binary_stamp:
            print("note: %s was rebuilt during the run (%s, now %s): results may mix two builds"
                  % (self.bin, self.binary_stamp, binary_stamp(self.bin)))
        print("steps by kind: " + ", ".join("%s %d" % (k[7:], v) for k, v in sorted(s.items()) if k.startswith("steps: ")))
        print("strokes recorded: %d; statements accepted: %d grants, %d revocations, %d rotations; keys made: %d"
              % (s["strokes recorded"], s["grants"], s["revocations"], s["rotations"], s["keys made"]))
        print("refusals: %d (%s)" % (sum(self.refusals.values()),
                                     ", ".join("%s %d" % kv for kv in sorted(self.refusals.items())) or "none"))
        print("trust list changes: %d" % s["trust changes"])
        print("attacks planted (files): " + (", ".join("%s %d" % kv for kv in sorted(self.plants.items())) or "none"))
        print("checks run: %d" % self.checks)
        print("rival geneses met on a first sync, settled by a person with `members pin`: %d" % self.contests)
        if s["sjread refusals (open board with a trust list)"]:
            print("sjread.py refusals (an open board with a trust list, which it does not apply): %d"
                  % s["sjread refusals (open board with a trust list)"])
        print("commands: %d; %s" % (sum(self.cmd_count.values()), ", ".join(
            "%s %d (%.0f s)" % (k, v, self.cmd_time[k]) for k, v in self.cmd_count.most_common())))
        print("violations: %d%s" % (sum(self.violations.values()), (" (" + ", ".join(
            "%s %d" % kv for kv in sorted(self.violations.items())) + ")") if self.violations else ""))
        if self.violation_first:
            print("distinct violations (check, first step, count: first message):")
            for sig, (step, message) in sorted(self.violation_first.items(), key=lambda kv: kv[1][0]):
                print("  [%s] step %d, %d time(s): %s" % (sig[0], step, self.violation_count[sig], message[:300]))


# ----------------------------------------------------------------------------------------------

def binary_stamp(path):
    try:
        st = os.stat(path)
        return "%d bytes, modified %s" % (st.st_size, time.strftime("%H:%M:%S", time.localtime(st.st_mtime)))
    except OSError:
        return "missing"


def normalise_members(view):
    """The compared fields of a `members list --json` (or sjread members) object."""
    if view is None:
        return None
    members = {}
    for m in view.get("members", []):
        entry = {f: m.get(f) for f in MEMBER_FIELDS}
        entry["admitted"] = [list(r) for r in m.get("admitted", [])]
        if "replica" in m:
            entry["replica"] = m["replica"]
        if "rotatedTo" in m:
            entry["rotatedTo"] = m["rotatedTo"]
        members[m["key"]] = entry
    return {"open": view.get("open"), "board": view.get("board"), "founder": view.get("founder"), "members": members}


def strip_rotation(view, keep_rotated=False):
    """The fields sjread.py prints too (no replica; rotatedTo since it reads version 5)."""
    if view is None:
        return None
    kept = set(MEMBER_FIELDS) | ({"rotatedTo"} if keep_rotated else set())
    return {**view, "members": {k: {f: v for f, v in m.items() if f in kept}
                                for k, m in view["members"].items()}}


def short(view):
    if view is None:
        return "none"
    return "board %s, %d member(s): %s" % (view["board"], len(view["members"]), ", ".join(
        "%s %s%s" % (k[:8], m["role"], "" if m["active"] else " (inactive)") for k, m in sorted(view["members"].items())))


def diff_views(a, b):
    if a is None or b is None:
        return "%s vs %s" % (short(a), short(b))
    out = []
    for f in ("open", "board", "founder"):
        if a[f] != b[f]:
            out.append("%s %s vs %s" % (f, a[f], b[f]))
    for key in sorted(set(a["members"]) | set(b["members"])):
        x, y = a["members"].get(key), b["members"].get(key)
        if x != y:
            if x is None or y is None:
                out.append("member %s only on one side (%s)" % (key[:12], (x or y)["role"]))
            else:
                out.append("member %s: %s" % (key[:12], "; ".join(
                    "%s %s vs %s" % (f, x.get(f), y.get(f)) for f in sorted(set(x) | set(y)) if x.get(f) != y.get(f))))
    return "; ".join(out) or "(same)"



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--journal-bin", type=journal_binary, required=True, help="the `journal` executable to test")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check-every", type=int, default=20, help="a convergence check every N steps, and one at the end")
    ap.add_argument("--attacks", default="all", help="comma-separated attack kinds, 'all' (default) or '' for none: "
                                                    + ", ".join(ATTACKS))
    ap.add_argument("--late-join", type=int, help="the step at which m3 first syncs (default: a quarter of "
                                                   "--steps; 0: at setup, with the others)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds before a command counts as hung")
    ap.add_argument("--keep", action="store_true", help="keep the campaign folder when a check failed")
    ap.add_argument("--workdir", help="campaign folder (default: a new temporary folder; always kept)")
    ap.add_argument("--max-details", type=int, default=12, help="violations printed in full (one per signature)")
    ap.add_argument("--verbose", action="store_true", help="print every step")
    a = ap.parse_args()
    if a.late_join is None:
        a.late_join = max(1, a.steps // 4)
    if a.workdir and os.path.exists(a.workdir) and os.listdir(a.workdir):
        sys.exit("%s is not empty" % a.workdir)
    if not os.path.exists(SJREAD):
        sys.exit("%s is missing" % SJREAD)
    c = Campaign(a)
    try:
        c.run_campaign()
    except KeyboardInterrupt:
        print("\n[membership] interrupted", flush=True)
        c.violations["interrupted"] += 1
    c.summary()
    failed = sum(c.violations.values())
    if failed and (a.keep or a.workdir):
        print("campaign folder kept: %s" % c.work)
    elif not a.workdir:
        shutil.rmtree(c.work, ignore_errors=True)
    print("membership: %d checks, %d violations" % (c.checks, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
