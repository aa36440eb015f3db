// The drawing page a relay serves at `/boards/<board>` (docs/PROTOCOL.md, "The drawing
// page"): plain HTML, CSS and JavaScript (Sources/JournalServe/Web), embedded in the relay
// binary at build time: no build step, nothing fetched from elsewhere, so the relay is all a
// browser needs, offline too.
//
// The page is the same for every board: it reads the board's name from its own address.
// What it does, briefly:
// - draws with pointer events (pressure, coalesced samples, pointer capture), one random
//   128-bit stroke id per stroke, a `point` event per sample and an `end` when the pointer
//   lifts;
// - draws as a replica of its own where the browser can sign (native mode, "The page's own
//   replica" below): it names its events and sends them in signed native text frames; else
//   (or with #text in the address) in text mode, one canonical line per text frame, named by
//   the relay;
// - folds what it holds as `journal` does (FORMAT.md §7.3, §9.1): points sorted by order key,
//   strokes in creation order, visibility by the latest of undo/redo/erase/clear;
// - keeps every frame until it is acknowledged and resends what was not after reconnecting,
//   with a `hello` naming the events it holds so the relay sends exactly what it lacks;
// - takes that catch-up in blocks (`"blocks":true`): the journal's own compressed blocks,
//   read by segment-reader.js (also run in two workers, segment-worker.js), about
//   100× fewer bytes than one event message per event; a damaged message makes it catch up
//   in text instead.
//
// Its own events are drawn at once with a provisional order key, and take their place when
// the relay sends them back (`"echo":true` in the hello: each event comes back once durable,
// before the ack that covers it, with the id and clocks the journal gave it), so the page
// draws what the journal holds: a Clear hides exactly what the journal's clear hides. Own
// events the journal holds but whose echo was lost with a connection come back in the next
// catch-up, matched by content, so nothing is drawn twice and frames the journal already
// holds are not sent again.
//
// Integers that order events stay exact in text as in blocks: the envelope
// (`…,"replica":…,"seq":N,"lamport":N,"time":N}`, always last) is read from the message's
// text, a Number when it is a safe integer and a BigInt past 2^53, never a rounded Number.
//
// Access: a token in the page's address (`#token=…`) is taken out of it at once
// (`history.replaceState`), kept in the tab's `sessionStorage` for its reloads and sent in
// every hello; an error about the token stops the reconnecting, and a frame refused as
// view-only makes the page a viewer.
//
// The page is ES modules, each with one job, loaded by this one: page.mjs (the address, its
// token, the elements), fold.mjs (what the page holds, folded), identity.mjs (the page's own
// key), view.mjs (the canvas), picture.mjs (the whole board as SVG or PNG), connection.mjs
// (the relay), tools.mjs (drawing tools), history.mjs (any moment) and presence.mjs (who else
// is here). A module owns the state it changes; others read it through live bindings and
// change it only by calling its functions.
//
// `window.strokeJournalState()` reports counts and `window.strokeJournalFold()` the fold, for
// tests (Tools/ci/page-test/page_test.py).
import { invitation, statusView, token } from './page.mjs';
import { held, isVisible, pointCount, pointsOf, refreshZOrder, strokes, zOrder } from './fold.mjs';
import { findOwnKey } from './identity.mjs';
import { resize, view } from './view.mjs';
import { boardPNG, boardSVG } from './picture.mjs';
import { challengesAnswered, decodeBlocks, live, nativeFramesSent, ownKey, received, report, start, stopped, timing, unackedCount, unconfirmed, useBlocks, viewOnly } from './connection.mjs';
import { shareLink } from './tools.mjs';
import { others } from './presence.mjs';

// For tests: the SVG the SVG button saves; the PNG's size, its pixels that are not white and
// its bytes;
// the address Link copies.
window.strokeJournalSVG = boardSVG;
window.strokeJournalPNG = function () {
  const picture = boardPNG();
  const data = picture.getContext('2d').getImageData(0, 0, picture.width, picture.height).data;
  let ink = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i] < 250 || data[i + 1] < 250 || data[i + 2] < 250) ink += 1;
  return { width: picture.width, height: picture.height, inkPixels: ink, dataURL: picture.toDataURL('image/png') };
};
window.strokeJournalShareLink = shareLink;

// For tests: counts only, nothing that could change the board.
window.strokeJournalState = function () {
  let visibleStrokes = 0, strokeCount = 0;
  for (const s of strokes.values()) {
    if (!s.points.length) continue;
    strokeCount += 1;
    if (isVisible(s)) visibleStrokes += 1;
  }
  let provisional = 0;
  for (const list of unconfirmed.values()) provisional += list.length;
  return {
    strokes: strokeCount, points: pointCount, visibleStrokes: visibleStrokes, live: live, unacked: unackedCount(),
    provisional: provisional, viewOnly: viewOnly, stopped: !!stopped, token: !!token,
    replica: ownKey ? ownKey.replica : null, key: ownKey ? ownKey.publicHex : null, nativeFrames: nativeFramesSent, challenges: challengesAnswered,
    blocks: useBlocks, decoder: decodeBlocks.where(), status: statusView.textContent, received: { text: received.text, binary: received.binary },
    timing: { opened: timing.opened, caughtUp: timing.caughtUp, drawn: timing.drawn, redraw: timing.redraw },
    view: { x: view.x, y: view.y, zoom: view.zoom },
    others: Array.from(others.values(), (o) => ({ name: o.name, color: o.color, x: o.x, y: o.y, shown: !o.element.hidden })),
  };
};
// For tests: the fold itself (strokes in z-order, each point's values as held) and the
// seq ranges held per replica (as text: they may be BigInts). Read only.
window.strokeJournalFold = function () {
  refreshZOrder();
  const held_ = {};
  for (const [replica, ranges] of held) held_[replica] = ranges.map((r) => [String(r[0]), String(r[1])]);
  return {
    strokes: zOrder.map((s) => ({ id: s.id, visible: isVisible(s), ended: s.ends > 0, points: pointsOf(s).map((r) => r.point) })),
    held: held_,
  };
};

resize();
findOwnKey().then(async (found) => {
  if (invitation && !found) report('this browser cannot make a key of its own, so it cannot accept the invitation (it needs WebCrypto Ed25519, in a secure context)', 30);
  start(found);
});
