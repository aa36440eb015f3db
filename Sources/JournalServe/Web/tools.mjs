// The drawing tools: pointer input (pressure, coalesced samples), the eraser, panning and
// pinching, undo and redo of this page's own actions, the keyboard, the board as a picture.
import { board, canvas, colorInput, eraserButton, panButton, widthInput, widthValue, zoomValue } from './page.mjs';
import { isVisible, pointsOf, refreshZOrder, strokes, zOrder } from './fold.mjs';
import { hexOf } from './identity.mjs';
import { MAX_ZOOM, MIN_ZOOM, panBy, resetView, toBoard, view, viewChanged, zoomAt } from './view.mjs';
import { recordOwn, viewOnly } from './connection.mjs';
import { historyCut } from './history.mjs';

// ---- Pointer input ----
export const active = new Map();       // pointerId -> {stroke, start}
function newStrokeID() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return hexOf(bytes);
}
export const round = (value, digits) => { const f = Math.pow(10, digits); return Math.round(value * f) / f; };
function sample(drawing, e) {
  const at = toBoard(e.clientX, e.clientY);
  const point = {
    x: round(at.x, 2),
    y: round(at.y, 2),
    color: colorInput.value.toUpperCase() + 'FF',
    width: Number(widthInput.value),
  };
  // A mouse's 0.5 is no measurement: leave pressure out for it.
  if (e.pointerType !== 'mouse') point.pressure = round(e.pressure, 4);
  point.t = round(Math.max(0, e.timeStamp - drawing.start) / 1000, 4);
  recordOwn('point', drawing.stroke, point);
}
// ---- The eraser: a pointer that erases every visible stroke it touches ----
let erasing = false;
function setErasing(on) {
  erasing = on;
  eraserButton.setAttribute('aria-pressed', on ? 'true' : 'false');
  canvas.style.cursor = on ? 'cell' : handTool ? 'grab' : '';
}
eraserButton.addEventListener('click', () => setErasing(!erasing));
// The topmost visible stroke within reach of board point (x, y): a point's distance to one
// of its segments at most half its width, and never less than 6 screen pixels.
function strokeAt(x, y) {
  refreshZOrder();
  for (let z = zOrder.length - 1; z >= 0; z--) {
    const s = zOrder[z];
    if (!isVisible(s)) continue;
    const points = pointsOf(s);
    for (let i = 0; i < points.length; i++) {
      const b = points[i].point, a = i > 0 ? points[i - 1].point : b;
      const reach = Math.max(6 / view.zoom, b.width / 2);
      const dx = b.x - a.x, dy = b.y - a.y, length2 = dx * dx + dy * dy;
      const t = length2 ? Math.max(0, Math.min(1, ((x - a.x) * dx + (y - a.y) * dy) / length2)) : 0;
      const ex = a.x + t * dx - x, ey = a.y + t * dy - y;
      if (ex * ex + ey * ey <= reach * reach) return s.id;
    }
  }
  return null;
}
function eraseAt(e) {
  const at = toBoard(e.clientX, e.clientY);
  const id = strokeAt(at.x, at.y);
  if (id === null) return;
  recordOwn('erase', id);
  done.push({ kind: 'erase', id: id });
  undone.length = 0;
}
// ---- Panning and pinching ----
// A drag pans with the middle button, with Space held, or with the Pan tool (H); two
// fingers pinch to zoom and pan; the wheel pans, and zooms with Ctrl or ⌘ (a trackpad's
// pinch arrives as such a wheel). A viewer pans and zooms too.
const touches = new Map();      // touch pointerId -> {x, y}, every finger down
let pinch = null;               // {ids, distance, middle, view} at the second finger
let panning = null;             // {pointerId, x, y}
let spaceHeld = false;
let handTool = false;
function setHandTool(on) {
  handTool = on;
  panButton.setAttribute('aria-pressed', on ? 'true' : 'false');
  canvas.style.cursor = on ? 'grab' : erasing ? 'cell' : '';
}
panButton.addEventListener('click', () => setHandTool(!handTool));
function fingers() {
  const [a, b] = pinch.ids.map((id) => touches.get(id));
  return { distance: Math.max(1, Math.hypot(a.x - b.x, a.y - b.y)), middle: { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 } };
}
// A second finger turns the first one's stroke into a pinch: the stroke ends, and if it
// began a moment before (two fingers landing together) it is taken back.
function startPinch() {
  for (const [pointerId, drawing] of active) {
    if (!drawing.touch) continue;
    active.delete(pointerId);
    if (drawing.erasing) continue;
    recordOwn('end', drawing.stroke);
    if (performance.now() - drawing.began < 500) {
      recordOwn('undo', drawing.stroke);
      const index = done.findIndex((action) => action.kind === 'stroke' && action.id === drawing.stroke);
      if (index >= 0) done.splice(index, 1);
    }
  }
  pinch = { ids: Array.from(touches.keys()).slice(0, 2), view: { x: view.x, y: view.y, zoom: view.zoom } };
  Object.assign(pinch, fingers());
}
function movePinch() {
  const now = fingers();
  const zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, pinch.view.zoom * now.distance / pinch.distance));
  // The board's point that was under the fingers' middle stays under it.
  const atX = (pinch.middle.x - pinch.view.x) / pinch.view.zoom, atY = (pinch.middle.y - pinch.view.y) / pinch.view.zoom;
  view.zoom = zoom;
  view.x = now.middle.x - atX * zoom;
  view.y = now.middle.y - atY * zoom;
  viewChanged();
}
canvas.addEventListener('wheel', (e) => {
  e.preventDefault();
  const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? window.innerHeight : 1;
  if (e.ctrlKey || e.metaKey) zoomAt(e.clientX, e.clientY, Math.exp(-e.deltaY * unit * 0.01));
  else panBy(-e.deltaX * unit, -e.deltaY * unit);
}, { passive: false });
document.getElementById('zoom-in').addEventListener('click', () => zoomAt(window.innerWidth / 2, window.innerHeight / 2, 1.25));
document.getElementById('zoom-out').addEventListener('click', () => zoomAt(window.innerWidth / 2, window.innerHeight / 2, 0.8));
zoomValue.addEventListener('click', resetView);

