#!/usr/bin/env python3
"""Crash campaign: `kill -9` a recording `journal` at random moments, then check the journal.

Each cycle starts `journal record --print-durable` on a stream of events whose content is a
pure function of their seq, kills it with SIGKILL after a random delay (or lets it finish),
and checks, after reopening:
  * the journal opens and `journal verify` is clean (a torn tail is cut on the next open);
  * every event the recorder acknowledged ("durable SEQ") is present;
  * every present event is exactly the one written for its seq (nothing garbled or invented),
    seqs are dense from 1, and no event id appears twice (`stats`: duplicates 0, forks 0);
  * recording continues with the next seq (checked by the following cycle).
Some cycles also run `journal compact` and kill it at a random moment: the checks above must
hold after the next open (which finishes what a killed compaction left), and the number of
sealed files stays logarithmic (every record seals a file and compacts after it).

Usage: crash_campaign.py --journal-bin PATH [--cycles 1000] [--seed 1] [--workdir DIR] [--json OUT]
"""
import argparse
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


def event_line(seq):
    """The input line for the event that must get this seq (content depends on seq only)."""
    stroke = "%08X-0000-4000-8000-%012X" % (0xC0FFEE, seq // 40)
    if seq % 40 == 39:
        return '{"type":"end","stroke":"%s"}' % stroke
    return ('{"type":"point","stroke":"%s","x":%s,"y":%s,"color":"#3366CCFF","width":3,"pressure":%s,"t":%s}'
            % (stroke, repr(seq * 0.25), repr((seq % 977) / 8), repr((seq % 100) / 100), repr((seq % 40) / 1000)))


def expected_fields(seq):
    return json.loads(event_line(seq))


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--journal-bin", type=journal_binary, required=True)
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir")
    ap.add_argument("--json")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = a.workdir or tempfile.mkdtemp(prefix="crash-campaign-")
    journal = os.path.join(work, "journal")
    shutil.rmtree(journal, ignore_errors=True)
    j = a.journal_bin
    if run([j, "init", journal]).returncode != 0:
        sys.exit("journal init failed")

    next_seq = 1
    stats = {"cycles": 0, "killed": 0, "finished": 0, "acknowledged": 0, "lost": 0,
             "garbled": 0, "verify_failures": 0, "bytes_cut_reports": 0,
             "compactions": 0, "compactions_killed": 0, "most_sealed_files": 0}
    started = time.monotonic()
    for cycle in range(a.cycles):
        count = rng.randint(20, 600)
        flush_every = rng.choice([1, 3, 7, 16, 50])
        lines = "".join(event_line(seq) + "\n" for seq in range(next_seq, next_seq + count)).encode()
        child = subprocess.Popen([j, "record", "-C", journal, "--flush-every", str(flush_every), "--print-durable"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        delay = rng.uniform(0, 0.06)

        def feed():
            try:
                child.stdin.write(lines)
                child.stdin.close()
            except (BrokenPipeError, ValueError, OSError):
                pass

        feeder = threading.Thread(target=feed)
        feeder.start()
        time.sleep(delay)
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            stats["killed"] += 1
        else:
            stats["finished"] += 1
        out = child.stdout.read()
        err = child.stderr.read()
        child.wait()
        feeder.join()
        acked = 0
        for line in out.decode().splitlines():
            if line.startswith("durable "):
                acked = max(acked, int(line.split()[1]))
        if b"cut" in err:
            stats["bytes_cut_reports"] += 1

        if rng.random() < 0.35:
            # A few small seals first (as a live board makes them), so that there is a run to compact.
            reopened = run([j, "record", "-C", journal, "--no-seal"], input="")
            if reopened.returncode != 0:
                sys.exit(f"cycle {cycle}: the journal did not reopen: {reopened.stderr}")
            last = max([acked, next_seq - 1] + [json.loads(l)["seq"] for l in run([j, "log", "-C", journal]).stdout.splitlines()[-1:]])
            for _ in range(rng.randint(2, 8)):
                count = rng.randint(5, 60)
                small = "".join(event_line(seq) + "\n" for seq in range(last + 1, last + 1 + count))
                done = run([j, "record", "-C", journal, "--no-compact"], input=small)
                if done.returncode != 0:
                    sys.exit(f"cycle {cycle}: record failed: {done.stderr}")
                last += count
            acked = last
            compact = subprocess.Popen([j, "compact", "-C", journal], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            time.sleep(rng.uniform(0, 0.25))
            stats["compactions"] += 1
            if compact.poll() is None:
                compact.send_signal(signal.SIGKILL)
                stats["compactions_killed"] += 1
            compact.communicate()
            if compact.returncode not in (0, -signal.SIGKILL):
                sys.exit(f"cycle {cycle}: `journal compact` failed with {compact.returncode}")

        # Reopen for writing (recovery), as the next recorder would.
        reopen = run([j, "record", "-C", journal, "--no-seal"], input="")
        if reopen.returncode != 0:
            sys.exit(f"cycle {cycle}: the journal did not reopen: {reopen.stderr}")
        verify = run([j, "verify", "-C", journal])
        if verify.returncode != 0:
            stats["verify_failures"] += 1
            print(f"cycle {cycle}: verify failed:\n{verify.stdout}{verify.stderr}", file=sys.stderr)
        st = json.loads(run([j, "stats", "-C", journal, "--json"]).stdout)
        replicas = os.path.join(journal, "replicas")
        sealed = sum(len([n for n in os.listdir(os.path.join(replicas, d)) if n.endswith(".sjs")])
                     for d in os.listdir(replicas)) if os.path.isdir(replicas) else 0
        stats["most_sealed_files"] = max(stats["most_sealed_files"], sealed)
        if st["duplicates"] or st["forks"]:
            sys.exit(f"cycle {cycle}: duplicates or forks: {st}")
        log = run([j, "log", "-C", journal]).stdout.splitlines()
        present = [json.loads(line) for line in log]
        seqs = sorted(event["seq"] for event in present)
        if seqs != list(range(1, len(seqs) + 1)):
            sys.exit(f"cycle {cycle}: seqs are not dense from 1")
        if seqs and seqs[-1] < acked:
            stats["lost"] += acked - seqs[-1]
            print(f"cycle {cycle}: acknowledged {acked} but only {seqs[-1]} present", file=sys.stderr)
        for event in present[next_seq - 1:] if len(present) >= next_seq else []:
            want = expected_fields(event["seq"])
            got = {k: event[k] for k in want}
            if got != want:
                stats["garbled"] += 1
                print(f"cycle {cycle}: seq {event['seq']} is {got}, expected {want}", file=sys.stderr)
        stats["acknowledged"] += max(0, acked - next_seq + 1)
        next_seq = (seqs[-1] + 1) if seqs else 1
        stats["cycles"] += 1
        if sys.stderr.isatty() and cycle % 10 == 0:
            print(f"\rcycle {cycle + 1}/{a.cycles}: {next_seq - 1} events", end="", file=sys.stderr)

    stats["events_in_journal"] = next_seq - 1
    stats["seconds"] = round(time.monotonic() - started, 1)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(f"crash campaign: {stats['cycles']} cycles ({stats['killed']} kill -9, {stats['finished']} ran to the end), "
          f"{stats['acknowledged']} acknowledged events, {stats['lost']} lost, {stats['garbled']} garbled, "
          f"{stats['verify_failures']} verify failures, {stats['events_in_journal']} events in the journal, "
          f"{stats['compactions']} compactions ({stats['compactions_killed']} killed), "
          f"at most {stats['most_sealed_files']} sealed files, {stats['seconds']} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(stats, f, indent=2)
    if not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    ok = stats["lost"] == 0 and stats["garbled"] == 0 and stats["verify_failures"] == 0
    print("0 acknowledged events lost" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
