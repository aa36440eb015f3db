// The page's surroundings (loaded first, imports nothing): the board named by the address, the
// token and invitation taken out of it (docs/PROTOCOL.md, "Invitations"), the relay's socket
// address, the catch-up reader segment-reader.js put on `window`, and the page's elements.

// A browser without BigInt cannot load the reader, one without a raw-DEFLATE
// DecompressionStream cannot use it: such a page catches up in text, as before blocks.
export const Segments = window.StrokeJournalSegments;
export const plus = Segments ? Segments.plus : (a, b) => a + b;
export const blocksReadable = (() => {
  try { return !!Segments && !!new DecompressionStream('deflate-raw'); } catch (e) { return false; }
})();
export const board = decodeURIComponent(location.pathname.split('/')[2] || '');
document.title = board + ' · StrokeJournal';

// ---- Access: the token from the address's fragment (/boards/B#token=…) ----
// Taken out of the address at once (replaceState: not in the tab's history, nor in a link
// copied from it), kept in this tab's sessionStorage for its reloads (per board), and sent
// in every hello. A fragment never reaches a server, and the page sends no referrer.
// An invitation (#invite=…, docs/PROTOCOL.md "Invitations") is taken the same way, and
// kept until the relay has redeemed it for this page's key.
function secretFromFragment(name) {
  const key = 'strokejournal.' + name + '.' + board;
  let found = null;
  const fragment = location.hash.replace(/^#/, '');
  if (fragment) {
    const rest = [];
    for (const part of fragment.split('&')) {
      if (part.startsWith(name + '=')) {
        try { found = decodeURIComponent(part.slice(name.length + 1)); } catch (e) { found = part.slice(name.length + 1); }
      } else if (part) {
        rest.push(part);
      }
    }
    if (found !== null) {
      try { history.replaceState(history.state, '', location.pathname + location.search + (rest.length ? '#' + rest.join('&') : '')); } catch (e) { /* still sent, only not hidden */ }
      try { sessionStorage.setItem(key, found); } catch (e) { /* no storage: this load only */ }
    }
  }
  if (found === null) {
    try { found = sessionStorage.getItem(key); } catch (e) { /* no storage */ }
  }
  return found || '';
}
export const token = secretFromFragment('token');
export let invitation = secretFromFragment('invite');
// How many loads of this tab have tried the invitation (counted in sessionStorage).
export function invitationAttempts() {
  const name = 'strokejournal.invite-attempts.' + board;
  let attempts = 0;
  try {
    attempts = Number(sessionStorage.getItem(name) || '0') + 1;
    sessionStorage.setItem(name, String(attempts));
  } catch (e) { return Infinity; }
  return attempts - 1;
}
export function forgetInvitation() {
  invitation = '';
  redemption = '';
  try {
    sessionStorage.removeItem('strokejournal.invite.' + board);
    sessionStorage.removeItem('strokejournal.invite-attempts.' + board);
  } catch (e) { /* no storage */ }
}
export const socketURL = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host +
  '/boards/' + encodeURIComponent(board) + '/ws?hello';

// The redemption of this page's invitation (FORMAT.md §17.6): a grant of the invitation's
// role to this page's key, signed by the invitation's key as seq 1 of its membership
// replica, in lowercase hex; '' when there is none or the code is not one.
export let redemption = '';
export function setRedemption(made) { redemption = made; }

// The page's elements.
export const bar = document.getElementById('bar');
export const statusView = document.getElementById('status');
export const canvas = document.getElementById('canvas');
export const screen = canvas.getContext('2d');
export const zoomValue = document.getElementById('zoom-reset');
export const colorInput = document.getElementById('color');
export const widthInput = document.getElementById('width');
export const eraserButton = document.getElementById('eraser');
export const panButton = document.getElementById('pan');
export const widthValue = document.getElementById('width-value');
export const historyPanel = document.getElementById('history-panel');
export const historySlider = document.getElementById('history-slider');
export const historyLabel = document.getElementById('history-label');
export const playButton = document.getElementById('history-play');
export const speedSelect = document.getElementById('history-speed');
export const nameInput = document.getElementById('name');
export const peopleView = document.getElementById('people');
export const cursorLayer = document.getElementById('cursors');
export const swatchesView = document.getElementById('swatches');