canvas.addEventListener('pointerdown', (e) => {
  if (e.pointerType === 'touch') {
    touches.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (touches.size === 2 && !pinch) startPinch();
    if (touches.size >= 2 || pinch) { e.preventDefault(); return; }
  }
  const pans = e.button === 1 || (e.button === 0 && (spaceHeld || handTool));
  if (pans) {
    try { canvas.setPointerCapture(e.pointerId); } catch (err) { /* the pointer is gone already */ }
    panning = { pointerId: e.pointerId, x: e.clientX, y: e.clientY };
    e.preventDefault();
    return;
  }
  if (viewOnly || historyCut !== null) return;
  if (e.pointerType === 'mouse' && e.button !== 0) return;
  if (active.has(e.pointerId)) return;
  try { canvas.setPointerCapture(e.pointerId); } catch (err) { /* the pointer is gone already */ }
  if (erasing) {
    active.set(e.pointerId, { erasing: true, touch: e.pointerType === 'touch' });
    eraseAt(e);
    e.preventDefault();
    return;
  }
  const drawing = { stroke: newStrokeID(), start: e.timeStamp, began: performance.now(), touch: e.pointerType === 'touch' };
  active.set(e.pointerId, drawing);
  done.push({ kind: 'stroke', id: drawing.stroke });
  undone.length = 0;
  sample(drawing, e);
  e.preventDefault();
});
canvas.addEventListener('pointermove', (e) => {
  if (touches.has(e.pointerId)) touches.set(e.pointerId, { x: e.clientX, y: e.clientY });
  if (pinch) {
    if (pinch.ids.includes(e.pointerId)) movePinch();
    return;
  }
  if (panning && panning.pointerId === e.pointerId) {
    panBy(e.clientX - panning.x, e.clientY - panning.y);
    panning.x = e.clientX;
    panning.y = e.clientY;
    return;
  }
  const drawing = active.get(e.pointerId);
  if (!drawing) return;
  if (drawing.erasing) { eraseAt(e); return; }
  const samples = typeof e.getCoalescedEvents === 'function' ? e.getCoalescedEvents() : [];
  for (const c of (samples.length ? samples : [e])) sample(drawing, c);
});
function finish(e) {
  touches.delete(e.pointerId);
  if (pinch && pinch.ids.includes(e.pointerId)) pinch = null;
  if (panning && panning.pointerId === e.pointerId) panning = null;
  const drawing = active.get(e.pointerId);
  if (!drawing) return;
  active.delete(e.pointerId);
  if (drawing.erasing) return;
  recordOwn('end', drawing.stroke);
}
canvas.addEventListener('pointerup', finish);
canvas.addEventListener('pointercancel', finish);
// ---- Undo and redo of this page's own actions ----
// `done`: this page's strokes and Clears, newest last; `undone`: what Undo took back, for
// Redo. Undoing a stroke records an `undo`; undoing a Clear records a `redo` of each stroke
// that Clear hid (a redo newer than a clear shows its stroke again: FORMAT.md §9.1), so
// every step is an ordinary event that syncs and is itself undoable. A new stroke or Clear
// empties `undone`, as in every editor.
const done = [];
const undone = [];
function strokesHiddenByClear() {
  const hidden = [];
  for (const s of strokes.values()) if (s.points.length && isVisible(s)) hidden.push(s.id);
  return hidden;
}
function clearBoard() {
  const hidden = strokesHiddenByClear();
  recordOwn('clear', null);
  done.push({ kind: 'clear', strokes: hidden });
  undone.length = 0;
}
function undo() {
  while (done.length) {
    const action = done.pop();
    if (action.kind === 'clear') {
      for (const id of action.strokes) {
        const s = strokes.get(id);
        if (s && !isVisible(s)) recordOwn('redo', id);
      }
      undone.push(action);
      return;
    }
    const s = strokes.get(action.id);
    if (s && s.points.length && isVisible(s) === (action.kind === 'stroke')) {
      // A stroke drawn is taken back with `undo`; one erased comes back with `redo`.
      recordOwn(action.kind === 'stroke' ? 'undo' : 'redo', action.id);
      undone.push(action);
      return;
    }
  }
}
function redo() {
  while (undone.length) {
    const action = undone.pop();
    if (action.kind === 'clear') {
      recordOwn('clear', null);
      done.push(action);
      return;
    }
    const s = strokes.get(action.id);
    if (s && s.points.length && isVisible(s) === (action.kind === 'erase')) {
      recordOwn(action.kind === 'stroke' ? 'redo' : 'erase', action.id);
      done.push(action);
      return;
    }
  }
}
document.getElementById('clear').addEventListener('click', clearBoard);
document.getElementById('undo').addEventListener('click', undo);
document.getElementById('redo').addEventListener('click', redo);
const typing = (e) => e.target instanceof HTMLInputElement && e.target.type === 'text';
window.addEventListener('keydown', (e) => {
  if (e.key === ' ' && !typing(e)) {
    spaceHeld = true;
    e.preventDefault();
    return;
  }
  // The view's keys, for viewers too: + and - zoom at the middle, 0 back to 100%, H the Pan tool.
  if (!e.ctrlKey && !e.metaKey && !e.altKey && !typing(e)) {
    const middle = [window.innerWidth / 2, window.innerHeight / 2];
    if (e.key === '+' || e.key === '=') { zoomAt(middle[0], middle[1], 1.25); return; }
    if (e.key === '-') { zoomAt(middle[0], middle[1], 0.8); return; }
    if (e.key === '0') { resetView(); return; }
    if (e.key.toLowerCase() === 'h') { setHandTool(!handTool); return; }
  }
  if (viewOnly || e.altKey || typing(e)) return;
  // E toggles the eraser (when no field takes the key).
  if (!e.ctrlKey && !e.metaKey && e.key.toLowerCase() === 'e') {
    setErasing(!erasing);
    return;
  }
  if (!(e.ctrlKey || e.metaKey)) return;
  const key = e.key.toLowerCase();
  if (key === 'z' && !e.shiftKey) undo();
  else if ((key === 'z' && e.shiftKey) || (key === 'y' && !e.shiftKey)) redo();
  else return;
  e.preventDefault();
});

