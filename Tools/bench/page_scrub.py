#!/usr/bin/env python3
"""How long the drawing page takes to show a scrubbed moment of a big board (issue 27, the
page's history control), in headless Chromium against a real `journal serve`.

The journal given is served as a board (a copy); one page opens it and catches up. Then the
page's test hook `window.strokeJournalAt(k)` scrubs to --moments random event counts (seeded):
each call pauses playback, shows moment k and redraws the canvas, and returns the
milliseconds that took, measured by the page itself around that synchronous work (what a
person waits for before the browser paints). The first --check moments are compared with
`journal digest --at k --json` (visible strokes and points), so a fast wrong answer fails.

Usage: page_scrub.py --journal-bin .build/release/journal --board JOURNAL [--moments 60]
                     [--check 4] [--seed 1] [--pictures on|off] [--no-wait] [--json OUT]
  --pictures off: every moment drawn afresh, the baseline to quote the pictures against.
  JOURNAL: e.g. the standard session recorded into one journal (docs/PERFORMANCE.md).
Needs chromium (apt-get install chromium); reuses Tools/ci/page-test's browser driver.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ci", "page-test"))
import page_test  # noqa: E402  (the driver: Browser, Page, start_relay, stop_relay)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def digest_at(journal, board, k):
    done = subprocess.run([journal, "digest", "-C", board, "--at", str(k), "--json"], check=True, capture_output=True, text=True)
    return json.loads(done.stdout)



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ci"))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--journal-bin", type=journal_binary, required=True)
    ap.add_argument("--board", required=True, help="a journal to serve as the board")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--moments", type=int, default=60)
    ap.add_argument("--check", type=int, default=4, help="moments compared with journal digest --at")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--catch-up-seconds", type=float, default=600, help="how long the page may take to catch up")
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--pictures", choices=["on", "off"], default="on",
                    help="off: the page draws every moment afresh (the baseline before its history pictures)")
    ap.add_argument("--settle", type=int, default=5, help="moments timed until drawn exactly, after the scrub")
    ap.add_argument("--no-wait", action="store_true",
                    help="scrub at once instead of waiting for the page to make its pictures in the background")
    args = ap.parse_args()
    journal = os.path.abspath(args.journal_bin)
    if not os.access(args.chromium, os.X_OK):
        sys.exit("page-scrub: no chromium at %s (apt-get install -y chromium)" % args.chromium)
    page_test.DEADLINE = args.catch_up_seconds
    work = tempfile.mkdtemp(prefix="page-scrub-")
    relay = browser = None
    try:
        data = os.path.join(work, "data")
        os.makedirs(data)
        board = os.path.join(data, "big")
        shutil.copytree(args.board, board, symlinks=True, ignore=shutil.ignore_patterns("*.lock"))
        now = digest_at(journal, board, "now")
        total = now["events"]
        relay, port = page_test.start_relay(journal, data, os.path.join(work, "relay.log"))
        browser = page_test.Browser(args.chromium, os.path.join(work, "profile"), os.path.join(work, "chromium.log"))
        started = time.monotonic()
        page = page_test.Page(browser, "http://127.0.0.1:%d/boards/big" % port, "S")
        page.wait_for("live with the board's %d points" % now["points"], lambda s: s["live"] and s["points"] == now["points"])
        caught_up = time.monotonic() - started
        print("page-scrub: the page caught up with %d events (%d points) in %.1f s" % (total, now["points"], caught_up), flush=True)
        rng = random.Random(args.seed)
        moments = [rng.randrange(0, total + 1) for _ in range(args.moments)]
        if args.pictures == "off":
            page.evaluate("window.strokeJournalSetPictures(Infinity)")
        page.evaluate("window.strokeJournalAt(%d)" % total)  # opens the control; not counted
        pictures_made = 0.0
        if args.pictures == "on" and not args.no_wait:
            # "Once the board is loaded": the page makes its pictures in the background when
            # History opens (about one drawing of the board); the scrub is measured after.
            sent = time.monotonic()
            page.wait_for("the history pictures made", lambda s: page.evaluate("(() => { const c = window.strokeJournalPictureCount(); return c.made >= c.wanted; })()"))
            pictures_made = time.monotonic() - sent
            print("page-scrub: the page made its history pictures in %.1f s" % pictures_made, flush=True)
        drawn, round_trips, slowest, approximate = [], [], [], 0
        for index, k in enumerate(moments):
            sent = time.monotonic()
            at = page.evaluate("window.strokeJournalAt(%d)" % k)
            round_trips.append((time.monotonic() - sent) * 1000)
            if at["events"] != k:
                sys.exit("page-scrub: scrubbed to %d, the page shows %d" % (k, at["events"]))
            drawn.append(at["milliseconds"])
            slowest.append((at["milliseconds"], k, at.get("leftOut", 0)))
            approximate += 0 if at.get("exactAtOnce", True) else 1
            if index < args.check:
                expected = digest_at(journal, board, k)
                if (at["visibleStrokes"], at["points"]) != (expected["visibleStrokes"], expected["points"]):
                    sys.exit("page-scrub: at %d the page shows %d strokes, %d points; journal digest --at: %d, %d"
                             % (k, at["visibleStrokes"], at["points"], expected["visibleStrokes"], expected["points"]))
        result = {"events": total, "points": now["points"], "catchUpSeconds": round(caught_up, 2), "moments": len(moments),
                  "pictures": args.pictures, "picturesSeconds": round(pictures_made, 2), "firstPaintApproximate": approximate,
                  "checked": min(args.check, len(moments)),
                  "drawnMilliseconds": {"p50": round(percentile(drawn, 0.5), 1), "p95": round(percentile(drawn, 0.95), 1),
                                        "max": round(max(drawn), 1)},
                  "roundTripMilliseconds": {"p50": round(percentile(round_trips, 0.5), 1), "p95": round(percentile(round_trips, 0.95), 1)}}
        print("page-scrub: %d moments: drawn in %.1f ms median, %.1f ms p95, %.1f ms max (round trip through DevTools %.1f ms p95); "
              "%d checked against journal digest --at" % (len(moments), result["drawnMilliseconds"]["p50"], result["drawnMilliseconds"]["p95"],
                                                           result["drawnMilliseconds"]["max"], result["roundTripMilliseconds"]["p95"], result["checked"]))
        # After a scrub stops: how long until the moment is drawn exactly (the repaint in
        # slices that follows a first paint with strokes stacked otherwise).
        exact_after = []
        for k in moments[:args.settle]:
            sent = time.monotonic()
            at = page.evaluate("window.strokeJournalAt(%d)" % k)
            while not page.evaluate("window.strokeJournalExact()"):
                time.sleep(0.01)
            exact_after.append((time.monotonic() - sent) * 1000)
        if exact_after:
            result["exactAfterMilliseconds"] = {"p50": round(percentile(exact_after, 0.5), 1), "max": round(max(exact_after), 1)}
            print("page-scrub: a scrub that stops is drawn exactly %.0f ms after it at the median, %.0f ms at most (%d moments)"
                  % (result["exactAfterMilliseconds"]["p50"], result["exactAfterMilliseconds"]["max"], len(exact_after)), flush=True)
        slowest.sort(reverse=True)
        print("page-scrub: slowest: %s; %d of %d moments shown first with strokes that change later stacked on top, "
              "then drawn exactly in the background" % (", ".join("%d ms at %d (%d strokes drawn above the picture)" % (ms, k, left)
                                                                  for ms, k, left in slowest[:5]), approximate, len(moments)), flush=True)
        if args.json:
            with open(args.json, "w") as out:
                json.dump(result, out, indent=2)
    except page_test.Failure as failure:
        sys.exit("page-scrub: %s" % failure)
    finally:
        if browser:
            browser.stop()
        if relay:
            page_test.stop_relay(relay)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
