// History (docs/HISTORY.md): the board at any moment, drawn from what the page holds, with
// pictures of the board at intervals so a moment late in a dense board costs what changed since.
import { canvas, historyLabel, historyPanel, historySlider, playButton, screen, speedSelect } from './page.mjs';
import { clears, compareKeys, ends, historyStale, pointsOf, refreshZOrder, strokes, timelineBuilt, zOrder } from './fold.mjs';
import { ctx, drawInto, drawPoints, redrawAll, redrawNow, scale, useViewTransform, view } from './view.mjs';
import { updateStatus } from './connection.mjs';

// ---- History: the board at any moment (docs/HISTORY.md) ----
// The page holds every event of the board with its key, so a moment needs nothing from the
// relay: the slider picks k, the first k events in total order (as `journal log` numbers
// them, as `--at k` means), and the board is drawn as it was then: each stroke created by
// then with its points by then, visible by the undo, redo, erase and clear events by then.
// Live events keep arriving meanwhile and widen the slider; "Live" shows now again.
// History: the last record of the moment shown; null: live.
export let historyCut = null;
let timeline = [];              // every record, in total order (built when history opens)
let historyAt = 0;
let playing = 0;
function buildTimeline() {
  if (!historyStale) return;
  const all = [];
  for (const s of strokes.values()) {
    for (const r of pointsOf(s)) all.push(r);
    for (const r of s.ops) all.push(r);
  }
  for (const r of clears) all.push(r);
  for (const r of ends) all.push(r);
  all.sort(compareKeys);
  // Pictures stand for positions of this timeline and say which strokes change later in it:
  // any record added or taken away makes them new.
  forgetPictures();
  timeline = all;
  timelineBuilt();
  historySlider.max = String(timeline.length);
}
// The number of records in `sorted` (sorted by key) at or before `cut`.
function countThrough(sorted, cut) {
  let lo = 0, hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareKeys(sorted[mid], cut) <= 0) lo = mid + 1; else hi = mid;
  }
  return lo;
}
const atOrBefore = (record, cut) => cut !== 0 && compareKeys(record, cut) <= 0;
function latestThrough(records, cut) {
  let best = null;
  for (const r of records) if (atOrBefore(r, cut) && (!best || compareKeys(r, best) > 0)) best = r;
  return best;
}
// `cut`: a record (the last one the moment holds), or 0 for the empty board; `clear`: the
// latest clear by then.
function visibleAt(s, cut, clear) {
  const op = latestThrough(s.ops, cut);
  let visible = op ? op.kind === 'redo' : true;
  if (clear && compareKeys(s.first, clear) < 0 && (!op || compareKeys(op, clear) < 0)) visible = false;
  return visible;
}
function drawAtCut(s, cut, clear) {
  if (!atOrBefore(s.first, cut) || !visibleAt(s, cut, clear)) return;
  const points = pointsOf(s);
  drawPoints(points, countThrough(points, cut));
}
// The moment shown (historyAt): from the picture for it when there is one (below), else
// every stroke created by then; the z-order is by creation, so a loop stops at the first
// stroke not yet created.
export function drawMoment() {
  const clear = latestThrough(clears, historyCut);
  const picture = pictureFor(historyAt);
  useViewTransform();
  if (!picture) {
    for (const s of zOrder) {
      if (!atOrBefore(s.first, historyCut)) break;
      drawAtCut(s, historyCut, clear);
    }
    return;
  }
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.drawImage(picture.canvas, 0, 0);
  useViewTransform();
  for (const s of picture.unsettled) drawAtCut(s, historyCut, clear);
  for (let i = picture.created; i < zOrder.length; i++) {
    const s = zOrder[i];
    if (!atOrBefore(s.first, historyCut)) break;
    drawAtCut(s, historyCut, clear);
  }
  if (!picture.exact) refineSoon();
}