// ---- The board as a picture ----
// SVG: each visible stroke in z-order, one polyline per run of points of one colour and
// width (pressure is left out: a picture to share, not the journal); PNG: the canvas.
function escapeXML(text) {
  return text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' }[c]));
}
export function boardSVG() {
  refreshZOrder();
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  const body = [];
  for (const s of zOrder) {
    if (!isVisible(s)) continue;
    const points = pointsOf(s).map((p) => p.point);
    let run = [];
    const flush = () => {
      if (!run.length) return;
      const first = run[0];
      const color = first.color.slice(0, 7), opacity = parseInt(first.color.slice(7, 9) || 'FF', 16) / 255;
      const coordinates = run.map((p) => p.x + ',' + p.y).join(' ');
      body.push('<polyline points="' + coordinates + '" stroke="' + escapeXML(color) + '" stroke-opacity="' +
        opacity.toFixed(3) + '" stroke-width="' + first.width + '"/>');
      run = [];
    };
    for (const point of points) {
      if (run.length && (point.color !== run[0].color || point.width !== run[0].width)) {
        const last = run[run.length - 1];
        flush();
        run.push(last);
      }
      run.push(point);
      minX = Math.min(minX, point.x - point.width); minY = Math.min(minY, point.y - point.width);
      maxX = Math.max(maxX, point.x + point.width); maxY = Math.max(maxY, point.y + point.width);
    }
    if (run.length === 1) run.push(run[0]);
    flush();
  }
  if (!body.length) { minX = 0; minY = 0; maxX = 100; maxY = 100; }
  const viewBox = [minX, minY, maxX - minX, maxY - minY].map((v) => Math.round(v * 100) / 100).join(' ');
  return '<svg xmlns="http://www.w3.org/2000/svg" viewBox="' + viewBox + '">\n<title>' + escapeXML(board) + '</title>\n' +
    '<g fill="none" stroke-linecap="round" stroke-linejoin="round">\n' + body.join('\n') + '\n</g>\n</svg>\n';
}
function download(blob, extension) {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = board + '.' + extension;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}
document.getElementById('export-svg').addEventListener('click', () => {
  download(new Blob([boardSVG()], { type: 'image/svg+xml' }), 'svg');
});
document.getElementById('export-png').addEventListener('click', () => {
  canvas.toBlob((blob) => { if (blob) download(blob, 'png'); }, 'image/png');
});
document.getElementById('board-name').textContent = board;
window.addEventListener('keyup', (e) => { if (e.key === ' ') spaceHeld = false; });
widthInput.addEventListener('input', () => { widthValue.textContent = widthInput.value; });
