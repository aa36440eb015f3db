// What the page holds, folded as `journal` folds it (FORMAT.md §7.3, §9.1): order keys, the
// strokes with their points sorted by key, visibility by the latest undo/redo/erase/clear, the
// seq ranges held per replica (what a hello names), and one spelling per event content (the
// canonical lines `journal record` reads). No DOM, no socket.
import { plus } from './page.mjs';

// ---- Order keys (FORMAT.md §7.3): (lamport, wall time, replica hex, seq) of a record ----
// Events of this page not yet seen back from the relay have no key; they get a provisional
// one after every real key, in the order they were made (+Infinity, +Infinity, '', local
// counter): the relay records them after everything it holds when they reach it. Their
// echo (or, when a connection was lost first, the catch-up) gives them their real key.
// Integers are Numbers when safe, BigInts past 2^53 (exact, from blocks and from the
// envelope of event messages alike): < and > compare the two kinds exactly, === holds
// because a value has one form only, and a key never does arithmetic on them.
let localCounter = 0;
export function setProvisionalKey(record) {
  localCounter += 1;
  record.lamport = Infinity;
  record.time = Infinity;
  record.replica = '';
  record.seq = localCounter;
}
// An integer of an event message's envelope, from its digits: the form a block gives it.
const bigIntegers = typeof BigInt === 'function';
const maxSafeBig = bigIntegers ? BigInt(Number.MAX_SAFE_INTEGER) : 0;
function exactInteger(digits) {
  // 15 digits are always below 2^53: the usual case costs one conversion.
  if ((digits.charCodeAt(0) === 45 ? digits.length - 1 : digits.length) <= 15 || !bigIntegers) return Number(digits);
  const value = BigInt(digits);
  return value <= maxSafeBig && value >= -maxSafeBig ? Number(value) : value;
}
// The envelope of an event message: the relay always writes it last, in this layout
// (ServerMessage.eventID reads it the same way). JSON.parse would round its integers.
const envelopeLayout = /,"replica":"([0-9a-f]{32})","seq":([0-9]+),"lamport":([0-9]+),"time":(-?[0-9]+)\}$/y;
export function envelopeOf(text) {
  const at = text.lastIndexOf(',"replica":"');
  if (at < 0) return null;
  envelopeLayout.lastIndex = at;
  const m = envelopeLayout.exec(text);
  if (!m) return null;
  return { replica: m[1], seq: exactInteger(m[2]), lamport: exactInteger(m[3]), time: exactInteger(m[4]) };
}
export function compareKeys(a, b) {
  if (a.lamport < b.lamport) return -1;
  if (a.lamport > b.lamport) return 1;
  if (a.time < b.time) return -1;
  if (a.time > b.time) return 1;
  if (a.replica < b.replica) return -1;
  if (a.replica > b.replica) return 1;
  if (a.seq < b.seq) return -1;
  if (a.seq > b.seq) return 1;
  return 0;
}
function maxKey(records) {
  let best = null;
  for (const r of records) if (!best || compareKeys(r, best) > 0) best = r;
  return best;
}

// ---- The fold (FORMAT.md §9.1) ----
// A record is one event: {kind, stroke, lamport, time, replica, seq, point?} (a BlockRecord
// reads the same fields from its block). A stroke holds its point records sorted by key,
// its undo/redo/erase records and whether an end names it. A point that sorts after the
// stroke's last is appended; one that sorts earlier waits in `late` (unsorted) until the
// stroke is read (pointsOf) or `late` outgrows the sorted part, then they are sorted and
// merged in at once: O(log n) amortised per point whatever order clocks arrive in
// (inserting each in place cost O(n), a stroke whose clocks fell O(n^2)). `first`: the
// record with the stroke's creation key (its least), null while it has no points.
export const strokes = new Map();      // stroke id (32 lowercase hex) -> stroke
export const clears = [];              // clear records
export const ends = [];                // end records: they draw nothing, yet count as moments
export let historyStale = true;        // History: the timeline misses records applied since it was built
let latestClear = null;
export let pointCount = 0;
export let zOrder = [];                // strokes with points, by creation key
export let zOrderStale = false;

