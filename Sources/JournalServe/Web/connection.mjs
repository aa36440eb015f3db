// The relay: the socket, its hello and catch-up (in blocks, decoded in workers, or in text), own
// events queued until echoed or acknowledged (named and signed in native mode), events from
// others folded, refusals decided by their code (docs/PROTOCOL.md, "Error codes"), the status line.
import { Segments, blocksReadable, board, forgetInvitation, invitation, invitationAttempts, plus, redemption, setRedemption, socketURL, statusView, token } from './page.mjs';
import { apply, compareKeys, contentOf, envelopeOf, held, hold, holdRange, isVisible, normaliseID, pointLine, pointsOf, setProvisionalKey, strokes, unapply, zOrder, zOrderStale } from './fold.mjs';
import { bytesOfHex, concat, hexOf, makeRedemption } from './identity.mjs';
import { drawLastSegment, redrawNow, scheduleRedraw, show } from './view.mjs';
import { disableDrawing } from './tools.mjs';
import { historyCut } from './history.mjs';
import { forgetOthers, receivePresence, sendPresence } from './presence.mjs';

// By hand, not JSON.stringify: seqs past 2^53 are BigInts. Always "echo": the page's own
// events come back with their ids and clocks (their final place in the fold).
// A hello longer than the relay's frame limit (64 KiB) is refused, on every reconnection:
// a board of thousands of replicas locked its pages out, their strokes never resent. Past
// the limit the hello names the replicas the page holds most of (the relay honours each
// replica's 64 longest ranges anyway); what it leaves out comes again and is dropped by id.
const MAX_HELLO_BYTES = 65536;
const HELLO_RANGES_PER_REPLICA = 64;
function helloText(proof) {
  const entries = [];
  for (const [replica, ranges] of held) {
    const kept = ranges.length <= HELLO_RANGES_PER_REPLICA ? ranges
      : ranges.slice().sort((a, b) => (b[1] - b[0] > a[1] - a[0] ? 1 : b[1] - b[0] < a[1] - a[0] ? -1 : 0))
        .slice(0, HELLO_RANGES_PER_REPLICA).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    let count = 0;
    for (const r of kept) count += Number(r[1] - r[0]) + 1;
    const text = JSON.stringify(replica) + ':[' + kept.map((r) => '[' + r[0] + ',' + r[1] + ']').join(',') + ']';
    entries.push({ text, count });
  }
  const tail = '}' + (useBlocks ? ',"blocks":true' : '') + ',"echo":true,"presence":true' +
    (token ? ',"token":' + JSON.stringify(token) : '') +
    (ownKey ? ',"replica":"' + ownKey.replica + '","key":"' + ownKey.publicHex + '"' : '') +
    (ownKey && redemption ? ',"redeem":"' + redemption + '"' : '') +
    (proof ? ',"proof":"' + proof + '"' : '') + '}';
  const head = '{"type":"hello","have":{';
  let total = head.length + tail.length + entries.reduce((sum, e) => sum + e.text.length + 1, 0);
  if (total > MAX_HELLO_BYTES) {
    entries.sort((a, b) => b.count - a.count);
    while (entries.length > 0 && total > MAX_HELLO_BYTES) total -= entries.pop().text.length + 1;
  }
  return head + entries.map((e) => e.text).join(',') + tail;
}


export let ownKey = null;              // {pair, publicHex, replica} once made or found
let ownNext = 1;                // the next seq to name
let lamportSeen = 0;            // the largest Lamport clock folded (a Number or a BigInt)

// The hello that answers a socket's challenge: its nonce signed with this page's key.
async function answerChallenge(opened, nonce) {
  // The redemption is made anew for each hello: its time must be near the relay's.
  if (invitation) {
    try { setRedemption(await makeRedemption(ownKey)); } catch (e) { setRedemption(''); report('the invitation in the address is not one: ' + e, 30); }
  }
  const signed = concat([new TextEncoder().encode('StrokeJournal hello proof v1\0' + board + '\0'), bytesOfHex(nonce)]);
  let proof;
  try {
    proof = hexOf(new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, ownKey.pair.privateKey, signed)));
  } catch (e) {
    report('could not sign the challenge: ' + e, 8);
    return;
  }
  if (socket === opened && ownKey) {
    opened.send(helloText(proof));
    challengesAnswered += 1;
  }
}

