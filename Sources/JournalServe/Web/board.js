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
// `window.strokeJournalState()` reports counts and `window.strokeJournalFold()` the fold, for
// tests (Tools/ci/page-test/page_test.py).
'use strict';
(function () {
  // A browser without BigInt cannot load the reader, one without a raw-DEFLATE
  // DecompressionStream cannot use it: such a page catches up in text, as before blocks.
  const Segments = window.StrokeJournalSegments;
  const plus = Segments ? Segments.plus : (a, b) => a + b;
  const blocksReadable = (() => {
    try { return !!Segments && !!new DecompressionStream('deflate-raw'); } catch (e) { return false; }
  })();
  const board = decodeURIComponent(location.pathname.split('/')[2] || '');
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
  const token = secretFromFragment('token');
  let invitation = secretFromFragment('invite');
  // How many loads of this tab have tried the invitation (counted in sessionStorage).
  function invitationAttempts() {
    const name = 'strokejournal.invite-attempts.' + board;
    let attempts = 0;
    try {
      attempts = Number(sessionStorage.getItem(name) || '0') + 1;
      sessionStorage.setItem(name, String(attempts));
    } catch (e) { return Infinity; }
    return attempts - 1;
  }
  function forgetInvitation() {
    invitation = '';
    redemption = '';
    try {
      sessionStorage.removeItem('strokejournal.invite.' + board);
      sessionStorage.removeItem('strokejournal.invite-attempts.' + board);
    } catch (e) { /* no storage */ }
  }
  const socketURL = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host +
    '/boards/' + encodeURIComponent(board) + '/ws?hello';

  // ---- Order keys (FORMAT.md §7.3): (lamport, wall time, replica hex, seq) of a record ----
  // Events of this page not yet seen back from the relay have no key; they get a provisional
  // one after every real key, in the order they were made (+Infinity, +Infinity, '', local
  // counter): the relay records them after everything it holds when they reach it. Their
  // echo (or, when a connection was lost first, the catch-up) gives them their real key.
  // Integers are Numbers when safe, BigInts past 2^53 (exact, from blocks and from the
  // envelope of event messages alike): < and > compare the two kinds exactly, === holds
  // because a value has one form only, and a key never does arithmetic on them.
  let localCounter = 0;
  function setProvisionalKey(record) {
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
  function envelopeOf(text) {
    const at = text.lastIndexOf(',"replica":"');
    if (at < 0) return null;
    envelopeLayout.lastIndex = at;
    const m = envelopeLayout.exec(text);
    if (!m) return null;
    return { replica: m[1], seq: exactInteger(m[2]), lamport: exactInteger(m[3]), time: exactInteger(m[4]) };
  }
  function compareKeys(a, b) {
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
  const strokes = new Map();      // stroke id (32 lowercase hex) -> stroke
  const clears = [];              // clear records
  const ends = [];                // end records: they draw nothing, yet count as moments
  let historyCut = null;          // History: the last record of the moment shown; null: live
  let historyStale = true;        // History: the timeline misses records applied since it was built
  let latestClear = null;
  let pointCount = 0;
  let zOrder = [];                // strokes with points, by creation key
  let zOrderStale = false;

  function strokeFor(id) {
    let s = strokes.get(id);
    if (!s) {
      s = { id: id, points: [], late: [], first: null, ops: [], ends: 0 };
      strokes.set(id, s);
    }
    return s;
  }
  // `created`: the record with the creation key (its first point), or a key in its place.
  function isVisible(s, created = s.first) {
    const op = maxKey(s.ops);
    let visible = op ? op.kind === 'redo' : true;
    if (latestClear && created && compareKeys(created, latestClear) < 0 &&
        (!op || compareKeys(op, latestClear) < 0)) visible = false;
    return visible;
  }

  // Adds a record; returns true when only the last segment of the topmost stroke changed
  // (the screen can then be updated in place), false when it needs a full redraw.
  function apply(record) {
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
  function unapply(record) {
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
  function pointsOf(s) {
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
  function refreshZOrder() {
    if (!zOrderStale) return;
    zOrder = [];
    for (const s of strokes.values()) if (s.first) zOrder.push(s);
    zOrder.sort((a, b) => compareKeys(a.first, b.first));
    zOrderStale = false;
  }

  // ---- Events held, per replica, as sorted seq ranges (what the hello says) ----
  const held = new Map();         // replica hex -> [[first, last], ...] sorted, disjoint, not adjacent
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
  function hold(replica, seq) {
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
  function holdRange(replica, first, last) {
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

  // ---- The page's own replica (native mode: docs/PROTOCOL.md, "Native text frames") ----
  // The page draws as a replica of its own: an Ed25519 key made by the browser (WebCrypto,
  // never exported: only its public half leaves), kept in IndexedDB for the next visits, one
  // per open tab at a time (a Web Lock per key: two tabs of one key would each close the
  // other's connection). The page names its events itself (its replica, the next seq, a
  // Lamport clock past every event it has seen, the time), so the journal credits the person
  // and a resend after a lost connection is the same event, deduplicated by id. Where the
  // browser has no Ed25519 (or no IndexedDB or locks, or the address says #text), the page
  // draws in text mode as before: its events are then the relay's.
  const forceText = /(^|&)text(&|$)/.test(location.hash.replace(/^#/, ''));
  let ownKey = null;              // {pair, publicHex, replica} once made or found
  let ownNext = 1;                // the next seq to name
  let lamportSeen = 0;            // the largest Lamport clock folded (a Number or a BigInt)
  const KEY_DB = 'strokejournal', KEY_STORE = 'keys';
  const hexOf = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  function requestOf(request) {
    return new Promise((resolve, reject) => { request.onsuccess = () => resolve(request.result); request.onerror = () => reject(request.error); });
  }
  // Resolves true once this tab holds the lock of key `hex` on this board (until it closes),
  // false when another tab holds it (after waiting up to `waitMs` for it: a reloaded tab's
  // lock is released as its old page goes). Per board: one key may draw on two boards at
  // once (a replica's one connection is per board), and its membership is per board.
  function lockFor(hex, waitMs) {
    const name = 'strokejournal.key.' + board + '.' + hex;
    return new Promise((resolve) => {
      const options = waitMs ? { signal: AbortSignal.timeout(waitMs) } : { ifAvailable: true };
      navigator.locks.request(name, options, (lock) => {
        resolve(!!lock);
        return lock ? new Promise(() => {}) : null;
      }).catch(() => resolve(false));
    });
  }
  const lastKeyName = 'strokejournal.lastkey.' + board;
  async function replicaOf(publicKey) {
    const label = new TextEncoder().encode('StrokeJournal replica key v1\0');
    const message = new Uint8Array(label.length + publicKey.length);
    message.set(label);
    message.set(publicKey, label.length);
    return hexOf(new Uint8Array(await crypto.subtle.digest('SHA-256', message)).slice(0, 16));
  }
  function remembered(entry) {
    try { localStorage.setItem(lastKeyName, entry.publicHex); } catch (e) { /* no storage */ }
    return entry;
  }
  async function findOwnKey() {
    if (forceText || !window.crypto || !crypto.subtle || !window.indexedDB || !navigator.locks) return null;
    try {
      const opening = indexedDB.open(KEY_DB, 1);
      opening.onupgradeneeded = () => opening.result.createObjectStore(KEY_STORE, { keyPath: 'publicHex' });
      const db = await requestOf(opening);
      const stored = await requestOf(db.transaction(KEY_STORE).objectStore(KEY_STORE).getAll());
      // The key this browser drew with on this board last comes first (it is the one an
      // admin granted, or an invitation made a member), waited for a moment.
      let last = null;
      try { last = localStorage.getItem(lastKeyName); } catch (e) { /* no storage */ }
      stored.sort((a, b) => (b.publicHex === last) - (a.publicHex === last));
      for (const entry of stored) {
        if (await lockFor(entry.publicHex, entry.publicHex === last ? 1000 : 0)) return remembered(entry);
      }
      const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
      const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
      const entry = { pair: pair, publicHex: hexOf(publicKey), replica: await replicaOf(publicKey), made: Date.now() };
      if (!(await lockFor(entry.publicHex, 0))) return null;
      await requestOf(db.transaction(KEY_STORE, 'readwrite').objectStore(KEY_STORE).put(entry));
      return remembered(entry);
    } catch (e) {
      return null;   // no Ed25519 here (or storage refused): text mode
    }
  }
  // The redemption of this page's invitation (FORMAT.md §17.6): a grant of the invitation's
  // role to this page's key, signed by the invitation's key as seq 1 of its membership
  // replica, in lowercase hex; '' when there is none or the code is not one.
  let redemption = '';
  const bytesOfHex = (hex) => new Uint8Array(hex.match(/../g).map((h) => parseInt(h, 16)));
  const base64url = (bytes) => btoa(String.fromCharCode.apply(null, bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  function concat(parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) { out.set(part, at); at += part.length; }
    return out;
  }
  async function makeRedemption() {
    if (!ownKey || !/^[0-9a-f]{178}$/.test(invitation)) return '';
    const code = bytesOfHex(invitation);
    const secret = code.slice(0, 32), publicKey = code.slice(32, 64), boardID = code.slice(64, 80);
    const view = new DataView(code.buffer);
    const lamport = view.getBigUint64(80, true) + 1n, role = code[88];
    const statement = new Uint8Array(115);
    const fields = new DataView(statement.buffer);
    fields.setBigUint64(0, lamport, true);
    fields.setBigInt64(8, BigInt(Date.now()), true);
    statement[16] = 2;                      // grant
    statement[17] = role;
    statement.set(boardID, 18);
    statement.set(bytesOfHex(ownKey.publicHex), 34);
    // drawCut, memberCut 0; no label (the invitation's is taken)
    statement.set(publicKey, 83);
    const text = new TextEncoder();
    const replica = new Uint8Array(await crypto.subtle.digest('SHA-256',
      concat([text.encode('StrokeJournal member key v1\0'), boardID, publicKey]))).slice(0, 16);
    const seq = new Uint8Array(8);
    seq[0] = 1;
    const key = await crypto.subtle.importKey('jwk',
      { kty: 'OKP', crv: 'Ed25519', d: base64url(secret), x: base64url(publicKey) }, { name: 'Ed25519' }, false, ['sign']);
    const signature = new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, key,
      concat([text.encode('StrokeJournal membership v1\0'), replica, seq, statement])));
    return hexOf(concat([statement, signature]));
  }

  // The hello that answers a socket's challenge: its nonce signed with this page's key.
  async function answerChallenge(opened, nonce) {
    // The redemption is made anew for each hello: its time must be near the relay's.
    if (invitation) {
      try { redemption = await makeRedemption(); } catch (e) { redemption = ''; report('the invitation in the address is not one: ' + e, 30); }
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
      const final = { lamport: plus(base, 1), time: Date.now(), replica: ownKey.replica, seq: ownNext };
      ownNext = plus(ownNext, 1);
      ownLamport = final.lamport;
      settle(entry.record, final);
      entry.named = true;
      entry.line = withEnvelope(entry.body, entry.record);
      ownBySeq.set(String(final.seq), entry);
    }
  }
  let ownLamport = 0;
  let nativeFramesSent = 0;
  let challengesAnswered = 0;
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

  // ---- Drawing ----
  const canvas = document.getElementById('canvas');
  const screen = canvas.getContext('2d');
  let ctx = screen;               // where drawing goes: the screen, or a history picture being made
  let scale = 1;

  // ---- The view: pan and zoom ----
  // Points are in board coordinates; the screen shows board × zoom + (x, y), in CSS pixels.
  // A pen's width is in board units, so a stroke keeps its size on the board at any zoom.
  const view = { x: 0, y: 0, zoom: 1 };
  const MIN_ZOOM = 0.05, MAX_ZOOM = 40;
  const zoomValue = document.getElementById('zoom-reset');
  function toBoard(clientX, clientY) {
    return { x: (clientX - view.x) / view.zoom, y: (clientY - view.y) / view.zoom };
  }
  // Keeps the board's point under (clientX, clientY) where it is.
  function zoomAt(clientX, clientY, factor) {
    const zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, view.zoom * factor));
    const at = toBoard(clientX, clientY);
    view.x = clientX - at.x * zoom;
    view.y = clientY - at.y * zoom;
    view.zoom = zoom;
    viewChanged();
  }
  function panBy(dx, dy) {
    view.x += dx;
    view.y += dy;
    viewChanged();
  }
  function resetView() {
    view.x = 0;
    view.y = 0;
    view.zoom = 1;
    viewChanged();
  }
  function viewChanged() {
    zoomValue.textContent = Math.round(view.zoom * 100) + '%';
    placeCursors();
    redrawNow();
  }
  function resize() {
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
  function drawPoints(points, n) {
    if (n === 0) return;
    if (n === 1) { drawSegment(null, points[0].point); return; }
    for (let i = 0; i < n; i++) {
      if (!isFar(points[i].point)) continue;
      // A stroke reaching far out: segment by segment, each cut to what the canvas can draw.
      for (let j = 1; j < n; j++) drawSegment(points[j - 1].point, points[j].point);
      return;
    }
    const step = 0.5 / (scale * view.zoom), stepSquared = step * step;
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
  function useViewTransform() {
    ctx.setTransform(scale * view.zoom, 0, 0, scale * view.zoom, scale * view.x, scale * view.y);
    ctx.lineCap = 'round';
    ctx.lineJoin = 'round';
  }
  function redrawAll() {
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
  function drawLastSegment(s) {
    const n = s.points.length;
    drawSegment(n > 1 ? s.points[n - 2].point : null, s.points[n - 1].point);
  }
  let redrawPending = false;
  let redrawTimer = 0;
  let catchingUp = true;
  let catchUpStarted = 0;
  let pointsDrawn = 0;            // points held at the last full redraw
  // While a board streams in, a full redraw costs what the board holds: a catch-up draws
  // nothing for its first 3 seconds (a catch-up in blocks of 2M points is done by then),
  // then only each time the board has doubled since the last redraw, so all its redraws
  // together cost at most twice the final one.
  function catchUpRedrawDue() {
    return performance.now() - catchUpStarted >= 3000 && pointCount >= 2 * pointsDrawn;
  }
  function scheduleRedraw() {
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
  function redrawNow() {
    if (redrawTimer) { clearTimeout(redrawTimer); redrawTimer = 0; redrawPending = false; }
    scheduleRedraw();
  }
  // Live events are drawn at once (in place when they extend the top stroke); a catch-up's
  // only when it ends or by the rule above, never per event.
  function show(record) {
    if (apply(record) && !catchingUp && historyCut === null) {
      if (record.kind === 'point') drawLastSegment(strokes.get(record.stroke));
    } else {
      scheduleRedraw();
    }
  }

  // ---- Lines (the canonical form `journal record` reads) ----
  function normaliseID(text) { return String(text).replace(/-/g, '').toLowerCase(); }
  // One spelling per event content, the same for what this page sent and for what the relay
  // sends back (which reformats numbers, ids and colours): how own events are recognised.
  function contentOf(kind, stroke, point) {
    if (kind === 'clear') return 'clear';
    if (kind !== 'point') return kind + '|' + stroke;
    return ['point', stroke, point.x, point.y, point.color, point.width, point.pressure, point.t].join('|');
  }
  function pointLine(stroke, point) {
    let line = '{"type":"point","stroke":"' + stroke + '","x":' + JSON.stringify(point.x) +
      ',"y":' + JSON.stringify(point.y) + ',"color":"' + point.color + '","width":' + JSON.stringify(point.width);
    if (point.pressure !== undefined) line += ',"pressure":' + JSON.stringify(point.pressure);
    if (point.t !== undefined) line += ',"t":' + JSON.stringify(point.t);
    return line + '}';
  }

  // ---- Own events: drawn at once, queued until echoed or acknowledged ----
  // outbox: entries {line, record, content, frame} in the order made; frame is its number on
  // the current connection once sent (0: not sent on it yet). Sent entries come first, in
  // frame order, and the relay echoes their events in that order: the next echo is always
  // the first entry's (an entry leaves when its echo, its error or an ack comes).
  let outbox = [];
  const unconfirmed = new Map();  // content -> own records not yet seen back from the relay
  function forget(content, record) {
    const list = unconfirmed.get(content);
    if (!list || list.indexOf(record) < 0) return;
    list.splice(list.indexOf(record), 1);
    if (!list.length) unconfirmed.delete(content);
  }
  function recordOwn(kind, stroke, point) {
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
  let socket = null;
  let live = false;
  let framesSent = 0;
  let backoff = 250;
  // Catch-up in blocks until a message of them is refused; text from then on (a relay that
  // sent one damaged or unreadable message would likely send another).
  let useBlocks = blocksReadable;
  const received = { text: 0, binary: 0 };
  // performance.now() when the latest socket was opened, caught up, and drawn after that;
  // how long the latest full redraw took (ms).
  const timing = { opened: 0, caughtUp: 0, drawn: 0, redraw: 0 };
  let problem = '';
  // The code of the relay's last error on this connection, once one came.
  let connectionRefused = '';
  let problemUntil = 0;
  // Set when the relay refused the token: the page stops reconnecting (it would be refused
  // again, forever) and says why, until it is reloaded.
  let stopped = '';
  // Set when the relay refused a frame because this connection may only view: the drawing
  // tools are disabled, nothing more is sent.
  let viewOnly = false;
  const statusView = document.getElementById('status');
  function unackedCount() { return outbox.length; }
  function updateStatus() {
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
    for (const id of ['color', 'width', 'undo', 'redo', 'eraser', 'clear']) document.getElementById(id).disabled = true;
    canvas.style.cursor = 'default';
    active.clear();
    outbox = outbox.filter((entry) => {
      if (entry.frame !== 0) return true;
      unapply(entry.record);
      forget(entry.content, entry.record);
      return false;
    });
    scheduleRedraw();
    updateStatus();
  }
  function report(text, seconds) {
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
  const decodeBlocks = (() => {
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
    socket = null;
    live = false;
    try { opened.close(); } catch (e) { /* closed already */ }
    retryLater();
  }
  // Messages of one connection, handled strictly in arrival order: a binary message is
  // decoded asynchronously, and what came after it (more blocks, caughtUp, live events)
  // waits for it. Entries: {text} or {pending, message, error}.
  function inbox(opened) {
    const queue = [];
    let head = 0;
    function pump() {
      while (head < queue.length && socket === opened) {
        const entry = queue[head];
        if (entry.pending) return;
        queue[head++] = null;
        if (entry.error) { refuseBlocks(opened, entry.error); return; }
        if (entry.message) { receiveBlocks(entry.message); scheduleRedraw(); } else handleMessage(entry.text);
      }
      if (head === queue.length) { queue.length = 0; head = 0; }
    }
    return function (data) {
      if (socket !== opened) return;
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
    };
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
    opened.onclose = (event) => {
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
    };
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

  // ---- Pointer input ----
  const colorInput = document.getElementById('color');
  const widthInput = document.getElementById('width');
  const active = new Map();       // pointerId -> {stroke, start}
  function newStrokeID() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return hexOf(bytes);
  }
  const round = (value, digits) => { const f = Math.pow(10, digits); return Math.round(value * f) / f; };
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
  const eraserButton = document.getElementById('eraser');
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
  const panButton = document.getElementById('pan');
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
  function boardSVG() {
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
  const widthValue = document.getElementById('width-value');
  window.addEventListener('keyup', (e) => { if (e.key === ' ') spaceHeld = false; });
  widthInput.addEventListener('input', () => { widthValue.textContent = widthInput.value; });
  window.addEventListener('resize', resize);

  // ---- History: the board at any moment (docs/HISTORY.md) ----
  // The page holds every event of the board with its key, so a moment needs nothing from the
  // relay: the slider picks k, the first k events in total order (as `journal log` numbers
  // them, as `--at k` means), and the board is drawn as it was then: each stroke created by
  // then with its points by then, visible by the undo, redo, erase and clear events by then.
  // Live events keep arriving meanwhile and widen the slider; "Live" shows now again.
  let timeline = [];              // every record, in total order (built when history opens)
  let historyAt = 0;
  let playing = 0;
  const historyPanel = document.getElementById('history-panel');
  const historySlider = document.getElementById('history-slider');
  const historyLabel = document.getElementById('history-label');
  const playButton = document.getElementById('history-play');
  const speedSelect = document.getElementById('history-speed');
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
    historyStale = false;
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
  function drawMoment() {
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
    const saved = ctx;
    ctx = into;
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
      ctx = saved;
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
    const saved = ctx;
    ctx = job.canvas.getContext('2d');
    const started = performance.now();
    try {
      useViewTransform();
      while (job.next < zOrder.length && atOrBefore(zOrder[job.next].first, job.cut)) {
        drawAtCut(zOrder[job.next], job.cut, clear);
        job.next += 1;
        if ((job.next & 31) === 0 && performance.now() - started > budget) return false;
      }
    } finally {
      ctx = saved;
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

  // ---- Presence: who else is here, and their pointers (never journalled: PROTOCOL.md) ----
  // This page says its person's name (kept in the browser, editable), its pen colour and
  // where its pointer is on the board, at most 20 times a second; others are listed in the
  // bar and their pointers drawn over the board. Names are shown as text, never markup.
  const nameInput = document.getElementById('name');
  const peopleView = document.getElementById('people');
  const cursorLayer = document.getElementById('cursors');
  const others = new Map();       // the relay's connection id -> {name, color, x, y, element}
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
  function sendPresence() {
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
  function receivePresence(message) {
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
  function placeCursors() { for (const other of others.values()) placeCursor(other); }
  function showPeople() {
    peopleView.textContent = '';
    const names = [];
    for (const other of others.values()) {
      const dot = document.createElement('span');
      dot.className = 'person';
      dot.style.setProperty('--person', other.color);
      dot.title = other.name;
      peopleView.appendChild(dot);
      names.push(other.name);
    }
    peopleView.title = names.length ? 'also here: ' + names.join(', ') : 'nobody else is here';
    peopleView.dataset.count = String(others.size);
  }
  function forgetOthers() {
    for (const other of others.values()) other.element.remove();
    others.clear();
    showPeople();
  }

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

  // For tests: the SVG the SVG button saves.
  window.strokeJournalSVG = boardSVG;

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
    ownKey = found;
    if (invitation && !ownKey) report('this browser cannot make a key of its own, so it cannot accept the invitation (it needs WebCrypto Ed25519, in a secure context)', 30);
    connect();
  });
})();
