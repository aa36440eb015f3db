#!/usr/bin/env python3
"""Hostile inputs to every `journal` command (issue 41): a fuzz pass over the command line.

The commands and their options are read from the binary itself (`--experimental-dump-help`, of
`journal` and of `journal-relay` for serve and join), so an option added later is attacked
without a change here. Each command is run from a minimal valid invocation on a small board (a
fresh copy for every run), then again with one option, or one positional, replaced by each
hostile value: huge, tiny, NaN, infinite, negative, overflowing, malformed, empty, 100,000
characters, and for paths the root, /dev/null, /proc/self/mem, a missing folder. A run passes if:

  - it ends by itself (no signal, no "Fatal error", no Swift runtime failure): not a crash;
  - it ends within --timeout seconds: not a hang (`serve` may run on once it says it serves;
    it must then stop on SIGTERM with status 0);
  - its peak memory (the child's ru_maxrss from wait4) stays under --memory-mib;
  - its status is one the CLI documents (0, 1 problems found, 64 usage, 65 bad input, 74 I/O,
    75 locked), and a failing run says something on stderr.

Then crafted caches and lists a person's machine may hold damaged: each of the board's
`local/snapshots/*` and `local/trust` truncated, byte-flipped (with the CRC-32 trailer of the
snapshot and keyframe files recomputed, so that only their content checks can catch it),
extended with junk and replaced by an empty file. Read commands (`digest`, `digest --at`,
`strokes`, `render`, `verify`, `stats`, `log`) must then pass the checks above and, when they
exit 0, print what they print on the pristine board (a cache never changes an answer).

Usage: hostile_inputs.py --journal-bin PATH [--timeout 60] [--memory-mib 1024] [--quick]
                         [--only COMMAND] [--json OUT] [--keep]
Exit 0 when every run passed. The last line is `hostile inputs: N runs, M failed`.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from journal_bin import journal_binary  # noqa: E402

DOCUMENTED_STATUSES = {0, 1, 64, 65, 74, 75}

NUMBERS = ["1e300", "-1e300", "1e-300", "0", "-1", "-0", "nan", "inf", "-inf", "99999999999999999999", "30000", "16384",
           "9223372036854775807", "-9223372036854775808", "0x10", "1,5", "1e", "abc", "", " ", "%n%s%x", "\u00e9\u0301",
           "x" * 100_000]
MOMENTS = ["-1e300s", "1e300h", "-99999999999999999999", "@-1", "2026-13-45T99:99:99Z", "-0m", "nan", "1e308m"]
AREAS = ["1e300,0,1,1", "nan,nan,nan,nan", "0,0,0,0", "-1,-1,-1,-1", "1,2,3", "inf,0,inf,0"]
SIZES = ["1e300x1e300", "0x0", "99999x99999", "-1x-1", "nanxnan", "3840x", "x"]
# Never "/" or a folder of this machine it could write into: every run's working folder is its
# own scratch folder, so the relative ones land there.
PATHS = ["", "/proc", "/dev/null", "/proc/self/mem", "missing/deep/folder", "y" * 5000]
QUICK = ["1e300", "-1", "nan", "inf", "99999999999999999999", "abc", "", "x" * 100_000]


def hostile_values(option, quick):
    """The values tried for `option` (its name says what kind of value it takes)."""
    base = QUICK if quick else NUMBERS
    extra = []
    if option in ("at", "since", "until", "from", "to"):
        extra = MOMENTS
    elif option == "area":
        extra = AREAS
    elif option == "size":
        extra = SIZES
    elif option in ("into", "data", "host-key", "share", "output", "file", "rsh", "key", "new-key"):
        extra = PATHS
    return base + (extra[:3] if quick else extra)


def sample_lines(seed, strokes=30, points=40):
    """A session of `strokes` pen strokes as NDJSON, with times."""
    rng = random.Random(seed)
    lines = []
    t = 0.0
    for s in range(strokes):
        stroke = "%08X-0000-4000-8000-%012X" % (seed, s)
        x, y = rng.uniform(0, 800), rng.uniform(0, 600)
        for _ in range(points):
            x += rng.uniform(-5, 5)
            y += rng.uniform(-5, 5)
            t += 1 / 120
            lines.append(json.dumps({"type": "point", "stroke": stroke, "x": round(x, 2), "y": round(y, 2),
                                     "pressure": round(rng.random(), 2), "t": round(t, 4), "color": "#1E88E5FF", "width": 3}))
        lines.append(json.dumps({"type": "end", "stroke": stroke}))
    return "\n".join(lines) + "\n"


class Campaign:
    def __init__(self, binary, work, timeout, memory_mib):
        self.binary = binary
        self.work = work
        self.timeout = timeout
        self.memory_kib = memory_mib * 1024
        self.failures = []
        self.runs = 0
        self.counter = 0
        self.lock = threading.Lock()
        self.statuses = collections.Counter()
        self.peak = (0, "")  # the largest ru_maxrss seen (KiB), and its run
        self.env = dict(os.environ)
        self.env.pop("JOURNAL_DIR", None)
        self.env["JOURNAL_EXIT_WITH_PARENT"] = "1"
        self.pristine = os.path.join(work, "pristine")
        self.other = os.path.join(work, "other")
        self.ffmpeg = shutil.which("ffmpeg") is not None

    def make_boards(self):
        for board, seed in ((self.pristine, 1), (self.other, 2)):
            self.must(["init", board])
            self.must(["record", "-C", board], stdin=sample_lines(seed))
        # A snapshot with keyframes, and a trust list, for the crafted-file part.
        self.must(["snapshot", "-C", self.pristine])
        self.trusted_key = self.must(["trust", "key", "-C", self.other]).strip().split()[-1]
        self.must(["trust", "add", "-C", self.pristine, self.trusted_key, "--label", "other"])
        # A board with membership (its admin's key in member.key) for the members commands.
        self.member_key = os.path.join(self.work, "member.key")
        self.must(["members", "keygen", self.member_key])
        self.next_key = self.must(["members", "keygen", os.path.join(self.work, "next.key")]).strip()
        self.guest_key = self.must(["members", "keygen", os.path.join(self.work, "guest.key")]).strip()
        self.members = os.path.join(self.work, "members")
        self.must(["init", self.members])
        self.must(["members", "init", "-C", self.members, "--key", self.member_key, "--label", "admin"])
        self.must(["members", "grant", "-C", self.members, "--key", self.member_key, self.guest_key, "--role", "draw"])
        self.must(["trust", "add", "-C", self.members, self.trusted_key, "--label", "other"])
        self.board_id = json.loads(self.must(["members", "list", "-C", self.members, "--json"]))["board"]
        # A relay for `join` to join.
        self.relay = subprocess.Popen([self.binary, "serve", "--port", "0", "--open", "--data", os.path.join(self.work, "relay")],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env, text=True)
        line = self.relay.stdout.readline()
        if "journal: serving " not in line:
            sys.exit("setting up: journal serve said %r" % line)
        self.relay_port = int(line.split("ws://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])

    def stop_relay(self):
        relay = getattr(self, "relay", None)
        if relay and relay.poll() is None:
            relay.terminate()
            relay.wait()

    def must(self, args, stdin=None):
        done = subprocess.run([self.binary] + args, input=stdin, capture_output=True, text=True, env=self.env, timeout=300)
        if done.returncode != 0:
            sys.exit("setting up: journal %s exited %d: %s" % (" ".join(args), done.returncode, done.stderr))
        return done.stdout

    def scratch(self, source=None):
        """A fresh folder holding a copy of the pristine board (or of `source`)."""
        with self.lock:
            self.counter += 1
            folder = os.path.join(self.work, "run-%d" % self.counter)
        os.makedirs(folder)
        board = os.path.join(folder, "board")
        shutil.copytree(source or self.pristine, board, symlinks=True)
        return folder, board

    def run(self, label, args, stdin="", serving=False, cwd=None):
        assert cwd or "-C" in args, "a run without a scratch folder could write where the campaign runs"
        """Runs `journal args`; returns (status, stdout, stderr) and records what failed."""
        with self.lock:
            self.runs += 1
        started = time.monotonic()
        out = tempfile.TemporaryFile()
        err = tempfile.TemporaryFile()
        child = subprocess.Popen([self.binary] + args, stdin=subprocess.PIPE, stdout=out, stderr=err, env=self.env, cwd=cwd,
                                 start_new_session=True)
        try:
            child.stdin.write(stdin.encode())
            child.stdin.close()
        except BrokenPipeError:
            pass
        problems = []
        status, rusage, hung = self.wait(child, serving, out)
        out.seek(0)
        err.seek(0)
        with self.lock:
            self.statuses["hang" if hung else status] += 1
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
        if hung:
            problems.append("hang: still running after %d s" % self.timeout)
        elif status < 0:
            problems.append("crash: ended by signal %d" % -status)
        elif status not in DOCUMENTED_STATUSES:
            problems.append("status %d, not one the CLI documents" % status)
        if "Fatal error" in stderr or "Swift runtime failure" in stderr or "Illegal instruction" in stderr:
            problems.append("crash message on stderr")
        if status not in (0, None) and status > 0 and not stderr.strip():
            problems.append("failed (status %d) without a word on stderr" % status)
        if rusage is not None:
            with self.lock:
                self.peak = max(self.peak, (rusage.ru_maxrss, label))
        if rusage is not None and rusage.ru_maxrss > self.memory_kib:
            problems.append("peak memory %d MiB over the budget" % (rusage.ru_maxrss // 1024))
        if problems:
            self.failures.append({"run": label, "args": [a if len(a) < 200 else a[:40] + "…(%d chars)" % len(a) for a in args],
                                  "problems": problems, "stderr": stderr[-600:], "seconds": round(time.monotonic() - started, 2)})
        return status, stdout, stderr

    def wait(self, child, serving, out):
        """(status, rusage, hung); a server that says it serves is stopped with SIGTERM."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            pid, raw, rusage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                child.returncode = os.waitstatus_to_exitcode(raw)
                return child.returncode, rusage, False
            if serving:
                out.seek(0)
                if b"journal: serving " in out.read():
                    os.kill(child.pid, signal.SIGTERM)
                    _, raw, rusage = os.wait4(child.pid, 0)
                    child.returncode = os.waitstatus_to_exitcode(raw)
                    return child.returncode, rusage, False
            time.sleep(0.02)
        os.killpg(child.pid, signal.SIGKILL)
        _, raw, rusage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(raw)
        return child.returncode, rusage, True


