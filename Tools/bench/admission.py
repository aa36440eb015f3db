#!/usr/bin/env python3
"""What admitting a native key by token costs a relay (PROTOCOL.md, "Membership by default").

Two relays in one run, each with one board of --points text points: one that needs tokens (its
board founded with membership: each new key that comes with a draw token is granted in a
signed statement before its hello is answered), and one started --open (its board open: no
statement). The same number of native clients, each a new key, connect one after another to
each; each sends one event and waits for its ack. Prints the hello-to-caughtUp and
hello-to-ack times, median and worst, and the ratio of the medians (tokens ÷ open), the
relays alternating client by client so that the machine's drift falls on both.

  python3 Tools/bench/admission.py --journal-bin .build-release/release/journal --keys 40
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "ci", "relay-campaign"))
import relay_process  # noqa: E402
from relay_campaign import Conn, native_events, native_frame, native_hello, replica_key  # noqa: E402

BOARD = "admission"


def fill(port, token, points):
    """Draws `points` text points (a stroke of 100 a frame, CollabSketch's frame shape) and
    waits for their acks."""
    conn = Conn(port, BOARD)
    conn.send_text(json.dumps({"type": "hello", "token": token}) if token else json.dumps({"type": "hello"}))
    conn.until(lambda m: m.get("type") == "caughtUp", 120)
    frames = (points + 99) // 100
    for frame in range(frames):
        points = ",".join('{"x":%d,"y":%d}' % (i, frame) for i in range(100))
        conn.send_text('{"id":"6F1C2A3E-1111-4222-8333-%012d","points":[%s],"red":0,"green":0.5,"blue":1,"alpha":1,"lineWidth":2}'
                       % (frame, points))
    got = conn.until(lambda m: m.get("type") == "ack" and m["upTo"] >= frames or m.get("type") == "error", 300)
    if not got or got[-1].get("type") != "ack":
        sys.exit("the board was not filled: %s" % got[-1:])
    conn.close()


def admit(port, token):
    """One new key's hello and first event: (seconds to caughtUp, seconds to ack)."""
    key, public, replica = replica_key()
    start = time.monotonic()
    conn = Conn(port, BOARD)
    hello = json.loads(native_hello(public, replica, token))
    if token is None:
        del hello["token"]
    conn.send_text(json.dumps(hello))
    got = conn.until(lambda m: m.get("type") in ("caughtUp", "error"), 120)
    hello = time.monotonic() - start
    if not got or got[-1].get("type") != "caughtUp":
        sys.exit("the hello was refused: %s" % got[-1:])
    conn.send_binary(native_frame(key, BOARD, replica, native_events(replica, [1], [10_000_000])))
    # The ack of seq 1, not a sign of life (an ack repeated before it: upTo 0).
    got = conn.until(lambda m: m.get("type") == "ack" and m["upTo"] >= 1 or m.get("type") == "error", 120)
    if not got or got[-1].get("type") != "ack":
        sys.exit("the event was not acknowledged: %s" % got[-1:])
    acked = time.monotonic() - start
    conn.close()
    return hello, acked



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ci"))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--journal-bin", type=journal_binary, default=".build-release/release/journal")
    parser.add_argument("--keys", type=int, default=40)
    parser.add_argument("--points", type=int, default=20_000)
    args = parser.parse_args()
    journal = os.path.abspath(args.journal_bin)
    root = tempfile.mkdtemp(prefix="admission-")
    relays = {}
    try:
        for name, extra in (("tokens", []), ("open", ["--open"])):
            process, port = relay_process.start(journal, ["--data", os.path.join(root, name), "--close-idle-after", "0",
                                                          "--max-native-replicas", str(args.keys + 8)] + extra)
            relays[name] = (process, port)
        tokens = {}
        for name, (process, port) in relays.items():
            if name == "tokens":
                def mint(scope):
                    out = subprocess.run([journal, "token", "--data", os.path.join(root, name), "--board", BOARD, "--scope", scope,
                                          "--ttl", "1h", "--json"], capture_output=True, text=True, check=True)
                    return json.loads(out.stdout)["token"]
                fill(port, mint("admin"), args.points)
                tokens[name] = mint("draw")
            else:
                fill(port, None, args.points)
                tokens[name] = None
        times = {name: [] for name in relays}
        for _ in range(args.keys):
            for name, (process, port) in relays.items():
                times[name].append(admit(port, tokens[name]))
        listed = subprocess.run([journal, "members", "list", "-C", os.path.join(root, "tokens", BOARD), "--json"],
                                capture_output=True, text=True, check=True)
        members = len(json.loads(listed.stdout)["members"])
        for name, samples in times.items():
            hellos = [h for h, _ in samples]
            acks = [a for _, a in samples]
            print("%-6s hello median %.4f s, worst %.4f s; ack median %.4f s, worst %.4f s; first %.4f, last %.4f" % (
                name, statistics.median(hellos), max(hellos), statistics.median(acks), max(acks), hellos[0], hellos[-1]))
        print("tokens ÷ open, medians: hello %.2f, ack %.2f (%d keys each, board of %d points; the token board's membership "
              "names %d keys)" % (
                  statistics.median(h for h, _ in times["tokens"]) / statistics.median(h for h, _ in times["open"]),
                  statistics.median(a for _, a in times["tokens"]) / statistics.median(a for _, a in times["open"]),
                  args.keys, args.points, members))
    finally:
        for process, _ in relays.values():
            relay_process.stop(process)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