// ---- History: pictures of the board at intervals ----
// Drawing a moment of a dense board rasterises every stroke by then: a second or more in a
// software canvas (docs/HISTORY.md, "The page"). So the page keeps a picture every
// `pictureStep` events (1/48 of the board, fewer on a large screen), as the time-lapse video keeps its base layer: the picture at j holds
// the strokes created by then that stay as they are until the next clear ("settled": no
// point added, no undo, redo or erase later). A moment k from j up to the next picture or
// clear is that picture, then the other strokes created by j as at k (those still drawn,
// undone, erased or shown again later), then the strokes created since j: it costs what was
// drawn since j plus the strokes that change later, not the board.
//
// The strokes a picture leaves out are drawn above it, so where one of them crosses a
// settled stroke created after it, it shows above where it belongs. Such a moment is drawn
// again exactly right after, in slices between other work (`refineSoon`); a picture whose
// left-out strokes are all above its settled ones in the z-order is exact as it is.
// At most `count` pictures, and at most `bytes` of them: a 4K screen at twice the pixels
// gets fewer (33 MB a picture), a small window all of them.
const PICTURES = { minimumEvents: 20000, count: 48, bytes: 256 << 20 };
let pictures = new Map();       // j -> { canvas, created, top, unsettled, leftOut, horizon, ordered, exact }
let pictureStep = 0;
let pictureView = '';
let pictureBuilder = 0;
function forgetPictures() {
  pictures = new Map();
  pictureStep = 0;
  if (pictureBuilder) { clearTimeout(pictureBuilder); pictureBuilder = 0; }
  stopRefining();
}
// Pictures hold pixels of one view: a pan, a zoom or a resize makes them useless.
function picturesUsable() {
  const here = [canvas.width, canvas.height, scale, view.zoom, view.x, view.y].join(' ');
  if (here !== pictureView) { forgetPictures(); pictureView = here; }
  if (timeline.length < PICTURES.minimumEvents) return false;
  if (!pictureStep) {
    const count = Math.max(4, Math.min(PICTURES.count, Math.floor(PICTURES.bytes / (canvas.width * canvas.height * 4))));
    pictureStep = Math.max(1, Math.ceil(timeline.length / count));
  }
  return true;
}
// The picture for moment k (the one at the multiple of the step at or below it), made now
// if missing, with those below it it is made from; null when there is none to use.
function pictureFor(k) {
  if (!picturesUsable()) return null;
  const j = Math.floor(k / pictureStep) * pictureStep;
  if (j === 0 || j > timeline.length) return null;
  refreshZOrder();
  let from = j;
  while (from > pictureStep && !pictures.has(from) && !pictures.has(from - pictureStep)) from -= pictureStep;
  for (let at = from; at <= j; at += pictureStep) makePicture(at);
  const picture = pictures.get(j);
  // The z-order changed below its strokes (a stroke created early arrived late): afresh.
  if (picture.created && zOrder[picture.created - 1] !== picture.top) { forgetPictures(); return null; }
  // A clear since j hides what the picture shows.
  if (picture.horizon && atOrBefore(picture.horizon, timeline[k - 1])) return null;
  return picture;
}
// Whether stroke s stays as it is at `cut` until `horizon` (a clear; null: for good).
function settled(s, cut, horizon) {
  const before = (r) => !horizon || compareKeys(r, horizon) < 0;
  const points = pointsOf(s);
  const next = countThrough(points, cut);
  if (next < points.length && before(points[next])) return false;
  for (const op of s.ops) if (!atOrBefore(op, cut) && before(op)) return false;
  return true;
}
function makePicture(j) {
  if (pictures.has(j)) return;
  const cut = timeline[j - 1];
  let horizon = null;
  for (const c of clears) if (!atOrBefore(c, cut) && (!horizon || compareKeys(c, horizon) < 0)) horizon = c;
  const clear = latestThrough(clears, cut);
  const below = pictures.get(j - pictureStep);
  // Below's settled strokes stay settled here unless a clear came between the two.
  const fromBelow = below && below.horizon === horizon;
  const picture = document.createElement('canvas');
  picture.width = canvas.width;
  picture.height = canvas.height;
  const into = picture.getContext('2d');
  if (fromBelow) into.drawImage(below.canvas, 0, 0);
  const unsettled = [];
  let created = 0, highestSettled = -1, lowestUnsettled = Infinity;
  const saved = drawInto(into);
  try {
    useViewTransform();
    for (; created < zOrder.length && atOrBefore(zOrder[created].first, cut); created++) {
      const s = zOrder[created];
      if (!settled(s, cut, horizon)) {
        unsettled.push(s);
        lowestUnsettled = Math.min(lowestUnsettled, created);
        continue;
      }
      highestSettled = created;
      // Below drew it already when it was settled there (settled strokes do not change).
      if (fromBelow && created < below.created && !below.leftOut.has(s)) continue;
      drawAtCut(s, cut, clear);
    }
  } finally {
    drawInto(saved);
  }
  const leftOut = new Set(unsettled);
  // In the z-order among themselves: drawn afresh, or on below's when those were and every
  // stroke drawn here is above them (created since; none that below left out).
  const ordered = !fromBelow || (below.ordered && below.unsettled.every((s) => leftOut.has(s)));
  pictures.set(j, {
    canvas: picture, created: created, top: created ? zOrder[created - 1] : undefined, unsettled: unsettled,
    leftOut: leftOut, horizon: horizon, ordered: ordered,
    // Exact as it is when, besides, every stroke left out is above every one drawn.
    exact: ordered && highestSettled < lowestUnsettled,
  });
}
// Makes the missing pictures, one per turn of the event loop, while History is open.
function makePicturesSoon() {
  if (pictureBuilder || historyCut === null) return;
  pictureBuilder = setTimeout(() => {
    pictureBuilder = 0;
    if (historyCut === null || !picturesUsable()) return;
    refreshZOrder();
    for (let j = pictureStep; j <= timeline.length; j += pictureStep) {
      if (!pictures.has(j)) { makePicture(j); makePicturesSoon(); return; }
    }
  }, 0);
}