// Wall times in steps of 8 ms, as every writer records them (Swift's Event.wallTimeStep): the
// milliseconds of a point's send are jitter, costly to store; the pen's own timing is in t.
const WALL_TIME_STEP = 8;
const wallTimeNow = () => Math.floor(Date.now() / WALL_TIME_STEP) * WALL_TIME_STEP;

// The line of an own event with its envelope, as the relay writes event messages.
function withEnvelope(line, record) {
  return line.slice(0, -1) + ',"replica":"' + record.replica + '","seq":' + record.seq +
    ',"lamport":' + record.lamport + ',"time":' + record.time + '}';
}
// Names the outbox's unnamed own events, in the order made (once caught up: the catch-up
// says which seqs the relay holds of this replica already).
function nameOwnEvents() {
  for (const entry of outbox) {
    if (!entry.native || entry.named) continue;
    const base = lamportSeen > ownLamport ? lamportSeen : ownLamport;
    const final = { lamport: plus(base, 1), time: wallTimeNow(), replica: ownKey.replica, seq: ownNext };
    ownNext = plus(ownNext, 1);
    ownLamport = final.lamport;
    settle(entry.record, final);
    entry.named = true;
    entry.line = withEnvelope(entry.body, entry.record);
    ownBySeq.set(String(final.seq), entry);
  }
}
let ownLamport = 0;
export let nativeFramesSent = 0;
export let challengesAnswered = 0;
const ownBySeq = new Map();     // String(seq) -> outbox entry named and not acknowledged
// Frames of at most 200 events and 60,000 bytes (the relay takes 64 KiB), signed in order:
// a frame whose signing ends after its connection closed is not sent (the next connection
// resends its events after its catch-up).
let signing = Promise.resolve();
function sendOwnEvents() {
  nameOwnEvents();
  const opened = socket;
  const batch = [];
  let bytes = 0;
  const flushBatch = () => {
    if (!batch.length) return;
    const lines = batch.map((entry) => entry.line);
    batch.length = 0;
    bytes = 0;
    signing = signing.then(async () => {
      const body = lines.join('\n');
      const label = new TextEncoder().encode('StrokeJournal native text v1\0' + board + '\0');
      const bodyBytes = new TextEncoder().encode(body);
      const message = new Uint8Array(label.length + bodyBytes.length);
      message.set(label);
      message.set(bodyBytes, label.length);
      const signature = new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, ownKey.pair.privateKey, message));
      if (socket !== opened || !live) return;
      opened.send('{"type":"native","signature":"' + hexOf(signature) + '"}\n' + body);
      nativeFramesSent += 1;
    }).catch((e) => report('could not sign: ' + e, 8));
  };
  for (const entry of outbox) {
    if (!entry.native || entry.frame !== 0) continue;
    entry.frame = 1;
    if (batch.length === 200 || bytes + entry.line.length > 60000) flushBatch();
    batch.push(entry);
    bytes += entry.line.length + 1;
  }
  flushBatch();
}
// An own event came back (a catch-up, an echo) before its ack: the relay holds it. The
// same event leaves the outbox; a different one under its id (this key's events from a
// tab closed before its last events were acknowledged, stored as this one named its
// own) takes its place, and this page's event is named anew after it.
function ownEventBack(record) {
  const entry = ownBySeq.get(String(record.seq));
  if (!entry) return false;
  ownBySeq.delete(String(record.seq));
  outbox.splice(outbox.indexOf(entry), 1);
  if (contentOf(record.kind, record.stroke, record.point) !== entry.content) {
    unapply(entry.record);
    entry.named = false;
    setProvisionalKey(entry.record);
    entry.frame = 0;
    outbox.push(entry);
    apply(entry.record);
    scheduleRedraw();
    return false;
  }
  updateStatus();
  return true;
}
function acknowledgeOwn(upTo) {
  outbox = outbox.filter((entry) => {
    if (!entry.native || !entry.named || entry.record.seq > upTo) return true;
    ownBySeq.delete(String(entry.record.seq));
    hold(ownKey.replica, entry.record.seq);
    return false;
  });
  updateStatus();
}
// The relay refused this page's replica (its key is no member of a board with membership,
// or this relay cannot host it): text mode from now on, for this page; its events not yet
// acknowledged are sent again as text (the relay names them).
function leaveNativeMode() {
  ownKey = null;
  for (const entry of outbox) {
    if (!entry.native) continue;
    entry.native = false;
    entry.frame = 0;
    entry.line = entry.body;
    if (!unconfirmed.has(entry.content)) unconfirmed.set(entry.content, []);
    unconfirmed.get(entry.content).push(entry.record);
  }
  ownBySeq.clear();
}


