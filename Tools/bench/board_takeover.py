#!/usr/bin/env python3
"""How long a node that has never held a board takes to serve it: what a pen waits for when
its node is lost and the next one takes the board over from the cluster's store (issue 40).

Each run starts `journal serve --share STORE --ack shared` on an empty data folder, joins
`--board` with a new native pen (its hello says it holds nothing of the board's other
replicas: a catch-up brings the whole board, as a page's first join does), and draws one
point: reported are the seconds from the socket's opening to `caughtUp` (the board brought
from the store and opened), and from the point's frame to its ack (the board's first shared-ack
round). Runs alternate between the `--journal-bin` builds given, `--runs` each, so that both
meet the same machine; the store must hold the board already (a campaign's store, kept).

  python3 Tools/bench/board_takeover.py --store s3://cluster/pens --board board0 \\
      --journal-bin BASE/journal --journal-bin .build/release/journal --runs 5

Keys and AWS_ENDPOINT_URL in the environment for an S3 store, as for `journal sync`.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ci", "relay-campaign"))
sys.path.insert(0, os.path.join(HERE, "relay-load"))
from relay_campaign import Conn, native_frame, replica_key  # noqa: E402
from relay_load import free_port  # noqa: E402


def one_takeover(journal, store, board):
    data = tempfile.mkdtemp(prefix="takeover-")
    port = free_port()
    log = open(os.path.join(data, "..", os.path.basename(data) + ".log"), "wb")
    node = subprocess.Popen([journal, "serve", "--port", str(port), "--data", os.path.join(data, "boards"), "--open",
                             "--share", store, "--ack", "shared"], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the node did not listen within 60 s")
                time.sleep(0.05)
        key, public, replica = replica_key()
        opened = time.monotonic()
        conn = Conn(port, board)
        conn.send_text('{"type":"hello","replica":"%s","key":"%s"}' % (replica, public.hex()))
        got = conn.until(lambda m: m.get("type") in ("caughtUp", "error"), timeout=60)
        if not got or got[-1].get("type") != "caughtUp":
            raise RuntimeError("no catch-up: %s" % (got[-1:] if got else "closed"))
        caught_up = time.monotonic()
        conn.send_binary(native_frame(key, board, replica, [
            {"type": "point", "stroke": "%032x" % 7, "x": 1.5, "y": 2.5, "color": "#E53935FF", "width": 2.0,
             "seq": 1, "lamport": 1, "time": 1_700_000_000_000}]))
        acked = conn.until(lambda m: m.get("type") == "ack" and m.get("replica") == replica or m.get("type") == "error",
                           timeout=60)
        if not acked or acked[-1].get("type") != "ack":
            raise RuntimeError("no ack: %s" % (acked[-1:] if acked else "closed"))
        done = time.monotonic()
        conn.close()
        return caught_up - opened, done - caught_up, got[-1].get("events", 0)
    finally:
        node.terminate()
        node.wait(timeout=60)
        shutil.rmtree(data, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--journal-bin", action="append", required=True, help="a build to time (give two to compare)")
    parser.add_argument("--store", required=True)
    parser.add_argument("--board", required=True)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    times = {binary: [] for binary in args.journal_bin}
    for run in range(args.runs):
        for binary in args.journal_bin:
            join, ack, events = one_takeover(binary, args.store, args.board)
            times[binary].append((join, ack))
            print("takeover: run %d %s: caught up in %.3f s (%d events), first ack %.3f s later" % (
                run + 1, binary, join, events, ack), flush=True)
    base = None
    for binary, runs in times.items():
        join = statistics.median(j for j, _ in runs)
        ack = statistics.median(a for _, a in runs)
        total = statistics.median(j + a for j, a in runs)
        base = base or total
        print("takeover: %s: median caught up %.3f s, first ack %.3f s, both %.3f s (%.2f× the first build)" % (
            binary, join, ack, total, total / base))


if __name__ == "__main__":
    sys.exit(main())
