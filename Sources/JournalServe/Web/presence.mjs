// Presence: who else is here and their pointers (never journalled: docs/PROTOCOL.md).
import { canvas, colorInput, cursorLayer, nameInput, peopleView } from './page.mjs';
import { toBoard, view } from './view.mjs';
import { live, socket } from './connection.mjs';
import { round } from './tools.mjs';

// ---- Presence: who else is here, and their pointers (never journalled: PROTOCOL.md) ----
// This page says its person's name (kept in the browser, editable), its pen colour and
// where its pointer is on the board, at most 20 times a second; others are listed in the
// bar and their pointers drawn over the board. Names are shown as text, never markup.
export const others = new Map();       // the relay's connection id -> {name, color, x, y, element}
function fittingName(text) {
  let name = Array.from(String(text)).filter((c) => c.charCodeAt(0) >= 0x20 && !(c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f)).join('').trim();
  const encoder = new TextEncoder();
  while (encoder.encode(name).length > 64) name = name.slice(0, -1);
  return name;
}
nameInput.value = fittingName((() => {
  try { return localStorage.getItem('strokejournal.name') || ''; } catch (e) { return ''; }
})()) || 'guest ' + (100 + Math.floor(Math.random() * 900));
nameInput.addEventListener('change', () => {
  nameInput.value = fittingName(nameInput.value) || 'guest';
  try { localStorage.setItem('strokejournal.name', nameInput.value); } catch (e) { /* this load only */ }
  sendPresence();
});
colorInput.addEventListener('change', () => sendPresence());
let pointer = null;             // this page's pointer on the board, or null
let presenceTimer = 0;
let presenceSentAt = -Infinity;
export function sendPresence() {
  if (!socket || !live || presenceTimer) return;
  presenceTimer = setTimeout(() => {
    presenceTimer = 0;
    if (!socket || !live) return;
    presenceSentAt = performance.now();
    const frame = { type: 'presence', name: nameInput.value, color: colorInput.value };
    if (pointer) { frame.x = round(pointer.x, 1); frame.y = round(pointer.y, 1); }
    socket.send(JSON.stringify(frame));
  }, Math.max(0, 50 - (performance.now() - presenceSentAt)));
}
canvas.addEventListener('pointermove', (e) => {
  pointer = toBoard(e.clientX, e.clientY);
  sendPresence();
});
canvas.addEventListener('pointerleave', () => {
  pointer = null;
  sendPresence();
});
export function receivePresence(message) {
  const id = String(message.id);
  let other = others.get(id);
  if (message.gone) {
    if (other) { other.element.remove(); others.delete(id); showPeople(); }
    return;
  }
  if (!other) {
    const element = document.createElement('div');
    element.className = 'cursor';
    element.appendChild(document.createElement('span'));
    cursorLayer.appendChild(element);
    other = { element: element };
    others.set(id, other);
  }
  other.name = typeof message.name === 'string' ? message.name : '';
  other.color = /^#[0-9a-fA-F]{6}$/.test(message.color) ? message.color : '#757575';
  other.x = typeof message.x === 'number' && typeof message.y === 'number' ? message.x : null;
  other.y = other.x === null ? null : message.y;
  other.element.firstChild.textContent = other.name;
  other.element.style.setProperty('--person', other.color);
  placeCursor(other);
  showPeople();
}
function placeCursor(other) {
  other.element.hidden = other.x === null;
  if (other.x !== null) {
    other.element.style.transform = 'translate(' + (other.x * view.zoom + view.x) + 'px, ' + (other.y * view.zoom + view.y) + 'px)';
  }
}
export function placeCursors() { for (const other of others.values()) placeCursor(other); }
const SHOWN_NAMES = 3;
function showPeople() {
  peopleView.textContent = '';
  const names = [];
  for (const other of others.values()) {
    names.push(other.name);
    // Names as text (never markup), the first few in the bar, the rest counted.
    if (names.length > SHOWN_NAMES) continue;
    const chip = document.createElement('span');
    chip.className = 'person';
    chip.style.setProperty('--person', other.color);
    chip.textContent = other.name;
    chip.title = other.name;
    peopleView.appendChild(chip);
  }
  if (names.length > SHOWN_NAMES) {
    const more = document.createElement('span');
    more.className = 'more';
    more.textContent = '+' + (names.length - SHOWN_NAMES);
    peopleView.appendChild(more);
  }
  peopleView.title = names.length ? 'also here: ' + names.join(', ') : 'nobody else is here';
  peopleView.dataset.count = String(others.size);
}
export function forgetOthers() {
  for (const other of others.values()) other.element.remove();
  others.clear();
  showPeople();
}