function strokeFor(id) {
  let s = strokes.get(id);
  if (!s) {
    s = { id: id, points: [], late: [], first: null, ops: [], ends: 0 };
    strokes.set(id, s);
  }
  return s;
}
// `created`: the record with the creation key (its first point), or a key in its place.
export function isVisible(s, created = s.first) {
  const op = maxKey(s.ops);
  let visible = op ? op.kind === 'redo' : true;
  if (latestClear && created && compareKeys(created, latestClear) < 0 &&
      (!op || compareKeys(op, latestClear) < 0)) visible = false;
  return visible;
}

// Adds a record; returns true when only the last segment of the topmost stroke changed
// (the screen can then be updated in place), false when it needs a full redraw.
export function apply(record) {
  historyStale = true;
  if (record.kind === 'clear') {
    clears.push(record);
    if (!latestClear || compareKeys(record, latestClear) > 0) latestClear = record;
    return false;
  }
  const s = strokeFor(record.stroke);
  if (record.kind === 'point') {
    const points = s.points, n = points.length;
    pointCount += 1;
    if (n === 0) { points.push(record); s.first = record; zOrderStale = true; return false; }
    if (compareKeys(points[n - 1], record) < 0) {
      points.push(record);
      return !zOrderStale && zOrder[zOrder.length - 1] === s && isVisible(s);
    }
    s.late.push(record);
    if (compareKeys(record, s.first) < 0) { s.first = record; zOrderStale = true; }
    if (s.late.length > 64 && s.late.length > n) mergeLate(s);
    return false;
  }
  if (record.kind === 'end') { s.ends += 1; ends.push(record); return true; }
  s.ops.push(record);
  return false;
}
export function unapply(record) {
  historyStale = true;
  if (record.kind === 'clear') {
    clears.splice(clears.indexOf(record), 1);
    latestClear = maxKey(clears);
    return;
  }
  const s = strokes.get(record.stroke);
  if (!s) return;
  if (record.kind === 'point') {
    const points = pointsOf(s);
    let at = insertionIndex(points, record);
    while (at < points.length && points[at] !== record && compareKeys(points[at], record) === 0) at++;
    if (at >= points.length || points[at] !== record) at = points.lastIndexOf(record);
    if (at >= 0) {
      points.splice(at, 1); pointCount -= 1; zOrderStale = true;
      s.first = points.length ? points[0] : null;
    }
  } else if (record.kind === 'end') {
    s.ends -= 1;
    const at = ends.indexOf(record);
    if (at >= 0) ends.splice(at, 1);
  } else {
    const at = s.ops.indexOf(record);
    if (at >= 0) s.ops.splice(at, 1);
  }
}
// A stroke's points, sorted by key (those waiting in `late` merged in).
export function pointsOf(s) {
  if (s.late.length) mergeLate(s);
  return s.points;
}
function mergeLate(s) {
  const late = s.late.sort(compareKeys), points = s.points;
  const merged = new Array(points.length + late.length);
  let i = 0, j = 0, k = 0;
  // A waiting point goes before a held one of an equal key (where inserting put it).
  while (i < points.length && j < late.length) merged[k++] = compareKeys(late[j], points[i]) <= 0 ? late[j++] : points[i++];
  while (i < points.length) merged[k++] = points[i++];
  while (j < late.length) merged[k++] = late[j++];
  s.points = merged;
  s.late = [];
  s.first = merged.length ? merged[0] : null;
}
// Points mostly arrive in order: search from the end.
function insertionIndex(points, record) {
  let lo = 0, hi = points.length;
  if (hi === 0 || compareKeys(points[hi - 1], record) < 0) return hi;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareKeys(points[mid], record) < 0) lo = mid + 1; else hi = mid;
  }
  return lo;
}
export function refreshZOrder() {
  if (!zOrderStale) return;
  zOrder = [];
  for (const s of strokes.values()) if (s.first) zOrder.push(s);
  zOrder.sort((a, b) => compareKeys(a.first, b.first));
  zOrderStale = false;
}
// The box around every visible stroke's ink (each point widened by its width), or null when
// nothing is visible: what a picture of the whole board and Fit frame.
export function visibleBounds() {
  refreshZOrder();
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const s of zOrder) {
    if (!isVisible(s)) continue;
    for (const record of pointsOf(s)) {
      const p = record.point;
      minX = Math.min(minX, p.x - p.width); minY = Math.min(minY, p.y - p.width);
      maxX = Math.max(maxX, p.x + p.width); maxY = Math.max(maxY, p.y + p.width);
    }
  }
  return minX <= maxX && minY <= maxY ? { minX: minX, minY: minY, maxX: maxX, maxY: maxY } : null;
}
// History built its timeline from every record applied so far.
export function timelineBuilt() { historyStale = false; }

