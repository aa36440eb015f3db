#!/usr/bin/env python3
"""Adversarial campaign: several machines, one shared folder, an rsync target, and an adversary.

In a temporary folder it simulates machines (journals A, B, C made with `journal init`, plus
copies made with `cp -a` along the way) that sync through one shared folder and one local rsync
target, and runs random seeded steps chosen among:

  record      `journal record --print-durable` of a few events from a per-machine generator,
              sometimes `--no-seal`, sometimes killed with SIGKILL mid-stream (only events
              reported "durable N" count as acknowledged)
  sync        with the shared folder or the rsync target (`--via rsync`), sometimes killed
  concurrent  two syncs at once (same or different journals), or a record during a sync
  merge       from another machine's journal folder, the shared folder or the rsync target
              (the source must not change)
  snapshot    `journal snapshot` (the digest must not change)
  compact     `journal compact` (sometimes `--dry-run`, `--json`), sometimes killed with SIGKILL
              mid-way: the digest must not change, killed or not, and whatever a killed one left
              (a cover beside the files it covers) must be finished by the next compaction, open
              or sync without losing an event (records and syncs compact too, after each seal)
  copy        `cp -a J J2`, then J2 records and syncs as a new machine while J keeps recording
              (J2 must take a new replica identity; J must lose nothing)
  plant:*     hostile files in the shared folder or the rsync target: symlinked replica folders
              (to a canary folder that must stay empty), FIFOs (also swapped in while a sync
              runs), junk, half-copied segments, byte-flipped segments (in a fresh folder or
              replacing the shared copy), segments in another replica's folder, huge fake seqs
  stale       leftovers in a journal's local/ folder (index.tmp, replica.tmp, snapshot and
              sync-cache temporaries, staging junk) and stale `.tmp-` seals, then a record

After every step, for each journal the step touched:
  (1) every acknowledged event of the machine is present exactly once in its own journal
      (`journal log --replica`), bit-exact, and nothing else is under its replica;
  (2) `journal verify` exits 0, or 1 reporting only files the campaign planted in that journal;
      no command crashes (signal, exit > 128, "Fatal error") other than the SIGKILLs we sent,
      and no command fails unexpectedly;
  (3) nothing was written outside the journals, the shared folder and the rsync target
      (canary folders and the commands' working folder stay empty; merge sources unchanged);
  (4) no command hangs (--timeout).
Every --round steps and at the end: plants are removed, every machine syncs with the shared
folder three times in order, then all digests must be equal and every acknowledged event of
every machine must be present, exactly once and bit-exact, on every machine.

Usage: campaign.py --journal-bin PATH [--steps 2000] [--seed 1] [--keep] [--workdir DIR]
                   [--timeout 60] [--round 200] [--json OUT]
Exit 0 if every check passed, 1 otherwise. The last line is `adversary: N passed, M failed`.
"""
import argparse
import collections
import hashlib
import json
import os
import random
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

HEX32 = re.compile(r"^[0-9a-f]{32}$")
SEGMENT_NAME = re.compile(r"^(\d+)-(\d+)-([0-9a-f]+)\.sjs$")
ENVELOPE = {"replica", "seq", "lamport", "time"}
EVENT_KEYS = {"type", "stroke", "x", "y", "color", "width", "pressure", "t"}
NUMERIC = {"x", "y", "width", "pressure", "t"}
CRASH_MARKS = ("Fatal error", "Program crashed", "Segmentation fault", "Illegal instruction",
               "Precondition failed", "Assertion failed", "Stack dump", "Trace/breakpoint trap")
EDGE_DOUBLES = [0.1, 1 / 3, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                -1.7976931348623157e308, 1e-300, -0.0, 123456789.12345679, 0.30000000000000004]

STEP_WEIGHTS = [
    ("record", 26), ("sync", 17), ("sync-kill", 5), ("concurrent", 6), ("merge", 6),
    ("snapshot", 4), ("copy", 2), ("stale", 4), ("compact", 3), ("compact-kill", 3),
    ("plant:symlink-outside", 1.5), ("plant:symlink-replica", 2), ("plant:symlink-file", 1),
    ("plant:symlink-root", 0.7), ("plant:symlink-read", 1), ("plant:fifo", 1.5),
    ("plant:fifo-race", 1.2), ("plant:junk", 3), ("plant:truncated", 2), ("plant:flipped-fresh", 1.5),
    ("plant:flipped-shared", 2), ("plant:wrong-replica", 2), ("plant:huge-seq", 2),
]


# ----------------------------------------------------------------------------------------------
# Processes