export let catchingUp = true;
export let catchUpStarted = 0;

// ---- Own events: drawn at once, queued until echoed or acknowledged ----
// outbox: entries {line, record, content, frame} in the order made; frame is its number on
// the current connection once sent (0: not sent on it yet). Sent entries come first, in
// frame order, and the relay echoes their events in that order: the next echo is always
// the first entry's (an entry leaves when its echo, its error or an ack comes).
let outbox = [];
export const unconfirmed = new Map();  // content -> own records not yet seen back from the relay
function forget(content, record) {
  const list = unconfirmed.get(content);
  if (!list || list.indexOf(record) < 0) return;
  list.splice(list.indexOf(record), 1);
  if (!list.length) unconfirmed.delete(content);
}
export function recordOwn(kind, stroke, point) {
  if (viewOnly) return;
  const record = { kind: kind, stroke: stroke, lamport: 0, time: 0, replica: '', seq: 0, point: point };
  setProvisionalKey(record);
  const content = contentOf(kind, stroke, point);
  if (!ownKey) {
    if (!unconfirmed.has(content)) unconfirmed.set(content, []);
    unconfirmed.get(content).push(record);
  }
  if (catchingUp && record.kind === 'point') {
    // On top of what is drawn so far; the catch-up's redraw puts it in its place.
    apply(record);
    drawLastSegment(strokes.get(stroke));
  } else {
    show(record);
  }
  let line;
  if (kind === 'point') line = pointLine(stroke, point);
  else if (kind === 'clear') line = '{"type":"clear"}';
  else line = '{"type":"' + kind + '","stroke":"' + stroke + '"}';
  if (ownKey) outbox.push({ native: true, body: line, line: null, record: record, content: content, frame: 0 });
  else outbox.push({ line: line, record: record, content: content, frame: 0 });
  flushOutbox();
  updateStatus();
}

