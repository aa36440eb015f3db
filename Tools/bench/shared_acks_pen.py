#!/usr/bin/env python3
"""Shared acks under a pen that never stops (issue 40): ack latency with `--ack shared`.

Starts `journal serve --open --share STORE --ack shared` (STORE a fresh shared folder) from
the folder of the given `journal` (its `journal-relay` beside it), and --pens text-mode pens
(one by default), each sending a point every 1/--hz seconds for --seconds, never pausing, never waiting for acks. Each
frame's latency runs from its send to the ack that covers it (an ack there means: in the
shared store). Prints p50, p90, p99 and max in milliseconds, and how many frames were acked.
Run it with two builds to compare them, e.g. the one before a change and the one after.

Usage: shared_acks_pen.py [--journal .build/release/journal] [--hz 60] [--seconds 30] [--pens 1]
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
    parser.add_argument("--pens", type=int, default=1, help="pens drawing at once, each on its own connection")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="shared-acks-pen-")
    store = os.path.join(work, "store")
    os.makedirs(store)
    relay, port = relay_process.start(args.journal, ["--open", "--data", os.path.join(work, "boards"), "--share", store, "--ack", "shared"],
                        stderr=open(os.path.join(work, "relay.log"), "wb"))
    try:
        pens = []
        for index in range(args.pens):
            conn = Conn(port, "pen")
            conn.send_text('{"type":"hello"}')
            seen = conn.until(lambda m: m.get("type") in ("caughtUp", "error"), timeout=60)
            if not seen or seen[-1].get("type") != "caughtUp":
                sys.exit("pen %d: no catch-up: %s" % (index, seen[-1:]))
            pens.append({"conn": conn, "sent": {}, "acked": 0, "latencies": []})

        def read(pen):
            while True:
                message = pen["conn"].next(timeout=120)
                if message is None:
                    return
                if message.get("type") == "ack":
                    now = time.monotonic()
                    for frame in range(pen["acked"] + 1, message["upTo"] + 1):
                        pen["latencies"].append((now - pen["sent"][frame]) * 1000)
                    pen["acked"] = max(pen["acked"], message["upTo"])

        for pen in pens:
            threading.Thread(target=read, args=(pen,), daemon=True).start()
        strokes = [os.urandom(16).hex() for _ in pens]
        period = 1 / args.hz
        start = time.monotonic()
        frame = 0
        # The pens draw in step, each its own stroke, one point a period each, never pausing.
        while time.monotonic() - start < args.seconds:
            frame += 1
            for pen, stroke in zip(pens, strokes):
                pen["sent"][frame] = time.monotonic()
                pen["conn"].send_text(json.dumps({"type": "point", "stroke": stroke, "x": frame % 800, "y": frame % 600,
                                                  "color": "#1E88E5FF", "width": 2}))
            time.sleep(max(0, start + frame * period - time.monotonic()))
        deadline = time.monotonic() + 60
        while any(pen["acked"] < frame for pen in pens) and time.monotonic() < deadline:
            time.sleep(0.05)
        measured = [latency for pen in pens for latency in pen["latencies"][:frame]]
        if not measured:
            sys.exit("no frame was acknowledged (see %s)" % os.path.join(work, "relay.log"))
        acked = sum(pen["acked"] for pen in pens)
        print("shared acks, %d pen(s) at %.0f Hz for %.0f s: %d of %d frames acked; latency ms p50 %.0f, p90 %.0f, p99 %.0f, max %.0f"
              % (args.pens, args.hz, args.seconds, acked, frame * len(pens), percentile(measured, 50), percentile(measured, 90),
                 percentile(measured, 99), max(measured)))
        failures = sum(1 for line in open(os.path.join(work, "relay.log"), errors="replace") if "still unsealed" in line)
        print("rounds the relay logged as failed (\"still unsealed\"): %d" % failures)
    finally:
        relay_process.stop(relay)


if __name__ == "__main__":
    main()