def commands(binary, env):
    """[(path words, [option names taking a value], [positional names])] of both programs."""
    found = []

    def walk(command, words):
        names = words + [command["commandName"]]
        options, positionals = [], []
        for argument in command.get("arguments", []):
            if argument["kind"] == "option":
                options.append(argument["names"][0]["name"])
            elif argument["kind"] == "positional":
                positionals.append(argument.get("valueName", "value"))
        if not command.get("subcommands"):
            found.append((names[1:], options, positionals))
        for sub in command.get("subcommands", []):
            walk(sub, names)

    dump = json.loads(subprocess.run([binary, "--experimental-dump-help"], capture_output=True, text=True, env=env).stdout)
    walk(dump["command"], [])
    relay = os.path.join(os.path.dirname(binary), "journal-relay")
    found = [c for c in found if c[0] and c[0][0] not in ("serve", "join", "help")]
    if os.access(relay, os.X_OK):
        for name in ("serve", "join"):
            dump = json.loads(subprocess.run([relay, name, "--experimental-dump-help"], capture_output=True, text=True, env=env).stdout)
            walk(dump["command"], [])
            found[-1] = ([name], found[-1][1], found[-1][2])
    return found


def base_invocation(campaign, words, folder, board):
    """A valid run of the command `words` (args, stdin, serving), or None to leave it out."""
    other, key, c = campaign.other, campaign.member_key, campaign
    name = " ".join(words)
    table = {
        "demo": (["demo", folder + "/demo", "--speed", "1000"], "", False),
        "init": (["init", folder + "/new"], "", False),
        "record": (["record", "-C", board], sample_lines(7, strokes=3, points=5), False),
        "sync": (["sync", "-C", board, folder + "/shared", "--create"], "", False),
        "merge": (["merge", other, "--into", board], "", False),
        "status": (["status", "-C", board], "", False),
        "log": (["log", "-C", board, "--limit", "3"], "", False),
        "history": (["history", "-C", board], "", False),
        "restore": (["restore", "-C", board, "--to", "-1s", "--dry-run"], "", False),
        "timelapse": (["timelapse", "-C", board, folder + "/t.svg", "--duration", "1"], "", False),
        "strokes": (["strokes", "-C", board], "", False),
        "render": (["render", "-C", board, folder + "/r.svg"], "", False),
        "stats": (["stats", "-C", board], "", False),
        "verify": (["verify", "-C", board], "", False),
        "digest": (["digest", "-C", board], "", False),
        "snapshot": (["snapshot", "-C", board], "", False),
        "compact": (["compact", "-C", board], "", False),
        "token": (["token", "--data", folder + "/relay", "--board", "wall", "--scope", "draw"], "", False),
        "trust key": (["trust", "key", "-C", board], "", False),
        "trust list": (["trust", "list", "-C", board], "", False),
        "trust add": (["trust", "add", "-C", board, "ab" * 32, "--label", "x"], "", False),
        "trust remove": (["trust", "remove", "-C", board, c.trusted_key], "", False),
        "members init": (["members", "init", "-C", board, "--key", key, "--label", "me"], "", False),
        "members list": (["members", "list", "-C", board], "", False),
        "members grant": (["members", "grant", "-C", board, "--key", key, c.next_key, "--role", "draw"], "", False),
        "members invite": (["members", "invite", "-C", board, "--key", key, "--label", "guest"], "", False),
        "members revoke": (["members", "revoke", "-C", board, "--key", key, c.guest_key], "", False),
        "members rotate": (["members", "rotate", "-C", board, "--key", key, c.next_key], "", False),
        "members import": (["members", "import", "-C", board, "--key", key], "", False),
        "members keygen": (["members", "keygen", folder + "/k.key"], "", False),
        "members pin": (["members", "pin", "-C", board, c.board_id], "", False),
        "serve": (["serve", "--port", "0", "--open", "--data", folder + "/relay"], "", True),
        "join": (["join", "ws://127.0.0.1:%d/boards/wall/ws" % c.relay_port, "--timeout", "20"], sample_lines(9, 2, 3), False),
    }
    return table.get(name)


