#!/usr/bin/env python3
"""Shared acks under a pen that never stops (issue 40): ack latency with `--ack shared`.

Starts `journal serve --open --share STORE --ack shared` (STORE a fresh shared folder) from
the folder of the given `journal` (its `journal-relay` beside it), and one text-mode pen that
sends a point every 1/--hz seconds for --seconds, never pausing, never waiting for acks. Each
frame's latency runs from its send to the ack that covers it (an ack there means: in the
shared store). Prints p50, p90, p99 and max in milliseconds, and how many frames were acked.
Run it with two builds to compare them, e.g. the one before a change and the one after.

Usage: shared_acks_pen.py [--journal .build/release/journal] [--hz 60] [--seconds 30]
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "Tools", "ci", "relay-campaign"))
from relay_campaign import Conn  # noqa: E402
import relay_process  # noqa: E402


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--journal", default=os.path.join(REPO, ".build", "release", "journal"))
    parser.add_argument("--hz", type=float, default=60)
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="shared-acks-pen-")
    store = os.path.join(work, "store")
    os.makedirs(store)
    relay, port = relay_process.start(args.journal, ["--open", "--data", os.path.join(work, "boards"), "--share", store, "--ack", "shared"],
                        stderr=open(os.path.join(work, "relay.log"), "wb"))
    try:
        conn = Conn(port, "pen")
        conn.send_text('{"type":"hello"}')
        seen = conn.until(lambda m: m.get("type") in ("caughtUp", "error"), timeout=60)
        if not seen or seen[-1].get("type") != "caughtUp":
            sys.exit("no catch-up: %s" % seen[-1:])
        sent = {}
        latencies = []
        acked = [0]

        def read():
            while True:
                message = conn.next(timeout=120)
                if message is None:
                    return
                if message.get("type") == "ack":
                    now = time.monotonic()
                    for frame in range(acked[0] + 1, message["upTo"] + 1):
                        latencies.append((now - sent[frame]) * 1000)
                    acked[0] = max(acked[0], message["upTo"])
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        stroke = os.urandom(16).hex()
        period = 1 / args.hz
        start = time.monotonic()
        frame = 0
        while time.monotonic() - start < args.seconds:
            frame += 1
            sent[frame] = time.monotonic()
            conn.send_text(json.dumps({"type": "point", "stroke": stroke, "x": frame % 800, "y": frame % 600,
                                       "color": "#1E88E5FF", "width": 2}))
            time.sleep(max(0, start + frame * period - time.monotonic()))
        deadline = time.monotonic() + 60
        while acked[0] < frame and time.monotonic() < deadline:
            time.sleep(0.05)
        measured = latencies[: frame]
        if not measured:
            sys.exit("no frame was acknowledged (see %s)" % os.path.join(work, "relay.log"))
        print("shared acks, one pen at %.0f Hz for %.0f s: %d of %d frames acked; latency ms p50 %.0f, p90 %.0f, p99 %.0f, max %.0f"
              % (args.hz, args.seconds, acked[0], frame, percentile(measured, 50), percentile(measured, 90),
                 percentile(measured, 99), max(measured)))
        failures = sum(1 for line in open(os.path.join(work, "relay.log"), errors="replace") if "still unsealed" in line)
        print("rounds the relay logged as failed (\"still unsealed\"): %d" % failures)
    finally:
        relay_process.stop(relay)


if __name__ == "__main__":
    main()
