// The canvas: pan and zoom, drawing strokes (cut to what a 32-bit float canvas can draw), and
// when to redraw (at once for live events, by a rule while a board streams in).
import { bar, canvas, screen, zoomValue } from './page.mjs';
import { apply, isVisible, pointCount, pointsOf, refreshZOrder, strokes, zOrder } from './fold.mjs';
import { catchUpStarted, catchingUp, timing } from './connection.mjs';
import { drawMoment, historyCut } from './history.mjs';
import { placeCursors } from './presence.mjs';

// ---- Drawing ----
export let ctx = screen;               // where drawing goes: the screen, or a history picture being made
// Drawing goes into `context` from now on (a history picture being made); returns where it went.
export function drawInto(context) {
  const previous = ctx;
  ctx = context;
  return previous;
}
export let scale = 1;

// ---- The view: pan and zoom ----
// Points are in board coordinates; the screen shows board × zoom + (x, y), in CSS pixels.
// A pen's width is in board units, so a stroke keeps its size on the board at any zoom.
export const view = { x: 0, y: 0, zoom: 1 };
export const MIN_ZOOM = 0.05, MAX_ZOOM = 40;
export function toBoard(clientX, clientY) {
  return { x: (clientX - view.x) / view.zoom, y: (clientY - view.y) / view.zoom };
}
// Keeps the board's point under (clientX, clientY) where it is.
export function zoomAt(clientX, clientY, factor) {
  const zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, view.zoom * factor));
  const at = toBoard(clientX, clientY);
  view.x = clientX - at.x * zoom;
  view.y = clientY - at.y * zoom;
  view.zoom = zoom;
  viewChanged();
}
export function panBy(dx, dy) {
  view.x += dx;
  view.y += dy;
  viewChanged();
}
export function resetView() {
  view.x = 0;
  view.y = 0;
  view.zoom = 1;
  viewChanged();
}
// Frames `box` (board units) in the window below the toolbar, with a margin; 100% for an
// empty board (null).
export function fitView(box) {
  if (!box) { resetView(); return; }
  const top = bar.getBoundingClientRect().bottom + 8;
  const width = Math.max(40, window.innerWidth - 32), height = Math.max(40, window.innerHeight - top - 16);
  const boxWidth = Math.max(box.maxX - box.minX, 1e-9), boxHeight = Math.max(box.maxY - box.minY, 1e-9);
  const zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, Math.min(width / boxWidth, height / boxHeight)));
  view.zoom = zoom;
  view.x = 16 + (width - boxWidth * zoom) / 2 - box.minX * zoom;
  view.y = top + (height - boxHeight * zoom) / 2 - box.minY * zoom;
  viewChanged();
}
export function viewChanged() {
  zoomValue.textContent = Math.round(view.zoom * 100) + '%';
  placeCursors();
  redrawNow();
}
export function resize() {
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
// The canvas computes in 32-bit floats: a point beyond about 3.4e38 (a journal keeps any
// double, 1e300 included) becomes infinite there, and its segments are not drawn at all.
// So a segment reaching past this bound is cut to it first, keeping its direction.
const FAR = 1e7;
const isFar = (p) => !(Math.abs(p.x) <= FAR && Math.abs(p.y) <= FAR);
// The part of segment a-b inside the square of side 2 * FAR (Liang-Barsky), or null.
function withinReach(a, b) {
  let t0 = 0, t1 = 1;
  const dx = b.x - a.x, dy = b.y - a.y;
  if (!Number.isFinite(dx) || !Number.isFinite(dy)) return null;
  for (const [p, q] of [[-dx, a.x + FAR], [dx, FAR - a.x], [-dy, a.y + FAR], [dy, FAR - a.y]]) {
    if (p === 0) { if (q < 0) return null; continue; }
    const t = q / p;
    if (p < 0) { if (t > t1) return null; t0 = Math.max(t0, t); } else { if (t < t0) return null; t1 = Math.min(t1, t); }
  }
  return [{ x: a.x + t0 * dx, y: a.y + t0 * dy }, { x: a.x + t1 * dx, y: a.y + t1 * dy }];
}
function drawSegment(a, b) {
  ctx.strokeStyle = b.color;
  ctx.fillStyle = b.color;
  if (!a) {
    if (isFar(b)) return;
    ctx.beginPath();
    ctx.arc(b.x, b.y, lineWidth(b, b) / 2, 0, 2 * Math.PI);
    ctx.fill();
    return;
  }
  ctx.lineWidth = lineWidth(a, b);
  let from = a, to = b;
  if (isFar(a) || isFar(b)) {
    const part = withinReach(a, b);
    if (!part) return;
    [from, to] = part;
  }
  ctx.beginPath();
  ctx.moveTo(from.x, from.y);
  ctx.lineTo(to.x, to.y);
  ctx.stroke();
}
// A stroke's first n points in few stroke() calls: one path per run of segments of the
// same colour and width (to a quarter of a unit), and a point nearer than half a device
// pixel to the last one drawn skipped (never the stroke's last). Drawing segment by
// segment, a 2 M-point board took seconds to redraw (docs/HISTORY.md, "The page").
export function drawPoints(points, n, pixelsPerUnit = scale * view.zoom) {
  if (n === 0) return;
  if (n === 1) { drawSegment(null, points[0].point); return; }
  for (let i = 0; i < n; i++) {
    if (!isFar(points[i].point)) continue;
    // A stroke reaching far out: segment by segment, each cut to what the canvas can draw.
    for (let j = 1; j < n; j++) drawSegment(points[j - 1].point, points[j].point);
    return;
  }
  const step = 0.5 / pixelsPerUnit, stepSquared = step * step;
  let color = null, width = -1, open = false, last = points[0].point;
  for (let i = 1; i < n; i++) {
    const b = points[i].point;
    const dx = b.x - last.x, dy = b.y - last.y;
    if (i < n - 1 && dx * dx + dy * dy < stepSquared) continue;
    const w = Math.round(lineWidth(last, b) * 4) / 4;
    if (b.color !== color || w !== width) {
      if (open) ctx.stroke();
      if (b.color !== color) { ctx.strokeStyle = b.color; color = b.color; }
      ctx.lineWidth = w;
      width = w;
      ctx.beginPath();
      ctx.moveTo(last.x, last.y);
      open = true;
    }
    ctx.lineTo(b.x, b.y);
    last = b;
  }
  if (open) ctx.stroke();
}
export function useViewTransform() {
  ctx.setTransform(scale * view.zoom, 0, 0, scale * view.zoom, scale * view.x, scale * view.y);
  ctx.lineCap = 'round';
  ctx.lineJoin = 'round';
}
export function redrawAll() {
  const started = performance.now();
  refreshZOrder();
  pointsDrawn = pointCount;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  if (historyCut !== null) {
    drawMoment();
  } else {
    useViewTransform();
    for (const s of zOrder) {
      if (!isVisible(s)) continue;
      const points = pointsOf(s);
      drawPoints(points, points.length);
    }
  }
  timing.redraw = performance.now() - started;
}
export function drawLastSegment(s) {
  const n = s.points.length;
  drawSegment(n > 1 ? s.points[n - 2].point : null, s.points[n - 1].point);
}
let redrawPending = false;
let redrawTimer = 0;

let pointsDrawn = 0;            // points held at the last full redraw
// While a board streams in, a full redraw costs what the board holds: a catch-up draws
// nothing for its first 3 seconds (a catch-up in blocks of 2M points is done by then),
// then only each time the board has doubled since the last redraw, so all its redraws
// together cost at most twice the final one.
function catchUpRedrawDue() {
  return performance.now() - catchUpStarted >= 3000 && pointCount >= 2 * pointsDrawn;
}
export function scheduleRedraw() {
  if (redrawPending) return;
  redrawPending = true;
  if (catchingUp && !catchUpRedrawDue()) {
    redrawTimer = setTimeout(() => { redrawTimer = 0; redrawPending = false; scheduleRedraw(); }, 250);
    return;
  }
  requestAnimationFrame(() => {
    redrawPending = false;
    redrawAll();
    if (timing.caughtUp && !timing.drawn) requestAnimationFrame(() => { timing.drawn = performance.now(); });
  });
}
export function redrawNow() {
  if (redrawTimer) { clearTimeout(redrawTimer); redrawTimer = 0; redrawPending = false; }
  scheduleRedraw();
}
// Live events are drawn at once (in place when they extend the top stroke); a catch-up's
// only when it ends or by the rule above, never per event.
export function show(record) {
  if (apply(record) && !catchingUp && historyCut === null) {
    if (record.kind === 'point') drawLastSegment(strokes.get(record.stroke));
  } else {
    scheduleRedraw();
  }
}


window.addEventListener('resize', resize);