def source_for(campaign, words):
    """The board a command runs on: the one with membership for `members` (but `init`)."""
    return campaign.members if words[0] == "members" and words[1:] != ["init"] else None


def with_option(args, option, value):
    """`args` with --option set to `value` (replacing its value if present)."""
    flag = "--" + option if len(option) > 1 else "-" + option
    args = list(args)
    if flag in args:
        args[args.index(flag) + 1] = value
    else:
        args += [flag + "=" + value] if value.startswith("-") else [flag, value]
    return args


def attack_options(campaign, quick, only):
    found = commands(campaign.binary, campaign.env)
    jobs = []
    for words, options, positionals in found:
        name = " ".join(words)
        if only and name != only and words[0] != only:
            continue
        folder, board = campaign.scratch(source_for(campaign, words))
        base = base_invocation(campaign, words, folder, board)
        if base is None:
            campaign.failures.append({"run": name, "problems": ["no valid invocation known to the campaign: add one"]})
            continue
        args, stdin, serving = base
        status, _, stderr = campaign.run(name + " (valid)", args, stdin, serving, cwd=folder)
        if status != 0:
            campaign.failures.append({"run": name + " (valid)", "problems": ["the valid invocation failed: %s" % stderr[-300:]]})
        for option in options:
            if option == "C":
                values = PATHS
            else:
                values = hostile_values(option, quick)
            for value in values:
                jobs.append((name, option, value, words, serving, stdin))
    return jobs


