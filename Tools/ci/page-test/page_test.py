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
    of order and twice, undo/redo/erase/clear by order key, an own event's echo, the hello
    after a reconnection, and resending only the frames neither its echoes nor its catch-up
    brought back; signs of life keep it on a slow relay, silence makes it reconnect;
  * the page's reader of catch-up blocks (/assets/segment-reader.js, as served) alone
    in a blank page: the golden vectors (Tests/JournalStorageTests/Golden/v1, v2) decode to
    their canonical lines, 28 kinds of damage are refused for their reason, and random
    messages (integers past 2^53, every v2 coder, broken rules) decode as
    Tools/conformance/sjread does;
  * page D, in blocks against a relay the test plays: its own events back in a binary
    catch-up matched by content, caughtUp and a live event right behind a binary message
    applied after it, a damaged message refused (status) and the catch-up done again in text
    with its unacknowledged frames intact;
  * page G, in a browser without DecompressionStream, asks for text;
  * pages E (blocks) and F (text) joining a board recorded beforehand with device-like values
    (gen_session.py's float32, third and double precisions, -0.0, subnormals; three replicas):
    each holds exactly the journal's events (the digest of its fold, FORMAT.md §9.3, equals
    `journal digest`; its seqs equal `journal log`'s). E's first hello claims ranges it lacks,
    so blocks skip seqs, and it reconnects for them;
  * pages P and Q on one board: P clears while Q's stroke is in flight to it (P's incoming
    messages held); P's clear takes its place from its echo, so P, Q, a page loaded after
    and the journal (`journal strokes`) show the same strokes;
  * pages H (text) and I (blocks), a relay the test plays: Lamport clocks, wall times and
    seqs past 2^53 stay exact in event messages too (the journal's order, seqs held once);
  * pages J1 and J2, a relay the test plays: one stroke of 100,000 points in a binary catch-up,
    Lamport clocks rising with seq (J1) and falling (J2): both hold the journal's order, and
    falling costs at most 3x rising (inserting each point in place was quadratic);
  * pages W and X: presence (W's name, colour and pointer shown in X, as text, in X's view;
    gone when W leaves), and X's view: Ctrl+wheel zooms about the pointer, the wheel pans, a
    stroke drawn zoomed lands at the board's coordinates, a pinch zooms without a stroke;
  * page Y's History control on the device board: scrubbed to event counts, it shows the
    strokes and points `journal digest --at` says;
  * `journal timelapse` of the device board played in the browser: paused between events it
    shows as many strokes as `journal digest --at` says;
  * pages N1 and N2 draw as replicas of their own (native mode: an Ed25519 key each, made by
    WebCrypto and kept in IndexedDB) through a relay killed with SIGKILL while their strokes
    are in flight, three times: every point is in the journal once, under the replica that
    drew it, and `journal history` names both; on a board with membership a page whose key is
    no member becomes a viewer told its key, and once granted (as Dora) draws under that name;
    an invitation link (`journal members invite`) makes its first page a member (Erin), and
    a second page with the same link a viewer;
  * pages that play the relay in the test use text mode (#text in their address);
  * page K, opened with #token=…: the token leaves the address and history, stays in
    sessionStorage, goes in every hello; a token refusal stops the reconnecting, a
    view-only refusal makes the page a viewer;
  * pages T1-T4 against a second relay that needs tokens (when the relay has access control:
    `serve --help` lists --open): an admin token in the address draws, a view token makes
    a viewer, no token and a forged one stop with the relay's refusal;
  * each script of the page parses (`node --check`, where node is installed);
  * saves PNG screenshots of the pages into the artefact folder, and fails on any script
    error a page reported;
  * stops the relay (SIGTERM) and checks the board's journal with the real CLI
    (`journal strokes --all`): the same strokes and points, the pressures dispatched, the
    undone stroke hidden.
Exits 1 with a message on the first failure; its relay and browser are killed in every case.

Usage: page_test.py --journal-bin PATH [--chromium /usr/bin/chromium] [--artefacts DIR]
                    [--strokes 3] [--moves 12] [--random-messages 400] [--seed 1]
                    [--web-folder DIR|sources] [--wrong-count]
--web-folder serves another page and assets than the relay's to the pages (a folder laid out as
Sources/JournalServe/Web, or "sources": that folder, unbuilt): a page can be tried, or an older
one shown to fail, against the same relay binary. The relay gets `--open` when its `serve --help` lists it.
--wrong-count expects one point more than was drawn: the run must then fail (a check of the
checker).
"""
import argparse
import base64
import fcntl
import hashlib
import json
import math
import os
import queue
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from xml.etree import ElementTree
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "conformance", "sjread"))
import segments  # noqa: E402
import sjread  # noqa: E402  (the independent reader of FORMAT.md: the reference here)

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

    def __init__(self, binary, profile, log_path, page_files=None):
        # page_files: the files served for every drawing page and its assets instead of the
        # relay's (--web-folder).
        self.page_files = page_files
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
             "--disable-backgrounding-occluded-windows"]
            # A page the test serves (Fetch.fulfillRequest) has no address space of its own:
            # Chromium would take it for a public page and refuse its socket to 127.0.0.1.
            + (["--disable-features=LocalNetworkAccessChecks"] if page_files is not None else []) + ["about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log_path, "wb"),
            close_fds=False, preexec_fn=wire_pipes, start_new_session=True)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._next_id = 0
        self._replies = {}
        self._lock = threading.Condition()
        self._write_lock = threading.Lock()
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
                if message.get("method") == "Fetch.requestPaused":
                    threading.Thread(target=self._fulfil, args=(message,), daemon=True).start()
                    continue
                with self._lock:
                    if "id" in message:
                        self._replies[message["id"]] = message
                    else:
                        self.events.append((message.get("sessionId"), message.get("method"), message.get("params", {})))
                    self._lock.notify_all()

    def _send(self, method, params, session):
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = memoryview(json.dumps(message).encode() + b"\0")
        with self._write_lock:
            while data:
                data = data[os.write(self._to_browser, data):]
        return ident

    def _fulfil(self, paused):
        """On a thread of its own: answers a drawing page's request, or one of its assets, with
        --web-folder's files (its reply is never waited for)."""
        params = paused["params"]
        path = urllib.parse.urlsplit(params["request"]["url"]).path
        if path.startswith("/assets/"):
            name = path[len("/assets/"):]
        elif params.get("resourceType") == "Document" and not path.endswith("/ws"):
            name = "board.html"
        else:
            name = None
        if name not in self.page_files:
            self._send("Fetch.continueRequest", {"requestId": params["requestId"]}, paused.get("sessionId"))
            return
        kind = {"html": "text/html", "css": "text/css", "js": "text/javascript", "mjs": "text/javascript"}.get(name.rsplit(".", 1)[-1], "application/octet-stream")
        headers = [{"name": "Content-Type", "value": kind + "; charset=utf-8"}]
        self._send("Fetch.fulfillRequest", {"requestId": params["requestId"], "responseCode": 200,
                                            "responseHeaders": headers, "body": base64.b64encode(self.page_files[name]).decode()},
                   paused.get("sessionId"))

    def call(self, method, params=None, session=None, timeout=DEADLINE):
        ident = self._send(method, params, session)
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
        self.target = target
        self.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Runtime.enable")
        self.call("Page.enable")
        if browser.page_files is not None:
            self.call("Fetch.enable", {"patterns": [{"urlPattern": "http://127.0.0.1:*/boards/*", "resourceType": "Document"},
                                                    {"urlPattern": "http://127.0.0.1:*/assets/*"}]})
        if before_page_script:
            self.call("Page.addScriptToEvaluateOnNewDocument", {"source": before_page_script})
        self.call("Page.navigate", {"url": url})

    def call(self, method, params=None):
        return self.browser.call(method, params, session=self.session)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
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


def serve_options(journal):
    """`--open` when this relay has it (one that needs tokens otherwise): the test's pages
    and fake relays carry none, except page K's, which no real relay sees."""
    done = subprocess.run([journal, "serve", "--help"], capture_output=True, text=True, timeout=60)
    return ["--open"] if re.search(r"^\s*--open\b", done.stdout + done.stderr, re.M) else []


def start_relay(journal, data, log_path, open_access=True, port=0):
    log = open(log_path, "ab")
    process = subprocess.Popen([journal, "serve", "--port", str(port), "--data", data] + (serve_options(journal) if open_access else []),
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
    constructor(url) { this.url = url; this.sent = []; this.presence = []; fake.sockets.push(this); setTimeout(() => this.onopen(), 0); }
    // Presence frames are never numbered: kept apart, so the frames checked are the numbered ones.
    send(text) { if (text.startsWith('{"type":"presence"')) this.presence.push(text); else this.sent.push(text); }
    close() {}
  };
  fake.current = () => fake.sockets[fake.sockets.length - 1];
  fake.deliver = (messages) => { for (const m of messages) fake.current().onmessage({ data: JSON.stringify(m) }); };
  // Texts as given: integers past 2^53 keep their digits (JSON.stringify of a parsed value would not).
  fake.deliverText = (texts) => { for (const t of texts) fake.current().onmessage({ data: t }); };
  fake.deliverBinary = (base64) => {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    fake.current().onmessage({ data: bytes.buffer });
  };
  // A close code as the relay sends one (docs/PROTOCOL.md, "Error codes"); 1006 (no close
  // frame) when none is given.
  fake.drop = (code) => fake.current().onclose({ code: code || 1006 });
  const lineTo = CanvasRenderingContext2D.prototype.lineTo;
  CanvasRenderingContext2D.prototype.lineTo = function (x, y) { fake.lines.push([x, y]); return lineTo.call(this, x, y); };
})();
"""

R1, R2, R3 = "11" * 16, "22" * 16, "33" * 16
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


def with_fake_relay(browser, url, name, lacking=None):
    """A page whose relay the test plays (FAKE_RELAY), and the first hello it sent; with
    `lacking`, in a browser without that global (Worker: the page decodes blocks itself).
    The page draws in text mode (#text): these pages check what the relay names; native mode
    has its own check (check_native_pages)."""
    if not re.search(r"[#&]text(&|$)", url):
        url += ("&" if "#" in url else "#") + "text"
    page = Page(browser, url, name, before_page_script=FAKE_RELAY + ("window.%s = undefined;" % lacking if lacking else ""))
    end = time.monotonic() + DEADLINE
    while not page.evaluate("window.__fake && __fake.sockets.length > 0 && __fake.current().sent.length > 0"):
        if time.monotonic() > end:
            fail("page %s: no hello within %.0f s" % (name, DEADLINE))
        time.sleep(0.05)
    return page, json.loads(page.evaluate("__fake.current().sent[0]"))


def wait_for_socket(page, count, what):
    """Waits until the page's socket number `count` has opened and sent its hello. The fake
    opens a socket in a timer, so a message delivered before that would reach the page before
    it said hello, and the page would send its hello after frames it resends."""
    return page.wait_for(what, lambda s: page.evaluate("__fake.sockets.length") == count
                         and page.evaluate("__fake.current().sent.length") > 0)


def own_stroke_partly_acknowledged(page):
    """Draws a pen stroke of 3 samples (4 frames with its end), echoes the first frame as
    seq 5 of R1 (lamport 8) and acknowledges it, and drops the connection; returns the
    frames as sent."""
    page.pen("mousePressed", 400, 300, 0.25, 1)
    page.pen("mouseMoved", 420, 310, 0.5, 1)
    page.pen("mouseMoved", 440, 330, 0.75, 1)
    page.pen("mouseReleased", 440, 330, 0, 0)
    sent = page.evaluate("__fake.current().sent.slice(1)")
    kinds = [json.loads(line)["type"] for line in sent]
    if kinds != ["point", "point", "point", "end"]:
        fail("page %s sent %s for one pen stroke of 3 samples, expected 3 points and an end" % (page.name, kinds))
    pressures = [json.loads(line).get("pressure") for line in sent[:3]]
    if pressures != [0.25, 0.5, 0.75]:
        fail("page %s sent pressures %s, expected [0.25, 0.5, 0.75]" % (page.name, pressures))
    page.evaluate("__fake.deliver(%s)" % json.dumps([as_relay_sends(sent[0], R1, 5, 8), {"type": "ack", "upTo": 1}]))
    state = page.wait_for("3 frames unacknowledged", lambda s: s["unacked"] == 3)
    if state.get("provisional") != 3:
        fail("page %s after the echo of its first frame: %s, expected 3 own events with a provisional key" % (page.name, state))
    page.evaluate("__fake.drop()")
    wait_for_socket(page, 2, "a new socket")
    return sent


def resent_only_the_last_two(page, sent, strokes, points):
    """After a catch-up that brought back the first two of `sent`: live, the other two resent
    and unacknowledged, and the counts expected (own events not held twice)."""
    state = page.wait_for("live again", lambda s: s["live"])
    resent = page.evaluate("__fake.current().sent.slice(1)")
    if resent != sent[2:]:
        fail("page %s resent %s, expected only the frames the journal lacks: %s" % (page.name, resent, sent[2:]))
    if (state["strokes"], state["points"], state["unacked"]) != (strokes, points, 2):
        fail("page %s after the catch-up: %s, expected %d strokes, %d points (none twice), 2 unacked"
             % (page.name, state, strokes, points))


def check_fold_and_resending(browser, url):
    """Page C against a relay played by the test: points out of order, duplicates, visibility
    by the latest operation, the hello after a reconnection, and resending only what the
    journal lacks."""
    c, hello = with_fake_relay(browser, url, "C")
    if hello != {"type": "hello", "have": {}, "blocks": True, "echo": True, "presence": True}:
        fail("page C's first hello is %s, expected one holding nothing, asking for blocks and echo" % hello)

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

    # Own stroke: 3 samples and an end, 4 frames; the relay echoes and acknowledges only the first.
    sent = own_stroke_partly_acknowledged(c)
    again = c.evaluate("__fake.current().sent")
    want_have = {R1: [[1, 5]], R2: [[1, 4]]}
    if len(again) != 1 or json.loads(again[0]) != {"type": "hello", "have": want_have, "blocks": True, "echo": True, "presence": True}:
        fail("page C after reconnecting sent %s, expected only a hello with have %s (its echoed event included)" % (again, want_have))
    # The catch-up brings back the page's second frame (the journal holds it; its echo was
    # lost with the connection).
    deliver([as_relay_sends(sent[1], R1, 6, 9),
             {"type": "caughtUp", "events": 1, "have": {R1: [[1, 6]], R2: [[1, 4]]}}])
    resent_only_the_last_two(c, sent, 3, 7)
    signs_of_life(c, deliver, sent)
    deliver([{"type": "ack", "upTo": 2}])
    c.wait_for("everything acknowledged", lambda s: s["unacked"] == 0)
    return c


def signs_of_life(c, deliver, sent):
    """Page C with two frames waiting: a relay that repeats its last ack (docs/PROTOCOL.md,
    "Signs of life") keeps it on its socket however long they wait; one that says nothing
    for 2 s with frames waiting is left for a new socket, where they are sent again."""
    sockets = c.evaluate("__fake.sockets.length")
    # Three seconds of signs of life, four to each second the page allows.
    for _ in range(12):
        deliver([{"type": "ack", "upTo": 0}])
        time.sleep(0.25)
    if c.evaluate("__fake.sockets.length") != sockets or not c.state()["live"]:
        fail("page C left a relay that gave signs of life every 0.25 s while its frames waited")
    # Then silence: the page goes.
    wait_for_socket(c, sockets + 1, "a new socket after the relay fell silent")
    status = c.evaluate("document.getElementById('status').textContent")
    if "said nothing" not in status:
        fail("page C's status after leaving a silent relay: %r, expected it to say why" % status)
    deliver([{"type": "caughtUp", "events": 0, "have": {R1: [[1, 6]], R2: [[1, 4]]}}])
    c.wait_for("live again after the silent relay", lambda s: s["live"])
    resent = c.evaluate("__fake.current().sent.slice(1)")
    if resent != sent[2:]:
        fail("page C resent %s after leaving a silent relay, expected its two unacknowledged frames %s" % (resent, sent[2:]))


# ---- Catch-up in blocks: the page's reader of SegmentMessages, alone and in the page ----

GOLDEN = os.path.join(HERE, "..", "..", "..", "Tests", "JournalStorageTests", "Golden")

# Helpers evaluated in a page that holds the reader: a message in (base64), its events out as
# canonical fields with every double as its 64-bit pattern (hex), or the reader's refusal.
READER_HELPERS = r"""
(() => {
  const view = new DataView(new ArrayBuffer(8));
  const bits = (v) => { view.setFloat64(0, v, true); return view.getBigUint64(0, true).toString(16).padStart(16, '0'); };
  window.__bits = bits;
  window.__decode = async (base64) => {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    let message;
    try { message = await StrokeJournalSegments.decode(bytes); } catch (error) {
      return { refused: error instanceof StrokeJournalSegments.SegmentMessageError, error: String(error && error.message || error) };
    }
    return { events: StrokeJournalSegments.events(message).map((e) => ({
      type: e.type, stroke: e.stroke === undefined ? null : e.stroke, replica: e.replica,
      seq: String(e.seq), lamport: String(e.lamport), time: String(e.time),
      x: e.x === undefined ? null : bits(e.x), y: e.y === undefined ? null : bits(e.y),
      color: e.color === undefined ? null : e.color, width: e.width === undefined ? null : bits(e.width),
      pressure: e.pressure === undefined ? null : bits(e.pressure), t: e.t === undefined ? null : bits(e.t),
    })) };
  };
  window.__decodeAll = async (list) => { const out = []; for (const m of list) out.push(await window.__decode(m)); return out; };
})();
"""


def log_line(event):
    """The page reader's event (READER_HELPERS) as `journal log` prints it (via sjread); a
    field missing or malformed makes it say so instead."""
    try:
        return event_line(event)
    except (KeyError, ValueError, TypeError) as error:
        return "unprintable event %s (%r)" % (json.dumps(event), error)


def event_line(event):
    e = {"replica": bytes.fromhex(event["replica"]), "seq": int(event["seq"]), "lamport": int(event["lamport"]),
         "wall": int(event["time"]), "kind": sjread.KINDS.index(event["type"])}
    if event["stroke"] is not None:
        e["stroke"] = bytes.fromhex(event["stroke"])
    if event["type"] == "point":
        for name in ("x", "y", "width", "pressure", "t"):
            e[name] = None if event[name] is None else int(event[name], 16)
        e["color"] = int(event["color"][1:], 16)
    return sjread.log_line(e)


def reference_lines(message):
    """What sjread decodes a message to (its canonical lines), or None when it refuses it."""
    head, frames = segments.split(message)
    version = struct.unpack_from("<H", head, 8)[0]
    lines = []
    try:
        for f in frames:
            events, styles = sjread.decode_body(segments.inflate(f["body"]), head[12:28], f["first"], f["count"], version)
            sjread.validate(events, styles, f["max_lamport"])
            lines += [sjread.log_line(e) for e in events]
    except sjread.Malformed:
        return None
    return lines


def damaged_messages():
    """(name, bytes, words the refusal must hold): each check of FORMAT.md §4-§6 a reader makes."""
    a = open(os.path.join(GOLDEN, "v2", "segment-a.sjs"), "rb").read()
    head, frames = segments.split(a)
    rest = frames[1]["bytes"]
    raw = segments.inflate(frames[0]["body"])

    def patched(offset, value):  # the first block's body, one value replaced (§14.4's offsets)
        body = bytearray(raw)
        body[offset:offset + len(value)] = value
        return head + segments.reframe(frames[0], raw=bytes(body)) + rest

    return [
        ("a byte of a body flipped", segments.flip(a, 32 + 36 + 5), "checksum mismatch"),
        ("a byte of a block checksum flipped", segments.flip(a, 32 + 32), "checksum mismatch"),
        ("a byte of the header flipped", segments.flip(a, 20), "header checksum mismatch"),
        ("bad magic", b"X" + a[1:], "bad magic"),
        ("cut short by a byte", a[:-1], "cut short"),
        ("cut inside a frame header", a[:len(a) - len(rest) + 20], "cut short"),
        ("cut inside the file header", a[:20], "cut short"),
        ("3 trailing bytes", a + b"\0\0\0", "cut short"),
        ("40 trailing bytes", a + b"\0" * 40, "bad block magic"),
        ("format version 4", segments.header(head[12:28].hex(), 4) + frames[0]["bytes"] + rest, "unsupported format version 4"),
        ("no block", head, "holds no block"),
        ("a block repeated", head + frames[0]["bytes"] + frames[0]["bytes"], "expected"),
        ("blocks out of order", head + rest + frames[0]["bytes"], "expected"),
        ("input after the end of the deflate stream",
         head + segments.reframe(frames[0], body=frames[0]["body"] + b"\0\1") + rest, "does not inflate"),
        ("a deflate stream cut short", head + segments.reframe(frames[0], body=frames[0]["body"][:-3]) + rest, "does not inflate"),
        ("inflates to more than its raw length",
         head + segments.reframe(frames[0], raw_length=frames[0]["raw_length"] - 1) + rest, "does not inflate"),
        ("inflates to less than its raw length",
         head + segments.reframe(frames[0], raw_length=frames[0]["raw_length"] + 1) + rest, "does not inflate"),
        ("a byte after the last column", head + segments.reframe(frames[0], raw=raw + b"\0") + rest, "unexpected bytes"),
        ("maxLamport not the events' largest clock",
         head + segments.reframe(frames[0], max_lamport=frames[0]["max_lamport"] + 1) + rest, "max lamport"),
        ("an event count the body does not hold", head + segments.reframe(frames[0], count=frames[0]["count"] - 1) + rest, "malformed"),
        ("a NaN exception for x", patched(107, struct.pack("<d", float("nan"))), "finite"),
        ("an infinite exception for y", patched(137, struct.pack("<d", float("inf"))), "finite"),
        ("a negative width", patched(38, struct.pack("<d", -1.0)), "width"),
        ("an unknown event kind", patched(58, b"\x06"), "unknown event kind"),
        ("an unknown real-column grid", patched(103, b"\x0a"), "grid"),
        ("a stroke reference past the table", patched(87, b"\x04"), "reference"),
        ("raw length past the bound", head + segments.frame(frames[0]["body"], (8 << 20) + 1, 7, 1, 14) + rest, "bounds"),
        ("first seq 0", head + segments.frame(frames[0]["body"], frames[0]["raw_length"], 7, 0, 14) + rest, "bounds"),
    ]


def served_file(port, path):
    """A file of the drawing page as the pages get it: the relay's, or --web-folder's."""
    if PAGE_FILES[0] is not None:
        name = "board.html" if path.startswith("/boards/") else path.rsplit("/", 1)[-1]
        if name not in PAGE_FILES[0]:
            fail("--web-folder has no %s" % name)
        return PAGE_FILES[0][name].decode()
    return urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=DEADLINE).read().decode()


def served_page(port):
    """The drawing page (its HTML) as the pages get it."""
    return served_file(port, "/boards/reader")


# --web-folder's files by name (None: the relay's own), set by main().
PAGE_FILES = [None]


def web_folder_files(folder):
    """Every file of a folder laid out as Sources/JournalServe/Web: to try a page without
    building the relay."""
    return {name: open(os.path.join(folder, name), "rb").read() for name in os.listdir(folder)
            if os.path.isfile(os.path.join(folder, name))}


def page_scripts(port):
    """(name, text) of every script the page runs: its own, those they load by address
    (`src=`, `new Worker`, `importScripts`, a module's `import … from './x.mjs'`), once each."""
    seen, scripts = set(), []
    html = served_page(port)
    pending = re.findall(r'<script[^>]*\ssrc="(/assets/[^"]+)"', html)
    for index, inline in enumerate(re.findall(r"<script>(.*?)</script>", html, re.S)):
        scripts.append(("inline-%d.js" % index, inline))
    while pending:
        path = pending.pop(0)
        if path in seen:
            continue
        seen.add(path)
        text = served_file(port, path)
        scripts.append((path.rsplit("/", 1)[-1], text))
        pending += re.findall(r"(?:new Worker|importScripts)\('(/assets/[^']+)'\)", text)
        pending += ["/assets/" + name for name in re.findall(r"^import [^;]* from '\./([^']+)';$", text, re.M)]
    return scripts


def check_scripts_parse(port):
    """Each script of the page, as served, parses (`node --check`), where node is installed."""
    node = shutil.which("node")
    if not node:
        say("no node: the page's scripts are not checked apart")
        return
    scripts = page_scripts(port)
    folder = tempfile.mkdtemp(prefix="page-test-scripts-")
    try:
        for name, script in scripts:
            path = os.path.join(folder, name)
            with open(path, "w") as out:
                out.write(script)
            done = subprocess.run([node, "--check", path], capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                fail("%s of the page does not parse (node --check): %s" % (name, done.stderr.strip()[:400]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    say("the page's %d scripts parse (node --check): %s" % (len(scripts), ", ".join(name for name, _ in scripts)))


def reader_source(port):
    """The reader exactly as the relay serves it."""
    return served_file(port, "/assets/segment-reader.js")


def check_reader(browser, port, args):
    """The reader alone, in a blank page: (a) the golden vectors decode to their canonical
    lines; (b) every kind of damage is refused as such; and random messages (integers past
    2^53, wrapping sums, every v2 coder, broken rules) decode as sjread decodes them."""
    r = Page(browser, "about:blank", "R")
    r.evaluate(reader_source(port))
    r.evaluate(READER_HELPERS)
    encode = lambda data: base64.b64encode(data).decode()
    decode_all = lambda messages: r.evaluate("__decodeAll(%s)" % json.dumps([encode(m) for m in messages]))

    golden = []
    for version in ("v1", "v2", "v6"):  # v6: range-coded streams (FORMAT.md §18)
        folder = os.path.join(GOLDEN, version)
        for name in sorted(n for n in os.listdir(folder) if n.endswith(".sjs")):
            expected = open(os.path.join(folder, name[:-4] + ".expected.ndjson")).read().splitlines()
            golden.append(("%s/%s" % (version, name), open(os.path.join(folder, name), "rb").read(), expected))
    if len(golden) < 3:
        fail("expected at least 3 golden vectors under %s, found %d" % (GOLDEN, len(golden)))
    for (name, _, expected), result in zip(golden, decode_all([g[1] for g in golden])):
        if "events" not in result:
            fail("the page's reader refused golden vector %s: %s" % (name, result.get("error")))
        got = [log_line(e) for e in result["events"]]
        if got != expected:
            first = next(i for i in range(max(len(got), len(expected))) if got[i:i + 1] != expected[i:i + 1])
            fail("golden vector %s: line %d decodes to %s, expected %s" % (name, first + 1, got[first:first + 1], expected[first:first + 1]))
    say("the page's reader decodes the %d golden vectors (%s) to their canonical lines" % (len(golden), ", ".join(g[0] for g in golden)))

    damaged = damaged_messages()
    for (name, data, words), result in zip(damaged, decode_all([d[1] for d in damaged])):
        if "events" in result:
            fail("the page's reader took a message with %s (%d events)" % (name, len(result["events"])))
        if not result["refused"] or words not in result["error"]:
            fail("the page's reader refused a message with %s by %r, expected a SegmentMessageError saying %r"
                 % (name, result["error"], words))
    say("the page's reader refuses %d kinds of damaged messages, each for its reason" % len(damaged))

    rng = random.Random(args.seed)
    generated = [segments.random_message(rng)[1] for _ in range(args.random_messages)]
    agreed = accepted = 0
    for index in range(0, len(generated), 100):
        for message, result in zip(generated[index:index + 100], decode_all(generated[index:index + 100])):
            want = reference_lines(message)
            got = [log_line(e) for e in result["events"]] if "events" in result else None
            if "events" not in result and not result["refused"]:
                fail("the page's reader failed on a random message with %r, not a SegmentMessageError (seed %d)" % (result["error"], args.seed))
            if got != want:
                fail("random message (seed %d, %s): sjread says %s, the page's reader %s"
                     % (args.seed, encode(message)[:80], want[:2] if want else "refused", got[:2] if got else result.get("error")))
            agreed += 1
            accepted += want is not None
    say("the page's reader agrees with sjread on %d random messages (%d accepted, %d refused; seed %d)"
        % (agreed, accepted, agreed - accepted, args.seed))
    return r


def check_text_without_decompression(browser, url):
    """Page G, in a browser without DecompressionStream: it cannot read blocks, so it asks
    for none and catches up in text as before."""
    g, hello = with_fake_relay(browser, url, "G", lacking="DecompressionStream")
    if hello != {"type": "hello", "have": {}, "echo": True, "presence": True}:
        fail("page G, without DecompressionStream, said %s, expected a hello without blocks" % hello)
    g.evaluate("__fake.deliver(%s)" % json.dumps([event("point", R1, 1, 1, STROKE_S, x=10, y=50),
                                                 {"type": "caughtUp", "events": 1, "have": {}}]))
    state = g.wait_for("live with a point", lambda s: s["live"] and s["points"] == 1)
    if state["blocks"] or state["decoder"] != "none":
        fail("page G, without DecompressionStream: %s, expected blocks off and no decoder" % state)
    return g


def own_echo(line, replica, seq, lamport):
    """The event the relay's journal holds for a line the page sent, as a block decodes it."""
    message = json.loads(line)
    message.update({"replica": replica, "seq": seq, "lamport": lamport, "time": 1700000000000 + lamport})
    return message


def check_crowded_hello(browser, url):
    """Page L holds events of 3,000 replicas (a hello naming them all is longer than the
    relay's 64 KiB frame limit, and a relay refused it on every reconnection): after a
    reconnection its hello fits, names the replica it holds most of exactly, and still asks
    for echo."""
    l, hello = with_fake_relay(browser, url, "L")
    crowd = [event("end", "%032x" % (0xC0DE0000 + n), 1, 1, "%032x" % (n + 1)) for n in range(3000)]
    big = [event("end", R1, seq, seq, "%032x" % (0xB16 + seq)) for seq in range(1, 201)]
    l.evaluate("__fake.deliver(%s)" % json.dumps(crowd + big + [{"type": "caughtUp", "events": 3200, "have": {}}]))
    l.wait_for("live holding 3,200 events", lambda s: s["live"])
    l.evaluate("__fake.drop()")
    wait_for_socket(l, 2, "a new socket")
    text = l.evaluate("__fake.current().sent[0]")
    hello = json.loads(text)
    if len(text.encode()) > 65536:
        fail("page L's hello is %d bytes, over the relay's 65,536" % len(text.encode()))
    if hello["have"].get(R1) != [[1, 200]] or not hello.get("echo") or len(hello["have"]) < 1000:
        fail("page L's crowded hello names %d replicas, R1 as %s, echo %s: expected R1's 200 seqs exactly among >1000 replicas"
             % (len(hello["have"]), hello["have"].get(R1), hello.get("echo")))
    return l, len(hello["have"])


def check_blocks_fold(browser, url):
    """Page D against a relay played by the test, in blocks: its own events back in a binary
    catch-up are matched by content and not resent; caughtUp and a live event sent right
    behind a binary message wait for it; a damaged message is refused, shown, and the page
    catches up in text with its unacknowledged frames intact."""
    d, hello = with_fake_relay(browser, url, "D", lacking="Worker")
    if hello != {"type": "hello", "have": {}, "blocks": True, "echo": True, "presence": True}:
        fail("page D's first hello is %s, expected one asking for blocks and echo" % hello)
    stroke_s = STROKE_S.replace("-", "").lower()
    first = [dict(event("point", R1, seq, seq, stroke_s, x=10.0 * seq, y=-0.0 if seq == 2 else 50.5), pressure=seq / 8)
             for seq in (1, 2, 3)] + [dict(event("end", R1, 4, 4, stroke_s))]
    d.evaluate("__fake.deliverBinary(%s)" % json.dumps(base64.b64encode(segments.message_v1(R1, [first])).decode()))
    d.evaluate("__fake.deliver([{type: 'caughtUp', events: 4, have: {}}])")
    state = d.wait_for("live with 1 stroke and 3 points", lambda s: s["live"] and (s["strokes"], s["points"]) == (1, 3))
    if state["decoder"] != "page":
        fail("page D, without Worker, decodes blocks in %r, expected the page itself" % state["decoder"])

    sent = own_stroke_partly_acknowledged(d)
    hello = json.loads(d.evaluate("__fake.current().sent[0]"))
    if hello != {"type": "hello", "have": {R1: [[1, 5]]}, "blocks": True, "echo": True, "presence": True}:
        fail("page D after reconnecting said %s, expected the seqs it holds (its echoed event's too) and blocks" % hello)
    # Its second frame comes back in a block (seq 6; 7 is another page's), then caughtUp and
    # a live event at once: the page must apply them after the block.
    echoed = [own_echo(sent[1], R1, 6, 9)]
    other = dict(event("point", R1, 7, 10, stroke_s, x=90.0, y=60.25))
    live = dict(event("point", R2, 1, 11, stroke_s, x=95.0, y=61.0))
    d.evaluate("__fake.deliverBinary(%s); __fake.deliver(%s)" % (
        json.dumps(base64.b64encode(segments.message_v1(R1, [echoed + [other]])).decode()),
        json.dumps([{"type": "caughtUp", "events": 3, "have": {R1: [[1, 7]]}}, live])))
    resent_only_the_last_two(d, sent, 2, 8)

    # Seqs and clocks past 2^53 (BigInts in the page): held and named exactly, points after
    # every other by their clocks. Then a damaged message: refused whole, said in the status,
    # then text; nothing of it drawn.
    d.evaluate("__fake.drop()")
    wait_for_socket(d, 3, "a third socket")
    huge = [dict(event("point", R3, (1 << 53) + n, 0, stroke_s, x=100.0 + n, y=80.0), lamport=(1 << 60) + n, time=1 << 62)
            for n in (1, 2, 3)]
    d.evaluate("__fake.deliverBinary(%s)" % json.dumps(base64.b64encode(segments.message_v1(R3, [huge])).decode()))
    more = [dict(event("point", R1, 8, 12, stroke_s, x=99.0, y=70.0))]
    damaged = segments.flip(segments.message_v1(R1, [more]), 32 + 36 + 3)
    d.evaluate("__fake.deliverBinary(%s)" % json.dumps(base64.b64encode(damaged).decode()))
    state = wait_for_socket(d, 4, "a fourth socket after the refusal")
    if "refused" not in state["status"] or "checksum" not in state["status"]:
        fail("page D's status after a damaged message is %r, expected the refusal and its reason" % state["status"])
    if (state["points"], state["unacked"], state["blocks"]) != (11, 2, False):
        fail("page D after a damaged message: %s, expected 11 points, 2 unacked, blocks off" % state)
    hello = json.loads(d.evaluate("__fake.current().sent[0]"))
    want = {R1: [[1, 7]], R2: [[1, 1]], R3: [[(1 << 53) + 1, (1 << 53) + 3]]}
    if hello != {"type": "hello", "have": want, "echo": True, "presence": True}:
        fail("page D after a refused message said %s, expected its seqs, exactly, and no blocks (text)" % hello)
    d.evaluate("__fake.deliver(%s)" % json.dumps([more[0], {"type": "caughtUp", "events": 1, "have": {}}]))
    state = d.wait_for("live in text", lambda s: s["live"] and s["points"] == 12)
    xs = [p[0] for p in d.evaluate(FOLD_DUMP)["strokes"][0]["points"]]
    if [struct.unpack("<d", bytes.fromhex(x)[::-1])[0] for x in xs[-4:]] != [99.0, 101.0, 102.0, 103.0]:
        fail("page D's stroke S ends with x %s, expected the points of clocks past 2^60 last" % xs[-4:])
    if d.evaluate("__fake.current().sent.slice(1)") != sent[2:]:
        fail("page D after the text catch-up did not resend exactly its 2 unacknowledged frames")
    return d


def exact_events():
    """Events whose order keys differ only past 2^53, per replica in seq order, and the x
    order of each stroke's points in the journal's fold (FORMAT.md §7.3). JSON.parse rounds
    these integers to equal Numbers: a page that keeps them so ties what the journal orders
    (by seq instead) and takes seqs 2^53 and 2^53 + 1 for one event."""
    lamport, wall = 1 << 60, 1 << 62
    strokes = {name: (name * 16).lower() for name in ("E1", "E2", "E3", "E4")}

    def point(stroke, replica, seq, lamport, time, x):
        return {"type": "point", "stroke": strokes[stroke], "x": x, "y": 40.0 + x, "color": "#E53935FF", "width": 3.0,
                "replica": replica, "seq": seq, "lamport": lamport, "time": time}
    r3 = [point("E1", R3, 1, lamport + 1, wall, 1.0),        # Lamport clocks past 2^53: 2 before 1
          point("E1", R3, 2, lamport, wall, 2.0),
          point("E2", R3, 3, lamport + 2, wall + 1, 3.0),    # equal clocks, wall times past 2^53: 4 before 3
          point("E2", R3, 4, lamport + 2, wall, 4.0),
          point("E3", R3, 5, lamport + 3, -wall, 5.0),       # negative wall times past -2^53: 6 before 5
          point("E3", R3, 6, lamport + 3, -wall - 1, 6.0)]
    r2 = [point("E4", R2, 1 << 53, 7, 1700000000000, 7.0),   # two seqs that round to one Number
          point("E4", R2, (1 << 53) + 1, 8, 1700000000001, 8.0)]
    order = {strokes["E1"]: [2.0, 1.0], strokes["E2"]: [4.0, 3.0], strokes["E3"]: [6.0, 5.0], strokes["E4"]: [7.0, 8.0]}
    held = {R2: [[str(1 << 53), str((1 << 53) + 1)]], R3: [["1", "6"]]}
    return r3, r2, order, held


def check_exact_integers(browser, url):
    """Pages H (event messages, in text) and I (the same events in blocks) against a relay the
    test plays: clocks, wall times and seqs past 2^53 are kept exact in both, so both fold the
    events as the journal does (points in order-key order, every seq held once) and H's hello
    after a reconnection names exactly what it holds."""
    r3, r2, order, held = exact_events()
    h, _ = with_fake_relay(browser, url + "-text", "H")
    # Exactly the relay's layout: compact, the envelope last.
    lines = [json.dumps(e, separators=(",", ":")) for e in r3 + r2]
    h.evaluate("__fake.deliverText(%s)" % json.dumps(lines + ['{"type":"caughtUp","events":8,"have":{}}']))
    i, _ = with_fake_relay(browser, url + "-blocks", "I")
    i.evaluate("__fake.deliverBinary(%s); __fake.deliverBinary(%s); __fake.deliver([{type: 'caughtUp', events: 8, have: {}}])" % (
        json.dumps(base64.b64encode(segments.message_v1(R3, [r3])).decode()),
        json.dumps(base64.b64encode(segments.message_v1(R2, [r2])).decode())))
    folds = {}
    for page in (h, i):
        page.wait_for("live", lambda s: s["live"])
        fold = page.evaluate("(() => { const f = window.strokeJournalFold(); return { held: f.held, strokes: f.strokes.map((s) => ({ id: s.id, xs: s.points.map((p) => p.x) })) }; })()")
        got = {stroke["id"]: stroke["xs"] for stroke in fold["strokes"]}
        if got != order or fold["held"] != held:
            fail("page %s (%s) folds the events with clocks, times and seqs past 2^53 to points %s and holds %s; the journal's order: %s, seqs %s"
                 % (page.name, "text" if page is h else "blocks", got, fold["held"], order, held))
        folds[page.name] = page.evaluate(FOLD_DUMP)
    if folds["H"] != folds["I"]:
        fail("page H (text) and page I (blocks) fold the same events differently: %s / %s" % (folds["H"], folds["I"]))
    # A relay's error right behind a block, then its close, all before the block is decoded:
    # the page says the error's words, not only the close code (the close waits for them).
    i.evaluate("__fake.deliverBinary(%s); __fake.deliver(%s); __fake.drop(4429)" % (
        json.dumps(base64.b64encode(segments.message_v1(R3, [r3])).decode()),
        json.dumps([{"type": "error", "code": "at-capacity", "message": "the relay serves 7 connections, its limit"}])))
    i.wait_for("the error behind a block said in the status", lambda s: "serves 7 connections" in s["status"])
    h.evaluate("__fake.drop()")
    wait_for_socket(h, 2, "a new socket")
    hello = json.loads(h.evaluate("__fake.current().sent[0]"))
    want = {R2: [[1 << 53, (1 << 53) + 1]], R3: [[1, 6]]}
    if hello.get("have") != want:
        fail("page H after reconnecting names %s, expected exactly %s" % (hello.get("have"), want))
    return h, i


# One stroke of `n` points from one replica, seqs 1..n, in a binary catch-up (blocks of 1,000
# events) and a caughtUp. Falling: Lamport clocks fall as seqs rise. A point's x is its clock,
# so the journal's order (order key ascending) is x ascending either way.
def clock_order_events(n, falling, stroke):
    return [event("point", R1, seq, n + 1 - seq if falling else seq, stroke, x=float(n + 1 - seq if falling else seq), y=50.0)
            for seq in range(1, n + 1)]


def check_clock_order(browser, url, n=100000):
    """Pages J1 (clocks rising with seq) and J2 (falling) each catch up on one stroke of `n`
    points: both hold the points in the journal's order (order key ascending), and falling
    clocks cost the page at most 3x what rising ones do, from the binary message to caughtUp
    plus reading the fold (a stroke whose clocks fell inserted every point at index 0:
    quadratic, a 100,000-point board froze the page for 15-25 s; at 30,000 points V8's
    splice hid it: 0.9x)."""
    ms = {}
    for name, falling in (("J1", False), ("J2", True)):
        stroke = "cc" * 15 + ("f1" if falling else "a1")
        events = clock_order_events(n, falling, stroke)
        message = segments.message_v1(R1, [events[i:i + 1000] for i in range(0, n, 1000)])
        page, _ = with_fake_relay(browser, url + ("-falling" if falling else "-rising"), name)
        page.evaluate("window.__started = performance.now(); __fake.deliverBinary(%s); __fake.deliver([{type: 'caughtUp', events: %d, have: {}}])"
                      % (json.dumps(base64.b64encode(message).decode()), n))
        page.wait_for("live with %d points" % n, lambda s: s["live"] and s["points"] == n)
        got = page.evaluate("""(() => {
          const caughtUp = window.strokeJournalState().timing.caughtUp - window.__started;
          const started = performance.now();
          const fold = window.strokeJournalFold();
          const read = performance.now() - started;
          const s = fold.strokes.find((s) => s.id === %s);
          return { ms: caughtUp + read, caughtUp: caughtUp, read: read, xs: s ? s.points.map((p) => p.x) : null };
        })()""" % json.dumps(stroke))
        if got["xs"] != [float(x) for x in range(1, n + 1)]:
            xs = got["xs"]
            fail("page %s (clocks %s) holds %s points %s..., expected x 1..%d (the order key ascending)"
                 % (name, "falling" if falling else "rising", None if xs is None else len(xs), None if xs is None else xs[:5], n))
        ms[falling] = got["ms"]
        say("page %s: %d points with %s clocks: caught up in %.0f ms, fold read in %.0f ms"
            % (name, n, "falling" if falling else "rising", got["caughtUp"], got["read"]))
    say("pages J1/J2: one stroke of %d points takes %.0f ms with rising clocks, %.0f ms with falling (%.1fx)"
        % (n, ms[False], ms[True], ms[True] / max(ms[False], 1e-3)))
    if ms[True] > 3 * max(ms[False], 1.0):
        fail("a stroke of %d points with falling clocks takes the page %.0f ms, %.1fx the %.0f ms of rising clocks (at most 3x)"
             % (n, ms[True], ms[True] / max(ms[False], 1e-3), ms[False]))
    return ms

TOKEN = "sjt1.0123456789abcdef.draw.token-check.+x/y=="   # any opaque text; '+' must stay '+'


def check_token(browser, port):
    """Page K, opened as /boards/token-check#token=…, against a relay the test plays: the
    token leaves the address at once (and the tab's history), stays in sessionStorage, and
    goes in every hello (after a reconnection, after a reload); the page sends no referrer; a
    connection error whose code refuses the token stops the reconnecting (others do not, a
    board named in words "token" that fails for now included); a frame refused
    as view-only makes the page a viewer: tools disabled, nothing more sent, "view only"."""
    base = "http://127.0.0.1:%d/boards/token-check" % port
    k, hello = with_fake_relay(browser, base + "#token=" + urllib.parse.quote(TOKEN, safe="") + "&keep=1&text", "K")

    def check_hello(hello, when):
        if hello.get("token") != TOKEN:
            fail("page K's hello %s: %s, expected the token %r" % (when, hello, TOKEN))

    def check_address(when):
        address = k.evaluate("location.href")
        entries = [e["url"] for e in k.call("Page.getNavigationHistory")["entries"]]
        if address != base + "#keep=1&text" or any("token=" in url for url in entries):
            fail("page K %s: its address is %s and its history %s, expected %s#keep=1&text and no token in either"
                 % (when, address, entries, base))
        stored = k.evaluate("sessionStorage.getItem('strokejournal.token.token-check')")
        if stored != TOKEN:
            fail("page K %s keeps %r in sessionStorage, expected the token" % (when, stored))

    check_hello(hello, "when it opened")
    check_address("after it opened")
    if k.evaluate("(document.querySelector('meta[name=referrer]') || {}).content") != "no-referrer":
        fail("the drawing page has no <meta name=\"referrer\" content=\"no-referrer\">")
    k.evaluate("__fake.deliver([{type: 'caughtUp', events: 0, have: {}}])")
    k.wait_for("live", lambda s: s["live"] and s.get("token"))
    k.evaluate("__fake.drop()")
    wait_for_socket(k, 2, "a second socket")
    check_hello(json.loads(k.evaluate("__fake.current().sent[0]")), "after a reconnection")

    # View only: every frame is refused as such.
    k.evaluate("__fake.deliver([{type: 'caughtUp', events: 0, have: {}}])")
    k.wait_for("live again", lambda s: s["live"])
    k.pen("mousePressed", 300, 200, 0.25, 1)
    k.pen("mouseMoved", 320, 210, 0.5, 1)
    k.pen("mouseReleased", 320, 210, 0, 0)
    frames = k.evaluate("__fake.current().sent.length - 1")
    if frames != 3:
        fail("page K sent %d frames for a stroke of 2 samples, expected 3" % frames)
    refusal = "frame %d not recorded: this connection may only view board token-check (its token's scope is view); drawing needs a token of scope draw"
    k.evaluate("__fake.deliver([{type: 'error', frame: 1, code: 'view-only', message: %s}])" % json.dumps(refusal % 1))
    state = k.wait_for("view only", lambda s: s.get("viewOnly"))
    disabled = k.evaluate("['color', 'width', 'undo', 'redo', 'eraser', 'clear'].map((id) => document.getElementById(id).disabled)")
    if "view only" not in state["status"] or disabled != [True] * 6:
        fail("page K after a frame refused as view-only: status %r, tools disabled %s; expected \"view only\" and all six disabled"
             % (state["status"], disabled))
    k.evaluate("__fake.deliver(%s)" % json.dumps([{"type": "error", "frame": n, "code": "view-only", "message": refusal % n} for n in (2, 3)]))
    k.pen("mousePressed", 400, 200, 0.25, 1)
    k.pen("mouseMoved", 420, 210, 0.5, 1)
    k.pen("mouseReleased", 420, 210, 0, 0)
    k.evaluate("document.getElementById('clear').click()")
    time.sleep(0.3)
    state = k.state()
    if (state["points"], state["unacked"], k.evaluate("__fake.current().sent.length - 1")) != (0, 0, 3):
        fail("page K, view only, drew or sent more: %s, %d frames sent; expected nothing drawn, nothing more sent"
             % (state, k.evaluate("__fake.current().sent.length - 1")))
    if "view only" not in k.wait_for("the refusal's report gone", lambda s: "refused" not in s["status"] and "not recorded" not in s["status"])["status"]:
        fail("page K's status no longer says view only: %r" % k.state()["status"])

    # A reload: the token from sessionStorage, the address still without it.
    k.call("Page.reload", {"ignoreCache": True})
    end = time.monotonic() + DEADLINE
    while not k.evaluate("!!window.__fake && __fake.sockets.length > 0 && __fake.current().sent.length > 0"):
        if time.monotonic() > end:
            fail("page K: no hello within %.0f s of a reload" % DEADLINE)
        time.sleep(0.05)
    check_hello(json.loads(k.evaluate("__fake.current().sent[0]")), "after a reload")
    check_address("after a reload")

    # The code decides, never the words. A connection error of a relay going away: the page
    # reconnects.
    k.evaluate("__fake.deliver([{type: 'error', code: 'unavailable', message: 'the relay is shutting down'}]); __fake.drop(4503)")
    wait_for_socket(k, 2, "a socket after an error that is not the token's")
    # A board named `token` that cannot be opened for now: the words say "token", the code
    # says later; the page reconnects.
    said = "board token could not be read or written on this relay (its operator's log says why); connect again later"
    k.evaluate("__fake.deliver([{type: 'error', code: 'unavailable', message: %s}]); __fake.drop(4503)" % json.dumps(said))
    wait_for_socket(k, 3, "a socket after a transient refusal that names a board token")
    # The close code alone (its error message lost on the way): 4503 is tried again.
    k.evaluate("__fake.drop(4503)")
    wait_for_socket(k, 4, "a socket after a close with code 4503 and no message")
    # About the token (`unauthorized`): it stops, and says so.
    said = "token 0123456789abcdef has expired: ask for a new one"
    k.evaluate("__fake.deliver([{type: 'error', code: 'unauthorized', message: %s}]); __fake.drop(4401)" % json.dumps(said))
    time.sleep(2.0)
    state = k.state()
    sockets = k.evaluate("__fake.sockets.length")
    if sockets != 4 or not state.get("stopped") or said not in state["status"] or "not reconnecting" not in state["status"]:
        fail("page K after the relay refused its token: %d sockets, state %s; expected no new socket and the status saying why and that it stopped"
             % (sockets, state))
    return k


def mint_token(journal, data, board, scope):
    done = subprocess.run([journal, "token", "--data", data, "--board", board, "--scope", scope, "--ttl", "1h", "--json"],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        fail("journal token --scope %s exited %d: %s" % (scope, done.returncode, done.stderr.strip()))
    return json.loads(done.stdout)["token"]


def check_tokens_with_relay(chromium, journal, work, artefacts):
    """Against a relay that needs tokens (no --open), when this one has them: page T1 with an
    admin token in its address creates the board and draws (echoes included); T2 with a view
    token shows the board and is a viewer from its catch-up on (tools off, a stroke draws nothing); T3 without a token and T4 with a
    forged one show the relay's refusal and stop. Skipped (None) for a relay without access
    control. Its pages live in a browser of their own, stopped before the relay is: a graceful
    stop waits for every connection, a browser's idle keep-alive one too."""
    if not serve_options(journal):
        say("this relay has no access control (no serve --open): the pages' tokens are not checked against it")
        return None
    data = os.path.join(work, "guarded")
    os.makedirs(data)
    admin, view = mint_token(journal, data, "guarded", "admin"), mint_token(journal, data, "guarded", "view")
    relay, port = start_relay(journal, data, os.path.join(artefacts, "relay-guarded.log"), open_access=False)
    pages = []
    browser = None
    try:
        profile = os.path.join(work, "profile-guarded")
        os.makedirs(profile)
        browser = Browser(chromium, profile, os.path.join(artefacts, "chromium-guarded.log"), page_files=PAGE_FILES[0])
        url = "http://127.0.0.1:%d/boards/guarded" % port
        t1 = Page(browser, url + "#token=" + urllib.parse.quote(admin, safe=""), "T1")
        pages.append(t1)
        t1.wait_for("live with its token", lambda s: s["live"] and s.get("token"))
        pen_stroke(t1, 200, 300)
        t1.wait_for("its stroke echoed and acknowledged", lambda s: (s["strokes"], s["unacked"], s.get("provisional")) == (1, 0, 0))
        t2 = Page(browser, url + "#token=" + urllib.parse.quote(view, safe=""), "T2")
        pages.append(t2)
        # Told at its catch-up (before drawing anything) that it may only view: its tools are off.
        t2.wait_for("live with the board, view only at once", lambda s: s["live"] and s["strokes"] == 1 and s.get("viewOnly"))
        if not t2.evaluate("['color', 'width', 'undo', 'redo', 'eraser', 'clear'].every((id) => document.getElementById(id).disabled)"
                           " && Array.from(document.querySelectorAll('.swatch')).every((b) => b.disabled)"):
            fail("page T2 with a view token keeps drawing tools enabled after its catch-up")
        pen_stroke(t2, 400, 300)
        state = t2.wait_for("view only, its stroke never drawn", lambda s: s.get("viewOnly") and s["points"] == 4 and s["unacked"] == 0)
        if "view only" not in state["status"]:
            fail("page T2 with a view token: status %r, expected it to say view only" % state["status"])
        for name, suffix, words in (("T3", "", "needs a token"), ("T4", "#token=sjt1.forged", "token")):
            page = Page(browser, url + suffix, name)
            pages.append(page)
            state = page.wait_for("stopped", lambda s: s.get("stopped"))
            time.sleep(1.0)
            state = page.state()
            if words not in state["status"] or "not reconnecting" not in state["status"] or state["live"]:
                fail("page %s (%s): %s, expected the relay's refusal (%r) and no reconnecting" % (name, suffix or "no token", state, words))
            # Refused for good: nothing drawn would reach anyone, so the tools are off.
            disabled = page.evaluate("['color', 'width', 'undo', 'redo', 'eraser', 'clear'].map((id) => document.getElementById(id).disabled)")
            if disabled != [True] * 6:
                fail("page %s, refused for good, keeps tools enabled: %s" % (name, disabled))
        t1.wait_for("still 1 stroke, nothing of T2's", lambda s: (s["strokes"], s["points"]) == (1, 4))
        for page in pages:
            page.screenshot(os.path.join(artefacts, "page-%s.png" % page.name))
        errors = script_errors(browser)
        if errors:
            fail("a page of the relay that needs tokens reported script errors: %s" % errors[:3])
    finally:
        if browser:
            browser.stop()
        code = stop_relay(relay)
    if code != 0:
        fail("the relay that needs tokens exited %s on SIGTERM (log: %s)" % (code, os.path.join(artefacts, "relay-guarded.log")))
    return [page.name for page in pages]


# Holds a page's incoming messages while __hold.on (the test's way of keeping another page's
# event in flight to it); release() hands them over in order.
HOLD_INBOUND = r"""
(() => {
  const Native = window.WebSocket;
  const hold = { on: false, queue: [] };
  window.__hold = hold;
  window.WebSocket = class extends Native {
    set onmessage(handler) {
      super.onmessage = (event) => { if (hold.on) hold.queue.push([handler, event]); else handler(event); };
    }
    get onmessage() { return super.onmessage; }
  };
  hold.release = () => {
    hold.on = false;
    const queue = hold.queue;
    hold.queue = [];
    for (const [handler, event] of queue) handler(event);
  };
  hold.held = () => hold.queue.map(([, event]) => typeof event.data === 'string' ? event.data : '(binary)');
})();
"""


def pen_stroke(page, x, y, samples=4):
    page.pen("mousePressed", x, y, 0.3, 1)
    for n in range(1, samples):
        page.pen("mouseMoved", x + 12 * n, y + 7 * n, 0.3 + 0.1 * n, 1)
    page.pen("mouseReleased", x + 12 * (samples - 1), y + 7 * (samples - 1), 0, 0)


def visible_ids(page):
    return sorted(s["id"] for s in page.evaluate("window.strokeJournalFold().strokes") if s["visible"])


def check_clear_race(browser, port):
    """Pages P and Q on a board of the real relay. Q draws S0; then Q draws S1 while it is in
    flight to P (P's incoming messages held), and P clears: the relay records S1, then the
    clear, which hides both. P drew its clear at once; when S1 and its clear's echo reach it,
    it must hide S1 as the journal does. Q draws S2 after. P, Q and a page loaded afterwards
    (R) show the same strokes: S2 only. Returns the ids, for the journal's check."""
    url = "http://127.0.0.1:%d/boards/clear-race" % port
    p, q = Page(browser, url, "P", before_page_script=HOLD_INBOUND), Page(browser, url, "Q")
    for page in (p, q):
        page.wait_for("live on an empty board", lambda s: s["live"] and s["strokes"] == 0)
    pen_stroke(q, 150, 150)
    q.wait_for("S0 acknowledged", lambda s: s["unacked"] == 0 and s["strokes"] == 1)
    p.wait_for("S0", lambda s: s["strokes"] == 1 and s["visibleStrokes"] == 1)
    p.evaluate("__hold.on = true")
    pen_stroke(q, 300, 150)
    q.wait_for("S1 acknowledged", lambda s: s["unacked"] == 0 and s["strokes"] == 2)
    p.evaluate("document.getElementById('clear').click()")
    end = time.monotonic() + DEADLINE
    while not any(m.startswith('{"type":"ack"') for m in p.evaluate("__hold.held()")):
        if time.monotonic() > end:
            fail("page P: no ack of its clear within %.0f s (held: %s)" % (DEADLINE, p.evaluate("__hold.held()")[:4]))
        time.sleep(0.05)
    p.evaluate("__hold.release()")
    pen_stroke(q, 450, 150)
    settled = lambda s: s["live"] and s["unacked"] == 0 and s["strokes"] == 3
    p.wait_for("S1, S2 and everything acknowledged", settled)
    q.wait_for("S2 and everything acknowledged", settled)
    r = Page(browser, url, "R")
    r.wait_for("the board", settled)
    ids = {page.name: visible_ids(page) for page in (p, q, r)}
    s2 = [s["id"] for s in r.evaluate("window.strokeJournalFold().strokes")][-1]
    if ids["P"] != ids["R"] or ids["Q"] != ids["R"] or ids["R"] != [s2]:
        fail("after P's clear with Q's S1 in flight, the pages show %s (visible stroke ids); expected S2 (%s) only, on every page"
             % (ids, s2))
    for page in (p, q):
        if page.state().get("provisional") != 0:
            fail("page %s still draws own events with a provisional key: %s" % (page.name, page.state()))
    return [p, q, r], ids["R"]


# Before a page of the real relay: keeps its sockets (so the test can drop one) and rewrites
# its hellos: TEXT_ONLY strips "blocks":true; CLAIM (a replica's seq ranges) makes the first
# hello claim ranges the page does not hold, so the relay's blocks skip them.
SOCKET_SPY = r"""
(() => {
  const Native = window.WebSocket;
  const spy = { sockets: [], hellos: [], textOnly: TEXT_ONLY, claim: CLAIM };
  window.__spy = spy;
  window.WebSocket = class extends Native {
    constructor(url) { super(url); spy.sockets.push(this); }
    send(data) {
      if (typeof data === 'string' && data.startsWith('{"type":"hello"')) {
        const hello = JSON.parse(data);
        if (spy.textOnly) delete hello.blocks;
        if (spy.claim) { Object.assign(hello.have, spy.claim); spy.claim = null; }
        data = JSON.stringify(hello);
        spy.hellos.push(data);
      }
      super.send(data);
    }
  };
})();
"""

FOLD_DUMP = r"""
(() => {
  const view = new DataView(new ArrayBuffer(8));
  const bits = (v) => { view.setFloat64(0, v, true); return view.getBigUint64(0, true).toString(16).padStart(16, '0'); };
  const fold = window.strokeJournalFold();
  return { held: fold.held, strokes: fold.strokes.map((s) => ({ id: s.id, visible: s.visible, ended: s.ended,
    points: s.points.map((p) => [bits(p.x), bits(p.y), p.pressure === undefined ? null : bits(p.pressure),
                                 p.t === undefined ? null : bits(p.t), p.color, bits(p.width)]) })) };
})()
"""


def fold_digest(strokes):
    """FORMAT.md §9.3 (digest version 2) over the page's fold (FOLD_DUMP): what `journal digest` prints for it."""
    h = hashlib.sha256(b"StrokeJournal drawing v2\n")
    h.update(struct.pack("<Q", len(strokes)))
    for stroke in strokes:
        s = hashlib.sha256(bytes.fromhex(stroke["id"]) + bytes([stroke["ended"]]))
        s.update(struct.pack("<Q", len(stroke["points"])))
        for x, y, pressure, t, color, width in stroke["points"]:
            s.update(bytes([(pressure is not None) | (t is not None) << 1]) + struct.pack("<QQ", int(x, 16), int(y, 16)))
            for value in (pressure, t):
                if value is not None:
                    s.update(struct.pack("<Q", int(value, 16)))
            s.update(struct.pack("<IQ", int(color[1:], 16), int(width, 16)))
        h.update(bytes([stroke["visible"]]) + s.digest())
    return h.hexdigest()


def seq_ranges(seqs):
    ranges = []
    for seq in sorted(seqs):
        if ranges and ranges[-1][1] == seq - 1:
            ranges[-1][1] = seq
        else:
            ranges.append([seq, seq])
    return [[str(a), str(b)] for a, b in ranges]


EDGE_VALUES = [  # device-like and awkward values a v2 block must keep to the bit
    {"x": -0.0, "y": 0.1 + 0.2, "pressure": 0.5, "t": 0.0},
    {"x": 5e-324, "y": 1e300, "t": 1e-05},
    {"x": -123.456, "y": 604.3333333333334, "pressure": 0.30000001192092896, "t": 0.008000617614015937},
    {"x": 603.9993896484375, "y": -0.0, "pressure": 1.0},
    {"x": 2.0 ** 53 + 2, "y": -2.5e-310},
]


def device_session(path, seed, precision, strokes=40, points=60):
    """One replica's session in canonical lines, its values as devices deliver them: float32
    samples widened to double, a 1/3-point grid, or arbitrary doubles; pressure in float32, t
    a difference of two clock readings; undo, redo, erase and clear among the strokes. (Made
    here, so the test needs nothing beside the repository.)"""
    rng = random.Random(seed)

    def device(v):
        if precision == "float32":
            return struct.unpack("<f", struct.pack("<f", v))[0]
        if precision == "third":
            return round(v * 3) / 3
        return v

    boot = 1000.0 + rng.random() * 1e5
    ended = []
    with open(path, "w") as out:
        def emit(event):
            out.write(json.dumps(event) + "\n")
        for index in range(strokes):
            stroke = "%032X" % rng.getrandbits(128)
            x, y = rng.uniform(0, 1000), rng.uniform(0, 800)
            color = "#%06X%s" % (rng.getrandbits(24), rng.choice(["FF", "80"]))
            width = device(rng.uniform(1, 8))
            start = boot + index * 2.0
            for sample in range(points):
                x += rng.uniform(-4, 4)
                y += rng.uniform(-4, 4)
                now = start + sample / 120 + rng.uniform(-0.0004, 0.0004)
                emit({"type": "point", "stroke": stroke, "x": device(x), "y": device(y), "color": color, "width": width,
                      "pressure": struct.unpack("<f", struct.pack("<f", rng.random()))[0], "t": now - start})
            emit({"type": "end", "stroke": stroke})
            ended.append(stroke)
            roll = rng.random()
            if roll < 0.1:
                emit({"type": "undo", "stroke": stroke})
                if rng.random() < 0.5:
                    emit({"type": "redo", "stroke": stroke})
            elif roll < 0.16:
                emit({"type": "erase", "stroke": rng.choice(ended)})
            elif roll < 0.18:
                emit({"type": "clear"})


def prepare_device_board(journal, data, work):
    """A board of three replicas recorded from device-like sessions (device_session's float32,
    third and double values, undo/redo/erase/clear included) and a stroke of awkward values:
    real columns of every v2 coder. Returns its folder, digest and seq ranges."""
    board = os.path.join(data, "device")
    sources = []
    for index, precision in enumerate(("third", "float32", "double")):
        session = os.path.join(work, "session-" + precision + ".ndjson")
        device_session(session, 11 + index, precision)
        files = [session]
        if index == 0:
            edge = os.path.join(work, "edge.ndjson")
            with open(edge, "w") as out:
                for values in EDGE_VALUES:
                    out.write(json.dumps(dict({"type": "point", "stroke": "0123456789ABCDEF0123456789ABCDEF",
                                               "color": "#0A0B0CFF", "width": 2.5}, **values)) + "\n")
                out.write('{"type":"end","stroke":"0123456789ABCDEF0123456789ABCDEF"}\n')
            files.append(edge)
        journal_dir = board if index == 0 else os.path.join(work, "journal-" + precision)
        subprocess.run([journal, "init", journal_dir], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([journal, "record", "-C", journal_dir] + files, check=True, stdout=subprocess.DEVNULL)
        if index:
            sources.append(journal_dir)
    subprocess.run([journal, "merge", "-C", board] + sources, check=True, stdout=subprocess.DEVNULL)
    digest = subprocess.run([journal, "digest", "-C", board, "--json"], check=True, capture_output=True, text=True)
    log = subprocess.run([journal, "log", "-C", board], check=True, capture_output=True, text=True).stdout.splitlines()
    by_replica = {}
    for line in log:
        event = json.loads(line)
        by_replica.setdefault(event["replica"], []).append(event["seq"])
    summary = json.loads(digest.stdout)
    summary["held"] = {replica: seq_ranges(seqs) for replica, seqs in by_replica.items()}
    return board, summary


def check_tools(browser, port, artefacts):
    """Page U's toolbar on a board of its own: the board's name, the width's value, Undo and
    Redo by button and by Ctrl/Shift+Ctrl+Z, Clear undone and redone, the SVG it saves; page
    V, loaded afterwards, shows what U shows; and the relay's front page lists the board."""
    url = "http://127.0.0.1:%d/boards/tools-check" % port
    u = Page(browser, url, "U")
    u.wait_for("live on an empty board", lambda s: s["live"] and s["strokes"] == 0)
    name = u.evaluate("[document.getElementById('board-name').textContent, document.title]")
    if name[0] != "tools-check" or "tools-check" not in name[1]:
        fail("page U names its board %r (title %r)" % (name[0], name[1]))
    shown = u.evaluate("(() => { const w = document.getElementById('width'); w.value = '9';"
                       " w.dispatchEvent(new Event('input')); return document.getElementById('width-value').textContent; })()")
    if shown != "9":
        fail("the width control shows %r after it was set to 9" % shown)
    draw(u, 2, 4)
    visible = lambda n: (lambda s: s["visibleStrokes"] == n and s["strokes"] == 2 and s["unacked"] == 0)
    u.wait_for("its 2 strokes acknowledged", visible(2))
    key = lambda key, shift: u.evaluate(
        "window.dispatchEvent(new KeyboardEvent('keydown', {key: %s, ctrlKey: true, shiftKey: %s, cancelable: true}))"
        % (json.dumps(key), "true" if shift else "false"))
    click = lambda button: u.evaluate("document.getElementById('%s').click()" % button)
    steps = [("Ctrl+Z", lambda: key("z", False), 1), ("Shift+Ctrl+Z", lambda: key("Z", True), 2),
             ("Redo with nothing to redo", lambda: click("redo"), 2), ("Clear", lambda: click("clear"), 0),
             ("Ctrl+Z after Clear", lambda: key("z", False), 2), ("Redo (the Clear again)", lambda: click("redo"), 0),
             ("Undo (the Clear again)", lambda: click("undo"), 2), ("Undo", lambda: click("undo"), 1),
             ("Ctrl+Y", lambda: key("y", False), 2)]
    for what, act, expected in steps:
        act()
        u.wait_for("%d visible strokes after %s" % (expected, what), visible(expected))
    svg = u.evaluate("window.strokeJournalSVG()")
    try:
        root = ElementTree.fromstring(svg)
    except ElementTree.ParseError as error:
        fail("the page's SVG does not parse: %s" % error)
    lines = root.findall(".//{http://www.w3.org/2000/svg}polyline")
    title = root.find("{http://www.w3.org/2000/svg}title")
    if len(lines) != 2 or title is None or title.text != "tools-check":
        fail("the page's SVG holds %d polylines (2 visible strokes) and the title %r" % (len(lines), title.text if title is not None else None))
    # The whole board as pictures, whatever the view: the SVG on white, the PNG its frame at 2
    # pixels a board unit, the same size and ink zoomed in and panned, Fit frames it.
    background = root.find("{http://www.w3.org/2000/svg}rect")
    if background is None or background.get("fill") != "#FFFFFF":
        fail("the page's SVG has no white background (render's default): %s" % svg[:300])
    frame = [float(v) for v in root.get("viewBox").split()]
    png = u.evaluate("window.strokeJournalPNG()")
    exported = base64.b64decode(png.pop("dataURL").split(",", 1)[1])
    with open(os.path.join(artefacts, "page-U-export.png"), "wb") as out:
        out.write(exported)
    expected = [math.ceil(frame[2] * 2), math.ceil(frame[3] * 2)]
    if [png["width"], png["height"]] != expected or png["inkPixels"] < 100:
        fail("the page's PNG is %s; the board's frame %s at 2 pixels a unit is %s, with ink" % (png, frame, expected))
    u.call("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": 400, "y": 300, "deltaX": 0, "deltaY": -200,
                                        "modifiers": 2, "pointerType": "mouse"})
    u.call("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": 400, "y": 300, "deltaX": 300, "deltaY": 200, "pointerType": "mouse"})
    zoomed = u.wait_for("zoomed in and panned", lambda s: s["view"]["zoom"] > 2)["view"]
    again = u.evaluate("window.strokeJournalPNG()")
    again.pop("dataURL")
    if again != png:
        fail("the PNG changed with the view (%s): %s, then %s" % (zoomed, png, again))
    click("fit")
    fitted = u.wait_for("the board fitted", lambda s: s["view"] != zoomed)["view"]
    window_size = u.evaluate("[window.innerWidth, window.innerHeight, document.getElementById('bar').getBoundingClientRect().bottom]")
    left, top = frame[0] * fitted["zoom"] + fitted["x"], frame[1] * fitted["zoom"] + fitted["y"]
    right, bottom = left + frame[2] * fitted["zoom"], top + frame[3] * fitted["zoom"]
    if left < 0 or right > window_size[0] or top < window_size[2] or bottom > window_size[1] or fitted["zoom"] < 1:
        fail("Fit shows the board's frame %s at (%.0f, %.0f)-(%.0f, %.0f) in a %s window below a toolbar ending at %.0f"
             % (frame, left, top, right, bottom, window_size[:2], window_size[2]))
    u.evaluate("window.dispatchEvent(new KeyboardEvent('keydown', {key: '0', cancelable: true}))")
    u.wait_for("back to 100% on 0", lambda s: s["view"] == {"x": 0, "y": 0, "zoom": 1})
    link = u.evaluate("window.strokeJournalShareLink()")
    if link != url:
        fail("Link copies %r, not the board's address %r" % (link, url))
    picked = u.evaluate("(() => { document.querySelector('.swatch[title=red]').click(); return document.getElementById('color').value; })()")
    if picked != "#e53935" or u.evaluate("document.getElementById('boards-link').getAttribute('href')") != "/":
        fail("the red swatch set the colour to %r; the way back to the board list is missing" % picked)
    u.evaluate("document.querySelector('.swatch[title=blue]').click()")
    # The eraser (its button, then E to put it away): a touch on the first stroke's first point
    # erases it, and Undo brings it back.
    click("eraser")
    u.pen("mousePressed", 120, 160, 0.5, 1)
    u.pen("mouseReleased", 120, 160, 0, 0)
    u.wait_for("1 visible stroke after the eraser touched one", visible(1))
    key("z", False)
    u.wait_for("2 visible strokes after undoing the erase", visible(2))
    u.evaluate("window.dispatchEvent(new KeyboardEvent('keydown', {key: 'e', cancelable: true}))")
    if u.evaluate("document.getElementById('eraser').getAttribute('aria-pressed')") != "false":
        fail("E did not put the eraser away")
    v = Page(browser, url, "V")
    v.wait_for("U's 2 strokes, both visible, after loading", lambda s: s["live"] and s["strokes"] == 2 and s["visibleStrokes"] == 2)
    front = urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=DEADLINE).read().decode()
    listed = json.loads(urllib.request.urlopen("http://127.0.0.1:%d/boards.json" % port, timeout=DEADLINE).read().decode())
    if '<form id="open">' not in front or not listed.get("listed") or "tools-check" not in listed.get("boards", []):
        fail("the relay's front page or its board list lacks the board: %s" % listed)
    say("page U: board name, width value, Undo/Redo by button and Ctrl/Shift+Ctrl+Z/Ctrl+Y, Clear undone and redone, eraser, "
        "an SVG of its 2 strokes on white, a PNG of the whole board (%dx%d, the same zoomed and panned), Fit, Link without "
        "the token, swatches; page V loaded afterwards agrees; the front page lists %d boards"
        % (png["width"], png["height"], len(listed["boards"])))
    return u, v


def check_view_and_presence(browser, port, artefacts):
    """Pages W and X on a board of their own. Presence: W names itself and moves its pointer;
    X lists W with its name and colour and draws its cursor where W's pointer is on the board,
    and forgets W when W leaves. The view: in X, Ctrl+wheel zooms about the pointer (the board's
    point under it stays), the wheel pans, a stroke drawn zoomed lands at the board coordinates
    under the pen (W holds exactly those), W's cursor follows X's view, and a two-finger pinch
    zooms without leaving a stroke; 0 returns to 100%."""
    url = "http://127.0.0.1:%d/boards/view-check" % port
    w, x = Page(browser, url, "W"), Page(browser, url, "X")
    for page in (w, x):
        page.wait_for("live on an empty board", lambda s: s["live"] and s["strokes"] == 0)
    w.evaluate("(() => { const n = document.getElementById('name'); n.value = 'Ada <b>'; n.dispatchEvent(new Event('change')); })()")
    w.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 300, "y": 200, "pointerType": "mouse"})
    ada = lambda s: [o for o in s["others"] if o["name"] == "Ada <b>"]
    state = x.wait_for("W listed as Ada <b> with its pointer at (300, 200)",
                       lambda s: len(ada(s)) == 1 and ada(s)[0]["x"] == 300 and ada(s)[0]["y"] == 200 and ada(s)[0]["shown"])
    if ada(state)[0]["color"].lower() != "#1e88e5":
        fail("page X shows W's colour as %s" % ada(state)[0]["color"])
    listed_names = x.evaluate("Array.from(document.querySelectorAll('#people .person'), (e) => e.innerHTML)")
    if listed_names != ["Ada &lt;b&gt;"]:
        fail("page X lists %r in its bar, not W's name as text" % listed_names)
    label = x.evaluate("Array.from(document.querySelectorAll('.cursor span'), (e) => e.innerHTML)")
    if label != ["Ada &lt;b&gt;"]:
        fail("page X labels W's cursor %r (a name is text, never markup)" % label)

    before = x.state()["view"]
    x.call("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": 400, "y": 300, "deltaX": 0, "deltaY": -100,
                                        "modifiers": 2, "pointerType": "mouse"})
    zoomed = x.wait_for("zoomed in by Ctrl+wheel", lambda s: s["view"]["zoom"] > before["zoom"] * 1.5)["view"]
    held = lambda v: ((400 - v["x"]) / v["zoom"], (300 - v["y"]) / v["zoom"])
    if any(abs(a - b) > 1e-6 for a, b in zip(held(before), held(zoomed))):
        fail("Ctrl+wheel moved the board's point under the pointer: %s then %s" % (held(before), held(zoomed)))
    x.call("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": 400, "y": 300, "deltaX": 50, "deltaY": 30, "pointerType": "mouse"})
    view = x.wait_for("panned by the wheel", lambda s: abs(s["view"]["x"] - (zoomed["x"] - 50)) < 1e-6
                      and abs(s["view"]["y"] - (zoomed["y"] - 30)) < 1e-6)["view"]
    transform = x.evaluate("document.querySelector('.cursor').style.transform")
    expected = (300 * view["zoom"] + view["x"], 200 * view["zoom"] + view["y"])
    found = [float(n) for n in re.findall(r"-?[0-9.]+(?:e-?[0-9]+)?", transform)]
    if len(found) != 2 or any(abs(a - b) > 0.01 for a, b in zip(found, expected)):
        fail("page X places W's cursor at %s; W's pointer (300, 200) is at %s in X's view" % (transform, expected))

    pen_stroke(x, 200, 150)
    screen = [(200 + 12 * n, 150 + 7 * n) for n in range(4)]
    board = [(round((sx - view["x"]) / view["zoom"], 2), round((sy - view["y"]) / view["zoom"], 2)) for sx, sy in screen]
    x.wait_for("its zoomed stroke acknowledged", lambda s: s["strokes"] == 1 and s["unacked"] == 0)
    w.wait_for("X's stroke", lambda s: s["strokes"] == 1 and s["points"] == 4)
    held_points = [(p["x"], p["y"]) for p in w.evaluate("window.strokeJournalFold().strokes")[0]["points"]]
    if any(abs(a[0] - b[0]) > 0.011 or abs(a[1] - b[1]) > 0.011 for a, b in zip(held_points, board)) or len(held_points) != 4:
        fail("a stroke drawn zoomed (%s) is held at %s; under the pen were %s" % (view, held_points, board))

    pinch_from = x.state()["view"]["zoom"]
    touch = lambda kind, points: x.call("Input.dispatchTouchEvent", {"type": kind, "touchPoints": [
        {"x": px, "y": py, "id": n} for n, (px, py) in enumerate(points)]})
    touch("touchStart", [(300, 300), (340, 300)])
    for spread in (60, 100, 140):
        touch("touchMove", [(320 - spread, 300), (320 + spread, 300)])
    touch("touchEnd", [])
    pinched = x.wait_for("zoomed in by a pinch", lambda s: s["view"]["zoom"] > pinch_from * 3)
    x.wait_for("no stroke left by the pinch", lambda s: s["visibleStrokes"] == 1 and s["unacked"] == 0)
    x.evaluate("window.dispatchEvent(new KeyboardEvent('keydown', {key: '0', cancelable: true}))")
    x.wait_for("back to 100% on 0", lambda s: s["view"] == {"x": 0, "y": 0, "zoom": 1})
    x.call("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": 400, "y": 300, "deltaX": 0, "deltaY": -60,
                                        "modifiers": 2, "pointerType": "mouse"})
    x.wait_for("zoomed in again for the screenshot", lambda s: s["view"]["zoom"] > 1.5)
    w.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 260, "y": 190, "pointerType": "mouse"})
    x.wait_for("W's pointer moved", lambda s: len(ada(s)) == 1 and ada(s)[0]["x"] == 260)
    x.screenshot(os.path.join(artefacts, "page-X-zoomed-with-W.png"))
    # Closed, not navigated away: the browser may keep a page it left, socket and all.
    browser.call("Target.closeTarget", {"targetId": w.target})
    x.wait_for("W gone once it left", lambda s: not ada(s))
    say("pages W and X: presence (name as text, colour, cursor in the viewer's view, gone on leaving); Ctrl+wheel zoom "
        "about the pointer, wheel pan, a stroke drawn zoomed at the board's coordinates, a pinch zooms %.1fx without a "
        "stroke, 0 resets" % (pinched["view"]["zoom"] / pinch_from))
    return w, x