class Result:
    def __init__(self, argv, rc, out, err, seconds, killed, timed_out):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err
        self.seconds, self.killed, self.timed_out = seconds, killed, timed_out

    def describe(self, limit=3000):
        def cut(text):
            return text if len(text) <= limit else text[:limit // 2] + "\n…\n" + text[-limit // 2:]
        state = "timed out (killed)" if self.timed_out else ("killed by the campaign" if self.killed else "")
        return (f"  $ {' '.join(self.argv)}\n  exit {self.rc} {state} after {self.seconds:.2f} s\n"
                f"  --- stdout\n{cut(self.out)}\n  --- stderr\n{cut(self.err)}")


class Proc:
    """A command in its own process group: stdin fed in chunks, output collected by threads."""

    def __init__(self, argv, cwd, env, chunks=None, pause=0.0):
        self.argv = argv
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True,
                                  stdin=subprocess.PIPE if chunks is not None else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out, self.err = [], []
        self.killed = self.timed_out = False
        self.threads = [threading.Thread(target=self._drain, args=(self.p.stdout, self.out), daemon=True),
                        threading.Thread(target=self._drain, args=(self.p.stderr, self.err), daemon=True)]
        if chunks is not None:
            self.threads.append(threading.Thread(target=self._feed, args=(chunks, pause), daemon=True))
        for t in self.threads:
            t.start()

    @staticmethod
    def _drain(stream, sink):
        for chunk in iter(lambda: stream.read1(65536), b""):
            sink.append(chunk)

    def _feed(self, chunks, pause):
        try:
            for chunk in chunks:
                self.p.stdin.write(chunk)
                self.p.stdin.flush()
                if pause:
                    time.sleep(pause)
            self.p.stdin.close()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def kill(self):
        self.killed = True
        self._killpg()

    def _killpg(self):
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def wait(self, timeout, kill_after=None):
        deadline = self.t0 + timeout
        if kill_after is not None and self.p.poll() is None:
            try:
                self.p.wait(max(0.0, self.t0 + kill_after - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill()
        try:
            self.p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self._killpg()
            self.p.wait()
        self._killpg()  # children (rsync) left behind by a killed or finished journal
        for t in self.threads:
            t.join(5)
        return Result(self.argv, self.p.returncode, b"".join(self.out).decode("utf-8", "replace"),
                      b"".join(self.err).decode("utf-8", "replace"), time.monotonic() - self.t0,
                      self.killed and not self.timed_out, self.timed_out)


# ----------------------------------------------------------------------------------------------
# Events: a per-machine generator, so that the content of every event sent is known

class EventGenerator:
    def __init__(self, gen_id, rng):
        self.gen_id, self.rng = gen_id, rng
        self.strokes = 0
        self.points_in_stroke = 0
        self.stroke_length = 1

    def stroke_id(self, k):
        return "%08X-0000-4000-8000-%012X" % (0xAD000000 + self.gen_id, k)

    def double(self):
        r = self.rng.random()
        if r < 0.06:
            return self.rng.choice(EDGE_DOUBLES)
        if r < 0.5:
            return round(self.rng.uniform(-2000, 2000), 2)
        return self.rng.uniform(-1e4, 1e4)

    def next(self):
        rng = self.rng
        r = rng.random()
        if r < 0.004:
            return {"type": "clear"}
        if r < 0.03 and self.strokes > 0:
            return {"type": rng.choice(["undo", "redo", "erase"]), "stroke": self.stroke_id(rng.randrange(self.strokes + 1))}
        if self.points_in_stroke >= self.stroke_length:
            event = {"type": "end", "stroke": self.stroke_id(self.strokes)}
            self.strokes += 1
            self.points_in_stroke = 0
            self.stroke_length = rng.randint(1, 25)
            return event
        self.points_in_stroke += 1
        event = {"type": "point", "stroke": self.stroke_id(self.strokes), "x": self.double(), "y": self.double(),
                 "color": "#%08X" % rng.getrandbits(32), "width": rng.choice([1, 2, 3, 4.5, 0.25, round(rng.uniform(0.1, 64), 3)])}
        if rng.random() < 0.7:
            event["pressure"] = rng.choice([0, 1, 0.5, rng.random()])
        if rng.random() < 0.7:
            event["t"] = rng.choice([0, rng.uniform(0, 1e4), round(rng.uniform(0, 100), 3)])
        return event


def line_of(event):
    return json.dumps(event, separators=(",", ":"))


def bits(value):
    return struct.pack("<d", float(value))


def same_event(got, want):
    """Bit-exact comparison of a `journal log` line with the event that was sent."""
    if set(got) & EVENT_KEYS != set(want):
        return False
    for key, value in want.items():
        if key in NUMERIC:
            if not isinstance(got[key], (int, float)) or bits(got[key]) != bits(value):
                return False
        elif got[key] != value:
            return False
    return True


# ----------------------------------------------------------------------------------------------
# Files

def identity(path):
    try:
        with open(os.path.join(path, "local", "replica")) as f:
            text = f.read(100).strip()
        return text if HEX32.match(text) else None
    except OSError:
        return None


def real_segments(root):
    """Regular `replicas/<32 hex>/*.sjs` files (not hidden, not conflict copies): (replica, name, path)."""
    out = []
    base = os.path.join(root, "replicas")
    try:
        folders = sorted(os.listdir(base))
    except OSError:
        return out
    for rid in folders:
        folder = os.path.join(base, rid)
        if not HEX32.match(rid) or os.path.islink(folder) or not os.path.isdir(folder):
            continue
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            p = os.path.join(folder, name)
            if (name.endswith(".sjs") and not name.startswith(".") and "conflict" not in name
                    and stat.S_ISREG(os.lstat(p).st_mode)):
                out.append((rid, name, p))
    return out


def fingerprint(root):
    """Every entry under root with its type, size and mtime (lstat): to prove a tree unchanged."""
    result = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            try:
                s = os.lstat(p)
            except OSError:
                continue
            result[os.path.relpath(p, root)] = (stat.S_IFMT(s.st_mode), s.st_size if not stat.S_ISDIR(s.st_mode) else 0,
                                                s.st_mtime_ns if not stat.S_ISDIR(s.st_mode) else 0)
    return result


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_atomically(path, data):
    tmp = os.path.join(os.path.dirname(path), ".adversary-write.%d" % os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def remove_path(p):
    try:
        if os.path.islink(p) or not os.path.isdir(p):
            os.unlink(p)
        else:
            shutil.rmtree(p)
    except FileNotFoundError:
        pass


def normalise(text):
    """A failure signature: digits and hex runs folded, so one bug is reported in detail once."""
    return re.sub(r"[0-9a-f]{8,}|\d+", "#", text)[:160]


# ----------------------------------------------------------------------------------------------
# The campaign

class Machine:
    def __init__(self, name, path, gen):
        self.name, self.path, self.gen = name, path, gen
        self.acked = collections.defaultdict(dict)   # replica -> seq -> event (acknowledged)
        self.sent = collections.defaultdict(dict)    # replica -> seq -> event (everything sent)
        self.copy_of = None          # replica id of the journal it was copied from
        self.retired = False
        self.accepted = set()        # basenames of files planted in this journal (verify may report them)
        self.stale = []              # paths of leftovers planted in this journal
        self.kill_pending = False    # a command on it was killed: our temporaries may remain
        self.record_since_kill = self.sync_since_kill = False
        self.identity_seen = None


class Plant:
    def __init__(self, pid, kind, target, expires):
        self.pid, self.kind, self.target, self.expires = pid, kind, target, expires
        self.paths = []      # (path, sha or kind marker) removed at cleanup if still ours
        self.restore = []    # callables run at cleanup
        self.mentions = []   # strings which, named in a sync's stderr, excuse an I/O error
        self.dirs = []       # folders the plant created (deepest first), removed at cleanup if empty


class Campaign:
    def __init__(self, a):
        self.a = a
        self.bin = os.path.abspath(a.journal_bin)
        self.rng = random.Random(a.seed)
        self.work = os.path.abspath(a.workdir) if a.workdir else tempfile.mkdtemp(prefix="adversary-")
        for sub in ("machines", "shared", "rsync", "canary", "cwd", "scratch", "aside"):
            os.makedirs(os.path.join(self.work, sub), exist_ok=True)
        self.shared = os.path.join(self.work, "shared")
        self.rsync = os.path.join(self.work, "rsync")
        self.canary = os.path.join(self.work, "canary")
        self.cwd = os.path.join(self.work, "cwd")
        self.scratch = os.path.join(self.work, "scratch")
        self.aside = os.path.join(self.work, "aside")
        self.env = dict(os.environ, SWIFT_BACKTRACE="enable=no")
        self.env.pop("JOURNAL_DIR", None)
        self.machines = []
        self.owner = {}              # replica -> machine that writes it
        self.known_replicas = set()
        self.foreign_replicas = set()
        self.plants = []
        self.plant_seq = 0
        self.frozen = {}             # path -> fingerprint of trees nothing may write into
        self.step = 0
        self.kind = ""
        self.step_log = collections.deque(maxlen=20)
        self.step_cmds = []
        self.canary_culprit = None
        self.seq_cache = {}          # (journal path, replica) -> highest seq `log` showed since the last command on it
        self.cmd_count = collections.Counter()
        self.cmd_time = collections.Counter()
        self.passed = 0
        self.failed = 0
        self.failures_by_check = collections.Counter()
        self.signatures = collections.Counter()
        self.first_kind = {}
        self.once = set()
        self.detailed = 0
        self.reported_events = set()
        self.kinds = collections.Counter()
        self.plant_kinds = collections.Counter()
        self.stats = collections.Counter()
        self.tolerated = collections.Counter()
        self.acked_checked = 0
        self.started = time.monotonic()

    # -- running commands ----------------------------------------------------------------------

    def start(self, args, chunks=None, pause=0.0):
        if "-C" in args:  # the journal may change: forget what we knew of its seqs
            path = args[args.index("-C") + 1]
            for key in [k for k in self.seq_cache if k[0] == path]:
                del self.seq_cache[key]
        return Proc([self.bin] + args, self.cwd, self.env, chunks, pause)

    def finish(self, proc, kill_after=None):
        r = proc.wait(self.a.timeout, kill_after)
        self.step_cmds.append(r)
        self.cmd_count[r.argv[1]] += 1
        self.cmd_time[r.argv[1]] += r.seconds
        if self.canary_culprit is None and self.canary_written():
            self.canary_culprit = r
        return r

    def canary_written(self):
        for dirpath, dirnames, filenames in os.walk(self.canary):
            if filenames or (dirnames and dirpath != self.canary):
                return True
        return False

    def run(self, args, kill_after=None):
        return self.finish(self.start(args), kill_after)

    def check_process(self, r, ok=(0,), concurrent=False, target=None):
        """(2) and (4): no crash, no hang, an expected exit code. Returns True if the command is ok."""
        if r.timed_out:
            return self.fail("hang", f"`{' '.join(r.argv[1:3])}` did not finish within {self.a.timeout:.0f} s", r)
        crashed = [m for m in CRASH_MARKS if m in r.err]
        if (r.rc < 0 and not r.killed) or r.rc > 128 or crashed:
            return self.fail("crash", f"`{' '.join(r.argv[1:3])}` crashed (exit {r.rc}) {crashed}", r)
        if r.killed or r.rc in ok:
            self.ok()
            return True
        if concurrent and r.rc == 75:
            self.tolerated["exit 75 (locked) while another command ran on the journal"] += 1
            self.ok()
            return True
        if r.rc == 74 and target is not None:
            for plant in self.plants:
                if plant.target == target and any(m in r.err for m in plant.mentions):
                    self.tolerated[f"exit 74 naming a planted {plant.kind} in the target"] += 1
                    self.ok()
                    return True
        return self.fail("exit", f"`{' '.join(r.argv[1:3])}` exited {r.rc}", r)

    # -- accounting ----------------------------------------------------------------------------

    def ok(self, n=1):
        self.passed += n

    def fail(self, check, message, result=None, signature=None, once=None):
        """Counts a failed check; prints the first failure of each signature in full.
        once: a key for a failure that stays true (a fork, an identity): counted the first time only."""
        if once is not None:
            if once in self.once:
                return False
            self.once.add(once)
        self.failed += 1
        self.failures_by_check[check] += 1
        sig = (check, signature or normalise(message))
        self.signatures[sig] += 1
        self.first_kind.setdefault(sig, self.kind)
        if self.signatures[sig] == 1 and self.detailed < self.a.max_details:
            self.detailed += 1
            print(f"\nFAIL [{check}] step {self.step} ({self.kind}): {message}", flush=True)
            if result is not None:
                print(result.describe(), flush=True)
            if self.detailed <= 6:
                print("  --- last steps", flush=True)
                for line in self.step_log:
                    print("   " + line, flush=True)
                print(f"   {self.step}: {self.kind} (failing step)", flush=True)
        return False

    # -- setup ---------------------------------------------------------------------------------

    def new_machine(self, name, path):
        m = Machine(name, path, EventGenerator(len(self.machines) + 1, random.Random(self.rng.getrandbits(64))))
        self.machines.append(m)
        return m

    def setup(self):
        for name in ("A", "B", "C"):
            path = os.path.join(self.work, "machines", name)
            r = self.run(["init", path])
            if r.rc != 0:
                sys.exit(f"journal init failed:\n{r.describe()}")
            m = self.new_machine(name, path)
            rid = identity(path)
            if rid is None:
                sys.exit(f"cannot read the replica id of {path} (local/replica)")
            self.owner[rid] = m
            self.known_replicas.add(rid)
            m.identity_seen = rid
        # An outsider: a journal of another board, whose segments the adversary copies around.
        self.outsider = os.path.join(self.scratch, "outsider")
        self.run(["init", self.outsider])
        gen = EventGenerator(0xEE, random.Random(self.rng.getrandbits(64)))
        for _ in range(3):
            data = "".join(line_of(gen.next()) + "\n" for _ in range(self.rng.randint(3, 12))).encode()
            self.finish(self.start(["record", "-C", self.outsider], [data]))
        self.foreign_replicas.add(identity(self.outsider))
        self.frozen[self.outsider] = fingerprint(self.outsider)
        self.step_cmds = []

    def live(self):
        return [m for m in self.machines if not m.retired]

    def pick(self, exclude=None):
        choices = [m for m in self.live() if m is not exclude]
        return self.rng.choice(choices) if choices else None

    def target(self, rsync_share=0.3):
        return self.rsync if self.rng.random() < rsync_share else self.shared

    def sync_args(self, m, target, no_seal=None, json_report=None):
        args = ["sync", "-C", m.path, target]
        if target == self.rsync or (target.startswith(self.scratch) and self.rng.random() < 0.3):
            args += ["--via", "rsync"]
        if no_seal if no_seal is not None else self.rng.random() < 0.2:
            args.append("--no-seal")
        if json_report if json_report is not None else self.rng.random() < 0.3:
            args.append("--json")
        return args

    def note_kill(self, m):
        m.kill_pending = True
        m.record_since_kill = m.sync_since_kill = False

    def note_success(self, m, what):
        if what == "record":
            m.record_since_kill = True
        else:
            m.sync_since_kill = True
        if m.record_since_kill and m.sync_since_kill:
            m.kill_pending = False

    # -- the acknowledged-event bookkeeping ------------------------------------------------------

    def log_events(self, m, rid):
        r = self.run(["log", "-C", m.path, "--replica", rid])
        if r.rc == 64 and not r.out.strip() and "replica" in r.err:
            self.ok()  # the filter matches no replica: this journal holds none of its events
            self.seq_cache[(m.path, rid)] = 0
            return []
        if not self.check_process(r):
            return None
        events = []
        for line in r.out.splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                self.fail("log", f"`journal log` printed a line that is not JSON: {line[:200]!r}", r)
                return None
        self.seq_cache[(m.path, rid)] = max((e.get("seq", 0) for e in events if e.get("replica") == rid), default=0)
        return events

    def max_seq(self, m, rid):
        if rid is None:
            return 0
        if (m.path, rid) not in self.seq_cache:
            self.log_events(m, rid)
        return self.seq_cache.get((m.path, rid), 0)

    def record(self, m, kill=None, no_seal=None, concurrent_with=None, n=None):
        """Records n events into m; returns the Result. kill: seconds after which to SIGKILL."""
        rid0 = identity(m.path)
        start_seq = self.max_seq(m, rid0) + 1
        n = n or self.rng.randint(1, 30)
        events = [m.gen.next() for _ in range(n)]
        lines = [(line_of(e) + "\n").encode() for e in events]
        args = ["record", "-C", m.path, "--print-durable", "--flush-every", str(self.rng.choice([1, 1, 2, 3, 7, 16]))]
        if no_seal if no_seal is not None else self.rng.random() < 0.2:
            args.append("--no-seal")
        chunks, pause = [b"".join(lines)], 0.0
        if kill is not None:
            size = self.rng.randint(1, 4)
            chunks = [b"".join(lines[i:i + size]) for i in range(0, n, size)]
            pause = self.rng.uniform(0, 0.01)
        proc = self.start(args, chunks, pause)
        if concurrent_with is not None:
            other = concurrent_with()
        r = self.finish(proc, kill)
        if concurrent_with is not None:
            self.after_concurrent(other)
        if r.killed:
            self.stats["records killed"] += 1
            self.note_kill(m)
        self.check_process(r, concurrent=concurrent_with is not None)
        rid1 = identity(m.path)
        self.check_identity(m, rid0, rid1, r)
        if rid1 is None:
            return r
        if rid1 != rid0:
            start_seq = 1
        durable = [int(x) for x in re.findall(r"^durable (\d+)$", r.out, re.M)]
        said = re.search(r"as seq (\d+)\.\.\.?(\d+)", r.err + r.out)
        if said and r.rc == 0:
            first, last = int(said.group(1)), int(said.group(2))
            if first != start_seq or last != first + n - 1:
                self.fail("seq", f"{m.name}: expected seqs {start_seq}...{start_seq + n - 1} for {n} events, "
                                 f"the recorder says {first}...{last}", r)
                start_seq = first
        acked_to = max(durable, default=0)
        if r.rc == 0:
            if acked_to != start_seq + n - 1:
                self.fail("seq", f"{m.name}: record exited 0 but its last 'durable' is {acked_to}, "
                                 f"expected {start_seq + n - 1}", r)
            acked_to = start_seq + n - 1
            self.note_success(m, "record")
        elif acked_to > start_seq + n - 1:
            self.fail("seq", f"{m.name}: 'durable {acked_to}' beyond the {n} events sent from seq {start_seq}", r)
            acked_to = start_seq + n - 1
        for i, event in enumerate(events):
            m.sent[rid1][start_seq + i] = event
            if start_seq + i <= acked_to:
                m.acked[rid1][start_seq + i] = event
        self.stats["events acknowledged"] += max(0, acked_to - start_seq + 1)
        return r

    def check_identity(self, m, before, after, r):
        if after is None:
            self.fail("identity", f"{m.name}: local/replica is unreadable after `record`", r)
            return
        if after not in self.owner:
            self.owner[after] = m
            self.known_replicas.add(after)
        if m.copy_of is not None and after == m.copy_of:
            self.fail("identity", f"{m.name} is a `cp -a` copy and writes as the replica it was copied from "
                                  f"({after[:12]}…)", r, signature="a copy keeps the identity of its original",
                      once=("copy identity", m.name))
        elif m.copy_of is None and after != m.identity_seen and m.identity_seen is not None:
            self.fail("identity", f"{m.name} changed its replica id from {m.identity_seen[:12]}… to {after[:12]}… "
                                  f"without being copied", r)
        m.identity_seen = after

    # -- checks --------------------------------------------------------------------------------

    def check_machine(self, m):
        """(1) acknowledged events present exactly once and bit-exact; (2) verify."""
        rid_now = identity(m.path)
        if rid_now is not None and rid_now not in self.owner:
            self.owner[rid_now] = m
            self.known_replicas.add(rid_now)
        rids = set(r for r, acked in m.acked.items() if acked)
        if rid_now is not None and self.owner.get(rid_now) is m:
            rids.add(rid_now)
        for rid in sorted(rids):
            events = self.log_events(m, rid)
            if events is None:
                continue
            self.check_events(m, m, rid, events)
        self.verify(m)

    def check_events(self, holder, writer, rid, events):
        """Events of `writer`'s replica rid as `holder` has them."""
        by_seq = collections.defaultdict(list)
        for e in events:
            if e.get("replica") != rid:
                if not str(e.get("replica", "")).startswith(rid):
                    self.fail("log", f"`log --replica {rid[:12]}…` on {holder.name} printed an event of replica "
                                     f"{e.get('replica')}")
                continue
            by_seq[e.get("seq")].append(e)
        for seq, want in sorted(writer.acked.get(rid, {}).items()):
            # In its own journal an event is checked after every step; elsewhere (convergence rounds)
            # a bad event is counted once, whichever machines have it wrong.
            key = (holder.name, writer.name, rid, seq) if holder is writer else ("elsewhere", writer.name, rid, seq)
            if key in self.reported_events:
                continue
            self.acked_checked += 1
            got = by_seq.get(seq, [])
            if len(got) == 1 and same_event(got[0], want):
                self.ok()
                continue
            self.reported_events.add(key)
            if not got:
                what = "lost"
            elif len(got) > 1:
                what = f"present {len(got)} times"
            else:
                what = f"changed: is {json.dumps({k: got[0][k] for k in got[0] if k in EVENT_KEYS})}"
            self.fail("acked", f"{holder.name}: acknowledged event {rid[:12]}…#{seq} recorded by {writer.name} {what}; "
                               f"sent {line_of(want)}", signature=f"acknowledged event {what.split(':')[0]} "
                                                  f"({'in the journal that recorded it' if holder is writer else 'on another machine'})")
        if self.owner.get(rid) is writer:
            for seq, got in sorted(by_seq.items()):
                key = ("invented", rid, seq)
                if seq in writer.acked.get(rid, {}) or key in self.reported_events:
                    continue
                want = writer.sent.get(rid, {}).get(seq)
                if want is None or not same_event(got[0], want):
                    self.reported_events.add(key)
                    self.fail("acked", f"{holder.name}: event {rid[:12]}…#{seq} of {writer.name}'s replica is not one "
                                       f"{writer.name} sent: {json.dumps(got[0])[:300]}",
                              signature="an event under a machine's own replica id that it never sent")

    def verify(self, m):
        r = self.run(["verify", "-C", m.path, "--json"])
        if not self.check_process(r, ok=(0, 1)):
            return
        if r.rc == 0:
            return
        try:
            problems = json.loads(r.out).get("problems", [])
        except ValueError:
            problems = [{"file": "", "reason": line} for line in r.out.splitlines() if line.strip()]
        bad = []
        for p in problems:
            base = os.path.basename(str(p.get("file", "")))
            if base in m.accepted:
                self.tolerated["verify reports a file the campaign planted in the journal"] += 1
                continue
            if m.kill_pending and p.get("kind") == "ignored" and base.startswith(".tmp-"):
                self.tolerated["verify reports a temporary left by a SIGKILLed command"] += 1
                continue
            bad.append(p)
        if not problems:
            self.fail("verify", f"{m.name}: verify exited 1 without a problem", r)
        for p in bad:
            reason = str(p.get("reason", ""))
            self.fail("verify", f"{m.name}: verify reports {p.get('kind', '?')} {p.get('file', '')}: {reason[:300]}", r,
                      signature=f"verify: {p.get('kind')}: {normalise(reason)}",
                      once=("verify", m.name, os.path.basename(str(p.get("file", ""))), normalise(reason)))

    def check_confinement(self):
        """(3): canary folders and the commands' working folder stay empty; frozen trees unchanged."""
        ok = True
        written = []
        for dirpath, dirnames, filenames in os.walk(self.canary):
            for name in filenames + [d for d in dirnames if dirpath != self.canary]:
                written.append(os.path.join(dirpath, name))
        if written:
            ok = self.fail("confinement", f"a command wrote {len(written)} file(s) through a planted symlink, outside "
                                          f"the journals and targets: "
                                          f"{', '.join(os.path.relpath(p, self.work) for p in written[:4])}",
                           self.canary_culprit, signature="wrote through a planted symlink")
            for p in written:
                remove_path(p)
        self.canary_culprit = None
        for name in os.listdir(self.cwd):
            ok = self.fail("confinement", f"a command wrote {name} into its working folder")
            remove_path(os.path.join(self.cwd, name))
        for root, before in self.frozen.items():
            if fingerprint(root) != before:
                ok = self.fail("confinement", f"{os.path.relpath(root, self.work)} (never a target) was changed",
                               signature=f"frozen {os.path.basename(root)}")
                self.frozen[root] = fingerprint(root)
        expected = {"machines", "shared", "rsync", "canary", "cwd", "scratch", "aside"}
        for name in os.listdir(self.work):
            if name not in expected:
                ok = self.fail("confinement", f"something wrote {name} into the campaign folder")
                remove_path(os.path.join(self.work, name))
        if ok:
            self.ok()

    # -- steps ---------------------------------------------------------------------------------

    def do_record(self):
        m = self.pick()
        kill = self.rng.uniform(0.0, 0.25) if self.rng.random() < 0.25 else None
        self.kind = "record-kill" if kill is not None else "record"
        r = self.record(m, kill=kill)
        return [m], f"{m.name} rc={r.rc}" + (" killed" if r.killed else "")

    def do_sync(self, kill=False):
        m = self.pick()
        t = self.target()
        args = self.sync_args(m, t)
        r = self.run(args, kill_after=self.rng.uniform(0.0, 0.3) if kill else None)
        if r.killed:
            self.stats["syncs killed"] += 1
            self.note_kill(m)
        if self.check_process(r, target=t) and r.rc == 0 and not r.killed:
            self.note_success(m, "sync")
        if "--json" in args and r.rc == 0 and not r.killed:
            try:
                json.loads(r.out)
                self.ok()
            except ValueError:
                self.fail("report", "`sync --json` did not print one JSON object", r)
        return [m], f"{m.name} {'rsync' if t == self.rsync else 'shared'} {' '.join(args[4:])} rc={r.rc}" + \
            (" killed" if r.killed else "")

    def after_concurrent(self, procs):
        for proc, m, t in procs:
            r = self.finish(proc)
            if self.check_process(r, concurrent=True, target=t) and r.rc == 0:
                self.note_success(m, "sync")

    def do_concurrent(self):
        variant = self.rng.choice(["same-two-targets", "same-target-twice", "two-journals", "record-during-sync",
                                   "sync-and-merge"])
        m = self.pick()
        if variant == "record-during-sync":
            t = self.target()
            holder = []

            def other():
                holder.append((self.start(self.sync_args(m, t)), m, t))
                return holder
            r = self.record(m, concurrent_with=other)
            return [m], f"{variant} {m.name} record rc={r.rc}"
        pairs = []
        if variant == "same-two-targets":
            pairs = [(m, self.shared), (m, self.rsync)]
        elif variant == "same-target-twice":
            t = self.target()
            pairs = [(m, t), (m, t)]
        elif variant == "two-journals":
            n = self.pick(exclude=m) or m
            t = self.target()
            pairs = [(m, t), (n, t if self.rng.random() < 0.7 else self.target())]
        procs = [(self.start(self.sync_args(j, t)), j, t) for j, t in pairs]
        if variant == "sync-and-merge":
            src = self.pick(exclude=m) or m
            procs = [(self.start(self.sync_args(m, self.target())), m, None),
                     (self.start(["merge", "-C", m.path, src.path]), m, None)]
        self.after_concurrent(procs)
        touched = list({id(j): j for _, j, _ in procs}.values())
        return touched, f"{variant} " + " ".join(j.name for _, j, _ in procs)

    def do_merge(self):
        m = self.pick()
        r0 = self.rng.random()
        other = self.pick(exclude=m)
        src = other.path if (r0 < 0.6 and other) else (self.shared if r0 < 0.8 else self.rsync)
        if not os.path.isdir(os.path.join(src, "replicas")):  # nothing published there yet: not a board
            src = other.path if other else self.shared
        before = fingerprint(src)
        r = self.run(["merge", "-C", m.path, src] + (["--json"] if self.rng.random() < 0.3 else []))
        self.check_process(r, target=src)
        after = fingerprint(src)
        if after != before:
            changes = ([f"+{p}" for p in sorted(set(after) - set(before))] +
                       [f"-{p}" for p in sorted(set(before) - set(after))] +
                       [f"~{p}" for p in sorted(set(before) & set(after)) if before[p] != after[p]])
            self.fail("confinement", f"`merge` changed its source {os.path.relpath(src, self.work)}: "
                                     f"{', '.join(changes[:6])}{' …' if len(changes) > 6 else ''}", r,
                      signature="`merge` changed its source")
        else:
            self.ok()
        return [m], f"{m.name} from {os.path.relpath(src, self.work)} rc={r.rc}"

    def do_snapshot(self):
        m = self.pick()
        d1 = self.run(["digest", "-C", m.path])
        r = self.run(["snapshot", "-C", m.path])
        d2 = self.run(["digest", "-C", m.path])
        good = all(self.check_process(x) for x in (d1, r, d2))
        if good:
            if d1.out.strip() != d2.out.strip():
                self.fail("snapshot", f"{m.name}: the digest changed across `snapshot`: {d1.out.strip()} -> {d2.out.strip()}", d2)
            else:
                self.ok()
        return [m], f"{m.name} rc={r.rc}"

    def do_compact(self, kill=False):
        m = self.pick()
        d1 = self.run(["digest", "-C", m.path])
        args = ["compact", "-C", m.path]
        if self.rng.random() < 0.2:
            args.append("--dry-run")
        if self.rng.random() < 0.3:
            args.append("--json")
        r = self.run(args, kill_after=self.rng.uniform(0.0, 0.15) if kill else None)
        if r.killed:
            self.stats["compactions killed"] += 1
            # Like a killed record or sync, a killed compaction may leave its cover's temporary.
            self.note_kill(m)
        elif self.check_process(r, ok=(0, 1)) and "--json" in args:
            try:
                json.loads(r.out)
                self.ok()
            except ValueError:
                self.fail("report", "`compact --json` did not print one JSON object", r)
        d2 = self.run(["digest", "-C", m.path])
        if self.check_process(d1) and self.check_process(d2):
            if d1.out.strip() != d2.out.strip():
                self.fail("compact", f"{m.name}: the digest changed across `compact`"
                                     f"{' (killed)' if r.killed else ''}: {d1.out.strip()} -> {d2.out.strip()}", r)
            else:
                self.ok()
        return [m], f"{m.name} {' '.join(args[3:])} rc={r.rc}" + (" killed" if r.killed else "")

    def do_copy(self):
        copies = [m for m in self.live() if m.copy_of is not None]
        if len(self.live()) >= self.a.max_machines and copies:
            self.retire(copies[0])
        # Picked after retiring: a retired machine is never synced again, so recording into it
        # would make its events unreachable by design, not by a fault of the product.
        src = self.pick()
        name = "%s%d" % (src.name[0], len(self.machines) + 1)
        path = os.path.join(self.work, "machines", name)
        live = self.rng.random() < 0.25
        holder = []
        if live:  # copy while the original is recording
            def other():
                time.sleep(self.rng.uniform(0, 0.1))
                holder.append(subprocess.run(["cp", "-a", src.path, path], capture_output=True))
                return []
            self.record(src, concurrent_with=other, no_seal=True)
        else:
            holder.append(subprocess.run(["cp", "-a", src.path, path], capture_output=True))
        if holder[0].returncode != 0:
            # A live copy can race a file the recorder is replacing; what was copied is still a journal.
            self.tolerated["cp -a reported a vanished file during a live copy"] += 1
        copy = self.new_machine(name, path)
        copy.copy_of = identity(path)
        copy.identity_seen = copy.copy_of
        copy.accepted = set(src.accepted)
        copy.stale = [path + q[len(src.path):] for q in src.stale if os.path.lexists(path + q[len(src.path):])]
        copy.kill_pending = src.kill_pending or live  # a live copy is a crash image of the original
        self.stats["copies"] += 1
        # The copy is used as a new machine; the original keeps recording.
        self.record(copy, no_seal=self.rng.random() < 0.5)
        t = self.target(0.2)
        r = self.run(self.sync_args(copy, t))
        self.check_process(r, target=t)
        self.record(src, no_seal=self.rng.random() < 0.5)
        if self.rng.random() < 0.5:
            r = self.run(self.sync_args(src, t))
            self.check_process(r, target=t)
        return [src, copy], f"{src.name} -> {name}{' (live)' if live else ''}"

    def retire(self, m):
        """Takes a copy out of the pool: plants removed, then it syncs twice with the shared folder."""
        self.cleanup(everything=True)
        for _ in range(2):
            r = self.run(["sync", "-C", m.path, self.shared])
            self.check_process(r)
        m.retired = True
        self.stats["machines retired"] += 1

    def dead_pid(self):
        try:
            with open("/proc/sys/kernel/pid_max") as f:
                top = int(f.read())
        except (OSError, ValueError):
            top = 32768
        for _ in range(100):
            pid = self.rng.randint(top // 2, top - 1)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return pid
            except PermissionError:
                pass
        return top - 1

    def do_stale(self):
        m = self.pick()
        local = os.path.join(m.path, "local")
        rid = identity(m.path) or "0" * 32
        own = [s for s in real_segments(m.path) if s[0] == rid]
        seg = self.rng.choice(own)[1] if own else "00000000000000000001-00000000000000000001-00000000.sjs"
        pid = self.dead_pid()
        options = [
            ("local/index.tmp", lambda: os.urandom(self.rng.randint(0, 64))),
            ("local/replica.tmp", lambda: ("%032x\n" % self.rng.getrandbits(128)).encode()),
            ("local/snapshots/latest.sjsnap.tmp", lambda: os.urandom(self.rng.randint(0, 300))),
            ("local/sync-cache.tmp-%d" % pid, lambda: b"strokejournal-sync-cache v2\n"),
            ("local/index.tmp-%d" % pid, lambda: b"strokejournal-index v1\n"),
            ("local/replica.tmp-%d" % pid, lambda: ("%032x\n" % self.rng.getrandbits(128)).encode()),
            ("local/anchor.tmp-%d" % pid, lambda: b""),
            ("local/staging/.files-from.tmp", lambda: b"x\n"),
            ("local/staging/%s/%s" % (rid, seg), lambda: os.urandom(50)),
            ("replicas/%s/.tmp-%s" % (rid, seg), lambda: os.urandom(self.rng.randint(0, 200))),
            ("replicas/%s/.tmp-%s.%s.%d" % (rid, seg, os.uname().nodename, pid), lambda: os.urandom(80)),
        ]
        chosen = self.rng.sample(options, self.rng.randint(1, 3))
        names = []
        for rel, content in chosen:
            p = os.path.join(m.path, rel)
            if os.path.lexists(p):
                continue
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(content())
            m.stale.append(p)
            m.accepted.add(os.path.basename(p))
            names.append(rel)
        self.plant_kinds["stale"] += 1
        r = self.record(m, n=self.rng.randint(1, 5)) if self.rng.random() < 0.7 else self.run(self.sync_args(m, self.shared))
        if r.argv[1] == "sync":
            if self.check_process(r) and r.rc == 0:
                self.note_success(m, "sync")
        return [m], f"{m.name} {', '.join(names)} then {r.argv[1]} rc={r.rc}"

    # -- plants --------------------------------------------------------------------------------

    def new_plant(self, kind, target):
        self.plant_seq += 1
        p = Plant(self.plant_seq, kind, target, self.step + self.rng.randint(3, 40))
        self.plants.append(p)
        self.plant_kinds[kind] += 1
        return p

    def canary_dir(self, plant):
        d = os.path.join(self.canary, "p%d" % plant.pid)
        os.makedirs(d, exist_ok=True)
        return d

    def all_segments(self):
        out = []
        for m in self.live():
            out += [(m,) + s for s in real_segments(m.path)]
        return out

    def replica_ids(self, root=None):
        """Replica ids to plant under: those of the target and of the machines, except the ones
        whose folder in the target is (a planted) symlink, through which we would write ourselves."""
        ids = [s[0] for s in real_segments(root)] if root else []
        ids += [identity(m.path) for m in self.live()]
        return sorted(set(i for i in ids if i and not (root and os.path.islink(os.path.join(root, "replicas", i)))))

    def through_symlink(self, path):
        """True if a folder on the way from the campaign folder to path is a symlink."""
        rel = os.path.relpath(os.path.dirname(path), self.work)
        here = self.work
        for part in rel.split(os.sep):
            here = os.path.join(here, part)
            if os.path.islink(here):
                return True
        return False

    def looking_name(self, like, first=None, last=None):
        """A canonical-looking segment name in the format of a real one (whatever that is)."""
        match = SEGMENT_NAME.match(like or "")
        if not match:
            base = like or "00000000000000000001-00000000000000000001-00000000.sjs"
            chars = list(base)
            for i in self.rng.sample(range(max(1, len(base) - 4)), min(3, max(1, len(base) - 4))):
                if chars[i].isdigit():
                    chars[i] = str(self.rng.randrange(10))
                elif chars[i] in "abcdef":
                    chars[i] = self.rng.choice("abcdef")
            return "".join(chars)
        w1, w2, h = len(match.group(1)), len(match.group(2)), len(match.group(3))
        if first is None:
            first = self.rng.randint(1, 5000)
        if last is None:
            last = first + self.rng.randint(0, 50)
        return "%0*d-%0*d-%s.sjs" % (w1, first, w2, last, "%0*x" % (h, self.rng.getrandbits(4 * h)))

    def make_dirs(self, plant, folder):
        """Creates folder and records which folders it made, to remove them (if empty) at cleanup."""
        made = []
        while not os.path.lexists(folder):
            made.append(folder)
            folder = os.path.dirname(folder)
        for d in reversed(made):
            os.mkdir(d)
        plant.dirs += made

    def plant_file(self, plant, path, data):
        if self.through_symlink(path) or os.path.lexists(path):
            return False
        self.make_dirs(plant, os.path.dirname(path))
        with open(path, "wb") as f:
            f.write(data)
        plant.paths.append((path, sha(data)))
        return True

    def plant_target(self):
        return self.target(0.25)

    def do_plant(self, kind):
        name = kind.split(":", 1)[1]
        touched, desc = getattr(self, "plant_" + name.replace("-", "_"))()
        return touched, f"{name} {desc}"

    def plant_symlink_outside(self):
        t = self.plant_target()
        p = self.new_plant("symlink-outside", t)
        link = os.path.join(t, "replicas", "%032x" % self.rng.getrandbits(128))
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(self.canary_dir(p), link)
        p.paths.append((link, "symlink"))
        p.mentions.append(os.path.basename(link))
        return [], f"{os.path.relpath(link, self.work)} -> canary"

    def plant_symlink_replica(self):
        t = self.plant_target()
        ids = self.replica_ids(t)
        rid = self.rng.choice(ids)
        p = self.new_plant("symlink-replica", t)
        folder = os.path.join(t, "replicas", rid)
        if os.path.islink(folder):
            return [], "skipped (already a symlink)"
        # Another plant inside this folder would be restored by path later, i.e. through the
        # symlink into a canary (the campaign's own write, blamed on the product).
        if any(path.startswith(folder + os.sep) for q in self.plants for path, _ in q.paths):
            return [], "skipped (the folder holds another plant)"
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        aside = os.path.join(self.aside, "p%d" % p.pid)
        if os.path.isdir(folder):
            os.makedirs(aside)
            os.rename(folder, os.path.join(aside, rid))
        os.symlink(self.canary_dir(p), folder)
        p.paths.append((folder, "symlink"))
        p.mentions.append(rid)

        def restore(folder=folder, aside=os.path.join(aside, rid)):
            if not os.path.isdir(aside):
                return
            if os.path.lexists(folder) and not os.path.isdir(folder):
                remove_path(folder)
            if not os.path.lexists(folder):
                os.rename(aside, folder)
            else:  # a real folder was made meanwhile: put back what it lacks
                for name in os.listdir(aside):
                    if not os.path.lexists(os.path.join(folder, name)):
                        os.rename(os.path.join(aside, name), os.path.join(folder, name))
                shutil.rmtree(aside, ignore_errors=True)
        p.restore.append(restore)
        return [], f"{os.path.relpath(folder, self.work)} (a real replica) -> canary"

    def plant_symlink_file(self):
        t = self.plant_target()
        have = set((s[0], s[1]) for s in real_segments(t))
        missing = [s for s in self.all_segments() if (s[1], s[2]) not in have]
        p = self.new_plant("symlink-file", t)
        if missing:
            _, rid, name, _ = self.rng.choice(missing)
        else:
            rid = self.rng.choice(self.replica_ids(t))
            name = self.looking_name(self.rng.choice(real_segments(t) or [(0, None)])[1])
        link = os.path.join(t, "replicas", rid, name)
        if os.path.lexists(link) or self.through_symlink(link):
            return [], "skipped"
        self.make_dirs(p, os.path.dirname(link))
        os.symlink(os.path.join(self.canary_dir(p), name), link)
        p.paths.append((link, "symlink"))
        p.mentions += [name, rid]
        return [], f"{os.path.relpath(link, self.work)} -> canary (dangling)"

    def fresh_folder(self, plant):
        f = os.path.join(self.scratch, "fresh-%d" % plant.pid)
        os.makedirs(f)
        return f

    def plant_symlink_root(self):
        p = self.new_plant("symlink-root", None)
        f = self.fresh_folder(p)
        os.symlink(self.canary_dir(p), os.path.join(f, "replicas"))
        m = self.pick()
        args = self.sync_args(m, f)
        p.target = f
        p.mentions += ["replicas", f]
        r = self.run(args)
        self.check_process(r, target=f)
        self.drop_plant(p)
        shutil.rmtree(f, ignore_errors=True)
        return [m], f"fresh folder whose replicas/ -> canary, {m.name} {' '.join(args[4:])} rc={r.rc}"

    def plant_symlink_read(self):
        t = self.plant_target()
        rid = identity(self.outsider)
        link = os.path.join(t, "replicas", rid)
        if os.path.lexists(link):
            return [], "skipped"
        p = self.new_plant("symlink-read", t)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.join(self.outsider, "replicas", rid), link)
        p.paths.append((link, "symlink"))
        p.mentions.append(rid)
        return [], f"{os.path.relpath(link, self.work)} -> the outsider's real replica folder"

    def plant_fifo(self):
        t = self.plant_target()
        rid = self.rng.choice(self.replica_ids(t))
        segs = real_segments(t)
        name = self.looking_name(self.rng.choice(segs)[1] if segs else None)
        path = os.path.join(t, "replicas", rid, name)
        if os.path.lexists(path) or self.through_symlink(path):
            return [], "skipped"
        p = self.new_plant("fifo", t)
        self.make_dirs(p, os.path.dirname(path))
        os.mkfifo(path)
        p.paths.append((path, "fifo"))
        p.mentions.append(name)
        return [], os.path.relpath(path, self.work)

    def plant_fifo_race(self):
        """Regular files under canonical-looking names, swapped for FIFOs and back while a sync runs
        (a reader that checks the type when it lists, then opens without O_NONBLOCK, hangs)."""
        t = self.shared
        rid = self.rng.choice(self.replica_ids(t))
        segs = real_segments(t)
        folder = os.path.join(t, "replicas", rid)
        names = sorted(set(self.looking_name(self.rng.choice(segs)[1] if segs else None) for _ in range(3)))
        names = [n for n in names if not os.path.lexists(os.path.join(folder, n))]
        if not names:
            return [], "skipped"
        p = self.new_plant("fifo-race", t)
        self.make_dirs(p, folder)
        for name in names:
            p.paths.append((os.path.join(folder, name), "any"))
            p.mentions.append(name)
        stop = threading.Event()
        junk = os.urandom(self.rng.randint(20, 400))

        def toggle():
            i = 0
            while not stop.is_set():
                tmp = os.path.join(folder, ".adversary-swap.%d" % i)
                try:
                    for name in names:
                        os.mkfifo(tmp)
                        os.rename(tmp, os.path.join(folder, name))
                    time.sleep(0.002)
                    for name in names:
                        with open(tmp, "wb") as f:
                            f.write(junk)
                        os.rename(tmp, os.path.join(folder, name))
                    time.sleep(0.0003)
                except OSError:
                    pass
                i += 1
        thread = threading.Thread(target=toggle, daemon=True)
        thread.start()
        m = self.pick()
        if self.rng.random() < 0.75:
            args = ["sync", "-C", m.path, t] + (["--json"] if self.rng.random() < 0.3 else [])
        else:
            args = ["merge", "-C", m.path, t]
        r = self.run(args)
        stop.set()
        thread.join()
        for leftover in os.listdir(folder):
            if leftover.startswith(".adversary-swap."):
                remove_path(os.path.join(folder, leftover))
        self.check_process(r, target=None)
        self.drop_plant(p)
        return [m], f"{len(names)} names in {rid[:12]}… toggled during `{args[0]}` of {m.name} rc={r.rc}"

    def plant_junk(self):
        t = self.plant_target()
        p = self.new_plant("junk", t)
        rid = self.rng.choice(self.replica_ids(t))
        segs = real_segments(t)
        real = self.rng.choice(segs) if segs else None
        like = real[1] if real else None
        stem = (like or "x.sjs")[:-4]
        folder = os.path.join(t, "replicas", rid)
        made = []
        for _ in range(self.rng.randint(1, 3)):
            choice = self.rng.randrange(11)
            if choice == 0:
                path, data = os.path.join(folder, "junk-%d.txt" % p.pid), os.urandom(100)
            elif choice == 1:
                path = os.path.join(folder, ".%s.%06X" % (like or "x.sjs", self.rng.getrandbits(24)))
                data = read_bytes(real[2])[:self.rng.randint(0, os.path.getsize(real[2]))] if real else b"partial"
            elif choice == 2:
                path = os.path.join(folder, "%s.sync-conflict-20250101-000000-ADV%04d.sjs" % (stem, p.pid))
                data = bytearray(read_bytes(real[2])) if real else bytearray(os.urandom(64))
                if data and self.rng.random() < 0.7:
                    data[self.rng.randrange(len(data))] ^= 1 << self.rng.randrange(8)
                data = bytes(data)
            elif choice == 3:
                path = os.path.join(folder, "%s (conflicted copy %d).sjs" % (stem, p.pid))
                data = os.urandom(self.rng.randint(0, 300))
            elif choice == 4:
                path = os.path.join(folder, self.looking_name(like))
                os.makedirs(path, exist_ok=True)
                p.paths.append((path, "dir"))
                made.append("directory " + os.path.basename(path))
                continue
            elif choice == 5:
                path = os.path.join(t, "replicas", "not-a-replica-%d" % p.pid, like or "x.sjs")
                data = read_bytes(real[2]) if real else b""
            elif choice == 6:
                path = os.path.join(t, "replicas", rid.upper(), like or "x.sjs")
                data = read_bytes(real[2]) if real else b""
            elif choice == 7:
                path, data = os.path.join(folder, self.looking_name(like)), b""
            elif choice == 8:
                path, data = os.path.join(folder, self.looking_name(like)), os.urandom(self.rng.randint(1, 4096))
            elif choice == 9:
                path, data = os.path.join(t, "README-%d.txt" % p.pid), b"not a journal\n"
            else:
                if t != self.shared:
                    continue
                path = os.path.join(folder, self.looking_name(like))
                if os.path.lexists(path):
                    continue
                os.makedirs(folder, exist_ok=True)
                with open(path, "wb") as f:
                    f.truncate((1 << 30) + 4096)  # sparse: over the 1 GiB bound
                p.paths.append((path, "any"))
                made.append("sparse 1 GiB " + os.path.basename(path))
                continue
            if self.plant_file(p, path, data):
                made.append(os.path.relpath(path, t))
        for path, _ in p.paths:
            p.mentions.append(os.path.basename(path))
        return [], ", ".join(made) or "nothing"

    def plant_truncated(self):
        """A half-copied segment under its own name, in a name slot the target does not have yet."""
        t = self.plant_target()
        have = set((s[0], s[1]) for s in real_segments(t))
        missing = [s for s in self.all_segments() if (s[1], s[2]) not in have and os.path.getsize(s[3]) > 1]
        p = self.new_plant("truncated", t)
        if missing:
            _, rid, name, src = self.rng.choice(missing)
            data = read_bytes(src)
            cut = data[:self.rng.randint(1, len(data) - 1)]
            path = os.path.join(t, "replicas", rid, name)
            self.plant_file(p, path, cut)
            p.mentions += [name]
            return [], f"{len(cut)}/{len(data)} bytes of {rid[:12]}…/{name}"
        # Nothing new to half-copy: a truncated copy in a fresh folder, merged at once.
        segs = self.all_segments()
        if not segs:
            return [], "skipped"
        holder, rid, name, src = self.rng.choice(segs)
        f = self.fresh_folder(p)
        data = read_bytes(src)
        cut = data[:self.rng.randint(0, max(0, len(data) - 1))]
        self.plant_file(p, os.path.join(f, "replicas", rid, name), cut)
        m = self.pick()
        r = self.run(["merge", "-C", m.path, f])
        self.check_process(r)
        self.drop_plant(p)
        shutil.rmtree(f, ignore_errors=True)
        return [m], f"{len(cut)}/{len(data)} bytes of {name} in a fresh folder, merged into {m.name}"

    def flip(self, data):
        data = bytearray(data)
        i = self.rng.randrange(len(data))
        data[i] ^= self.rng.randint(1, 255)
        return bytes(data), i

    def plant_flipped_fresh(self):
        """A byte-flipped copy of a real segment under its own name in a fresh folder; sync or merge it."""
        segs = self.all_segments()
        if not segs:
            return [], "skipped"
        holder, rid, name, src = self.rng.choice(segs)
        p = self.new_plant("flipped-fresh", None)
        f = self.fresh_folder(p)
        p.target = f
        data, at = self.flip(read_bytes(src))
        self.plant_file(p, os.path.join(f, "replicas", rid, name), data)
        lacking = [m for m in self.live() if not os.path.exists(os.path.join(m.path, "replicas", rid, name))]
        m = self.rng.choice(lacking) if lacking and self.rng.random() < 0.8 else self.pick()
        args = ["merge", "-C", m.path, f] if self.rng.random() < 0.5 else self.sync_args(m, f)
        r = self.run(args)
        self.check_process(r, target=f)
        self.drop_plant(p)
        shutil.rmtree(f, ignore_errors=True)
        return [m], f"{name} flipped at {at}, `{args[0]}` into {m.name} rc={r.rc}"

    def plant_flipped_shared(self):
        """The target's copy of a real segment replaced by a forged one with the same name and size."""
        t = self.plant_target()
        segs = real_segments(t)
        if not segs:
            return [], "skipped"
        rid, name, path = self.rng.choice(segs)
        original = read_bytes(path)
        if not original:
            return [], "skipped"
        p = self.new_plant("flipped-shared", t)
        data, at = self.flip(original)
        write_atomically(path, data)
        p.paths.append((path, sha(data)))
        p.mentions.append(name)

        def restore(path=path, original=original, forged=sha(data)):
            if os.path.realpath(os.path.dirname(path)) != os.path.abspath(os.path.dirname(path)):
                return  # never write through a symlink ourselves
            if not os.path.lexists(path) or (os.path.isfile(path) and sha(read_bytes(path)) == forged):
                write_atomically(path, original)
        p.restore.append(restore)
        return [], f"{rid[:12]}…/{name} flipped at {at}"

    def plant_wrong_replica(self):
        """A valid segment of one replica (or of another board) placed in another replica's folder."""
        t = self.plant_target()
        ids = self.replica_ids(t)
        if self.rng.random() < 0.4:
            segs = real_segments(self.outsider)
        else:
            segs = [s[1:] for s in self.all_segments()]
        if not segs or len(ids) < 1:
            return [], "skipped"
        rid, name, src = self.rng.choice(segs)
        others = [i for i in ids if i != rid]
        if not others:
            return [], "skipped"
        dest = self.rng.choice(others)
        p = self.new_plant("wrong-replica", t)
        path = os.path.join(t, "replicas", dest, name)
        if not self.plant_file(p, path, read_bytes(src)):
            return [], "skipped (name taken)"
        p.mentions.append(name)
        return [], f"{rid[:12]}…/{name} placed under {dest[:12]}…"

    def plant_huge_seq(self):
        t = self.plant_target()
        ids = self.replica_ids(t)
        rid = self.rng.choice(ids)
        own = [s for s in real_segments(t) if s[0] == rid] or real_segments(t)
        like = self.rng.choice(own) if own else None
        p = self.new_plant("huge-seq", t)
        first, last = self.rng.choice([(2 ** 64 - 1, 2 ** 64 - 1), (2 ** 63, 2 ** 64 - 1), (10 ** 20 - 10, 10 ** 20 - 1),
                                       (2 ** 62, 2 ** 62 + 10), (10 ** 19 * 9, 10 ** 19 * 9 + 2), (0, 0), (50, 3)])
        name = self.looking_name(like[1] if like else None, first, last)
        data = read_bytes(like[2]) if like and self.rng.random() < 0.7 else os.urandom(self.rng.randint(0, 300))
        path = os.path.join(t, "replicas", rid, name)
        if not self.plant_file(p, path, data):
            return [], "skipped"
        p.mentions.append(name)
        return [], f"{rid[:12]}…/{name} ({len(data)} bytes)"

    # -- plant lifetime ------------------------------------------------------------------------

    def drop_plant(self, p):
        for path, marker in p.paths:
            if not os.path.lexists(path):
                continue
            if marker in ("symlink", "fifo", "dir", "any"):
                remove_path(path)
            elif os.path.isfile(path) and not os.path.islink(path) and sha(read_bytes(path)) == marker:
                os.unlink(path)
            folder = os.path.dirname(path)
            # copies the product moved aside (`.damaged-<name>…`) of what we planted
            try:
                for name in os.listdir(folder):
                    if name.startswith(".damaged-" + os.path.basename(path)):
                        os.unlink(os.path.join(folder, name))
            except OSError:
                pass
        for fn in p.restore:
            fn()
        for d in p.dirs:
            try:
                os.rmdir(d)
            except OSError:
                pass
        shutil.rmtree(os.path.join(self.canary, "p%d" % p.pid), ignore_errors=True)
        if p in self.plants:
            self.plants.remove(p)

    def cleanup(self, everything=False):
        for p in list(self.plants):
            if everything or p.expires <= self.step:
                self.drop_plant(p)

    def heal(self, machines):
        """After a failure, take back the leftovers in those journals so that the run goes on: the
        ones the campaign planted, and any file of theirs a failed command called "File exists"."""
        for m in machines:
            for p in m.stale:
                remove_path(p)
            m.stale = []
            for r in self.step_cmds:
                for path in re.findall(r"(/\S+): File exists", r.err):
                    if path.startswith(m.path + "/") and os.path.isfile(path):
                        remove_path(path)
                        self.stats["leftovers of the product's own removed to unwedge a journal"] += 1
                        print(f"  (removed {os.path.relpath(path, self.work)}, which the campaign did not plant, "
                              f"so that {m.name} can go on)", flush=True)

    # -- convergence ---------------------------------------------------------------------------

    def converge(self, final):
        label = "final" if final else f"after step {self.step}"
        self.kind = "convergence"
        self.step_cmds = []
        self.cleanup(everything=True)
        machines = self.live()
        for _ in range(3):
            for m in machines:
                r = self.run(["sync", "-C", m.path, self.shared])
                if self.check_process(r) and r.rc == 0:
                    self.note_success(m, "sync")
        digests = {}
        for m in machines:
            r = self.run(["digest", "-C", m.path])
            if self.check_process(r):
                digests[m.name] = r.out.strip()
        values = collections.Counter(digests.values())
        if len(values) > 1:
            common = values.most_common(1)[0][0]
            odd = ", ".join(f"{n}={d[:16]}" for n, d in sorted(digests.items()) if d != common)
            self.fail("convergence", f"{label}: digests differ after three sync rounds: {odd} vs {common[:16]} "
                                     f"({values.most_common(1)[0][1]} machines)")
        else:
            self.ok()
        writers = [w for w in self.machines if any(w.acked.values())]
        for m in machines:
            r = self.run(["log", "-C", m.path])
            if not self.check_process(r):
                continue
            by_replica = collections.defaultdict(list)
            for line in r.out.splitlines():
                try:
                    e = json.loads(line)
                except ValueError:
                    self.fail("log", f"`journal log` printed a line that is not JSON: {line[:200]!r}", r)
                    continue
                by_replica[e.get("replica")].append(e)
            for rid in by_replica:
                if rid in self.foreign_replicas or rid not in self.known_replicas:
                    self.fail("confinement", f"{label}: {m.name} holds {len(by_replica[rid])} events of replica {rid}, "
                                             f"which no machine writes (imported through a symlink or a wrong folder)")
            for w in writers:
                for rid in w.acked:
                    self.check_events(m, w, rid, by_replica.get(rid, []))
            self.verify(m)
        self.check_confinement()
        print(f"[adversary] convergence {label}: {len(machines)} machines, "
              f"{len(set(digests.values()))} distinct digest(s)", flush=True)

    # -- main loop -----------------------------------------------------------------------------

    def one_step(self):
        names = [k for k, _ in STEP_WEIGHTS]
        weights = [w for _, w in STEP_WEIGHTS]
        kind = self.rng.choices(names, weights)[0]
        if kind == "copy" and self.stats["copies"] >= self.a.max_copies:
            kind = "record"
        self.kind = kind
        self.step_cmds = []
        failed_before = self.failed
        t0 = time.monotonic()
        if kind == "record":
            touched, desc = self.do_record()
        elif kind == "sync":
            touched, desc = self.do_sync()
        elif kind == "sync-kill":
            touched, desc = self.do_sync(kill=True)
        elif kind == "concurrent":
            touched, desc = self.do_concurrent()
        elif kind == "merge":
            touched, desc = self.do_merge()
        elif kind == "snapshot":
            touched, desc = self.do_snapshot()
        elif kind == "compact":
            touched, desc = self.do_compact()
        elif kind == "compact-kill":
            touched, desc = self.do_compact(kill=True)
        elif kind == "copy":
            touched, desc = self.do_copy()
        elif kind == "stale":
            touched, desc = self.do_stale()
        else:
            touched, desc = self.do_plant(kind)
        self.kinds[self.kind] += 1
        for m in touched:
            self.check_machine(m)
        self.check_confinement()
        self.cleanup()
        if self.failed > failed_before:
            self.heal(touched)
        self.step_log.append(f"{self.step}: {self.kind} {desc} ({time.monotonic() - t0:.2f} s"
                             f"{', FAILED' if self.failed > failed_before else ''})")

    def run_campaign(self):
        self.setup()
        print(f"[adversary] {self.a.steps} steps, seed {self.a.seed}, journal {self.bin}, in {self.work}", flush=True)
        for self.step in range(1, self.a.steps + 1):
            self.one_step()
            if self.step % 100 == 0:
                print(f"[adversary] step {self.step}/{self.a.steps}: {len(self.live())} machines, "
                      f"{self.stats['events acknowledged']} events acknowledged, {self.acked_checked} checked, "
                      f"{self.failed} failed checks, {time.monotonic() - self.started:.0f} s", flush=True)
            if self.step % self.a.round == 0 and self.step != self.a.steps:
                self.converge(final=False)
            if self.failed >= self.a.max_failures:
                print(f"[adversary] stopping after {self.failed} failed checks (--max-failures)", flush=True)
                break
        self.converge(final=True)

    def summary(self):
        seconds = time.monotonic() - self.started
        print("\n=== adversary summary")
        print(f"steps: {self.step} in {seconds:.1f} s (seed {self.a.seed})")
        print("steps by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(self.kinds.items())))
        print(f"machines: {len(self.machines)} ({self.stats['copies']} made by cp -a, "
              f"{self.stats['machines retired']} retired)")
        print(f"acknowledged events: {self.stats['events acknowledged']} recorded, {self.acked_checked} presence checks")
        print(f"commands: {sum(self.cmd_count.values())}; " + ", ".join(
            f"{k} {v} ({self.cmd_time[k]:.0f} s)" for k, v in self.cmd_count.most_common()))
        print(f"kills: {self.stats['records killed']} records, {self.stats['syncs killed']} syncs (SIGKILL)")
        unwedged = self.stats["leftovers of the product's own removed to unwedge a journal"]
        if unwedged:
            print(f"leftovers of the product's own removed to unwedge a journal: {unwedged}")
        print("plants: " + (", ".join(f"{k} {v}" for k, v in sorted(self.plant_kinds.items())) or "none"))
        if self.tolerated:
            print("tolerated: " + "; ".join(f"{k}: {v}" for k, v in sorted(self.tolerated.items())))
        print("failures by check: " + (", ".join(f"{k} {v}" for k, v in sorted(self.failures_by_check.items())) or "none"))
        if self.signatures:
            print("distinct failures (check, step kind, signature: count):")
            for (check, sig), count in self.signatures.most_common():
                print(f"  [{check}] first in a {self.first_kind[(check, sig)]} step: {sig} ({count})")
        if self.a.json:
            with open(self.a.json, "w") as f:
                json.dump({"steps": self.step, "seconds": round(seconds, 1), "kinds": self.kinds,
                           "plants": self.plant_kinds, "stats": self.stats, "acked_checked": self.acked_checked,
                           "passed": self.passed, "failed": self.failed, "failures": self.failures_by_check,
                           "tolerated": self.tolerated}, f, indent=2)



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--journal-bin", type=journal_binary, required=True, help="the `journal` executable to test")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the campaign folder when a check failed")
    ap.add_argument("--workdir", help="campaign folder (default: a new temporary folder)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds before a command counts as hung")
    ap.add_argument("--round", type=int, default=200, help="a convergence round every this many steps")
    ap.add_argument("--max-machines", type=int, default=6, help="live machines at most (copies are retired)")
    ap.add_argument("--max-copies", type=int, default=1000)
    ap.add_argument("--max-failures", type=int, default=100000, help="stop after this many failed checks")
    ap.add_argument("--max-details", type=int, default=40, help="failures printed in full (one per signature)")
    ap.add_argument("--json", help="write the figures to this file")
    a = ap.parse_args()
    if shutil.which("rsync") is None:
        sys.exit("rsync is needed (apt-get install -y rsync)")
    if a.workdir and os.path.exists(a.workdir) and os.listdir(a.workdir):
        sys.exit(f"{a.workdir} is not empty")
    c = Campaign(a)
    try:
        c.run_campaign()
    except KeyboardInterrupt:
        print("\n[adversary] interrupted", flush=True)
        c.failed += 1
        c.failures_by_check["interrupted"] += 1
    c.summary()
    if c.failed and (a.keep or a.workdir):
        print(f"campaign folder kept: {c.work}")
    elif not a.workdir:
        shutil.rmtree(c.work, ignore_errors=True)
    print(f"adversary: {c.passed} passed, {c.failed} failed")
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