def run_job(campaign, job):
    name, option, value, words, serving, stdin = job
    folder, board = campaign.scratch(source_for(campaign, words))
    args, _, _ = base_invocation(campaign, words, folder, board)
    campaign.run("%s --%s %r" % (name, option, value[:40]), with_option(args, option, value), stdin, serving, cwd=folder)
    shutil.rmtree(folder, ignore_errors=True)


def positional_jobs(campaign, quick, only):
    """The paths and names commands take as positionals, replaced by hostile ones."""
    jobs = []
    for words, index in ((["render"], 3), (["timelapse"], 3), (["sync"], 3), (["merge"], 1), (["init"], 1),
                         (["trust", "add"], 4), (["members", "grant"], 6), (["members", "pin"], 4), (["join"], 1),
                         (["members", "keygen"], 2)):
        if only and words[0] != only:
            continue
        values = PATHS + ["x.jpg", "a.b.c", "ws://[::1", "http://127.0.0.1:1/boards/a b", "zz" * 32, "-"]
        for value in values[: 8 if quick else None]:
            jobs.append((words, index, value))
    return jobs


def run_positional(campaign, job):
    words, index, value = job
    folder, board = campaign.scratch(source_for(campaign, words))
    args, stdin, serving = base_invocation(campaign, words, folder, board)
    args = list(args)
    args[index] = value
    campaign.run("%s positional %d %r" % (" ".join(words), index, value[:40]), args, stdin, serving, cwd=folder)
    shutil.rmtree(folder, ignore_errors=True)


