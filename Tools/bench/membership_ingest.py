#!/usr/bin/env python3
"""What a board's membership costs the relay's ingest (issue 38: at most 5%).

One `journal serve` (a release build), two boards: `open-board` (no membership) and
`member-board` (membership created with the board's own key, so the relay is its admin and
hosts native clients; each client's key granted `draw` before its round). Rounds alternate
between the boards, so both grow alike; in each, a fresh native client (its own Ed25519 key)
sends `--frames` binary native frames of `--events` points each, as fast as the relay takes
them (at most `--window` frames unacknowledged), and the round's time runs from its first
frame to the ack of its last event. On a board with membership the relay checks the hello's
key and every frame against the membership (RelayBoard.membershipRefusal) and the board's
reader admits seqs by it (ReplicaStream.admit).

Prints events/s per board (median of the rounds) and their ratio. Exits 1 when a round
fails. Needs the `cryptography` package.

Usage: membership_ingest.py [--journal .build/release/journal] [--rounds 7] [--frames 40]
                            [--events 512] [--window 8]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "Tools", "ci", "relay-campaign"))
from relay_campaign import Conn, native_events, native_frame, replica_key  # noqa: E402
from relay_process import start, stop  # noqa: E402


def round_trip(port, board, frames, events, window, before=None):
    """One client's round: its events per second, from its first frame to its last ack."""
    key, public, replica = replica_key()
    if before:
        before(public)
    conn = Conn(port, board)
    conn.send_text(json.dumps({"type": "hello", "replica": replica, "key": public.hex()}))
    seen = conn.until(lambda m: m.get("type") in ("caughtUp", "error"), timeout=60)
    if not seen or seen[-1].get("type") != "caughtUp":
        sys.exit("round on %s: no catch-up: %s" % (board, seen[-1:] or conn.why))
    payloads = []
    for f in range(frames):
        seqs = range(f * events + 1, (f + 1) * events + 1)
        payloads.append(native_frame(key, board, replica, native_events(replica, seqs, [10**6 + s for s in seqs])))
    acked = 0
    sent = 0
    started = time.perf_counter()
    while acked < frames * events:
        while sent < frames and (sent - acked // events) < window:
            conn.send_binary(payloads[sent])
            sent += 1
        message = conn.next(timeout=60)
        if message is None:
            sys.exit("round on %s: the connection ended (%s) after %d acked events" % (board, conn.why, acked))
        if message.get("type") == "ack" and message.get("replica") == replica:
            acked = max(acked, message["upTo"])
        elif message.get("type") == "error":
            sys.exit("round on %s: %s" % (board, message.get("message")))
    elapsed = time.perf_counter() - started
    conn.close()
    return frames * events / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--journal", default=os.path.join(REPO, ".build", "release", "journal"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--events", type=int, default=512)
    parser.add_argument("--window", type=int, default=8)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="membership-ingest-")
    data = os.path.join(work, "boards")
    relay, port = start(args.journal, ["--open", "--data", data])
    try:
        # Both boards exist before the rounds; the membership board gets its genesis.
        for board in ("open-board", "member-board"):
            conn = Conn(port, board)
            conn.send_text('{"type":"hello"}')
            conn.until(lambda m: m.get("type") == "caughtUp", timeout=60)
            conn.close()
        member_dir = os.path.join(data, "member-board")
        subprocess.run([args.journal, "members", "init", "-C", member_dir, "--label", "relay"], check=True,
                       stdout=subprocess.DEVNULL)

        def grant(public):
            subprocess.run([args.journal, "members", "grant", "-C", member_dir, public.hex(), "--role", "draw",
                            "--label", "bench"], check=True, stdout=subprocess.DEVNULL)
            time.sleep(0.5)  # the board folds the statement (inotify) before the client says hello

        rates = {"open-board": [], "member-board": []}
        for r in range(args.rounds):
            order = ("open-board", "member-board") if r % 2 == 0 else ("member-board", "open-board")
            for board in order:
                rate = round_trip(port, board, args.frames, args.events, args.window,
                                  before=grant if board == "member-board" else None)
                rates[board].append(rate)
        open_rate = statistics.median(rates["open-board"])
        member_rate = statistics.median(rates["member-board"])
        print("native ingest, %d rounds of %d frames x %d events (median events/s): open board %.0f, board with membership %.0f"
              % (args.rounds, args.frames, args.events, open_rate, member_rate))
        print("membership / open: %.3f (throughput; 1.000 = no cost; the target is >= 0.95)" % (member_rate / open_rate))
        print("rounds, open: %s" % " ".join("%.0f" % v for v in rates["open-board"]))
        print("rounds, membership: %s" % " ".join("%.0f" % v for v in rates["member-board"]))
    finally:
        stop(relay)


if __name__ == "__main__":
    main()
