// The board as a picture, whole (not the part the window shows) and on white, as `journal
// render` draws it by default: SVG, one polyline per run of points of one colour and width
// (pressure left out: a picture to share, not the journal); PNG, the canvas's own drawing at up
// to 2 pixels a board unit and at most 4,096 pixels a side (what a phone's canvas holds).
import { board } from './page.mjs';
import { isVisible, pointsOf, visibleBounds, zOrder } from './fold.mjs';
import { drawInto, drawPoints } from './view.mjs';

const EMPTY = { minX: 0, minY: 0, maxX: 100, maxY: 100 };
const PNG_PIXELS_PER_UNIT = 2, PNG_MAX_SIDE = 4096;
function escapeXML(text) {
  return text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' }[c]));
}
const rounded = (v) => Math.round(v * 100) / 100;
export function boardSVG() {
  const box = visibleBounds() || EMPTY;
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
    }
    if (run.length === 1) run.push(run[0]);
    flush();
  }
  const frame = [box.minX, box.minY, box.maxX - box.minX, box.maxY - box.minY].map(rounded);
  return '<svg xmlns="http://www.w3.org/2000/svg" viewBox="' + frame.join(' ') + '">\n<title>' + escapeXML(board) + '</title>\n' +
    '<rect x="' + frame[0] + '" y="' + frame[1] + '" width="' + frame[2] + '" height="' + frame[3] + '" fill="#FFFFFF"/>\n' +
    '<g fill="none" stroke-linecap="round" stroke-linejoin="round">\n' + body.join('\n') + '\n</g>\n</svg>\n';
}
// A canvas holding the whole board: every visible stroke drawn as the page draws it.
export function boardPNG() {
  const box = visibleBounds() || EMPTY;
  const width = box.maxX - box.minX, height = box.maxY - box.minY;
  const perUnit = Math.min(PNG_PIXELS_PER_UNIT, PNG_MAX_SIDE / Math.max(width, height));
  const picture = document.createElement('canvas');
  picture.width = Math.max(1, Math.min(PNG_MAX_SIDE, Math.ceil(width * perUnit)));
  picture.height = Math.max(1, Math.min(PNG_MAX_SIDE, Math.ceil(height * perUnit)));
  const into = picture.getContext('2d');
  into.fillStyle = '#FFFFFF';
  into.fillRect(0, 0, picture.width, picture.height);
  into.setTransform(perUnit, 0, 0, perUnit, -box.minX * perUnit, -box.minY * perUnit);
  into.lineCap = 'round';
  into.lineJoin = 'round';
  const saved = drawInto(into);
  try {
    for (const s of zOrder) {
      if (!isVisible(s)) continue;
      const points = pointsOf(s);
      drawPoints(points, points.length, perUnit);
    }
  } finally {
    drawInto(saved);
  }
  return picture;
}
export function download(blob, extension) {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = board + '.' + extension;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}
