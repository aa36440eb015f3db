// The drawing tools: pointer input (pressure, coalesced samples), the eraser, panning and
// pinching, undo and redo of this page's own actions, the keyboard, the board as a picture.
import { board, canvas, colorInput, eraserButton, panButton, swatchesView, widthInput, widthValue, zoomValue } from './page.mjs';
import { isVisible, pointsOf, refreshZOrder, strokes, visibleBounds, zOrder } from './fold.mjs';
import { hexOf } from './identity.mjs';
import { MAX_ZOOM, MIN_ZOOM, fitView, panBy, resetView, toBoard, view, viewChanged, zoomAt } from './view.mjs';
import { boardPNG, boardSVG, download } from './picture.mjs';
import { recordOwn, report, viewOnly } from './connection.mjs';
import { historyCut } from './history.mjs';

// ---- Pointer input ----
const active = new Map();       // pointerId -> {stroke, start}
// Stroke ids: a prefix drawn at random once per page, then a counter (the shape of Swift's
// StrokeIDAllocator: an RFC 9562 version 8 UUID). A block keeps each stroke's 16 bytes, and
// random ones never compress; ids that differ from the previous one in their last bytes
// deflate to about two (Hershey handwriting: 4.12 B/pt with random ids, 3.45 with these).
const strokePrefix = crypto.getRandomValues(new Uint8Array(8));
strokePrefix[6] = (strokePrefix[6] & 0x0f) | 0x80;
let strokeCounter = 0n;
function newStrokeID() {
  strokeCounter += 1n;
  const low = new DataView(new ArrayBuffer(8));
  low.setBigUint64(0, (0x8n << 60n) | (strokeCounter & ((1n << 62n) - 1n)));
  return hexOf(strokePrefix) + hexOf(new Uint8Array(low.buffer));
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
  if (historyCut !== null) {
    if (!viewOnly) report('the board is shown as it was: press Live to draw', 4);
    return;
  }
  if (viewOnly) return;
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
    if (e.key.toLowerCase() === 'f') { fitView(visibleBounds()); return; }
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

// ---- The board as a picture, and its address ----
document.getElementById('export-svg').addEventListener('click', () => {
  download(new Blob([boardSVG()], { type: 'image/svg+xml' }), 'svg');
});
document.getElementById('export-png').addEventListener('click', () => {
  boardPNG().toBlob((blob) => { if (blob) download(blob, 'png'); }, 'image/png');
});
// The board's address for others: never the token or invitation this page was opened with.
export function shareLink() { return location.origin + location.pathname; }
document.getElementById('share').addEventListener('click', async () => {
  const link = shareLink();
  try {
    await navigator.clipboard.writeText(link);
    report('copied ' + link + ' (without your token)', 5);
  } catch (e) {
    // No clipboard here (a page served without TLS, not from localhost): shown to copy by hand.
    window.prompt('The board\'s address (without your token):', link);
  }
});
document.getElementById('fit').addEventListener('click', () => fitView(visibleBounds()));

// ---- Colours: a few at hand, any from the colour input ----
const SWATCHES = [['#212121', 'black'], ['#1e88e5', 'blue'], ['#e53935', 'red'], ['#43a047', 'green'],
  ['#fb8c00', 'orange'], ['#8e24aa', 'purple']];
const swatchButtons = SWATCHES.map(([color, name]) => {
  const button = document.createElement('button');
  button.className = 'swatch';
  button.style.setProperty('--swatch', color);
  button.title = name;
  button.setAttribute('aria-label', name);
  button.addEventListener('click', () => {
    colorInput.value = color;
    colorInput.dispatchEvent(new Event('change'));
  });
  swatchesView.appendChild(button);
  return button;
});
function markSwatch() {
  for (let i = 0; i < SWATCHES.length; i++) {
    swatchButtons[i].setAttribute('aria-pressed', SWATCHES[i][0] === colorInput.value.toLowerCase() ? 'true' : 'false');
  }
}
colorInput.addEventListener('input', markSwatch);
colorInput.addEventListener('change', markSwatch);
markSwatch();

// Nothing drawn now would reach anyone (a viewer, a refused connection): the tools go.
export function disableDrawing() {
  for (const id of ['color', 'width', 'undo', 'redo', 'eraser', 'clear']) document.getElementById(id).disabled = true;
  for (const button of swatchButtons) button.disabled = true;
  canvas.style.cursor = 'default';
  active.clear();
}

document.getElementById('board-name').textContent = board;
window.addEventListener('keyup', (e) => { if (e.key === ' ') spaceHeld = false; });
widthInput.addEventListener('input', () => { widthValue.textContent = widthInput.value; });
