// The page's own replica (native mode, docs/PROTOCOL.md "Native text frames"): an Ed25519 key
// made by the browser (WebCrypto, never exported), kept in IndexedDB, one tab at a time per key
// (a Web Lock), and the redemption of an invitation for it (FORMAT.md §17.6).
import { board, invitation } from './page.mjs';

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

const KEY_DB = 'strokejournal', KEY_STORE = 'keys';
export const hexOf = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
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
export async function findOwnKey() {
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

export const bytesOfHex = (hex) => new Uint8Array(hex.match(/../g).map((h) => parseInt(h, 16)));
const base64url = (bytes) => btoa(String.fromCharCode.apply(null, bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
export function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) { out.set(part, at); at += part.length; }
  return out;
}
export async function makeRedemption(ownKey) {
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
