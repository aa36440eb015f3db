#!/usr/bin/env python3
"""The drawing page in a real browser: two headless Chromium pages on one board of a real relay.

Starts `journal serve` on a fresh data folder and headless Chromium (driven over the DevTools
protocol on --remote-debugging-pipe: NUL-terminated JSON on fds 3 and 4, stdlib only), then:
  * opens the board's page twice (pages A and B) and waits until both are live;
  * draws strokes in A with pen events (Input.dispatchMouseEvent, pointerType "pen", a
    different `force` per sample), checks A holds exactly the points dispatched and that B
    shows the same strokes and points within a deadline;
  * reloads B and checks it shows the whole board again (the catch-up);
  * undoes A's last stroke with the page's Undo button and checks B hides it;
  * page C, whose WebSocket the test replaces to play the relay itself: points delivered out
    of order and twice, undo/redo/erase/clear by order key, the hello after a reconnection,
    and resending only the frames its catch-up did not bring back;
  * saves PNG screenshots of the pages into the artefact folder, and fails on any script
    error a page reported;
  * stops the relay (SIGTERM) and checks the board's journal with the real CLI
    (`journal strokes --all`): the same strokes and points, the pressures dispatched, the
    undone stroke hidden.
Exits 1 with a message on the first failure; its relay and browser are killed in every case.

Usage: page_test.py --journal-bin PATH [--chromium /usr/bin/chromium] [--artefacts DIR]
                    [--strokes 3] [--moves 12] [--wrong-count]
--wrong-count expects one point more than was drawn: the run must then fail (a check of the
checker).
"""
import argparse
import base64
import fcntl
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BOARD = "page-test"
DEADLINE = 20.0


class Failure(Exception):
    pass


STARTED = time.monotonic()


def say(message):
    print("page-test [%5.1f s]: %s" % (time.monotonic() - STARTED, message), flush=True)


def fail(message):
    raise Failure(message)


class Browser:
    """Headless Chromium and its DevTools pipe: commands out on fd 3, replies and events in on fd 4."""

    def __init__(self, binary, profile, log_path):
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def wire_pipes():
            # In the child, before exec: Chromium expects the pipe on exactly fds 3 and 4.
            # Copies above 10 first, so neither dup2 overwrites the other's source.
            read_copy = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
            write_copy = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)
            os.dup2(read_copy, 3)
            os.dup2(write_copy, 4)

        self.process = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--user-data-dir=" + profile, "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-dev-shm-usage",
             "--window-size=900,640",
             # Two pages at once: neither may be throttled as a hidden tab (input to a
             # background tab waits seconds per event for a frame).
             "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
             "--disable-backgrounding-occluded-windows", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log_path, "wb"),
            close_fds=False, preexec_fn=wire_pipes, start_new_session=True)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._next_id = 0
        self._replies = {}
        self._lock = threading.Condition()
        self.events = []          # (sessionId, method, params), in arrival order
        self._closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    self._closed = True
                    self._lock.notify_all()
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                with self._lock:
                    if "id" in message:
                        self._replies[message["id"]] = message
                    else:
                        self.events.append((message.get("sessionId"), message.get("method"), message.get("params", {})))
                    self._lock.notify_all()

    def call(self, method, params=None, session=None, timeout=DEADLINE):
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        end = time.monotonic() + timeout
        with self._lock:
            while ident not in self._replies:
                left = end - time.monotonic()
                if self._closed:
                    fail("the browser closed its DevTools pipe during %s" % method)
                if left <= 0:
                    fail("the browser did not answer %s within %.0f s" % (method, timeout))
                self._lock.wait(left)
            reply = self._replies.pop(ident)
        if "error" in reply:
            fail("%s failed: %s" % (method, reply["error"].get("message")))
        return reply.get("result", {})

    def stop(self):
        try:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass


class Page:
    """One tab, attached with its own session."""

    def __init__(self, browser, url, name, before_page_script=None):
        self.browser, self.name = browser, name
        target = browser.call("Target.createTarget", {"url": "about:blank", "newWindow": True})["targetId"]
        self.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Runtime.enable")
        self.call("Page.enable")
        if before_page_script:
            self.call("Page.addScriptToEvaluateOnNewDocument", {"source": before_page_script})
        self.call("Page.navigate", {"url": url})

    def call(self, method, params=None):
        return self.browser.call(method, params, session=self.session)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            fail("page %s: %s threw: %s" % (self.name, expression, result["exceptionDetails"].get("text")))
        return result["result"].get("value")

    def state(self):
        return self.evaluate("typeof window.strokeJournalState === 'function' ? window.strokeJournalState() : null")

    def wait_for(self, description, accept):
        """Polls the page's state until `accept(state)`; fails with the last state after the deadline."""
        end = time.monotonic() + DEADLINE
        state = None
        while time.monotonic() < end:
            state = self.state()
            if state is not None and accept(state):
                return state
            time.sleep(0.1)
        fail("page %s: %s not reached within %.0f s; its state: %s" % (self.name, description, DEADLINE, state))

    def pen(self, kind, x, y, force, buttons):
        params = {"type": kind, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": 1,
                  "pointerType": "pen", "force": force}
        self.call("Input.dispatchMouseEvent", params)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))


def start_relay(journal, data, log_path):
    log = open(log_path, "wb")
    process = subprocess.Popen([journal, "serve", "--port", "0", "--data", data],
                               stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    # "journal: serving DIR on ws://127.0.0.1:PORT/boards/<board>/ws, drawing page http://…"
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in process.stdout], daemon=True).start()
    try:
        line = lines.get(timeout=DEADLINE).decode(errors="replace")
    except queue.Empty:
        fail("journal serve printed no address within %.0f s (log: %s)" % (DEADLINE, log_path))
    match = re.search(r"ws://[^:/]+:(\d+)/", line)
    if not match:
        fail("journal serve printed %r, expected its address" % line)
    return process, int(match.group(1))