// ---- Events from the relay ----
// An event message (text): the same fold as a decoded block's events below. `envelope`:
// its replica, seq, lamport and time, exact (envelopeOf).
function receiveEvent(message, envelope) {
  const replica = String(envelope.replica);
  const seq = envelope.seq;
  if (!hold(replica, seq)) return;   // a duplicate
  const kind = message.type;
  const stroke = kind === 'clear' ? null : normaliseID(message.stroke);
  let point;
  if (kind === 'point') {
    point = { x: message.x, y: message.y, color: message.color.toUpperCase(), width: message.width };
    if (message.pressure !== undefined) point.pressure = message.pressure;
    if (message.t !== undefined) point.t = message.t;
  }
  receive({ kind: kind, stroke: stroke, lamport: envelope.lamport, time: envelope.time, replica: replica, seq: seq, point: point });
}
// An event held just now (never before): folded, or matched with one of this page's own.
function receive(record) {
  if (record.lamport > lamportSeen) lamportSeen = record.lamport;
  if (ownKey && record.replica === ownKey.replica) {
    if (ownEventBack(record)) return;
    if (!(record.seq < ownNext)) ownNext = plus(record.seq, 1);
  }
  if (catchingUp) {
    // One of this page's own events, back in a catch-up (recorded, its echo lost with the
    // connection): give its record the real key instead of drawing it twice, and never
    // send it again.
    if (unconfirmed.size) {
      const content = contentOf(record.kind, record.stroke, record.point);
      const waiting = unconfirmed.get(content);
      if (waiting) {
        const own = waiting[0];
        forget(content, own);
        settle(own, record);
        own.settled = true;           // its frame leaves the outbox at caughtUp
        return;
      }
    }
  } else if (outbox.length && outbox[0].frame !== 0) {
    // Live: the echo of the first frame in flight, unless another client's event came
    // first (an echo always spells what was sent, as a catch-up does).
    const entry = outbox[0], own = entry.record;
    if (record.kind === own.kind && record.stroke === own.stroke &&
        contentOf(record.kind, record.stroke, record.point) === entry.content) {
      outbox.shift();
      forget(entry.content, own);
      settle(own, record);
      updateStatus();
      return;
    }
  }
  show(record);
}
// One of this page's own records takes the key the journal gave its event (`final`), and
// the fold what follows from it (clear, undo, erase: the latest by key). A point that keeps
// its place (the usual case: a stroke being drawn) changes nothing on screen.
function settle(own, final) {
  const inPlace = own.kind === 'end' || (own.kind === 'point' && keepsItsPlace(own, final));
  if (!inPlace) unapply(own);
  own.lamport = final.lamport;
  own.time = final.time;
  own.replica = final.replica;
  own.seq = final.seq;
  if (!inPlace) show(own);
}
// Whether a point record with key `final` instead of its own stays where it is among its
// stroke's points and, when it is the first, keeps its stroke's place and visibility.
function keepsItsPlace(own, final) {
  const s = strokes.get(own.stroke);
  const points = s ? pointsOf(s) : [];
  const at = points.lastIndexOf(own);
  if (at < 0) return false;
  if (at > 0 && compareKeys(points[at - 1], final) >= 0) return false;
  if (at + 1 < points.length && compareKeys(final, points[at + 1]) >= 0) return false;
  if (at > 0) return true;
  if (zOrderStale) return false;
  const z = zOrder.lastIndexOf(s);
  if (z < 0) return false;
  if (z > 0 && compareKeys(zOrder[z - 1].first, final) >= 0) return false;
  if (z + 1 < zOrder.length && compareKeys(final, zOrder[z + 1].first) >= 0) return false;
  return isVisible(s, own) === isVisible(s, final);
}
// An event of a decoded block, read from the block's columns: one small object per event
// where a record of its own, its key and its point would hold a dozen values (each number
// boxed apart by the engine), which made most of the time and garbage of a big catch-up.
// Reads as the records and point objects above do; a point is its own point.
class BlockRecord {
  constructor(block, i, p, kind, stroke) { this.block = block; this.i = i; this.p = p; this.kind = kind; this.stroke = stroke; }
  get lamport() { return this.block.lamports[this.i]; }
  get time() { return this.block.walls[this.i]; }
  get replica() { return this.block.replica; }
  get seq() { return this.block.exact ? this.block.firstSeq + this.i : plus(this.block.firstSeq, this.i); }
  get point() { return this.kind === 'point' ? this : undefined; }
  get x() { return this.block.xs[this.p]; }
  get y() { return this.block.ys[this.p]; }
  get color() { return this.block.styles[this.block.styleRefs[this.p]].color; }
  get width() { return this.block.styles[this.block.styleRefs[this.p]].width; }
  get pressure() { return this.block.flags[this.p] & 1 ? this.block.pressures[this.p] : undefined; }
  get t() { return this.block.flags[this.p] & 2 ? this.block.times[this.p] : undefined; }
}
// A catch-up message in blocks, decoded (Segments.decode): its events in seq order, as
// the relay's event messages would have brought them. Ids, colours and numbers come out
// spelled as receiveEvent spells them, so own events are recognised the same way.
function receiveBlocks(message) {
  const replica = message.replica;
  for (const block of message.blocks) {
    const first = block.firstSeq, count = block.count;
    block.replica = replica;
    block.exact = typeof first === 'number' && first + count <= Number.MAX_SAFE_INTEGER;
    // Usually nothing of a block is held: one range then, not one per event.
    const fresh = holdRange(replica, first, plus(first, count - 1));
    const kinds = block.kinds, names = Segments.kindNames;
    for (let i = 0, p = 0; i < count; i++) {
      const kind = kinds[i];
      const record = new BlockRecord(block, i, kind === 0 ? p++ : -1, names[kind], kind === 5 ? null : block.strokes[block.strokeRefs[i]]);
      if (!fresh && !hold(replica, record.seq)) continue;   // a duplicate
      receive(record);
    }
    // Records keep reading their clocks and values; nothing else of the block is needed.
    block.kinds = block.strokeRefs = null;
  }
}