READS = [["digest"], ["digest", "--at", "50%"], ["digest", "--at", "-1s"], ["strokes", "--json"], ["verify"], ["stats", "--json"],
         ["log", "--limit", "5"]]


SEAL = 32  # the HMAC-SHA256 every cache file ends with (docs/SYNC.md, "Sealed caches")


def damaged_variants(data, crc_trailer, rng):
    """(what, bytes) of a damaged copy of a file: cut, flipped (where the file ends with a
    CRC-32 before its seal, that CRC recomputed, as someone who changes it on purpose would),
    junk appended, empty."""
    variants = [("empty", b"")]
    for cut in (1, 8, 12, len(data) // 2, len(data) - 1):
        if 0 < cut < len(data):
            variants.append(("cut at %d" % cut, data[:cut]))
    variants.append(("junk appended", data + bytes(rng.randrange(256) for _ in range(64))))
    for _ in range(12):
        at = rng.randrange(len(data) - (4 + SEAL if crc_trailer else 0)) if len(data) > 4 + SEAL else 0
        flipped = bytearray(data)
        flipped[at] ^= 1 << rng.randrange(8)
        if crc_trailer:
            end = len(flipped) - SEAL - 4
            flipped[end:end + 4] = (zlib.crc32(bytes(flipped[:end])) & 0xFFFFFFFF).to_bytes(4, "little")
        variants.append(("bit flipped at %d%s" % (at, ", CRC recomputed" if crc_trailer else ""), bytes(flipped)))
    return variants


def attack_files(campaign, quick):
    """Damaged caches and lists: no crash, no hang, and no changed answer."""
    truth = {}
    for read in READS:
        status, stdout, stderr = campaign.run("pristine " + " ".join(read), [read[0], "-C", campaign.pristine] + read[1:], cwd=campaign.work)
        truth[tuple(read)] = (status, stdout)
    rng = random.Random(41)
    targets = []
    local = os.path.join(campaign.pristine, "local")
    for relative in ("snapshots/latest.sjsnap", "snapshots/latest.sjkeys", "snapshots/latest.members", "trust"):
        if os.path.exists(os.path.join(local, relative)):
            targets.append(relative)
    checked = 0
    for relative in targets:
        with open(os.path.join(local, relative), "rb") as handle:
            data = handle.read()
        crc = relative.endswith((".sjkeys",))
        variants = damaged_variants(data, crc, rng)
        if relative.endswith(".sjsnap"):
            # The snapshot's CRC covers its header: a flip inside it, recomputed.
            header_length = int.from_bytes(data[8:12], "little")
            for _ in range(12):
                at = rng.randrange(12, 12 + header_length)
                flipped = bytearray(data)
                flipped[at] ^= 1 << rng.randrange(8)
                end = 12 + header_length
                flipped[end:end + 4] = (zlib.crc32(bytes(flipped[:end])) & 0xFFFFFFFF).to_bytes(4, "little")
                variants.append(("header bit flipped at %d, CRC recomputed" % at, bytes(flipped)))
        for what, damaged in variants[: 6 if quick else None]:
            for read in READS:
                folder, board = campaign.scratch()
                with open(os.path.join(board, "local", relative), "wb") as handle:
                    handle.write(damaged)
                status, stdout, _ = campaign.run("%s %s: %s" % (relative, what, " ".join(read)), [read[0], "-C", board] + read[1:], cwd=folder)
                checked += 1
                expected_status, expected = truth[tuple(read)]
                comparable = read[0] in ("digest", "strokes")
                if status == 0 and comparable and stdout != expected:
                    campaign.failures.append({"run": "%s %s: %s" % (relative, what, " ".join(read)),
                                              "problems": ["printed another answer than on the pristine board"]})
                if relative != "trust" and status != expected_status and read[0] != "verify":
                    campaign.failures.append({"run": "%s %s: %s" % (relative, what, " ".join(read)),
                                              "problems": ["status %d where the pristine board gives %d (a cache is never needed)" % (status, expected_status)]})
                shutil.rmtree(folder, ignore_errors=True)
    return checked


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--journal-bin", type=journal_binary, required=True)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--memory-mib", type=int, default=1024)
    parser.add_argument("--quick", action="store_true", help="fewer values per option (for CI)")
    parser.add_argument("--only", help="one command (its first word)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", help="write the failures and counts here")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="hostile-")
    campaign = Campaign(args.journal_bin, work, args.timeout, args.memory_mib)
    started = time.monotonic()
    try:
        campaign.make_boards()
        jobs = attack_options(campaign, args.quick, args.only)
        positionals = positional_jobs(campaign, args.quick, args.only)
        total = len(jobs) + len(positionals)
        print("hostile inputs: %d option runs and %d positional runs" % (len(jobs), len(positionals)), flush=True)
        done = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.workers) as pool:
            futures = [pool.submit(run_job, campaign, job) for job in jobs]
            futures += [pool.submit(run_positional, campaign, job) for job in positionals]
            for _ in concurrent.futures.as_completed(futures):
                done += 1
                if sys.stderr.isatty() and done % 20 == 0:
                    sys.stderr.write("\r%d of %d runs" % (done, total))
        if sys.stderr.isatty():
            sys.stderr.write("\n")
        files = 0 if args.only else attack_files(campaign, args.quick)
        print("damaged caches and lists: %d reads" % files)
    finally:
        campaign.stop_relay()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)
    for failure in campaign.failures:
        print("FAILED %s: %s" % (failure["run"], "; ".join(failure["problems"])))
        if failure.get("stderr"):
            print("    stderr: " + failure["stderr"].strip().replace("\n", "\n            ")[-400:])
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"runs": campaign.runs, "failed": len(campaign.failures), "failures": campaign.failures,
                       "seconds": round(time.monotonic() - started, 1)}, handle, indent=1)
    print("peak memory: %d MiB (%s), budget %d MiB" % (campaign.peak[0] // 1024, campaign.peak[1][:80], args.memory_mib))
    print("statuses: " + ", ".join("%s: %d" % (key, count) for key, count in sorted(campaign.statuses.items(), key=lambda item: str(item[0]))))
    print("hostile inputs: %d runs, %d failed (%.0f s)" % (campaign.runs, len(campaign.failures), time.monotonic() - started))
    sys.exit(1 if campaign.failures else 0)


if __name__ == "__main__":
    main()