def stop_relay(process):
    """SIGTERM (the relay seals its boards and releases their locks), SIGKILL after 10 s; the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode


def journal_strokes(journal, board_dir, hidden_too=False):
    command = [journal, "strokes", "-C", board_dir, "--json"] + (["--all"] if hidden_too else [])
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        fail("journal strokes -C %s exited %d: %s" % (board_dir, done.returncode, done.stderr.strip()))
    return json.loads(done.stdout)["strokes"]


def forces_for(stroke, moves):
    """The pen force of each sample: distinct values, exact in 4 decimals, none 0.5 (a mouse's)."""
    return [round(0.103 + 0.05 * ((stroke * 7 + i * 3) % 17), 4) for i in range(moves + 1)]


def draw(page, strokes, moves):
    """Draws `strokes` pen strokes of 1 + `moves` samples each; returns every force dispatched."""
    dispatched = []
    for s in range(strokes):
        forces = forces_for(s, moves)
        x0, y0 = 120 + 200 * s, 160 + 40 * s
        page.pen("mousePressed", x0, y0, forces[0], 1)
        for i in range(1, moves + 1):
            page.pen("mouseMoved", x0 + 9 * i, y0 + 5 * i + (i % 3) * 4, forces[i], 1)
        page.pen("mouseReleased", x0 + 9 * moves, y0 + 5 * moves, 0, 0)
        dispatched.extend(forces)
    return dispatched


# Replaces the page's WebSocket with one the test plays the relay on, and records the canvas's
# lineTo calls (the order the page draws a stroke's points in).
FAKE_RELAY = r"""
(() => {
  const fake = { sockets: [], lines: [] };
  window.__fake = fake;
  window.WebSocket = class {
    constructor(url) { this.url = url; this.sent = []; fake.sockets.push(this); setTimeout(() => this.onopen(), 0); }
    send(text) { this.sent.push(text); }
    close() {}
  };
  fake.current = () => fake.sockets[fake.sockets.length - 1];
  fake.deliver = (messages) => { for (const m of messages) fake.current().onmessage({ data: JSON.stringify(m) }); };
  fake.drop = () => fake.current().onclose({});
  const lineTo = CanvasRenderingContext2D.prototype.lineTo;
  CanvasRenderingContext2D.prototype.lineTo = function (x, y) { fake.lines.push([x, y]); return lineTo.call(this, x, y); };
})();
"""

R1, R2 = "11" * 16, "22" * 16
STROKE_S, STROKE_T = "AAAAAAAA-0000-4000-8000-000000000001", "AAAAAAAA-0000-4000-8000-000000000002"


def event(kind, replica, seq, lamport, stroke=None, **point):
    message = {"type": kind}
    if stroke:
        message["stroke"] = stroke
    if kind == "point":
        message.update({"x": point["x"], "y": point["y"], "color": "#E53935FF", "width": 3.0})
    message.update({"replica": replica, "seq": seq, "lamport": lamport, "time": 1700000000000 + lamport})
    return message


def as_relay_sends(line, replica, seq, lamport):
    """The event message the relay would send back for a line this page sent."""
    message = json.loads(line)
    hex_id = message["stroke"].upper()
    message["stroke"] = "%s-%s-%s-%s-%s" % (hex_id[:8], hex_id[8:12], hex_id[12:16], hex_id[16:20], hex_id[20:])
    message.update({"replica": replica, "seq": seq, "lamport": lamport, "time": 1700000000000 + lamport})
    return message


def check_fold_and_resending(browser, url):
    """Page C against a relay played by the test: points out of order, duplicates, visibility
    by the latest operation, the hello after a reconnection, and resending only what the
    journal lacks."""
    c = Page(browser, url, "C", before_page_script=FAKE_RELAY)
    end = time.monotonic() + DEADLINE
    while not c.evaluate("window.__fake && __fake.sockets.length > 0 && __fake.current().sent.length > 0"):
        if time.monotonic() > end:
            fail("page C: no hello within %.0f s" % DEADLINE)
        time.sleep(0.05)
    hello = json.loads(c.evaluate("__fake.current().sent[0]"))
    if hello != {"type": "hello", "have": {}}:
        fail("page C's first hello is %s, expected one holding nothing" % hello)

    deliver = lambda messages: c.evaluate("__fake.deliver(%s)" % json.dumps(messages))
    # S's points arrive in the order lamport 3, 1, 2 (and 2 again: a duplicate); T after.
    deliver([event("point", R2, 1, 3, STROKE_S, x=30, y=50), event("point", R1, 1, 1, STROKE_S, x=10, y=50),
             event("point", R1, 2, 2, STROKE_S, x=20, y=50), event("point", R1, 2, 2, STROKE_S, x=20, y=50),
             event("point", R2, 2, 5, STROKE_T, x=100, y=100),
             {"type": "caughtUp", "events": 4, "have": {R1: [[1, 2]], R2: [[1, 2]]}}])
    c.wait_for("live with 2 strokes and 4 points", lambda s: s["live"] and (s["strokes"], s["points"], s["visibleStrokes"]) == (2, 4, 2))
    drawn = c.evaluate("__fake.lines = []; window.dispatchEvent(new Event('resize')); __fake.lines.map(p => p[0])")
    if drawn != [20, 30]:
        fail("page C drew S's segments to x = %s, expected [20, 30] (points in order-key order)" % drawn)

    visibility_steps = [
        (event("clear", R1, 3, 4), 1, "a clear after S's creation, before T's, hides S only"),
        (event("redo", R2, 3, 6, STROKE_S), 2, "a redo after the clear shows S again"),
        (event("erase", R1, 4, 7, STROKE_T), 1, "an erase hides T"),
        (event("redo", R2, 4, 2, STROKE_T), 1, "a redo older than the erase leaves T hidden"),
    ]
    for message, visible, meaning in visibility_steps:
        deliver([message])
        state = c.state()
        if state["visibleStrokes"] != visible:
            fail("page C: %s: %d visible strokes, expected %d" % (meaning, state["visibleStrokes"], visible))

    # Own stroke: 3 samples and an end, 4 frames; the relay acknowledges only the first.
    c.pen("mousePressed", 400, 300, 0.25, 1)
    c.pen("mouseMoved", 420, 310, 0.5, 1)
    c.pen("mouseMoved", 440, 330, 0.75, 1)
    c.pen("mouseReleased", 440, 330, 0, 0)
    sent = c.evaluate("__fake.current().sent.slice(1)")
    kinds = [json.loads(line)["type"] for line in sent]
    if kinds != ["point", "point", "point", "end"]:
        fail("page C sent %s for one pen stroke of 3 samples, expected 3 points and an end" % kinds)
    pressures = [json.loads(line).get("pressure") for line in sent[:3]]
    if pressures != [0.25, 0.5, 0.75]:
        fail("page C sent pressures %s, expected [0.25, 0.5, 0.75]" % pressures)
    deliver([{"type": "ack", "upTo": 1}])
    c.wait_for("3 frames unacknowledged", lambda s: s["unacked"] == 3)

    c.evaluate("__fake.drop()")
    c.wait_for("a new socket", lambda s: c.evaluate("__fake.sockets.length") == 2)
    time.sleep(0.3)
    again = c.evaluate("__fake.current().sent")
    want_have = {R1: [[1, 4]], R2: [[1, 4]]}
    if len(again) != 1 or json.loads(again[0]) != {"type": "hello", "have": want_have}:
        fail("page C after reconnecting sent %s, expected only a hello with have %s" % (again, want_have))
    # The catch-up brings back the page's first two frames (the journal holds them).
    deliver([as_relay_sends(sent[0], R1, 5, 8), as_relay_sends(sent[1], R1, 6, 9),
             {"type": "caughtUp", "events": 2, "have": {R1: [[1, 6]], R2: [[1, 4]]}}])
    state = c.wait_for("live again", lambda s: s["live"])
    resent = c.evaluate("__fake.current().sent.slice(1)")
    if resent != sent[2:]:
        fail("page C resent %s, expected only the frames the journal lacks: %s" % (resent, sent[2:]))
    if (state["strokes"], state["points"], state["unacked"]) != (3, 7, 2):
        fail("page C after the catch-up: %s, expected 3 strokes, 7 points (none twice), 2 unacked" % state)
    deliver([{"type": "ack", "upTo": 2}])
    c.wait_for("everything acknowledged", lambda s: s["unacked"] == 0)
    return c


def check(args, work, artefacts):
    data = os.path.join(work, "boards")
    relay, port = start_relay(args.journal_bin, data, os.path.join(artefacts, "relay.log"))
    browser = None
    try:
        profile = os.path.join(work, "profile")
        os.makedirs(profile)
        browser = Browser(args.chromium, profile, os.path.join(artefacts, "chromium.log"))
        url = "http://127.0.0.1:%d/boards/%s" % (port, BOARD)
        a, b = Page(browser, url, "A"), Page(browser, url, "B")
        for page in (a, b):
            page.wait_for("live on an empty board", lambda s: s["live"] and s["strokes"] == 0)
        say("both pages live on %s" % url)

        dispatched = draw(a, args.strokes, args.moves)
        expected_points = len(dispatched) + (1 if args.wrong_count else 0)
        state_a = a.wait_for("all its frames acknowledged", lambda s: s["unacked"] == 0 and s["points"] >= len(dispatched))
        if state_a["strokes"] != args.strokes or state_a["points"] != expected_points:
            fail("page A holds %d strokes, %d points; drawn: %d strokes, %d points"
                 % (state_a["strokes"], state_a["points"], args.strokes, expected_points))
        same = lambda s: (s["strokes"], s["points"], s["visibleStrokes"]) == (args.strokes, expected_points, args.strokes)
        b.wait_for("A's %d strokes and %d points" % (args.strokes, expected_points), same)
        say("page B shows A's %d strokes, %d points (live)" % (args.strokes, expected_points))

        b.call("Page.reload", {"ignoreCache": True})
        b.wait_for("the whole board after a reload", lambda s: s["live"] and same(s))
        say("page B shows the whole board again after a reload")

        a.evaluate("document.getElementById('undo').click()")
        hidden = lambda s: s["visibleStrokes"] == args.strokes - 1 and s["strokes"] == args.strokes
        a.wait_for("its last stroke undone and acknowledged", lambda s: hidden(s) and s["unacked"] == 0)
        b.wait_for("A's last stroke hidden", hidden)
        say("Undo in A hides the stroke in B")

        c = check_fold_and_resending(browser, "http://127.0.0.1:%d/boards/fold-check" % port)
        say("page C (a relay played by the test): out-of-order points, duplicates, visibility, hello and resending as expected")

        for page in (a, b, c):
            path = os.path.join(artefacts, "page-%s.png" % page.name)
            page.screenshot(path)
            if os.path.getsize(path) < 1000:
                fail("the screenshot %s is only %d bytes" % (path, os.path.getsize(path)))
        errors = [(session, params.get("exceptionDetails", {}).get("exception", {}).get("description")
                   or params.get("exceptionDetails", {}).get("text"))
                  for session, method, params in list(browser.events) if method == "Runtime.exceptionThrown"]
        if errors:
            fail("a page reported script errors: %s" % errors[:3])
    finally:
        if browser:
            browser.stop()
        code = stop_relay(relay)
    if code != 0:
        fail("journal serve exited %s on SIGTERM (log: %s)" % (code, os.path.join(artefacts, "relay.log")))
    check_journal(args, os.path.join(data, BOARD), dispatched, expected_points)


def check_journal(args, board_dir, dispatched, expected_points):
    """The board's journal, read with the CLI once the relay has stopped (a reader racing the
    relay's writer sometimes saw an older state: see the report of the change that added this)."""
    strokes = journal_strokes(args.journal_bin, board_dir, hidden_too=True)
    points = [p for stroke in strokes for p in stroke["points"]]
    if len(strokes) != args.strokes or len(points) != expected_points:
        fail("the journal holds %d strokes, %d points; drawn: %d strokes, %d points"
             % (len(strokes), len(points), args.strokes, expected_points))
    pressures = sorted(p.get("pressure") for p in points if "pressure" in p)
    if len(pressures) != len(points):
        fail("%d of the journal's %d points have no pressure" % (len(points) - len(pressures), len(points)))
    # PointerEvent.pressure is a float: allow its rounding, nothing more.
    mismatched = [(got, want) for got, want in zip(pressures, sorted(dispatched)) if abs(got - want) > 1e-3]
    if mismatched:
        fail("pressures differ from the forces dispatched (journal, dispatched): %s" % mismatched[:5])
    hidden = [stroke for stroke in strokes if not stroke["visible"]]
    if len(hidden) != 1 or hidden[0] is not strokes[-1]:
        fail("the journal hides %d strokes, expected only the last one drawn (undone in A)" % len(hidden))
    say("the journal holds %d strokes, %d points with the pressures dispatched, the last one undone"
        % (len(strokes), len(points)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--journal-bin", required=True)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--artefacts", help="where screenshots and logs go (default: a new temporary folder)")
    ap.add_argument("--strokes", type=int, default=3)
    ap.add_argument("--moves", type=int, default=12)
    ap.add_argument("--wrong-count", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    # SIGTERM (a CI timeout) unwinds like a failure, so the relay and browser are killed too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("page-test: terminated"))
    if args.strokes < 2 or args.moves < 1:
        sys.exit("page-test: --strokes must be at least 2 and --moves at least 1")
    args.journal_bin = os.path.abspath(args.journal_bin)
    if not os.access(args.journal_bin, os.X_OK):
        sys.exit("page-test: %s is not an executable journal" % args.journal_bin)
    if not os.access(args.chromium, os.X_OK):
        sys.exit("page-test: no chromium at %s (apt-get install -y chromium)" % args.chromium)
    artefacts = os.path.abspath(args.artefacts or tempfile.mkdtemp(prefix="page-test-artefacts-"))
    os.makedirs(artefacts, exist_ok=True)
    say("artefacts in %s" % artefacts)
    work = tempfile.mkdtemp(prefix="page-test-")
    started = time.monotonic()
    try:
        check(args, work, artefacts)
    except Failure as failure:
        print("page-test: FAILED: %s" % failure, file=sys.stderr)
        sys.exit(1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say("passed in %.1f s (screenshots page-A.png, page-B.png, page-C.png in %s)" % (time.monotonic() - started, artefacts))


if __name__ == "__main__":
    main()