// ---- The connection ----
export let socket = null;
export let live = false;
let framesSent = 0;
let backoff = 250;
// Catch-up in blocks until a message of them is refused; text from then on (a relay that
// sent one damaged or unreadable message would likely send another).
export let useBlocks = blocksReadable;
export const received = { text: 0, binary: 0 };
// performance.now() when the latest socket was opened, caught up, and drawn after that;
// how long the latest full redraw took (ms).
export const timing = { opened: 0, caughtUp: 0, drawn: 0, redraw: 0 };
let problem = '';
// The code of the relay's last error on this connection, once one came.
let connectionRefused = '';
let problemUntil = 0;
// Set when the relay refused the token: the page stops reconnecting (it would be refused
// again, forever) and says why, until it is reloaded.
export let stopped = '';
// Set when the relay refused a frame because this connection may only view: the drawing
// tools are disabled, nothing more is sent.
export let viewOnly = false;
export function unackedCount() { return outbox.length; }
export function updateStatus() {
  let text;
  if (stopped) text = stopped;
  else if (performance.now() < problemUntil) text = problem;
  else if (!socket) text = problem ? problem + ' · reconnecting' : 'offline · reconnecting';
  else if (!live) text = 'connecting';
  else text = 'live';
  if (historyCut !== null && !stopped) text = 'showing the past (Live to draw) · ' + text;
  if (viewOnly && !stopped) text = 'view only · ' + text;
  if (outbox.length) text += ' · ' + outbox.length + ' unacked';
  statusView.textContent = text;
  statusView.title = text;
  statusView.className = stopped ? 'bad stopped' : performance.now() < problemUntil || !socket ? 'bad' : '';
}
function stop(reason, code) {
  stopped = reason + (code === 'unauthorized' ? ' · not reconnecting (open the page again with a valid #token=…)' : ' · not reconnecting');
  // Nothing drawn now would reach anyone: the tools go, as for a viewer.
  becomeViewOnly();
  updateStatus();
}
// The relay refused a frame because this connection may only view: so will it refuse every
// other. Frames in flight get their own refusals; the ones not sent yet leave at once.
function becomeViewOnly() {
  if (viewOnly) return;
  viewOnly = true;
  disableDrawing();
  outbox = outbox.filter((entry) => {
    if (entry.frame !== 0) return true;
    unapply(entry.record);
    forget(entry.content, entry.record);
    return false;
  });
  scheduleRedraw();
  updateStatus();
}
export function report(text, seconds) {
  problem = text;
  problemUntil = performance.now() + seconds * 1000;
  updateStatus();
  setTimeout(updateStatus, seconds * 1000 + 10);
}
function flushOutbox() {
  // Frames wait for the catch-up: it tells which of them the journal holds already.
  if (!socket || !live) return;
  if (ownKey) { sendOwnEvents(); return; }
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
    case 'ack': {
      if (message.replica !== undefined) {
        // Native mode: this page's events 1…upTo are durable.
        if (ownKey && message.replica === ownKey.replica) acknowledgeOwn(message.upTo);
        return;
      }
      // Frames 1…upTo are handled (refused ones were answered by an error already), and
      // each recorded one was echoed before this: its entry left then. One still here came
      // back in a spelling not recognised, and is drawn as received: its provisional
      // record goes (kept, it would stay on top of the fold for good).
      let unmatched = false;
      outbox = outbox.filter((entry) => {
        if (entry.frame === 0 || entry.frame > message.upTo) return true;
        unapply(entry.record);
        forget(entry.content, entry.record);
        unmatched = true;
        return false;
      });
      if (unmatched) scheduleRedraw();
      updateStatus();
      return;
    }
    case 'error': {
      // The code decides (docs/PROTOCOL.md, "Error codes"); the words are for the person.
      const code = typeof message.code === 'string' ? message.code : 'unspecified';
      const said = String(message.message);
      if (message.frame !== undefined) {
        // Nothing of that frame was recorded: take it off the drawing and the queue.
        const entry = outbox.find((e) => e.frame === message.frame);
        if (entry) {
          outbox.splice(outbox.indexOf(entry), 1);
          unapply(entry.record);
          forget(entry.content, entry.record);
          scheduleRedraw();
        }
        if (code === 'view-only') becomeViewOnly();
        report('frame refused: ' + said, code === 'view-only' ? 5 : 8);
        return;
      }
      // About the connection: the relay closes it after this, and the close handler
      // reconnects unless this says otherwise.
      problem = 'relay: ' + said;
      connectionRefused = code;
      refusedConnection(code);
      return;
    }
    case 'presence':
      receivePresence(message);
      return;
    case 'challenge':
      if (ownKey && socket && /^[0-9a-f]{64}$/.test(String(message.nonce))) answerChallenge(socket, message.nonce);
      return;
    case 'caughtUp':
      // A hello that carried a redemption was accepted: the invitation is used.
      if (redemption && ownKey) forgetInvitation();
      // A connection that may only view says so now, not at the first stroke.
      if (message.viewOnly === true) becomeViewOnly();
      catchingUp = false;
      live = true;
      backoff = 250;
      timing.caughtUp = performance.now();
      // Frames are sent only once caught up: the settled ones were never sent on this socket.
      outbox = outbox.filter((entry) => !entry.record.settled);
      flushOutbox();
      redrawNow();
      updateStatus();
      sendPresence();
      return;
    default: {
      // The envelope read from the text, exact; JSON.parse's rounded numbers only if the
      // layout is not the relay's.
      const envelope = envelopeOf(text) ||
        (typeof message.replica === 'string' && typeof message.seq === 'number' ? message : null);
      if (envelope) receiveEvent(message, envelope);
    }
  }
}
// Catch-up messages are decoded in workers (segment-worker.js, which loads the same
// reader), so the main thread folds one message while the next ones are decoded; where no
// worker can be made, or one fails, on the main thread. Columns come back transferred, not
// copied.
export const decodeBlocks = (() => {
  if (!blocksReadable) {
    const none = () => Promise.reject(new Error('this browser cannot read catch-up blocks'));
    none.where = () => 'none';
    return none;
  }
  const waiting = new Map();
  // Two workers take messages in turn: decoding, not folding, is what a catch-up in blocks
  // waits for, and two cores are the least a page can expect.
  let workers = [], next = 0;
  function fallBack() {
    for (const worker of workers) worker.terminate();
    workers = [];
    for (const [, job] of waiting) Segments.decode(job.bytes).then(job.resolve, job.reject);
    waiting.clear();
  }
  try {
    for (let n = 0; n < 2; n++) {
      const worker = new Worker('/assets/segment-worker.js');
      worker.onmessage = (event) => {
        const job = waiting.get(event.data.id);
        if (!job) return;
        waiting.delete(event.data.id);
        if (event.data.error !== undefined) job.reject(new Segments.SegmentMessageError(event.data.error));
        else job.resolve(event.data.message);
      };
      worker.onerror = fallBack;
      workers.push(worker);
    }
  } catch (e) {
    workers = [];
  }
  const decode = function (bytes) {
    if (!workers.length) return Segments.decode(bytes);
    return new Promise((resolve, reject) => {
      next += 1;
      waiting.set(next, { bytes: bytes, resolve: resolve, reject: reject });
      workers[next % workers.length].postMessage({ id: next, bytes: bytes });
    });
  };
  decode.where = () => (workers.length ? 'worker' : 'page');
  return decode;
})();

