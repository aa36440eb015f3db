/// The drawing page served at `http://HOST:P/boards/<board>` (docs/PROTOCOL.md, "The drawing
/// page"): plain HTML and JavaScript in one string, no build step, nothing fetched from
/// elsewhere, so the relay binary is all a browser needs, offline too.
///
/// The page is the same for every board: it reads the board's name from its own address.
/// What it does, briefly:
/// - draws with pointer events (pressure, coalesced samples, pointer capture), one random
///   128-bit stroke id per stroke, each sample sent as one canonical `point` line per text
///   frame and an `end` line when the pointer lifts;
/// - folds what it holds as `journal` does (FORMAT.md §7.3, §9.1): points sorted by order key,
///   strokes in creation order, visibility by the latest of undo/redo/erase/clear;
/// - keeps every frame until it is acknowledged and resends what was not after reconnecting,
///   with a `hello` naming the events it holds so the relay sends exactly what it lacks.
///
/// Its own events come back from the relay only in a catch-up (the relay sends a client acks,
/// not its own events, and a hello cannot name them: the page never learns their seqs). The
/// page matches those by content with what it drew, so nothing is drawn twice and frames the
/// journal already holds are not sent again.
///
/// `window.strokeJournalState()` reports counts for tests (Tools/page-test/page_test.py).
public enum DrawingPage {
    public static let contentType = "text/html; charset=utf-8"