// ---- Events held, per replica, as sorted seq ranges (what the hello says) ----
export const held = new Map();         // replica hex -> [[first, last], ...] sorted, disjoint, not adjacent
const after = (seq) => plus(seq, 1);
const before = (seq) => plus(seq, -1);
function rangesOf(replica) {
  let ranges = held.get(replica);
  if (!ranges) { ranges = []; held.set(replica, ranges); }
  return ranges;
}
// The first range that ends at or after seq - 1.
function rangeIndex(ranges, seq) {
  const bound = before(seq);
  let lo = 0, hi = ranges.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ranges[mid][1] < bound) lo = mid + 1; else hi = mid;
  }
  return lo;
}
// Inserts seq; false when it was held already (a duplicate).
export function hold(replica, seq) {
  const ranges = rangesOf(replica);
  const lastRange = ranges[ranges.length - 1];
  // A replica's events mostly come in seq order.
  if (lastRange && lastRange[1] === before(seq)) { lastRange[1] = seq; return true; }
  const lo = rangeIndex(ranges, seq);
  const r = ranges[lo];
  if (r && r[0] <= seq && seq <= r[1]) return false;
  if (r && r[1] === before(seq)) {
    r[1] = seq;
    const next = ranges[lo + 1];
    if (next && next[0] === after(seq)) { r[1] = next[1]; ranges.splice(lo + 1, 1); }
  } else if (r && r[0] === after(seq)) {
    r[0] = seq;
  } else {
    ranges.splice(lo, 0, [seq, seq]);
  }
  return true;
}
// Inserts first…last when none of it is held (true); else changes nothing (false).
export function holdRange(replica, first, last) {
  const ranges = rangesOf(replica);
  const lo = rangeIndex(ranges, first);
  const end = after(last);
  let hi = lo;
  for (; hi < ranges.length && ranges[hi][0] <= end; hi++) {
    if (ranges[hi][0] <= last && ranges[hi][1] >= first) return false;
  }
  // ranges[lo..hi) only touch first…last: one ends at first - 1, one starts at last + 1.
  const start = hi > lo && ranges[lo][0] < first ? ranges[lo][0] : first;
  const stop = hi > lo && ranges[hi - 1][1] > last ? ranges[hi - 1][1] : last;
  ranges.splice(lo, hi - lo, [start, stop]);
  return true;
}

// ---- Lines (the canonical form `journal record` reads) ----
export function normaliseID(text) { return String(text).replace(/-/g, '').toLowerCase(); }
// One spelling per event content, the same for what this page sent and for what the relay
// sends back (which reformats numbers, ids and colours): how own events are recognised.
export function contentOf(kind, stroke, point) {
  if (kind === 'clear') return 'clear';
  if (kind !== 'point') return kind + '|' + stroke;
  return ['point', stroke, point.x, point.y, point.color, point.width, point.pressure, point.t].join('|');
}
export function pointLine(stroke, point) {
  let line = '{"type":"point","stroke":"' + stroke + '","x":' + JSON.stringify(point.x) +
    ',"y":' + JSON.stringify(point.y) + ',"color":"' + point.color + '","width":' + JSON.stringify(point.width);
  if (point.pressure !== undefined) line += ',"pressure":' + JSON.stringify(point.pressure);
  if (point.t !== undefined) line += ',"t":' + JSON.stringify(point.t);
  return line + '}';
}