def check_timelapse(browser, journal, board, work, artefacts):
    """`journal timelapse` of the device board (undo, redo, erase and clear included), played
    in the browser: paused at moments between events, it shows as many strokes as
    `journal digest --at` says the drawing then shows, and at its end the drawing's."""
    svg = os.path.join(work, "timelapse.svg")
    duration = 10.0
    subprocess.run([journal, "timelapse", svg, "-C", board, "--duration", str(duration)], check=True, stdout=subprocess.DEVNULL)
    events = len(subprocess.run([journal, "log", "-C", board], check=True, capture_output=True, text=True).stdout.splitlines())
    page = Page(browser, "file://" + svg, "timelapse")
    deadline = time.monotonic() + DEADLINE
    while page.evaluate("document.readyState") != "complete" or not page.evaluate("document.querySelectorAll('g').length"):
        if time.monotonic() > deadline:
            fail("the time-lapse SVG did not load in the browser")
        time.sleep(0.1)
    shown = []
    for k in sorted({events // 10, events // 3, events // 2, (3 * events) // 4, events - 1, events}):
        at = min(duration, (k + 0.5) / events * duration) if k < events else duration + 1
        count = page.evaluate(
            "(async () => { const s = document.documentElement; s.pauseAnimations(); s.setCurrentTime(%r);"
            " await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));"
            " return Array.from(document.querySelectorAll('g')).filter((g) => getComputedStyle(g).visibility === 'visible').length; })()"
            % at)
        expected = json.loads(subprocess.run([journal, "digest", "-C", board, "--at", str(k), "--json"], check=True,
                                             capture_output=True, text=True).stdout)["visibleStrokes"]
        if count != expected:
            fail("the time-lapse at %.3f s (after %d of %d events) shows %d strokes; journal digest --at %d says %d"
                 % (at, k, events, count, k, expected))
        shown.append("%d@%d" % (count, k))
    # Pictures, of the demo session (the device board's awkward values span the whole plane).
    demo = os.path.join(work, "timelapse-demo")
    subprocess.run([journal, "demo", demo], check=True, stdout=subprocess.DEVNULL)
    picture = os.path.join(work, "timelapse-demo.svg")
    subprocess.run([journal, "timelapse", picture, "-C", os.path.join(demo, "board"), "--duration", str(duration), "--width", "800"],
                   check=True, stdout=subprocess.DEVNULL)
    page.call("Page.navigate", {"url": "file://" + picture})
    while page.evaluate("document.readyState") != "complete" or not page.evaluate("document.querySelectorAll('g').length"):
        if time.monotonic() > deadline:
            fail("the demo's time-lapse SVG did not load in the browser")
        time.sleep(0.1)
    for name, at in (("middle", duration / 2), ("end", duration + 1)):
        page.evaluate("(async () => { const s = document.documentElement; s.pauseAnimations(); s.setCurrentTime(%r);"
                      " await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))); })()" % at)
        page.screenshot(os.path.join(artefacts, "timelapse-%s.png" % name))
    say("the time-lapse of the device board, paused between events in Chromium, shows what journal digest --at says "
        "(visible strokes at event counts: %s)" % ", ".join(shown))


# A picture composited onto the canvas rounds translucent ink once more than drawing the
# strokes straight onto it (8-bit premultiplied colour): at most this many levels apart.
PICTURE_TOLERANCE = 3
# The page widens a stroke by width × (0.25 + 1.5 × pressure), `journal render` by width ×
# (0.4 + 0.6 × pressure): ink may lie this many device pixels apart, and this share of each
# one's ink must lie near the other's.
RENDER_RADIUS = 12
RENDER_NEAR = 0.97


def check_history(browser, port, journal, board, artefacts):
    """Page Y on the device board (undo, redo, erase, clear): its History control scrubbed to
    event counts shows the strokes and points `journal digest --at` says the board held then;
    screenshots of the page at the middle and of `journal render --at` the same moment."""
    y = Page(browser, "http://127.0.0.1:%d/boards/device" % port, "Y")
    digest = lambda k: json.loads(subprocess.run([journal, "digest", "-C", board, "--at", str(k), "--json"], check=True,
                                                 capture_output=True, text=True).stdout)
    total = digest("now")["events"]
    y.wait_for("live on the device board with its %d events" % total,
               lambda s: s["live"] and s["points"] == digest("now")["points"])
    times, seen = [], []
    for k in sorted({0, 1, total // 7, total // 3, total // 2, (2 * total) // 3, total - 1, total}):
        at = y.evaluate("window.strokeJournalAt(%d)" % k)
        expected = digest(k)
        if at["events"] != k or at["of"] != total:
            fail("page Y scrubbed to %d shows event %d of %d; the board holds %d" % (k, at["events"], at["of"], total))
        if (at["visibleStrokes"], at["points"]) != (expected["visibleStrokes"], expected["points"]):
            fail("page Y at event %d shows %d strokes and %d points; journal digest --at %d: %d and %d"
                 % (k, at["visibleStrokes"], at["points"], k, expected["visibleStrokes"], expected["points"]))
        times.append(at["milliseconds"])
        seen.append("%d@%d" % (at["visibleStrokes"], k))
    # The pictures a big board's scrub starts from (a picture every total/8 events here, as
    # every total/48 on a board of 20,000 events or more): each moment drawn from one, then
    # drawn exactly, pixel for pixel against the same moment drawn afresh; the first paint
    # (strokes that change later stacked on top) with the same ink, its alpha channel alike.
    compared, used = [], 0
    moments = sorted({total // 7, total // 3, total // 2, (2 * total) // 3, total - 1, total})
    for k in moments:
        at = y.evaluate("window.strokeJournalComparePictures(%d, 0, 8)" % k)
        used += 1 if at["usedPicture"] else 0
        for name, what in (("drawn exactly after", at["exact"]), ("first paint's ink", at["firstPaintInk"])):
            if what["largestDifference"] > PICTURE_TOLERANCE:
                fail("page Y at event %d from a picture, %s, differs from the moment drawn afresh: %d of %d inked pixels, "
                     "by up to %d" % (k, name, what["differingPixels"], at["inkPixels"], what["largestDifference"]))
        if at["exactAtOnce"] and at["firstPaint"]["largestDifference"] > PICTURE_TOLERANCE:
            fail("page Y at event %d: a picture said exact differs from the moment drawn afresh by up to %d"
                 % (k, at["firstPaint"]["largestDifference"]))
        compared.append("%d@%d (%s, %d px of the first paint stacked otherwise)"
                        % (at["pictures"], k, "no picture" if not at["usedPicture"] else "exact at once" if at["exactAtOnce"] else "refined",
                           at["firstPaint"]["differingPixels"]))
    # A moment with a clear since its picture is drawn afresh; this board has one clear.
    if used < len(moments) // 2:
        fail("page Y started from a picture at only %d of %d moments" % (used, len(moments)))
    y.evaluate("window.strokeJournalSetPictures(20000, 48)")
    say("page Y drawn from its history pictures has the ink of the moments drawn afresh, and their pixels once refined: %s"
        % ", ".join(compared))
    # The scrubbed canvas against `journal render --at` of the same moment, drawn in the page's
    # view: each one's ink near the other's (the two widen strokes by pressure differently).
    # A moment drawn against another moment's SVG must fail the same measure.
    # The render covers the board area the page shows (an awkward stroke far away would
    # otherwise shrink the whole picture to nothing).
    shown = y.evaluate("(() => { const s = window.strokeJournalState().view; return [-s.x / s.zoom, -s.y / s.zoom, "
                       "window.innerWidth / s.zoom, window.innerHeight / s.zoom, window.innerWidth * (window.devicePixelRatio || 1)]; })()")
    area = ",".join("%.3f" % v for v in shown[:4])

    def against_render(k, svg_moment):
        svg = subprocess.run([journal, "render", "-", "-C", board, "--at", str(svg_moment), "--background", "none",
                              "--area", area, "--width", str(int(shown[4]))], check=True, capture_output=True, text=True).stdout
        y.evaluate("window.strokeJournalAt(%d)" % k)
        return y.evaluate("window.strokeJournalCompareWithSVG(%s, %d)" % (json.dumps(svg), RENDER_RADIUS))
    # The last event included: the board then shows the stroke of awkward values, which runs
    # from y = 0.3 to y = 1e300 (drawn by the page only once cut to what a canvas can draw).
    matched = []
    for k in sorted({total // 4, total // 3, total // 2, (2 * total) // 3, total}):
        near = against_render(k, k)
        if min(near["pageNearSVG"], near["svgNearPage"]) < RENDER_NEAR:
            fail("page Y at event %d against journal render --at %d: %.1f%% of the page's ink near the render's, %.1f%% of "
                 "the render's near the page's (%d and %d pixels)" % (k, k, 100 * near["pageNearSVG"], 100 * near["svgNearPage"],
                                                                     near["pageInk"], near["svgInk"]))
        matched.append("%d (%.1f%%, %.1f%%)" % (k, 100 * near["pageNearSVG"], 100 * near["svgNearPage"]))
    wrong = against_render(total // 3, total)
    if min(wrong["pageNearSVG"], wrong["svgNearPage"]) >= RENDER_NEAR:
        fail("page Y at event %d passes against journal render of event %d: the comparison sees nothing" % (total // 3, total))
    say("page Y scrubbed matches journal render --at in the same view at %s of ink near the other's; against another "
        "moment's render: %.1f%%, %.1f%%" % (", ".join(matched), 100 * wrong["pageNearSVG"], 100 * wrong["svgNearPage"]))
    middle = total // 2
    y.evaluate("window.strokeJournalAt(%d)" % middle)
    y.screenshot(os.path.join(artefacts, "page-Y-history-at-%d.png" % middle))
    subprocess.run([journal, "render", os.path.join(artefacts, "render-at-%d.svg" % middle), "-C", board, "--at", str(middle)],
                   check=True, stdout=subprocess.DEVNULL)
    if "showing the past" not in y.state()["status"]:
        fail("page Y's status does not say it shows the past: %r" % y.state()["status"])
    y.evaluate("document.getElementById('history-live').click()")
    y.wait_for("live again after Live, and saying so", lambda s: s["live"] and "past" not in s["status"])
    times.sort()
    say("page Y's History control at %d moments shows the strokes and points journal digest --at says (%s); "
        "a scrubbed moment drawn in at most %.1f ms on this board" % (len(seen), ", ".join(seen), times[-1]))
    return y


def check_late_joiner(browser, port, expected):
    """Pages joining the device board hold exactly the journal's events: their fold's digest
    (§9.3, bit for bit) is `journal digest`'s and the seqs they hold are `journal log`'s. E
    catches up in blocks with a first hello that claims ranges it lacks (blocks then skip
    seqs and are encoded again), then reconnects for them; F catches up in text."""
    url = "http://127.0.0.1:%d/boards/device" % port
    replica = max(expected["held"], key=lambda r: int(expected["held"][r][-1][1]))
    last = int(expected["held"][replica][-1][1])
    claim = {replica: [[2, 40], [last // 2, last // 2 + 99]]}
    pages = []
    for name, text_only, claimed in (("E", False, claim), ("F", True, None)):
        spy = SOCKET_SPY.replace("TEXT_ONLY", json.dumps(text_only)).replace("CLAIM", json.dumps(claimed))
        page = Page(browser, url, name, before_page_script=spy)
        page.wait_for("live on the device board", lambda s: s["live"])
        if claimed:
            held = page.evaluate("window.strokeJournalFold().held")
            if held.get(replica, [[None]])[0][1] != "1":
                fail("page %s holds %s of replica %s after a catch-up around a claimed range, expected 1-1 first" % (name, held.get(replica), replica))
            page.evaluate("__spy.sockets[0].close()")
            page.wait_for("live again after a reconnection", lambda s: s["live"] and page.evaluate("__spy.sockets.length") == 2)
        dump = page.evaluate(FOLD_DUMP)
        state = page.state()
        digest = fold_digest(dump["strokes"])
        if dump["held"] != expected["held"]:
            diff = {r: (dump["held"].get(r), expected["held"].get(r)) for r in set(dump["held"]) | set(expected["held"])
                    if dump["held"].get(r) != expected["held"].get(r)}
            fail("page %s holds other seqs than the journal (page, journal): %s" % (name, json.dumps(diff)[:400]))
        if digest != expected["digest"] or state["points"] != expected["points"]:
            fail("page %s's fold has digest %s and %d points; the journal's: %s, %d points"
                 % (name, digest, state["points"], expected["digest"], expected["points"]))
        binary = state["received"]["binary"]
        if state["decoder"] != "worker":
            fail("page %s decodes blocks in %r, expected its worker" % (name, state["decoder"]))
        if text_only == (binary > 0) or not state["blocks"]:
            fail("page %s received %d bytes in binary messages (blocks %s), expected %s" % (name, binary, state["blocks"], "none" if text_only else "some"))
        pages.append(page)
        say("page %s (%s) holds the journal's %d events: digest %s… = journal digest, %d points, %d strokes (%d B text, %d B binary)"
            % (name, "text" if text_only else "blocks, around claimed ranges, then the rest",
               expected["events"], digest[:12], state["points"], state["strokes"], state["received"]["text"], binary))
    return pages


def journal_log(journal, board_dir):
    done = subprocess.run([journal, "log", "-C", board_dir], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        fail("journal log -C %s exited %d: %s" % (board_dir, done.returncode, done.stderr.strip()))
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def check_native_pages(chromium, journal, work, artefacts, kills=3):
    """Pages N1 and N2 draw as replicas of their own (native mode: an Ed25519 key each, in
    IndexedDB) through a relay killed with SIGKILL while their strokes are in flight and
    started again on its port, `kills` times. Then every point dispatched is in the journal
    exactly once (a resend after a lost ack is the same event, deduplicated by id), under
    the replica of the page that drew it; `journal history` names both replicas. On a board
    with membership, a page whose key is no member is refused and becomes a viewer (the
    message names its key); granted by an admin with a label, after a reload it draws, and
    `journal history` names the label."""
    data = os.path.join(work, "native-boards")
    log_path = os.path.join(artefacts, "relay-native.log")
    relay, port = start_relay(journal, data, log_path)
    browser = None
    try:
        profile = os.path.join(work, "profile-native")
        os.makedirs(profile)
        browser = Browser(chromium, profile, os.path.join(artefacts, "chromium-native.log"))
        url = "http://127.0.0.1:%d/boards/native-failover" % port
        pages = [Page(browser, url, "N1"), Page(browser, url, "N2")]
        for page in pages:
            page.wait_for("live in native mode", lambda s: s["live"] and s["replica"])
        replicas = [page.state()["replica"] for page in pages]
        if any(page.state()["challenges"] < 1 for page in pages):
            fail("pages N1 and N2 went live without answering their relay's challenge (their hellos prove no key)")
        if replicas[0] == replicas[1]:
            fail("pages N1 and N2 share replica %s: each tab needs its own" % replicas[0])
        rng = random.Random(7)
        drawn = {0: 0, 1: 0}
        for round_number in range(kills + 1):
            for n, page in enumerate(pages):
                pen_stroke(page, 100 + 60 * round_number, 100 + 150 * n, samples=6)
                drawn[n] += 6
            if round_number == kills:
                break
            time.sleep(rng.uniform(0.0, 0.05))
            os.killpg(relay.pid, signal.SIGKILL)
            relay.wait()
            # Drawn while the relay is down: queued, named at the next catch-up.
            for n, page in enumerate(pages):
                pen_stroke(page, 130 + 60 * round_number, 110 + 150 * n, samples=3)
                drawn[n] += 3
            relay, _ = start_relay(journal, data, log_path, port=port)
        for page in pages:
            page.wait_for("every own event acknowledged", lambda s: s["live"] and s["unacked"] == 0)
        total = drawn[0] + drawn[1]
        for page in pages:
            page.wait_for("both pages' %d points" % total, lambda s: s["points"] == total)
        if stop_relay(relay) != 0:
            fail("the native pages' relay exited with %s" % relay.returncode)
        board_dir = os.path.join(data, "native-failover")
        points = [e for e in journal_log(journal, board_dir) if e["type"] == "point"]
        ids = [(e["replica"], e["seq"]) for e in points]
        samples = [(e["stroke"], e["x"], e["y"]) for e in points]
        if len(set(ids)) != len(ids) or len(set(samples)) != len(samples):
            fail("the journal holds a point twice after %d kills (%d points, %d ids, %d distinct samples)"
                 % (kills, len(points), len(set(ids)), len(set(samples))))
        for n, replica in enumerate(replicas):
            mine = sum(1 for e in points if e["replica"] == replica)
            if mine != drawn[n]:
                fail("the journal credits %d points to page N%d's replica %s; it drew %d" % (mine, n + 1, replica, drawn[n]))
        if len(points) != total:
            fail("the journal holds %d points; the pages drew %d" % (len(points), total))
        history = subprocess.run([journal, "history", "-C", board_dir], capture_output=True, text=True, timeout=60).stdout
        if not all(r[:8] in history for r in replicas):
            fail("journal history names not both pages' replicas %s:\n%s" % (replicas, history))
        say("pages N1 and N2 drew as replicas of their own through %d relay kills: %d points, each once in the journal "
            "under the replica that drew it; journal history names both" % (kills, total))

        # A board with membership: the relay's own key is its first admin.
        relay, port = start_relay(journal, data, log_path, port=port)
        url = "http://127.0.0.1:%d/boards/members-only" % port
        setup = Page(browser, url, "M0")
        setup.wait_for("live", lambda s: s["live"])
        members_dir = os.path.join(data, "members-only")
        done = subprocess.run([journal, "members", "init", "-C", members_dir, "--label", "Relay"], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            fail("journal members init exited %d: %s" % (done.returncode, done.stderr.strip()))
        stranger = Page(browser, url, "M1")
        state = stranger.wait_for("refused as no member, a viewer", lambda s: s["viewOnly"] and s["live"] and "not a member" in s["status"])
        said = state["status"]
        key = re.search(r"\b[0-9a-f]{64}\b", said)
        if state["replica"] or not key or "journal members grant" not in said:
            fail("page M1, refused as no member, says %r (replica %s): expected its key and the command that grants it" % (said, state["replica"]))
        done = subprocess.run([journal, "members", "grant", "-C", members_dir, key.group(0), "--role", "draw", "--label", "Dora"],
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            fail("journal members grant exited %d: %s" % (done.returncode, done.stderr.strip()))
        stranger.call("Page.reload", {"ignoreCache": True})
        stranger.wait_for("live in native mode after the grant", lambda s: s["live"] and s["replica"] and not s["viewOnly"])
        pen_stroke(stranger, 200, 200, samples=5)
        stranger.wait_for("its stroke acknowledged", lambda s: s["unacked"] == 0 and s["points"] == 5)

        # An invitation: the link's first page becomes a member as Erin and draws; a second
        # page with the same link is refused and views.
        done = subprocess.run([journal, "members", "invite", "-C", members_dir, "--label", "Erin", "--ttl", "10m",
                               "--url", "http://127.0.0.1:%d" % port, "--json"], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            fail("journal members invite exited %d: %s" % (done.returncode, done.stderr.strip()))
        link = json.loads(done.stdout)["link"]
        if not link.startswith(url + "#invite="):
            fail("journal members invite printed the link %r, expected %s#invite=…" % (link, url))
        erin = Page(browser, link, "I1")
        erin.wait_for("live in native mode as an invited member", lambda s: s["live"] and s["replica"] and not s["viewOnly"])
        if "invite=" in erin.evaluate("location.href"):
            fail("page I1 keeps the invitation in its address: %s" % erin.evaluate("location.href"))
        pen_stroke(erin, 260, 260, samples=4)
        erin.wait_for("its stroke acknowledged", lambda s: s["unacked"] == 0 and s["points"] == 9)
        late = Page(browser, link, "I2")
        refused = late.wait_for("refused, the invitation used", lambda s: s["viewOnly"] and s["live"] and "redeemed already" in s["status"])
        stop_relay(relay)
        history = subprocess.run([journal, "history", "-C", members_dir], capture_output=True, text=True, timeout=60).stdout
        if "Dora" not in history or "Erin" not in history:
            fail("journal history of the membership board does not name Dora and Erin:\n%s" % history)
        say("an invitation link (journal members invite) made page I1 a member as Erin, drawing; page I2 with the same link "
            "was refused (%r)" % refused["status"][:90])
        say("a page whose key is no member of a board with membership is refused and views (%r); granted as Dora, "
            "after a reload it draws and journal history names Dora" % said[:80])
    finally:
        if browser:
            browser.stop()
        stop_relay(relay)


def script_errors(browser):
    return [(session, params.get("exceptionDetails", {}).get("exception", {}).get("description")
             or params.get("exceptionDetails", {}).get("text"))
            for session, method, params in list(browser.events) if method == "Runtime.exceptionThrown"]


def check(args, work, artefacts):
    data = os.path.join(work, "boards")
    device_board, device = prepare_device_board(args.journal_bin, data, work)
    say("device board recorded: %d events, %d points, digest %s…" % (device["events"], device["points"], device["digest"][:12]))
    relay, port = start_relay(args.journal_bin, data, os.path.join(artefacts, "relay.log"))
    browser = None
    try:
        profile = os.path.join(work, "profile")
        os.makedirs(profile)
        browser = Browser(args.chromium, profile, os.path.join(artefacts, "chromium.log"), page_files=PAGE_FILES[0])
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
        state_b = b.wait_for("the whole board after a reload", lambda s: s["live"] and same(s))
        if state_b["received"]["binary"] == 0 or not state_b["blocks"]:
            fail("page B caught up after a reload without binary messages: %s" % state_b)
        say("page B shows the whole board again after a reload (%d B of blocks)" % state_b["received"]["binary"])

        a.evaluate("document.getElementById('undo').click()")
        hidden = lambda s: s["visibleStrokes"] == args.strokes - 1 and s["strokes"] == args.strokes
        a.wait_for("its last stroke undone and acknowledged", lambda s: hidden(s) and s["unacked"] == 0)
        b.wait_for("A's last stroke hidden", hidden)
        say("Undo in A hides the stroke in B")

        c = check_fold_and_resending(browser, "http://127.0.0.1:%d/boards/fold-check" % port)
        say("page C (a relay played by the test): out-of-order points, duplicates, visibility, hello and resending as expected")

        check_scripts_parse(port)
        check_reader(browser, port, args)
        d = check_blocks_fold(browser, "http://127.0.0.1:%d/boards/blocks-check" % port)
        say("page D (a relay played by the test, in blocks): own events matched, messages in order, damage refused, text after it")
        crowded, named = check_crowded_hello(browser, "http://127.0.0.1:%d/boards/crowded" % port)
        say("page L, holding 3,200 events of 3,001 replicas, reconnects with a hello under 64 KiB naming %d of them" % named)
        g = check_text_without_decompression(browser, "http://127.0.0.1:%d/boards/no-blocks" % port)
        say("page G, in a browser without DecompressionStream, asks for no blocks and catches up in text")
        e, f = check_late_joiner(browser, port, device)
        y = check_history(browser, port, args.journal_bin, device_board, artefacts)
        u, v = check_tools(browser, port, artefacts)
        w, x = check_view_and_presence(browser, port, artefacts)
        check_timelapse(browser, args.journal_bin, device_board, work, artefacts)
        race_pages, race_visible = check_clear_race(browser, port)
        say("pages P and Q agree with a page loaded afterwards after P's clear with Q's stroke in flight: %d visible stroke" % len(race_visible))
        h, i = check_exact_integers(browser, "http://127.0.0.1:%d/boards/exact" % port)
        say("pages H (text) and I (blocks) keep clocks, wall times and seqs past 2^53 exact: the journal's order, seqs held once")
        check_clock_order(browser, "http://127.0.0.1:%d/boards/clock-order" % port)
        k = check_token(browser, port)
        check_native_pages(args.chromium, args.journal_bin, work, artefacts)
        say("page K takes its token from #token= (out of the address and history, into sessionStorage, into every hello), "
            "stops on a token refusal, becomes a viewer on a view-only refusal")
        if check_tokens_with_relay(args.chromium, args.journal_bin, work, artefacts):
            say("a relay that needs tokens: page T1 (admin token) draws, T2 (view token) is a viewer from its catch-up on, T3 (none) and T4 (forged) stop, their tools off")

        for page in [a, b, c, d, e, f, g, h, i, k, u, v, x, y, crowded] + race_pages:
            path = os.path.join(artefacts, "page-%s.png" % page.name)
            page.screenshot(path)
            if os.path.getsize(path) < 1000:
                fail("the screenshot %s is only %d bytes" % (path, os.path.getsize(path)))
        errors = script_errors(browser)
        if errors:
            fail("a page reported script errors: %s" % errors[:3])
    finally:
        if browser:
            browser.stop()
        code = stop_relay(relay)
    if code != 0:
        fail("journal serve exited %s on SIGTERM (log: %s)" % (code, os.path.join(artefacts, "relay.log")))
    check_journal(args, os.path.join(data, BOARD), dispatched, expected_points)
    in_journal = sorted(s["id"].replace("-", "").lower() for s in journal_strokes(args.journal_bin, os.path.join(data, "clear-race")))
    if in_journal != race_visible:
        fail("the clear-race board's journal shows strokes %s, the pages %s" % (in_journal, race_visible))
    say("the clear-race board's journal shows what the pages showed: %s" % in_journal)


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



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--journal-bin", type=journal_binary, required=True)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--artefacts", help="where screenshots and logs go (default: a new temporary folder)")
    ap.add_argument("--strokes", type=int, default=3)
    ap.add_argument("--moves", type=int, default=12)
    ap.add_argument("--random-messages", type=int, default=400, help="random messages the reader must decode as sjread does")
    ap.add_argument("--seed", type=int, default=1, help="of the random messages")
    ap.add_argument("--web-folder", metavar="DIR|sources",
                    help="serve the page and its assets from DIR instead of the relay's (\"sources\": "
                         "Sources/JournalServe/Web, unbuilt): to try a page, or an older one, without building the relay")
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
    if args.web_folder:
        folder = os.path.join(HERE, "..", "..", "..", "Sources", "JournalServe", "Web") if args.web_folder == "sources" else args.web_folder
        PAGE_FILES[0] = web_folder_files(folder)
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
    say("passed in %.1f s (screenshots page-*.png in %s)" % (time.monotonic() - started, artefacts))


if __name__ == "__main__":
    main()