    public static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>StrokeJournal board</title>
<style>
html, body { margin: 0; height: 100%; overflow: hidden; background: #fff; font: 13px system-ui, sans-serif; }
canvas { position: fixed; left: 0; top: 0; width: 100vw; height: 100vh; touch-action: none; display: block; }
#bar { position: fixed; left: 8px; top: 8px; display: flex; gap: 6px; align-items: center; padding: 4px 6px;
       background: rgba(255,255,255,0.92); border: 1px solid #ccc; border-radius: 6px; user-select: none; }
#bar input[type=range] { width: 80px; }
#status { color: #555; max-width: 40vw; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
#status.bad { color: #b00020; }
</style>
</head>
<body>
<canvas id="canvas"></canvas>
<div id="bar">
  <input type="color" id="color" value="#1e88e5" title="colour">
  <input type="range" id="width" min="1" max="24" value="4" title="width">
  <button id="undo" title="undo your last stroke">Undo</button>
  <button id="clear" title="clear the board for everyone">Clear</button>
  <span id="status">connecting</span>
</div>
<script>
'use strict';
(function () {
  const board = decodeURIComponent(location.pathname.split('/')[2] || '');
  document.title = board + ' · StrokeJournal';
  const socketURL = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host +
    '/boards/' + encodeURIComponent(board) + '/ws';

  // ---- Order keys (FORMAT.md §7.3): [lamport, wall time, replica hex, seq] ----
  // Events of this page not yet seen back from the relay have no key; they get a provisional
  // one just after everything seen so far ([max lamport seen + 0.5, 0, '', local counter]),
  // which is where the relay will put them, give or take events still on their way.
  let maxLamport = 0;
  let localCounter = 0;
  function provisionalKey() { localCounter += 1; return [maxLamport + 0.5, 0, '', localCounter]; }
  function compareKeys(a, b) {
    for (let i = 0; i < 4; i++) {
      if (a[i] < b[i]) return -1;
      if (a[i] > b[i]) return 1;
    }
    return 0;
  }
  function maxKey(records) {
    let best = null;
    for (const r of records) if (!best || compareKeys(r.key, best.key) > 0) best = r;
    return best;
  }

  // ---- The fold (FORMAT.md §9.1) ----
  // A record is one event: {kind, stroke, key, point?}. A stroke holds its point records
  // sorted by key, its undo/redo/erase records and whether an end names it.
  const strokes = new Map();      // stroke id (32 lowercase hex) -> stroke
  const clears = [];              // clear records
  let latestClear = null;
  let pointCount = 0;
  let zOrder = [];                // strokes with points, by creation key
  let zOrderStale = false;

  function strokeFor(id) {
    let s = strokes.get(id);
    if (!s) {
      s = { id: id, points: [], ops: [], ends: 0 };
      strokes.set(id, s);
    }
    return s;
  }
  function creationKey(s) { return s.points.length ? s.points[0].key : null; }
  function isVisible(s) {
    const op = maxKey(s.ops);
    let visible = op ? op.kind === 'redo' : true;
    const created = creationKey(s);
    if (latestClear && created && compareKeys(created, latestClear.key) < 0 &&
        (!op || compareKeys(op.key, latestClear.key) < 0)) visible = false;
    return visible;
  }

  // Adds a record; returns true when only the last segment of the topmost stroke changed
  // (the screen can then be updated in place), false when it needs a full redraw.
  function apply(record) {
    if (record.kind === 'clear') {
      clears.push(record);
      latestClear = maxKey(clears);
      return false;
    }
    const s = strokeFor(record.stroke);
    if (record.kind === 'point') {
      const wasEmpty = s.points.length === 0;
      const at = insertionIndex(s.points, record.key);
      s.points.splice(at, 0, record);
      pointCount += 1;
      if (wasEmpty) { zOrderStale = true; return false; }
      if (at === 0) { zOrderStale = true; return false; }
      return at === s.points.length - 1 && !zOrderStale && zOrder[zOrder.length - 1] === s && isVisible(s);
    }
    if (record.kind === 'end') { s.ends += 1; return true; }
    s.ops.push(record);
    return false;
  }
  function unapply(record) {
    if (record.kind === 'clear') {
      clears.splice(clears.indexOf(record), 1);
      latestClear = maxKey(clears);
      return;
    }
    const s = strokes.get(record.stroke);
    if (!s) return;
    if (record.kind === 'point') {
      const at = s.points.indexOf(record);
      if (at >= 0) { s.points.splice(at, 1); pointCount -= 1; zOrderStale = true; }
    } else if (record.kind === 'end') {
      s.ends -= 1;
    } else {
      const at = s.ops.indexOf(record);
      if (at >= 0) s.ops.splice(at, 1);
    }
  }
  // Points mostly arrive in order: search from the end.
  function insertionIndex(points, key) {
    let lo = 0, hi = points.length;
    if (hi === 0 || compareKeys(points[hi - 1].key, key) < 0) return hi;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compareKeys(points[mid].key, key) < 0) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
  function refreshZOrder() {
    if (!zOrderStale) return;
    zOrder = [];
    for (const s of strokes.values()) if (s.points.length) zOrder.push(s);
    zOrder.sort((a, b) => compareKeys(a.points[0].key, b.points[0].key));
    zOrderStale = false;
  }

  // ---- Events held, per replica, as sorted seq ranges (what the hello says) ----
  const held = new Map();         // replica hex -> [[first, last], ...] sorted, disjoint, not adjacent
  // Inserts seq; false when it was held already (a duplicate).
  function hold(replica, seq) {
    let ranges = held.get(replica);
    if (!ranges) { ranges = []; held.set(replica, ranges); }
    let lo = 0, hi = ranges.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ranges[mid][1] < seq - 1) lo = mid + 1; else hi = mid;
    }
    const r = ranges[lo];
    if (r && r[0] <= seq && seq <= r[1]) return false;
    if (r && r[1] === seq - 1) {
      r[1] = seq;
      const next = ranges[lo + 1];
      if (next && next[0] === seq + 1) { r[1] = next[1]; ranges.splice(lo + 1, 1); }
    } else if (r && r[0] === seq + 1) {
      r[0] = seq;
    } else {
      ranges.splice(lo, 0, [seq, seq]);
    }
    return true;
  }
  function helloText() {
    const have = {};
    for (const [replica, ranges] of held) have[replica] = ranges;
    return JSON.stringify({ type: 'hello', have: have });
  }

  // ---- Drawing ----
  const canvas = document.getElementById('canvas');
  const ctx = canvas.getContext('2d');
  let scale = 1;
  function resize() {
    scale = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(window.innerWidth * scale));
    canvas.height = Math.max(1, Math.round(window.innerHeight * scale));
    redrawAll();
  }
  // A mouse reports pressure 0.5 while pressed, so 0.5 draws the chosen width.
  function lineWidth(a, b) {
    const pressure = ((a.pressure ?? 0.5) + (b.pressure ?? 0.5)) / 2;
    return Math.max(0.5, b.width * (0.25 + 1.5 * pressure));
  }
  function drawSegment(a, b) {
    ctx.strokeStyle = b.color;
    ctx.fillStyle = b.color;
    if (!a) {
      ctx.beginPath();
      ctx.arc(b.x, b.y, lineWidth(b, b) / 2, 0, 2 * Math.PI);
      ctx.fill();
      return;
    }
    ctx.lineWidth = lineWidth(a, b);
    ctx.beginPath();
    ctx.moveTo(a.x, a.y);
    ctx.lineTo(b.x, b.y);
    ctx.stroke();
  }
  function redrawAll() {
    refreshZOrder();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.setTransform(scale, 0, 0, scale, 0, 0);
    ctx.lineCap = 'round';
    ctx.lineJoin = 'round';
    for (const s of zOrder) {
      if (!isVisible(s)) continue;
      for (let i = 0; i < s.points.length; i++) drawSegment(i > 0 ? s.points[i - 1].point : null, s.points[i].point);
    }
  }
  function drawLastSegment(s) {
    const n = s.points.length;
    drawSegment(n > 1 ? s.points[n - 2].point : null, s.points[n - 1].point);
  }
  let redrawPending = false;
  let catchingUp = true;
  let lastCatchUpDraw = 0;
  function scheduleRedraw() {
    if (redrawPending) return;
    redrawPending = true;
    requestAnimationFrame(function frame() {
      // While a big board streams in, a full redraw per frame would cost more than the
      // stream: draw a few times a second until it is caught up.
      const since = performance.now() - lastCatchUpDraw;
      if (catchingUp && since < 200) {
        setTimeout(() => requestAnimationFrame(frame), 200 - since);
        return;
      }
      lastCatchUpDraw = performance.now();
      redrawPending = false;
      redrawAll();
    });
  }
  function show(record) {
    if (apply(record)) {
      if (record.kind === 'point') drawLastSegment(strokes.get(record.stroke));
    } else {
      scheduleRedraw();
    }
  }

