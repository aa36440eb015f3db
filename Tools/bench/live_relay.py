#!/usr/bin/env python3
"""Drawers at a real pace through `journal serve`, against the same events recorded in one go
(issue 24, part 3).

Several drawers draw on one board of a real relay at once, each a WebSocket client sending one
text frame per pen point at --hz, with a pause of --pause seconds between strokes (longer than
the relay's 1 s idle seal, so a seal at every shared pause, and at the latest every 3.5-5 s while
someone draws: `BoardOptions.relay`). The relay's own committer seals and compacts as it does in
production. Then the relay is stopped (SIGTERM: boards close and seal) and its board journal is
compared with a journal that records the same events in one go (`journal log` of the board piped
into `journal record`):

  bytes per point of replicas/, sealed files per replica,
  first sync into an empty folder, no-op sync, merge into an empty journal (medians of --runs),
  late-joiner catch-up bytes (`journal join --json`, blocks) of each journal served as a board,

each as a ratio to batch, measured in the same run. A third journal, `sameTimes`, holds the
live journal's own events (their wall times too) rewritten as one segment per replica
(`journal compact` on a copy): live ÷ sameTimes is what recording as people draw costs against
the same events in one batch with the same wall times (issue 42 asks ≤ 1.05), and sameTimes −
batch in bytes per point is what the live session's wall times cost.

Usage: live_relay.py --journal-bin .build/release/journal --workload DIR [--drawers 4]
                     [--strokes 40] [--hz 120] [--pause 1.3] [--runs 5] [--json OUT] [--keep DIR]
  DIR holds replica-<i>.ndjson (one per drawer), e.g. from
  python3 GENERATOR --replicas 4 --strokes 200 --points 150 --seed 11 --out DIR
  where GENERATOR is ../shared/bench/gen_session.py (the standard one, docs/PERFORMANCE.md) or,
  without it, Tools/bench/workload/session.py (figures then not comparable with that file).
Needs the `websockets` package (Tools/bench/relay-load/requirements.txt).
"""
import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "relay-load"))
from live_compaction import measure, run, sealed_files  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def strokes_of_file(path, limit):
    """The first `limit` strokes of a replica file: canonical point lines and the end line."""
    strokes, open_ = [], {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            ev = json.loads(line)
            if ev.get("type") == "point":
                s = open_.get(ev["stroke"])
                if s is None:
                    if len(strokes) == limit:
                        break
                    s = open_[ev["stroke"]] = []
                    strokes.append((ev["stroke"], s))
                s.append(line)
    return [(lines + ['{"type":"end","stroke":"%s"}' % uuid], len(lines)) for uuid, lines in strokes]


class Relay:
    def __init__(self, j, data):
        self.port = free_port()
        self.log = open(os.path.join(data + ".serve.log"), "w")
        self.proc = subprocess.Popen([j, "serve", "--open", "--data", data, "--port", str(self.port)],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        path = self.log.name
        for _ in range(300):
            if "listening" in open(path).read():
                return
            time.sleep(0.1)
        sys.exit("the relay did not start:\n" + open(path).read())

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        if self.proc.wait(timeout=120) != 0:
            sys.exit(f"journal serve exited {self.proc.returncode}:\n" + open(self.log.name).read())


async def drawer(port, board, strokes, hz, pause):
    from websockets.asyncio.client import connect
    async with connect(f"ws://127.0.0.1:{port}/boards/{board}/ws", compression=None, max_size=None,
                       ping_interval=None, open_timeout=60) as ws:
        await ws.send('{"type":"hello","have":{}}')
        while not (await ws.recv()).startswith('{"type":"caughtUp"'):
            pass
        sent, acked = 0, 0
        done = asyncio.Event()

        async def reader():
            nonlocal acked
            async for m in ws:
                if m.startswith('{"type":"ack"'):
                    acked = max(acked, json.loads(m)["upTo"])
                    if acked == sent and finished:
                        done.set()
                elif m.startswith('{"type":"error"'):
                    raise RuntimeError(m)
        finished = False
        task = asyncio.create_task(reader())
        period = 1 / hz
        for lines, _ in strokes:
            start = time.monotonic()
            for n, line in enumerate(lines):
                await ws.send(line)
                sent += 1
                # Paced by the clock, not by sleeps added up: a late wake-up catches up.
                delay = start + (n + 1) * period - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            await asyncio.sleep(pause)
        finished = True
        if acked < sent:
            await asyncio.wait_for(done.wait(), 120)
        task.cancel()
        return sent


async def draw_all(port, board, per_drawer, hz, pause):
    return await asyncio.gather(*(drawer(port, board, strokes, hz, pause) for strokes in per_drawer))


def join_bytes(j, port, board):
    out = run([j, "join", f"ws://127.0.0.1:{port}/boards/{board}/ws", "--json", "--timeout", "600"]).stdout
    report = json.loads(out)
    return report



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ci"))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--journal-bin", type=journal_binary, required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--drawers", type=int, default=4)
    ap.add_argument("--strokes", type=int, default=40, help="strokes per drawer")
    ap.add_argument("--hz", type=float, default=120)
    ap.add_argument("--pause", type=float, default=1.3, help="seconds between a drawer's strokes")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--keep")
    args = ap.parse_args()
    j = os.path.abspath(args.journal_bin)
    files = sorted(f for f in os.listdir(args.workload) if f.startswith("replica-") and f.endswith(".ndjson"))
    if len(files) < args.drawers:
        sys.exit(f"{args.workload} holds {len(files)} replica files, fewer than --drawers {args.drawers}")
    per_drawer = [strokes_of_file(os.path.join(args.workload, f), args.strokes) for f in files[:args.drawers]]
    points = sum(n for strokes in per_drawer for _, n in strokes)

    work = args.keep or tempfile.mkdtemp(prefix="live-relay-")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "boards")
    os.makedirs(data, exist_ok=True)
    relay = Relay(j, data)
    started = time.monotonic()
    print(f"{args.drawers} drawers, {points} points, at {args.hz:g} Hz with {args.pause:g} s pauses ...", file=sys.stderr)
    sent = asyncio.run(draw_all(relay.port, "live", per_drawer, args.hz, args.pause))
    drawing_seconds = time.monotonic() - started
    relay.stop()
    live = os.path.join(data, "live")

    # The same events, recorded in one go.
    batch = os.path.join(data, "batch")
    run([j, "init", batch])
    log = run([j, "log", "-C", live]).stdout
    run([j, "record", "-C", batch], input=log)
    # The same events with the same wall times, in one go (issue 42 compares a live session
    # with this): the live journal's own events rewritten as one segment per replica, by
    # `journal compact` on a copy. Against it, live shows what sealing as people draw costs;
    # it against batch (whose wall times all fall within a few milliseconds), what the live
    # session's wall times cost.
    same_times = os.path.join(data, "sameTimes")
    shutil.copytree(live, same_times, symlinks=True)
    run([j, "compact", "-C", same_times])

    result = {"drawers": args.drawers, "points": points, "framesSent": sum(sent), "hz": args.hz, "pause": args.pause,
              "drawingSeconds": drawing_seconds, "runs": args.runs}
    for name, journal in (("batch", batch), ("sameTimes", same_times), ("live", live)):
        row = measure(j, journal, points, args.runs, work)
        replicas = {}
        for path in sealed_files(journal):
            replicas[os.path.basename(os.path.dirname(path))] = replicas.get(os.path.basename(os.path.dirname(path)), 0) + 1
        row["filesPerReplica"] = max(replicas.values()) if replicas else 0
        result[name] = row
    # Late joiners: each journal served as a board, caught up in blocks.
    relay = Relay(j, data)
    for name in ("batch", "live"):
        joined = join_bytes(j, relay.port, name)
        result[name]["catchUpBytes"] = joined.get("bytes")
        result[name]["digest"] = joined.get("digest")
    relay.stop()
    digests = {run([j, "digest", "-C", path]).stdout.strip() for path in (live, batch, same_times)}
    result["sameDrawing"] = len(digests) == 1 and result["live"]["digest"] == result["batch"]["digest"]

    base = result["batch"]
    print(f"{'journal':9} {'files':>6} {'per replica':>11} {'B/point':>8} {'first sync':>12} {'no-op sync':>12} {'merge':>12} {'catch-up bytes':>16}")
    for name in ("batch", "sameTimes", "live"):
        r = result[name]
        def ratio(key):
            return "" if name == "batch" or not base.get(key) or r.get(key) is None else f" ({r[key] / base[key]:.2f}x)"
        catch_up = "-" if r.get("catchUpBytes") is None else str(r["catchUpBytes"])
        print(f"{name:9} {r['files']:>6} {r['filesPerReplica']:>11} {r['bytesPerPoint']:>8.3f}"
              f" {r['firstSync'] * 1000:>7.0f} ms{ratio('firstSync')} {r['noopSync'] * 1000:>7.0f} ms{ratio('noopSync')}"
              f" {r['merge'] * 1000:>7.0f} ms{ratio('merge')} {catch_up:>16}{ratio('catchUpBytes')}")
    same = result["sameTimes"]
    result["liveOverSameTimes"] = result["live"]["bytes"] / same["bytes"]
    result["wallTimesBytesPerPoint"] = (same["bytes"] - base["bytes"]) / points
    print(f"bytes/point live/batch {result['live']['bytesPerPoint'] / base['bytesPerPoint']:.3f}; "
          f"live/same wall times {result['liveOverSameTimes']:.3f} (issue 42: <= 1.05); "
          f"the live wall times cost {result['wallTimesBytesPerPoint']:.3f} B/pt more than batch's; same drawing: {result['sameDrawing']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if result["sameDrawing"] else 1


if __name__ == "__main__":
    sys.exit(main())