// The moment shown, drawn again exactly, a slice of strokes at a time into a canvas of its
// own, then shown if the page still shows that moment in that view.
let refining = null;
function stopRefining() {
  if (refining) { clearTimeout(refining.timer); refining = null; }
}
function refineSoon() {
  stopRefining();
  const into = document.createElement('canvas');
  into.width = canvas.width;
  into.height = canvas.height;
  refining = { canvas: into, cut: historyCut, view: pictureView, next: 0, timer: 0 };
  refining.timer = setTimeout(refineSlice, 0);
}
// Draws strokes for about 30 ms; true when the moment is drawn whole.
function refineStep(budget) {
  const job = refining;
  const clear = latestThrough(clears, job.cut);
  const saved = drawInto(job.canvas.getContext('2d'));
  const started = performance.now();
  try {
    useViewTransform();
    while (job.next < zOrder.length && atOrBefore(zOrder[job.next].first, job.cut)) {
      drawAtCut(zOrder[job.next], job.cut, clear);
      job.next += 1;
      if ((job.next & 31) === 0 && performance.now() - started > budget) return false;
    }
  } finally {
    drawInto(saved);
  }
  return true;
}
function refineSlice() {
  const job = refining;
  if (!job || job.cut !== historyCut || job.view !== pictureView) { refining = null; return; }
  if (!refineStep(30)) { job.timer = setTimeout(refineSlice, 0); return; }
  showRefined();
}
function showRefined() {
  const job = refining;
  refining = null;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(job.canvas, 0, 0);
}
// For tests: finishes drawing the moment exactly now; true if it was not exact yet.
function refineNow() {
  if (!refining) return false;
  clearTimeout(refining.timer);
  refineStep(Infinity);
  showRefined();
  return true;
}
function showMoment(k) {
  buildTimeline();
  historyAt = Math.max(0, Math.min(timeline.length, k));
  historyCut = historyAt === 0 ? 0 : timeline[historyAt - 1];
  historySlider.value = String(historyAt);
  const when = historyAt === 0 ? 'before the first event' : new Date(Number(historyCut.time)).toLocaleString();
  historyLabel.textContent = 'event ' + historyAt + ' of ' + timeline.length + ' · ' + when;
  updateStatus();
  redrawNow();
}
function openHistory() {
  historyPanel.hidden = false;
  document.getElementById('history').setAttribute('aria-pressed', 'true');
  buildTimeline();
  showMoment(timeline.length);
  makePicturesSoon();
}
function goLive() {
  pause();
  historyPanel.hidden = true;
  document.getElementById('history').setAttribute('aria-pressed', 'false');
  historyCut = null;
  forgetPictures();
  updateStatus();
  redrawNow();
}
function pause() {
  if (playing) cancelAnimationFrame(playing);
  playing = 0;
  playButton.textContent = 'Play';
}
// Plays the whole board in 30 s at 1x: each event takes the same share, pauses take none.
function play() {
  buildTimeline();
  if (historyAt >= timeline.length) showMoment(0);
  playButton.textContent = 'Pause';
  let last = performance.now();
  let position = historyAt;
  const step = (now) => {
    position += (now - last) / 30000 * Math.max(timeline.length, 1) * Number(speedSelect.value);
    last = now;
    showMoment(Math.floor(position));
    if (historyAt >= timeline.length) { pause(); return; }
    playing = requestAnimationFrame(step);
  };
  playing = requestAnimationFrame(step);
}
document.getElementById('history').addEventListener('click', () => (historyCut === null ? openHistory() : goLive()));
document.getElementById('history-live').addEventListener('click', goLive);
playButton.addEventListener('click', () => (playing ? pause() : play()));
historySlider.addEventListener('input', () => { pause(); showMoment(Number(historySlider.value)); });