  // ---- Lines (the canonical form `journal record` reads) ----
  function normaliseID(text) { return String(text).replace(/-/g, '').toLowerCase(); }
  // One spelling per event content, the same for what this page sent and for what the relay
  // sends back (which reformats numbers, ids and colours): how own events are recognised.
  function contentOf(kind, stroke, point) {
    if (kind === 'clear') return 'clear';
    if (kind !== 'point') return kind + '|' + stroke;
    return ['point', stroke, point.x, point.y, point.color, point.width, point.pressure, point.t].join('|');
  }
  function pointLine(stroke, point) {
    let line = '{"type":"point","stroke":"' + stroke + '","x":' + JSON.stringify(point.x) +
      ',"y":' + JSON.stringify(point.y) + ',"color":"' + point.color + '","width":' + JSON.stringify(point.width);
    if (point.pressure !== undefined) line += ',"pressure":' + JSON.stringify(point.pressure);
    if (point.t !== undefined) line += ',"t":' + JSON.stringify(point.t);
    return line + '}';
  }

  // ---- Own events: drawn at once, queued until acknowledged ----
  // outbox: entries {line, record, frame} in the order made; frame is its number on the
  // current connection once sent (0: not sent on it yet).
  let outbox = [];
  const unconfirmed = new Map();  // content -> own records not yet seen back from the relay
  function recordOwn(kind, stroke, point) {
    const record = { kind: kind, stroke: stroke, key: provisionalKey(), point: point };
    const content = contentOf(kind, stroke, point);
    if (!unconfirmed.has(content)) unconfirmed.set(content, []);
    unconfirmed.get(content).push(record);
    show(record);
    let line;
    if (kind === 'point') line = pointLine(stroke, point);
    else if (kind === 'clear') line = '{"type":"clear"}';
    else line = '{"type":"' + kind + '","stroke":"' + stroke + '"}';
    outbox.push({ line: line, record: record, frame: 0 });
    flushOutbox();
    updateStatus();
  }