// A damaged catch-up message is refused whole, with everything after it on its connection
// (its events would follow a hole): the page reconnects and catches up in text, its own
// unacknowledged frames still queued.
function refuseBlocks(opened, error) {
  useBlocks = false;
  report('catch-up in blocks refused (' + (error && error.message || error) + '); catching up in text', 10);
  leave(opened);
}
// Gives the socket up and connects again: what comes on it from now on is ignored, and its
// close (which a stopped relay may never answer) is not waited for.
function leave(opened) {
  socket = null;
  live = false;
  try { opened.close(); } catch (e) { /* closed already */ }
  retryLater();
}
// Messages of one connection, handled strictly in arrival order: a binary message is
// decoded asynchronously, and what came after it (more blocks, caughtUp, live events)
// waits for it. Entries: {text} or {pending, message, error}. `afterQueued(then)`: `then`
// runs once every message that came before it is handled (at once if none waits), so a
// close is handled after the error the relay sent before it, even behind a block still
// being decoded.
function inbox(opened) {
  const queue = [];
  let head = 0;
  let drained = null;
  function pump() {
    while (head < queue.length && socket === opened) {
      const entry = queue[head];
      if (entry.pending) return;
      queue[head++] = null;
      if (entry.error) { refuseBlocks(opened, entry.error); return; }
      if (entry.message) { receiveBlocks(entry.message); scheduleRedraw(); } else handleMessage(entry.text);
    }
    if (head === queue.length) {
      queue.length = 0; head = 0;
      const then = drained;
      drained = null;
      if (then) then();
    }
  }
  function deliver(data) {
    if (socket !== opened) return;
    heardAt = performance.now();
    if (typeof data === 'string') {
      received.text += data.length;
      if (head === queue.length) handleMessage(data); else queue.push({ text: data });
      return;
    }
    received.binary += data.byteLength;
    const entry = { pending: true, message: null, error: null };
    queue.push(entry);
    decodeBlocks(new Uint8Array(data))
      .then((message) => { entry.message = message; }, (error) => { entry.error = error; })
      .then(() => { entry.pending = false; pump(); });
  }
  deliver.afterQueued = (then) => {
    if (head === queue.length || socket !== opened) then(); else drained = then;
  };
  return deliver;
}
// A relay that stopped (a frozen process, a paused machine, a network cut) keeps the socket
// open and says nothing. While frames wait for their ack, a live relay says something at
// least every half second (its last ack again: docs/PROTOCOL.md, "Signs of life"), so a page
// that hears nothing for SILENT_RELAY_MS while frames wait drops the socket and reconnects
// (through the balancer, to a node that answers), sending them again under the same ids.
const SILENT_RELAY_MS = 2000;
let heardAt = 0;        // performance.now() of the latest message
let silentSince = 0;    // since when frames have waited with nothing heard
function watchForSilence() {
  const now = performance.now();
  if (!socket || !live || !outbox.some((entry) => entry.frame !== 0)) { silentSince = now; return; }
  if (heardAt > silentSince) silentSince = heardAt;
  if (now - silentSince < SILENT_RELAY_MS) return;
  leave(socket);
  forgetOthers();
  report('the relay said nothing for ' + SILENT_RELAY_MS / 1000 + ' s with strokes waiting: reconnecting', 8);
}
// The page draws with `key` (its own replica), or in text mode without one.
export function start(key) {
  ownKey = key;
  connect();
  setInterval(watchForSilence, 250);
}
function connect() {
  let opened;
  // With a key of its own the page asks for a challenge (?challenge): its hello proves the
  // key (docs/PROTOCOL.md, "Proving a key"), so nobody who merely knows it can take its
  // replica's connection over.
  try { opened = new WebSocket(socketURL + (ownKey ? '&challenge' : '')); } catch (e) { report(String(e), 5); retryLater(); return; }
  opened.binaryType = 'arraybuffer';
  socket = opened;
  live = false;
  catchingUp = true;
  catchUpStarted = performance.now();
  timing.opened = catchUpStarted;
  timing.caughtUp = timing.drawn = 0;
  framesSent = 0;
  for (const entry of outbox) entry.frame = 0;
  updateStatus();
  opened.onopen = () => { if (!ownKey) opened.send(helloText()); };
  const deliver = inbox(opened);
  opened.onmessage = (event) => deliver(event.data);
  connectionRefused = '';
  opened.onclose = (event) => deliver.afterQueued(() => {
    if (socket !== opened) return;
    const code = CLOSE_CODES[event.code];
    if (code && !connectionRefused) {
      problem = 'relay closed the connection (' + code + ')';
      connectionRefused = code;
      refusedConnection(code);
    }
    socket = null;
    live = false;
    forgetOthers();
    updateStatus();
    if (!stopped) retryLater();
  });
  opened.onerror = () => { /* onclose follows */ };
}
// A connection's last error, by its code: what the page does before the close handler
// reconnects (or does not: `stop`).
function refusedConnection(code) {
  switch (code) {
    case 'invitation-pending':
      // Not on this relay yet (its node syncs every few seconds): the page loads again, a
      // few times, the code kept for the tab; then it is refused for good.
      if (ownKey && invitationAttempts() < 5) {
        report(problem + ': trying again in 3 s', 30);
        setTimeout(() => location.reload(), 3000);
        return;
      }
      forgetInvitation();
      break;
    case 'invitation-refused':
      // Used, expired, withdrawn, another board's: it never will be redeemed.
      forgetInvitation();
      break;
    case 'view-only':
    case 'not-a-member':
      break;
    case 'native-limit':
      // Native replicas are full here: text mode still draws (stored as the relay's).
      leaveNativeMode();
      report(problem, 8);
      return;
    case 'refused-frame':
      // This page's own frame was refused: text mode draws on; without a key, a page that
      // sends the same again is refused again.
      if (ownKey) { leaveNativeMode(); report(problem, 8); return; }
      stop(problem, code);
      report(problem, 8);
      return;
    case 'bad-request':
      // A hello refused (a proof, a redemption's clock): draw as a viewer with the reason.
      if (ownKey) break;
      stop(problem, code);
      report(problem, 8);
      return;
    case 'unauthorized':
    case 'forbidden':
    case 'invalid-board-name':
      stop(problem, code);
      report(problem, 8);
      return;
    default:
      // Later (capacity, a relay restarting, a conflict the next catch-up settles): the
      // close handler reconnects.
      report(problem, 8);
      return;
  }
  // The key may not draw here: the page reconnects as a viewer (text mode would draw as
  // the relay, past the membership); the message names the key and the command that grants it.
  becomeViewOnly();
  leaveNativeMode();
  report(problem, 30);
}
// The relay's close codes (docs/PROTOCOL.md, "Error codes"): what a close means when its last
// error message was lost on the way.
const CLOSE_CODES = {
  4400: 'bad-request', 4401: 'unauthorized', 4403: 'forbidden', 4404: 'invalid-board-name',
  4405: 'view-only', 4406: 'not-a-member', 4408: 'too-slow', 4409: 'replica-conflict',
  4410: 'invitation-refused', 4412: 'replaced', 4413: 'native-limit', 4421: 'not-owner',
  4422: 'refused-frame', 4425: 'invitation-pending', 4429: 'at-capacity', 4503: 'unavailable',
};
function retryLater() {
  const delay = backoff;
  backoff = Math.min(backoff * 2, 5000);
  setTimeout(connect, delay);
}
