#!/usr/bin/env python3
"""The drawing page joining the standard board late: bytes received and seconds, catch-up in
text against catch-up in blocks, in one run.

Prepares the standard board as Tools/bench/relay-load's join scenario does (the session of
`gen_session.py --replicas 4 --strokes 2500 --points 200 --seed 1`, 2M points, from
$SHARED_BENCH or ../shared/bench beside the repository, else from the repository's own
Tools/bench/workload/session.py, whose figures are not comparable with docs/PERFORMANCE.md;
recorded with `journal init` and `journal record -C DATA/std replica-I.ndjson`), starts
`journal serve` (a release build) and headless Chromium, and opens the board's page once per
entry of --runs (by default blocks, text, blocks: the first join opens the board cold, the
later ones find it open). A text run strips "blocks":true from the page's hello on its way
out (the page itself always asks for blocks). For each run, from the page's own clock:

  * bytes received: text messages (characters; all ASCII) and binary messages;
  * held: seconds from the page opening its socket until it holds the whole board (the
    relay's caughtUp handled, which the page does only after every earlier message);
  * drawn: seconds from opening the socket until the first full redraw after that is done
    (taken one animation frame after the redraw);
  * the page's counts (strokes, points, visible strokes) against `journal digest --json`.

Usage: page_join.py [--journal .build/release/journal] [--workload DIR] [--scratch DIR]
                    [--runs blocks,text,blocks] [--deadline 900] [--keep-board] [--json FILE]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # <repo>/Tools/ci/page-test
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "Tools", "bench", "workload"))
from page_test import Browser, Failure, Page, SOCKET_SPY, fail, say, start_relay, stop_relay  # noqa: E402
import which_generator  # noqa: E402  (the standard session generator, or ours when it is missing)


def prepare(args):
    """The standard session (generated if the folder holds none) recorded into DATA/std."""
    files = sorted(f for f in os.listdir(args.workload) if f.startswith("replica-") and f.endswith(".ndjson")) \
        if os.path.isdir(args.workload) else []
    if not files:
        say("generating the standard session into %s (about a minute)" % args.workload)
        subprocess.run([sys.executable, which_generator.find("page-join"), "--replicas", "4", "--strokes", "2500", "--points", "200",
                        "--seed", "1", "--out", args.workload], check=True, stdout=subprocess.DEVNULL)
        files = sorted(f for f in os.listdir(args.workload) if f.startswith("replica-") and f.endswith(".ndjson"))
    data = os.path.join(args.scratch, "boards")
    board = os.path.join(data, "std")
    if args.keep_board and os.path.isdir(board):
        say("the board recorded before: %s" % board)
    else:
        shutil.rmtree(data, ignore_errors=True)
        started = time.monotonic()
        subprocess.run([args.journal, "init", board], check=True, stdout=subprocess.DEVNULL)
        for name in files:
            subprocess.run([args.journal, "record", "-C", board, os.path.join(args.workload, name)], check=True,
                           stdout=subprocess.DEVNULL)
        say("recorded %d files into %s in %.0f s" % (len(files), board, time.monotonic() - started))
    summary = subprocess.run([args.journal, "digest", "-C", board, "--json"], check=True, capture_output=True, text=True)
    return data, json.loads(summary.stdout)


def join(browser, url, mode, expected, deadline):
    spy = SOCKET_SPY.replace("TEXT_ONLY", json.dumps(mode == "text")).replace("CLAIM", "null")
    page = Page(browser, url, mode, before_page_script=spy)
    end = time.monotonic() + deadline
    state = None
    try:
        while time.monotonic() < end:
            state = page.state()
            if state and state["live"] and state["timing"]["drawn"]:
                break
            time.sleep(0.25)
        else:
            fail("the %s join did not hold and draw the board within %.0f s: %s" % (mode, deadline, state))
        heap = page.evaluate("performance.memory ? performance.memory.usedJSHeapSize : null")
    finally:
        page.call("Page.close")
    counts = (state["strokes"], state["points"], state["visibleStrokes"])
    want = (expected["strokes"], expected["points"], expected["visibleStrokes"])
    if counts != want:
        fail("the %s join holds (strokes, points, visible) %s, the journal %s" % (mode, counts, want))
    timing = state["timing"]
    return {"mode": mode, "textBytes": state["received"]["text"], "binaryBytes": state["received"]["binary"],
            "heldSeconds": round((timing["caughtUp"] - timing["opened"]) / 1000, 3),
            "drawnSeconds": round((timing["drawn"] - timing["opened"]) / 1000, 3),
            "redrawSeconds": round(timing["redraw"] / 1000, 3),
            "jsHeapBytes": heap, "points": state["points"], "strokes": state["strokes"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--journal", default=os.path.join(REPO, ".build", "release", "journal"))
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--workload", default="/tmp/page-join/workload")
    ap.add_argument("--scratch", default="/tmp/page-join")
    ap.add_argument("--runs", default="blocks,text,blocks")
    ap.add_argument("--deadline", type=float, default=900)
    ap.add_argument("--keep-board", action="store_true", help="use SCRATCH/boards/std as an earlier run left it")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("page-join: terminated"))
    args.journal = os.path.abspath(args.journal)
    runs = args.runs.split(",")
    if any(mode not in ("blocks", "text") for mode in runs):
        sys.exit("page-join: --runs takes blocks and text")
    os.makedirs(args.scratch, exist_ok=True)
    data, expected = prepare(args)
    say("the board: %d events, %d points, %d strokes" % (expected["events"], expected["points"], expected["strokes"]))
    relay, port = start_relay(args.journal, data, os.path.join(args.scratch, "relay.log"))
    browser = None
    results = []
    try:
        profile = tempfile.mkdtemp(prefix="page-join-profile-")
        browser = Browser(args.chromium, profile, os.path.join(args.scratch, "chromium.log"))
        url = "http://127.0.0.1:%d/boards/std" % port
        for mode in runs:
            result = join(browser, url, mode, expected, args.deadline)
            results.append(result)
            say("%-6s %6.1f MB text %5.1f MB binary  held %7.3f s  drawn %7.3f s (its redraw %.3f s; JS heap %s MB)" % (
                mode, result["textBytes"] / 1e6, result["binaryBytes"] / 1e6, result["heldSeconds"], result["drawnSeconds"],
                result["redrawSeconds"], "?" if result["jsHeapBytes"] is None else round(result["jsHeapBytes"] / 1e6)))
    except Failure as failure:
        print("page-join: FAILED: %s" % failure, file=sys.stderr)
        sys.exit(1)
    finally:
        if browser:
            browser.stop()
        stop_relay(relay)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"command": " ".join(sys.argv), "board": expected, "runs": results}, out, indent=1)


if __name__ == "__main__":
    main()