  // ---- Events from the relay ----
  function receiveEvent(message) {
    const replica = String(message.replica);
    const seq = message.seq;
    if (!hold(replica, seq)) return;   // a duplicate
    if (message.lamport > maxLamport) maxLamport = message.lamport;
    const key = [message.lamport, message.time, replica, seq];
    const kind = message.type;
    const stroke = kind === 'clear' ? null : normaliseID(message.stroke);
    let point;
    if (kind === 'point') {
      point = { x: message.x, y: message.y, color: message.color.toUpperCase(), width: message.width };
      if (message.pressure !== undefined) point.pressure = message.pressure;
      if (message.t !== undefined) point.t = message.t;
    }
    // One of this page's own events, back in a catch-up: give its record the real key
    // instead of drawing it twice, and never send it again.
    const waiting = catchingUp ? unconfirmed.get(contentOf(kind, stroke, point)) : undefined;
    if (waiting && waiting.length) {
      const record = waiting.shift();
      unapply(record);
      record.key = key;
      outbox = outbox.filter((entry) => entry.record !== record || entry.frame !== 0);
      show(record);
      return;
    }
    show({ kind: kind, stroke: stroke, key: key, point: point });
  }

  // ---- The connection ----
  let socket = null;
  let live = false;
  let framesSent = 0;
  let backoff = 250;
  let problem = '';
  let problemUntil = 0;
  const statusView = document.getElementById('status');
  function unackedCount() { return outbox.length; }
  function updateStatus() {
    let text;
    if (performance.now() < problemUntil) text = problem;
    else if (!socket) text = problem ? problem + ' · reconnecting' : 'offline · reconnecting';
    else if (!live) text = 'connecting';
    else text = 'live';
    if (outbox.length) text += ' · ' + outbox.length + ' unacked';
    statusView.textContent = text;
    statusView.className = performance.now() < problemUntil || !socket ? 'bad' : '';
  }
  function report(text, seconds) {
    problem = text;
    problemUntil = performance.now() + seconds * 1000;
    updateStatus();
    setTimeout(updateStatus, seconds * 1000 + 10);
  }
  function flushOutbox() {
    // Frames wait for the catch-up: it tells which of them the journal holds already.
    if (!socket || !live) return;
    for (const entry of outbox) {
      if (entry.frame !== 0) continue;
      framesSent += 1;
      entry.frame = framesSent;
      socket.send(entry.line);
    }
  }
  function handleMessage(text) {
    let message;
    try { message = JSON.parse(text); } catch (e) { report('unreadable message from the relay', 5); return; }
    switch (message.type) {
      case 'ack':
        // Frames 1…upTo are handled (refused ones were answered by an error already).
        outbox = outbox.filter((entry) => entry.frame === 0 || entry.frame > message.upTo);
        updateStatus();
        return;
      case 'error':
        if (message.frame !== undefined) {
          // Nothing of that frame was recorded: take it off the drawing and the queue.
          const entry = outbox.find((e) => e.frame === message.frame);
          if (entry) {
            outbox.splice(outbox.indexOf(entry), 1);
            unapply(entry.record);
            const list = unconfirmed.get(contentOf(entry.record.kind, entry.record.stroke, entry.record.point));
            if (list && list.indexOf(entry.record) >= 0) list.splice(list.indexOf(entry.record), 1);
            scheduleRedraw();
          }
          report('frame refused: ' + message.message, 8);
        } else {
          // The relay closes the connection after this; the close handler reconnects.
          problem = 'relay: ' + message.message;
          report(problem, 8);
        }
        return;
      case 'caughtUp':
        catchingUp = false;
        live = true;
        backoff = 250;
        flushOutbox();
        scheduleRedraw();
        updateStatus();
        return;
      default:
        if (typeof message.replica === 'string' && typeof message.seq === 'number') receiveEvent(message);
    }
  }
  function connect() {
    let opened;
    try { opened = new WebSocket(socketURL); } catch (e) { report(String(e), 5); retryLater(); return; }
    socket = opened;
    live = false;
    catchingUp = true;
    framesSent = 0;
    for (const entry of outbox) entry.frame = 0;
    updateStatus();
    opened.onopen = () => { opened.send(helloText()); };
    opened.onmessage = (event) => { if (socket === opened) handleMessage(event.data); };
    opened.onclose = () => {
      if (socket !== opened) return;
      socket = null;
      live = false;
      updateStatus();
      retryLater();
    };
    opened.onerror = () => { /* onclose follows */ };
  }
  function retryLater() {
    const delay = backoff;
    backoff = Math.min(backoff * 2, 5000);
    setTimeout(connect, delay);
  }