// For tests: the board at the first k events (k past the end: now), as a page shows it when
// scrubbed there: visible strokes and every stroke's points by then (hidden ones too, as
// `journal digest --at k --json` counts them), and how long drawing it took.
window.strokeJournalAt = function (k) {
  if (historyPanel.hidden) openHistory();
  pause();
  const started = performance.now();
  showMoment(k);
  redrawAll();
  // Reading a pixel back makes the canvas rasterise what it was asked to draw: without it
  // the time would count recording the drawing, not drawing it.
  screen.getImageData(0, 0, 1, 1);
  const drawn = performance.now() - started;
  let visible = 0, points = 0;
  const clear = latestThrough(clears, historyCut);
  for (const s of strokes.values()) {
    if (!s.first || !atOrBefore(s.first, historyCut)) continue;
    points += countThrough(pointsOf(s), historyCut);
    if (visibleAt(s, historyCut, clear)) visible += 1;
  }
  const picture = pictureFor(historyAt);
  return { events: historyAt, of: timeline.length, visibleStrokes: visible, points: points, milliseconds: drawn,
           exactAtOnce: picture ? picture.exact : true, leftOut: picture ? picture.unsettled.length : 0 };
};

// For tests and benchmarks: from how many events of history pictures are used (Infinity:
// never), and how many a board gets; undefined keeps a value. Forgets those made.
window.strokeJournalSetPictures = function (minimumEvents, count) {
  if (minimumEvents !== undefined && minimumEvents !== null) PICTURES.minimumEvents = minimumEvents;
  if (count !== undefined && count !== null) PICTURES.count = count;
  forgetPictures();
  return { minimumEvents: PICTURES.minimumEvents, count: PICTURES.count };
};
// For benchmarks: whether the moment shown is drawn exactly (no repaint pending).
window.strokeJournalExact = function () { return refining === null; };
// For benchmarks: how many pictures are made, and how many the board gets.
window.strokeJournalPictureCount = function () {
  return { made: pictures.size, wanted: pictureStep ? Math.floor(timeline.length / pictureStep) : 0 };
};
// For tests: moment k drawn with the pictures (at once, and once drawn exactly) and drawn
// afresh without them, compared pixel by pixel; `minimumEvents` and `count` (optional) set
// when pictures are used, so that a small board uses them too. The first paint may stack a
// stroke that changes later above others it crosses, never add or miss ink: its alpha is
// compared apart.
window.strokeJournalComparePictures = function (k, minimumEvents, count) {
  window.strokeJournalSetPictures(minimumEvents, count);
  window.strokeJournalAt(k);
  const picture = pictureFor(historyAt);
  const read = () => screen.getImageData(0, 0, canvas.width, canvas.height).data;
  const first = read();
  const refined = refineNow();
  const exact = read();
  const saved = PICTURES.minimumEvents;
  PICTURES.minimumEvents = Infinity;
  redrawAll();
  const afresh = read();
  PICTURES.minimumEvents = saved;
  const compare = (a, b, channels) => {
    let differing = 0, largest = 0;
    for (let i = 0; i < a.length; i += 4) {
      let most = 0;
      for (const c of channels) most = Math.max(most, Math.abs(a[i + c] - b[i + c]));
      if (most > 0) differing += 1;
      largest = Math.max(largest, most);
    }
    return { differingPixels: differing, largestDifference: largest };
  };
  let ink = 0;
  for (let i = 3; i < afresh.length; i += 4) if (afresh[i] > 0) ink += 1;
  redrawAll();
  refineNow();
  return { events: historyAt, usedPicture: picture !== null, exactAtOnce: picture ? picture.exact : true, refined: refined,
           pictures: pictures.size, inkPixels: ink, firstPaintInk: compare(first, afresh, [3]),
           firstPaint: compare(first, afresh, [0, 1, 2, 3]), exact: compare(exact, afresh, [0, 1, 2, 3]) };
};

