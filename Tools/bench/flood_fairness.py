#!/usr/bin/env python3
"""One drawer floods a board while a pen draws on it and a viewer watches: how long the pen
waits for its acks, and whether the viewer keeps its connection (issue 41, "one flooding drawer
starves pages"). Run against one build twice in one go: with the relay's per-connection event
budget (`--max-events-per-second`, the default) and without it (`0`), and print the ratio.

  python3 Tools/bench/flood_fairness.py --journal .build/release/journal --flood 300000

The flooder sends text point frames as fast as the relay reads them (up to 4,096 unacknowledged);
the pen sends one point every 50 ms (20 Hz) and times each ack; the viewer reads every message,
parsing each one (as a page does), and is counted as dropped when the relay closes it.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ci", "relay-campaign"))
sys.path.insert(0, os.path.join(HERE, "relay-load"))
from relay_campaign import Conn  # noqa: E402
from relay_load import free_port  # noqa: E402


def point(stroke, x):
    return json.dumps({"type": "point", "stroke": stroke, "x": x, "y": 1, "color": "#1E88E5FF", "width": 2})


def run_once(journal, budget, flood, seconds):
    root = tempfile.mkdtemp(prefix="flood-")
    port = free_port()
    args = [journal, "serve", "--open", "--port", str(port), "--data", root + "/boards"]
    if budget is not None:
        args += ["--max-events-per-second", str(budget)]
    relay = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(root + "/relay.log", "w"))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                Conn(port, "wall").close()
                break
            except OSError:
                time.sleep(0.1)
        viewer = Conn(port, "wall")
        viewer.send_text(json.dumps({"type": "hello"}))
        viewer_state = {"messages": 0, "closed": None}

        def watch():
            while True:
                m = viewer.next(timeout=60)
                if m is None:
                    if viewer.closed:
                        viewer_state["closed"] = viewer.why
                        return
                    continue
                viewer_state["messages"] += 1
                if m.get("type") == "error":
                    viewer_state["closed"] = m.get("code")
                    return

        threading.Thread(target=watch, daemon=True).start()
        pen = Conn(port, "wall")
        pen.send_text(json.dumps({"type": "hello"}))
        pen.until(lambda m: m.get("type") == "caughtUp", timeout=30)
        flooder = Conn(port, "wall")
        flooder.send_text(json.dumps({"type": "hello"}))
        flooder.until(lambda m: m.get("type") == "caughtUp", timeout=30)
        stop = threading.Event()
        sent = {"n": 0, "acked": 0}

        def flood_thread():
            window = 4096
            while sent["n"] < flood and not stop.is_set():
                while sent["n"] - sent["acked"] < window and sent["n"] < flood:
                    flooder.send_text(point("f" * 32, sent["n"]))
                    sent["n"] += 1
                m = flooder.next(timeout=5)
                while m is not None:
                    if m.get("type") == "ack":
                        # A repeated ack is a sign of life: acks never shrink.
                        sent["acked"] = max(sent["acked"], m["upTo"])
                    m = flooder.next(timeout=0) if not flooder.messages.empty() else None
                if flooder.closed:
                    return

        started = time.monotonic()
        threading.Thread(target=flood_thread, daemon=True).start()
        latencies = []
        frame = 0
        while time.monotonic() - started < seconds:
            frame += 1
            sent_at = time.monotonic()
            pen.send_text(point("a" * 32, frame))
            got = pen.until(lambda m: m.get("type") in ("ack", "error") and m.get("upTo", frame) >= frame, timeout=60)
            if not got or got[-1].get("type") != "ack":
                latencies.append(60.0)
                break
            latencies.append(time.monotonic() - sent_at)
            time.sleep(max(0, 0.05 - (time.monotonic() - sent_at)))
        stop.set()
        latencies.sort()
        return {
            "p50": latencies[len(latencies) // 2], "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
            "max": latencies[-1], "pen_frames": len(latencies), "flooded": sent["acked"],
            "viewer_messages": viewer_state["messages"], "viewer_closed": viewer_state["closed"],
        }
    finally:
        relay.terminate()
        relay.wait(timeout=60)
        subprocess.run(["rm", "-rf", root])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--journal", required=True)
    parser.add_argument("--flood", type=int, default=300_000, help="points the flooder sends")
    parser.add_argument("--seconds", type=float, default=20, help="how long the pen draws")
    args = parser.parse_args()
    without = run_once(args.journal, 0, args.flood, args.seconds)
    with_budget = run_once(args.journal, None, args.flood, args.seconds)
    for name, r in (("without a budget (--max-events-per-second 0)", without), ("with the default budget", with_budget)):
        print("flood: %s: pen ack p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d frames; flooder acknowledged %d; viewer read %d messages, %s"
              % (name, r["p50"] * 1000, r["p99"] * 1000, r["max"] * 1000, r["pen_frames"], r["flooded"], r["viewer_messages"],
                 "closed (%s)" % r["viewer_closed"] if r["viewer_closed"] else "kept its connection"))
    print("flood: pen ack p99 with ÷ without the budget: %.3f" % (with_budget["p99"] / without["p99"]))


if __name__ == "__main__":
    sys.exit(main())