  // ---- Pointer input ----
  const colorInput = document.getElementById('color');
  const widthInput = document.getElementById('width');
  const active = new Map();       // pointerId -> {stroke, start}
  const ownStrokes = [];          // this page's strokes, newest last (for Undo)
  function newStrokeID() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  }
  const round = (value, digits) => { const f = Math.pow(10, digits); return Math.round(value * f) / f; };
  function sample(drawing, e) {
    const point = {
      x: round(e.clientX, 2),
      y: round(e.clientY, 2),
      color: colorInput.value.toUpperCase() + 'FF',
      width: Number(widthInput.value),
    };
    // A mouse's 0.5 is no measurement: leave pressure out for it.
    if (e.pointerType !== 'mouse') point.pressure = round(e.pressure, 4);
    point.t = round(Math.max(0, e.timeStamp - drawing.start) / 1000, 4);
    recordOwn('point', drawing.stroke, point);
  }
  canvas.addEventListener('pointerdown', (e) => {
    if (e.pointerType === 'mouse' && e.button !== 0) return;
    if (active.has(e.pointerId)) return;
    try { canvas.setPointerCapture(e.pointerId); } catch (err) { /* the pointer is gone already */ }
    const drawing = { stroke: newStrokeID(), start: e.timeStamp };
    active.set(e.pointerId, drawing);
    ownStrokes.push(drawing.stroke);
    sample(drawing, e);
    e.preventDefault();
  });
  canvas.addEventListener('pointermove', (e) => {
    const drawing = active.get(e.pointerId);
    if (!drawing) return;
    const samples = typeof e.getCoalescedEvents === 'function' ? e.getCoalescedEvents() : [];
    for (const c of (samples.length ? samples : [e])) sample(drawing, c);
  });
  function finish(e) {
    const drawing = active.get(e.pointerId);
    if (!drawing) return;
    active.delete(e.pointerId);
    recordOwn('end', drawing.stroke);
  }
  canvas.addEventListener('pointerup', finish);
  canvas.addEventListener('pointercancel', finish);
  document.getElementById('clear').addEventListener('click', () => recordOwn('clear', null));
  document.getElementById('undo').addEventListener('click', () => {
    while (ownStrokes.length) {
      const id = ownStrokes.pop();
      const s = strokes.get(id);
      if (s && s.points.length && isVisible(s)) { recordOwn('undo', id); return; }
    }
  });
  window.addEventListener('resize', resize);

  // For tests: counts only, nothing that could change the board.
  window.strokeJournalState = function () {
    let visibleStrokes = 0, strokeCount = 0;
    for (const s of strokes.values()) {
      if (!s.points.length) continue;
      strokeCount += 1;
      if (isVisible(s)) visibleStrokes += 1;
    }
    return { strokes: strokeCount, points: pointCount, visibleStrokes: visibleStrokes, live: live, unacked: unackedCount() };
  };

  resize();
  connect();
})();
</script>
</body>
</html>
"""#
}