// For tests: the canvas against an SVG of the same moment (`journal render --at k
// --background none`) drawn in the same view: the share of each one's ink within `radius`
// device pixels of the other's. The page and the SVG widen a stroke by its pressure
// differently, so ink is compared near, not exactly; a stroke missing, extra or misplaced on
// either side leaves ink far from the other's.
window.strokeJournalCompareWithSVG = async function (svgText, radius) {
  const root = new DOMParser().parseFromString(svgText, 'image/svg+xml').documentElement;
  const box = (root.getAttribute('viewBox') || '').split(/[\s,]+/).map(Number);
  if (box.length !== 4 || box.some((v) => !Number.isFinite(v))) throw new Error('the SVG has no viewBox');
  const url = URL.createObjectURL(new Blob([svgText], { type: 'image/svg+xml' }));
  const image = new Image();
  try {
    await new Promise((resolve, reject) => {
      image.onload = resolve;
      image.onerror = () => reject(new Error('the SVG did not load'));
      image.src = url;
    });
  } finally {
    URL.revokeObjectURL(url);
  }
  const width = canvas.width, height = canvas.height;
  const other = document.createElement('canvas');
  other.width = width;
  other.height = height;
  const into = other.getContext('2d');
  into.setTransform(scale * view.zoom, 0, 0, scale * view.zoom, scale * view.x, scale * view.y);
  into.drawImage(image, box[0], box[1], box[2], box[3]);
  const inkOf = (data) => {
    const ink = new Uint8Array(width * height);
    for (let i = 0; i < ink.length; i++) ink[i] = data[4 * i + 3] > 64 ? 1 : 0;
    return ink;
  };
  // Ink widened by `radius` pixels every way: a running count along rows, then columns.
  const near = (ink) => {
    const rows = new Uint8Array(ink.length), out = new Uint8Array(ink.length);
    for (let y = 0; y < height; y++) {
      let count = 0;
      for (let x = -radius; x < width; x++) {
        if (x + radius < width) count += ink[y * width + x + radius];
        if (x - radius - 1 >= 0) count -= ink[y * width + x - radius - 1];
        if (x >= 0) rows[y * width + x] = count > 0 ? 1 : 0;
      }
    }
    for (let x = 0; x < width; x++) {
      let count = 0;
      for (let y = -radius; y < height; y++) {
        if (y + radius < height) count += rows[(y + radius) * width + x];
        if (y - radius - 1 >= 0) count -= rows[(y - radius - 1) * width + x];
        if (y >= 0) out[y * width + x] = count > 0 ? 1 : 0;
      }
    }
    return out;
  };
  const page = inkOf(screen.getImageData(0, 0, width, height).data);
  const svg = inkOf(into.getImageData(0, 0, width, height).data);
  const nearPage = near(page), nearSVG = near(svg);
  let pageInk = 0, svgInk = 0, pageNear = 0, svgNear = 0;
  for (let i = 0; i < page.length; i++) {
    if (page[i]) { pageInk += 1; pageNear += nearSVG[i]; }
    if (svg[i]) { svgInk += 1; svgNear += nearPage[i]; }
  }
  return { pageInk: pageInk, svgInk: svgInk, pageNearSVG: pageInk ? pageNear / pageInk : 1, svgNearPage: svgInk ? svgNear / svgInk : 1 };
};
