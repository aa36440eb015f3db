// The drawing page's reader of a `SegmentMessage` (docs/PROTOCOL.md, "Catch-up in blocks"):
// plain JavaScript, written from docs/FORMAT.md §3–§6, §14 and §18, served as
// /assets/segment-reader.js to the page and its workers. A file of its own so that a test
// can load it alone (Tools/ci/page-test/page_test.py runs it against the golden vectors and
// damaged copies).
//
// `StrokeJournalSegments.decode(bytes)` returns a promise of the message's blocks, decoded
// column by column as `BlockColumns` holds them, or rejects with a `SegmentMessageError`
// naming the offset and what was wrong: a message with any damage is refused whole.
// Inflating uses the browser's `DecompressionStream('deflate-raw')`, so nothing is fetched.
//
// 64-bit integers stay exact: the hot path computes in Numbers while every intermediate is
// within ±(2^53 − 1), and a column or clock that leaves that range is computed again with
// BigInt (wrapping as FORMAT.md says). A decoded seq, Lamport clock or wall time is a Number
// when it is a safe integer and a BigInt otherwise, never a rounded Number.
'use strict';
(function (global) {
  const MAX_SAFE = Number.MAX_SAFE_INTEGER;
  const TWO32 = 4294967296;
  const TWO62 = 4611686018427387904;             // 2^62, exact as a double
  const BIG_TWO62 = 1n << 62n;
  const BIG_MAX_SAFE = BigInt(MAX_SAFE);
  // The format's numbers (FORMAT.md; the Swift side's FormatV1/FormatV2/FormatVersion):
  // exported as `constants`, which a test compares with the Swift ones.
  const FILE_MAGIC = 'SJOURNAL', BLOCK_MAGIC = 'SJBK';
  const FILE_HEADER = 32, BLOCK_HEADER = 36;
  const MAX_RAW = 8 << 20, MAX_COMPRESSED = MAX_RAW + (MAX_RAW >> 8) + 64, MAX_EVENTS = 1 << 16;
  // Versions of drawing segments; versions 4 and 5 (membership, FORMAT.md §17) never reach a page.
  const DRAWING_VERSIONS = [1, 2, 3, 6, 7];
  const MAX_DECIMAL_SCALE = 9, THIRDS = 16, BINARY_BASE = 32, MAX_BINARY_EXPONENT = 30;
  const ORDERED32 = 64, ORDERED64 = 65, MIN_FINE_EXPONENT = -1074, MAX_FINE_EXPONENT = 960;
  const KIND_NAMES = ['point', 'end', 'undo', 'redo', 'erase', 'clear'];
  const POINT = 0, CLEAR = 5;
  // §18.2's probabilities of one range-coded stream, in one array: L[a][q][node] at
  // (a·16 + q)·16 + node, X[node] at RANGE_X + node, T[n][node][y] at RANGE_T + n·8 + node·2 + y,
  // B[n][p] at RANGE_B + n·64 + p (the 5,333 of §18.4, padded so that each index is a sum).
  const RANGE_X = 768, RANGE_T = RANGE_X + 64, RANGE_B = RANGE_T + 65 * 8, RANGE_SIZE = RANGE_B + 65 * 64;
  const probabilities = new Uint16Array(RANGE_SIZE);

  class SegmentMessageError extends Error {}
  // What a block body decoder throws; the message decoder prefixes the block's offset.
  class BodyError extends Error {}

  const isSafe = (v) => v <= MAX_SAFE && v >= -MAX_SAFE;
  // The canonical form of an integer: a Number when exact, else a BigInt.
  const canonical = (big) => (big <= BIG_MAX_SAFE && big >= -BIG_MAX_SAFE ? Number(big) : big);
  const big = (v) => (typeof v === 'bigint' ? v : BigInt(v));

  const HEX = [], HEX_UPPER = [];
  for (let i = 0; i < 256; i++) {
    HEX.push(i.toString(16).padStart(2, '0'));
    HEX_UPPER.push(HEX[i].toUpperCase());
  }
  function hex(bytes, start, count) {
    let text = '';
    for (let i = start; i < start + count; i++) text += HEX[bytes[i]];
    return text;
  }

  const CRC_TABLE = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
    CRC_TABLE[n] = c;
  }
  function crc32(bytes, start, end, seed) {
    let c = ~seed;
    for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xFF] ^ (c >>> 8);
    return ~c >>> 0;
  }

  // Bit-level conversions go through one little-endian scratch word.
  const scratch = new DataView(new ArrayBuffer(8));
  function float32FromBits(bits) { scratch.setUint32(0, bits, true); return scratch.getFloat32(0, true); }
  function float64FromWords(high, low) {
    scratch.setUint32(0, low, true);
    scratch.setUint32(4, high, true);
    return scratch.getFloat64(0, true);
  }
  function exponentField(value) { scratch.setFloat64(0, value, true); return (scratch.getUint32(4, true) >>> 20) & 0x7FF; }

  // 2^k for k in -1074…1023, built from bits (Math.pow promises no exactness).
  const POW2 = new Float64Array(2098);
  for (let k = -1074; k <= 1023; k++) {
    if (k >= -1022) POW2[k + 1074] = float64FromWords((k + 1023) << 20 >>> 0, 0);
    else {
      const bit = k + 1074;
      POW2[k + 1074] = bit >= 32 ? float64FromWords(2 ** (bit - 32), 0) : float64FromWords(0, 2 ** bit);
    }
  }
  // x · 2^k as FORMAT.md's ldexp: one rounding in range; beyond it, two exact steps (the
  // callers only go beyond it where the result is exact or refused).
  function ldexp(x, k) {
    if (k >= -1022 && k <= 1023) return x * POW2[k + 1074];
    if (k > 1023) return x * POW2[1023 + 1074] * POW2[k - 1023 + 1074];
    return x * POW2[-1022 + 1074] * POW2[k + 1022 + 1074];
  }
  const POW10 = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

  function unzigzag(u) {
    if (typeof u === 'number') {
      if (u < TWO32) return (u >>> 1) ^ -(u & 1);
      return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
    }
    return canonical((u >> 1n) ^ -(u & 1n));
  }
  // Bits of |m| (m a safe integer).
  function bitLength(m) {
    const a = Math.abs(m);
    if (a < TWO32) return 32 - Math.clz32(a);
    return 64 - Math.clz32(Math.floor(a / TWO32));
  }
  function bigBitLength(m) { return (m < 0n ? -m : m).toString(2).length; }

  // ---- Block body (FORMAT.md §6 for version 1, §14 for versions 2 and 3, §18 for 6 and 7) ----
  function decodeBody(raw, count, version) {
    const end = raw.length;
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const differences = version >= 2, rangeCoded = version >= 6;
    let pos = 0;
    const malformed = (offset, reason) => { throw new BodyError(reason + ' at byte ' + offset); };
    const truncated = (offset, needed) => { throw new BodyError('ends early at byte ' + offset + ' (expected ' + needed + ')'); };

    function byte() {
      if (pos >= end) truncated(pos, '1 byte');
      return raw[pos++];
    }
    // Unsigned LEB128: a Number below 2^53, a BigInt above.
    function varint() {
      if (pos >= end) truncated(pos, 'varint');
      let b = raw[pos++];
      if (b < 0x80) return b;
      let value = b & 0x7F, scale = 128;
      for (let i = 1; i < 7; i++) {
        if (pos >= end) truncated(pos, 'varint');
        b = raw[pos++];
        value += (b & 0x7F) * scale;
        if (b < 0x80) return value;
        scale *= 128;
      }
      return varintTail(value, pos - 7);
    }
    function varintTail(low, start) {
      let value = BigInt(low), shift = 49n;
      for (;;) {
        if (pos >= end) truncated(pos, 'varint');
        const b = raw[pos++];
        if (shift === 63n && b > 1) malformed(start, 'varint overflows 64 bits');
        value |= BigInt(b & 0x7F) << shift;
        if (b < 0x80) return canonical(value);
        shift += 7n;
      }
    }
    function svarint() { return unzigzag(varint()); }
    function boundedCount(itemSize, what) {
      const start = pos;
      const value = varint();
      if (typeof value !== 'number' || value > Math.floor((end - pos) / itemSize)) {
        malformed(start, what + ' count ' + value + ' exceeds the bytes left');
      }
      return value;
    }
    function float64() {
      if (end - pos < 8) truncated(pos, '8-byte integer');
      const value = view.getFloat64(pos, true);
      pos += 8;
      return value;
    }

    const strokeCount = boundedCount(16, 'stroke table');
    const strokes = new Array(strokeCount);
    for (let i = 0; i < strokeCount; i++) { strokes[i] = hex(raw, pos, 16); pos += 16; }
    const styleCount = boundedCount(12, 'style table');
    const styles = new Array(styleCount);
    for (let i = 0; i < styleCount; i++) {
      const color = '#' + HEX_UPPER[raw[pos + 3]] + HEX_UPPER[raw[pos + 2]] + HEX_UPPER[raw[pos + 1]] + HEX_UPPER[raw[pos]];
      pos += 4;
      styles[i] = { color: color, width: float64() };
    }

    if (end - pos < count) truncated(pos, count + ' event kinds');
    const kinds = raw.slice(pos, pos + count);
    let points = 0;
    for (let i = 0; i < count; i++) {
      const kind = kinds[i];
      if (kind > CLEAR) malformed(pos + i, 'unknown event kind ' + kind);
      if (kind === POINT) points += 1;
    }
    pos += count;

    // The hot loops below first try a one-byte varint in Numbers inline (most clocks,
    // references and residuals are one), and take the general path for anything else: a
    // page decodes each catch-up once, mostly before the engine has optimised anything.
    // Clocks go into a Float64Array, which becomes an Array at the first BigInt.
    let lamports = new Float64Array(count);
    let previous = 0, largest = 0;
    for (let i = 0; i < count; i++) {
      const b = raw[pos];
      if (b < 0x80 && typeof previous === 'number') {
        const lamport = previous + ((b >>> 1) ^ -(b & 1)) + 1;
        if (lamport >= 1 && lamport <= MAX_SAFE) {
          pos += 1;
          lamports[i] = previous = lamport;
          if (lamport > largest) largest = lamport;
          continue;
        }
      }
      const start = pos;
      const delta = svarint();
      let lamport = typeof delta === 'number' && typeof previous === 'number' ? previous + delta : NaN;
      if (isSafe(lamport)) lamport += 1;
      if (!(lamport >= 1 && lamport <= MAX_SAFE)) {
        // Wrapping u64, exactly; then the format's range 1 ≤ lamport < 2^62.
        const exact = BigInt.asUintN(64, big(previous) + big(delta) + 1n);
        if (exact < 1n || exact >= BIG_TWO62) malformed(start, 'lamport clock ' + exact + ' out of range');
        lamport = canonical(exact);
      }
      if (typeof lamport !== 'number' && !Array.isArray(lamports)) lamports = Array.from(lamports);
      lamports[i] = lamport;
      previous = lamport;
      if (lamport > largest) largest = lamport;
    }
    let walls = new Float64Array(count);
    previous = 0;
    for (let i = 0; i < count; i++) {
      const b = raw[pos];
      if (b < 0x80 && typeof previous === 'number') {
        const wall = previous + ((b >>> 1) ^ -(b & 1));
        if (isSafe(wall)) { pos += 1; walls[i] = previous = wall; continue; }
      }
      const delta = svarint();
      let wall = typeof delta === 'number' && typeof previous === 'number' ? previous + delta : NaN;
      if (!isSafe(wall)) wall = canonical(BigInt.asIntN(64, big(previous) + big(delta)));
      if (typeof wall !== 'number' && !Array.isArray(walls)) walls = Array.from(walls);
      walls[i] = wall;
      previous = wall;
    }

    // One reference: v1 stores the index, v2 the difference from the previous one.
    let previousRef = 0;
    function reference(tableCount, what) {
      const b = raw[pos];
      if (b < 0x80) {
        const ref = differences ? previousRef + ((b >>> 1) ^ -(b & 1)) : b;
        if (ref >= 0 && ref < tableCount) { pos += 1; return previousRef = ref; }
      }
      const start = pos;
      let ref;
      if (differences) {
        const delta = svarint();
        ref = typeof delta === 'number' ? previousRef + delta : NaN;
        if (!(ref >= 0)) malformed(start, what + ' reference below 0');
      } else {
        ref = varint();
      }
      if (!(ref < tableCount)) malformed(start, what + ' reference ' + ref + ' beyond table of ' + tableCount);
      previousRef = ref;
      return ref;
    }
    const strokeRefs = new Uint32Array(count);
    for (let i = 0; i < count; i++) if (kinds[i] !== CLEAR) strokeRefs[i] = reference(strokeCount, 'stroke');
    previousRef = 0;
    const styleRefs = new Uint32Array(points);
    for (let i = 0; i < points; i++) styleRefs[i] = reference(styleCount, 'style');
    const flags = new Uint8Array(points);
    let pressureCount = 0, timeCount = 0;
    for (let i = 0; i < points; i++) {
      const start = pos;
      const flag = byte();
      if (flag & ~3) malformed(start, 'unknown point flags ' + flag);
      flags[i] = flag;
      if (flag & 1) pressureCount += 1;
      if (flag & 2) timeCount += 1;
    }

    // The stroke of every entry of each real column, for the per-stroke predictors.
    const pointStrokes = new Uint32Array(points);
    const pressureStrokes = new Uint32Array(pressureCount);
    const timeStrokes = new Uint32Array(timeCount);
    for (let i = 0, p = 0, pp = 0, tt = 0; i < count; i++) {
      if (kinds[i] !== POINT) continue;
      const ref = strokeRefs[i];
      pointStrokes[p] = ref;
      if (flags[p] & 1) pressureStrokes[pp++] = ref;
      if (flags[p] & 2) timeStrokes[tt++] = ref;
      p += 1;
    }

    function exceptions(values, isException) {
      const k = values.length;
      const start = pos;
      const e = boundedCount(9, 'exception');
      if (e > k) malformed(start, e + ' exceptions in a column of ' + k);
      let index = -1;
      for (let i = 0; i < e; i++) {
        const at = pos;
        const gap = varint();
        if (!(gap < k)) malformed(at, 'exception index beyond the column');
        index += gap + 1;
        if (index >= k) malformed(at, 'exception index ' + index + ' beyond the column of ' + k);
        values[index] = float64();
        if (isException) isException[index] = 1;
      }
      return e;
    }

    // §6.4: a decimal grid, residuals predicted per stroke (as §14.3's coarse integers with
    // no exceptions among them and strokes starting from 0), exceptions after.
    function column1(entryStrokes) {
      const k = entryStrokes.length;
      const header = pos;
      const scale = byte(), order = byte();
      if (scale > 9) malformed(header, 'decimal scale ' + scale + ' above 9');
      if (order !== 1 && order !== 2) malformed(header + 1, 'predictor order ' + order + ' is not 1 or 2');
      const divisor = POW10[scale];
      const residuals = new Array(k);
      for (let j = 0; j < k; j++) residuals[j] = varint();
      const none = new Uint8Array(k);
      const coarse = coarseNumbers(entryStrokes, none, residuals, order, false) ||
        coarseExact(entryStrokes, none, residuals, order, false);
      const values = new Float64Array(k);
      for (let j = 0; j < k; j++) values[j] = (typeof coarse[j] === 'number' ? coarse[j] : Number(coarse[j])) / divisor;
      exceptions(values, null);
      return values;
    }

    // §14.3 stream(C): `low` bytes of each integer raw, the rest as varints before them; in
    // versions 6 and 7, or range coded (§18), `ages` giving the column's ages if it is.
    function stream(c, what, ages) {
      const start = pos;
      const low = byte();
      if (low === 0xFF && rangeCoded) return rangeStream(c, what, start, ages());
      if (low > 7) malformed(start, what + ' stream: ' + low + ' low bytes per value (at most 7' + (rangeCoded ? ', or FF' : '') + ')');
      if (end - pos < c * (1 + low)) truncated(pos, c + ' ' + what + ' values');
      const values = new Array(c);
      for (let j = 0; j < c; j++) {
        const b = raw[pos];
        if (b < 0x80) { values[j] = b; pos += 1; } else values[j] = varint();
      }
      if (low === 0) return values;
      const highBits = 64 - 8 * low;
      const limit = 2 ** highBits, bigLimit = 1n << BigInt(highBits);
      for (let j = 0; j < c; j++) {
        const high = values[j];
        if (typeof high === 'number' ? high >= limit : high >= bigLimit) {
          malformed(start, what + ' stream: value ' + j + ' exceeds 64 bits');
        }
      }
      if (end - pos < c * low) truncated(pos, c * low + ' bytes');
      const shift = 2 ** (8 * low), fastLimit = low <= 6 ? 2 ** (53 - 8 * low) : 0;
      for (let j = 0; j < c; j++, pos += low) {
        const high = values[j];
        if (typeof high === 'number' && high < fastLimit) {
          let part = 0;
          for (let b = low - 1; b >= 0; b--) part = part * 256 + raw[pos + b];
          values[j] = high * shift + part;
        } else {
          let part = 0n;
          for (let b = low - 1; b >= 0; b--) part = (part << 8n) | BigInt(raw[pos + b]);
          values[j] = canonical((big(high) << BigInt(8 * low)) | part);
        }
      }
      return values;
    }

    // §18.2's age of each coded entry of a column: how many coded entries of its stroke
    // come before it in the column, at most 2.
    function columnAges(entryStrokes, isException, c) {
      const ages = new Uint8Array(c);
      const seen = new Uint8Array(strokeCount);
      for (let j = 0, i = 0; j < entryStrokes.length; j++) {
        if (isException[j]) continue;
        const s = entryStrokes[j], a = seen[s];
        ages[i++] = a;
        if (a < 2) seen[s] = a + 1;
      }
      return ages;
    }

    // §18: a range-coded stream(C), after its FF byte. The integers are what `stream` gives:
    // a Number below 2^53 (bit length ≤ 53), a BigInt above.
    function rangeStream(c, what, start, ages) {
      const lengths = pos;
      const codedLength = varint(), rawLength = varint();
      if (typeof codedLength === 'number' && codedLength < 5) malformed(lengths, what + ' stream: coded length ' + codedLength + ' below 5');
      if (typeof codedLength !== 'number' || typeof rawLength !== 'number' || codedLength + rawLength > end - pos) {
        truncated(pos, what + ' stream of ' + codedLength + ' coded and ' + rawLength + ' raw bytes');
      }
      const codedEnd = pos + codedLength, rawStart = codedEnd, rawBits = 8 * rawLength;
      const p = probabilities;
      p.fill(2048);
      // The decoder's state: `range` and `code` are u32 Numbers, and (range >>> 12) · P < 2^32.
      let range = 0xFFFFFFFF;
      let code = (raw[pos + 1] << 24 | raw[pos + 2] << 16 | raw[pos + 3] << 8 | raw[pos + 4]) >>> 0;
      let next = pos + 5, rawAt = 0;
      pos = codedEnd + rawLength;
      const endsEarly = () => malformed(start, what + ' range-coded stream ends early');
      function bit(i) {
        const chance = p[i], bound = (range >>> 12) * chance;
        let b = 0;
        if (code < bound) {
          range = bound;
          p[i] = chance + ((4096 - chance) >> 5);
        } else {
          code -= bound;
          range -= bound;
          p[i] = chance - (chance >> 5);
          b = 1;
        }
        if (range < 0x1000000) {
          // A byte beyond `coded` would leave `next` past its end (§18.2): refused now.
          if (next >= codedEnd) endsEarly();
          range = (range << 8) >>> 0;
          code = (code << 8 | raw[next++]) >>> 0;
        }
        return b;
      }
      function tree(base, bits) {
        let node = 1;
        for (let i = 0; i < bits; i++) node = 2 * node + bit(base + node);
        return node - (1 << bits);
      }
      // The next w ≤ 53 raw bits, most significant first: the rest of the current byte, whole
      // bytes, then the high bits of one more (never more than w bits in the Number).
      function rawBitsOf(w) {
        if (rawAt + w > rawBits) endsEarly();
        let at = rawStart + (rawAt >>> 3), have = 8 - (rawAt & 7);
        let value = raw[at++] & (0xFF >>> (8 - have));
        rawAt += w;
        if (have >= w) return value >>> (have - w);
        for (; have + 8 <= w; have += 8) value = value * 256 + raw[at++];
        if (have < w) value = value * (1 << (w - have)) + (raw[at] >>> (8 - w + have));
        return value;
      }

      const values = new Array(c);
      let q = 0;
      for (let j = 0; j < c; j++) {
        const a = ages[j];
        let n = tree((a * 16 + (q < 15 ? q : 15)) * 16, 4);
        if (n === 15) {
          n += tree(RANGE_X, 6);
          if (n > 64) malformed(start, what + ' stream: value ' + j + ': bit length ' + n + ' above 64');
        }
        let v = 0;
        if (n > 0) {
          const pairs = RANGE_T + n * 8 + (a > 0 ? 1 : 0), pair = RANGE_B + n * 64;
          let node = 1;
          v = 1;
          for (let position = n - 2; position >= 0; position--) {
            if (position >= n - 3) {
              const b = bit(pairs + node * 2);
              node = 2 * node + b;
              v = 2 * v + b;
            } else if (position >= n - 5) {
              v = 2 * v + bit(pair + position);
            } else if (n <= 53) {
              v = v * 2 ** (position + 1) + rawBitsOf(position + 1);
              break;
            } else {
              // 54 to 64 bits: the top 32 + position − 31 bits in a Number, then BigInt.
              const high = v * 2 ** (position - 31) + rawBitsOf(position - 31);
              v = BigInt(high) << 32n | BigInt(rawBitsOf(32));
              break;
            }
          }
        }
        values[j] = v;
        if (a > 0) q = n;
      }
      if (next !== codedEnd) malformed(start, what + ' range-coded stream has ' + (codedEnd - next) + ' coded bytes left');
      if (rawAt <= rawBits - 8) malformed(start, what + ' range-coded stream has raw bytes left');
      return values;
    }

    // §14.3: exceptions, coarse integers on a grid, and an optional fine part.
    function column2(entryStrokes) {
      const k = entryStrokes.length;
      const header = pos;
      const grid = byte(), shape = byte();
      let divisor = 0, ordered = 0;
      if (grid <= MAX_DECIMAL_SCALE) divisor = POW10[grid];
      else if (grid === THIRDS) divisor = 3;
      else if (grid > BINARY_BASE && grid <= BINARY_BASE + MAX_BINARY_EXPONENT) divisor = 2 ** (grid - BINARY_BASE);
      else if (grid === ORDERED32 || grid === ORDERED64) ordered = grid === ORDERED32 ? 32 : 64;
      else malformed(header, 'unknown real-column grid ' + grid);
      const order = shape & 3, fine = (shape >> 4) & 3;
      if ((order !== 1 && order !== 2) || shape & 0xC0 || (ordered && shape & 0x38)) {
        malformed(header + 1, 'unknown real-column shape ' + shape);
      }
      const fromPrevious = (shape & 4) !== 0, narrow = (shape & 8) !== 0;

      const values = new Float64Array(k);
      const isException = new Uint8Array(k);
      const coded = k - exceptions(values, isException);
      let ages = null;
      const agesOf = () => ages || (ages = columnAges(entryStrokes, isException, coded));
      const residuals = stream(coded, 'coarse', agesOf);
      const coarse = coarseNumbers(entryStrokes, isException, residuals, order, fromPrevious) ||
        coarseExact(entryStrokes, isException, residuals, order, fromPrevious);

      const gridValue = (n, index) => {
        if (ordered === 32) {
          if (!(n >= -2147483648 && n < 2147483648)) malformed(header, 'entry ' + index + ': ' + n + " is no float32's ordered index");
          return float32FromBits(n >= 0 ? n : (0x80000000 | -(n + 1)) >>> 0);
        }
        if (ordered === 64) {
          if (typeof n === 'bigint') {
            const m = n >= 0n ? n : -(n + 1n);
            return float64FromWords(Number(m >> 32n) + (n < 0n ? 0x80000000 : 0), Number(m & 0xFFFFFFFFn));
          }
          const m = n >= 0 ? n : -(n + 1);
          const high = Math.floor(m / TWO32);
          return float64FromWords(high + (n < 0 ? 0x80000000 : 0), m - high * TWO32);
        }
        const value = (typeof n === 'number' ? n : Number(n)) / divisor;
        return narrow ? Math.fround(value) : value;
      };
      if (fine === 0) {
        if (!ordered && coarse instanceof Float64Array) {
          for (let j = 0, c = 0; j < k; j++) {
            if (isException[j]) continue;
            const value = coarse[c++] / divisor;
            values[j] = narrow ? Math.fround(value) : value;
          }
          return values;
        }
        for (let j = 0, c = 0; j < k; j++) if (!isException[j]) { values[j] = gridValue(coarse[c], j); c += 1; }
        return values;
      }

      let exponents = null;
      if (fine === 3) {
        exponents = new Int32Array(strokeCount);
        for (let s = 0; s < strokeCount; s++) {
          const start = pos;
          const exponent = svarint();
          if (!(exponent >= MIN_FINE_EXPONENT && exponent <= MAX_FINE_EXPONENT)) malformed(start, 'fine exponent ' + exponent + ' out of range');
          exponents[s] = exponent;
        }
      }
      const fineAt = pos;
      const fines = stream(coded, 'fine', agesOf);
      for (let j = 0, c = 0; j < k; j++) {
        if (isException[j]) continue;
        const base = gridValue(coarse[c], j);
        let e;
        if (fine === 3) e = exponents[entryStrokes[j]];
        else {
          const field = exponentField(base);
          if (fine === 1) e = field === 0 ? -1074 : field - 1075;
          else e = base === 0 ? -149 : Math.max(field === 0 ? -1023 : field - 1023, -126) - 23;
        }
        const floor = Math.floor(ldexp(base, -e));
        if (!(Math.abs(floor) < TWO62)) malformed(fineAt, 'entry ' + j + ': grid value ' + base + ' beyond 2^62 units of 2^' + e);
        const units = unzigzag(fines[c]);
        let m = typeof units === 'number' && isSafe(floor) ? floor + units : NaN;
        let bits;
        if (isSafe(m)) {
          bits = m === 0 ? 0 : bitLength(m);
        } else {
          const exact = BigInt(floor) + big(units);
          if (!(exact < BIG_TWO62 && exact > -BIG_TWO62)) malformed(fineAt, 'entry ' + j + ': ' + exact + ' units of 2^' + e + ' is not a finite normal value');
          bits = exact === 0n ? 0 : bigBitLength(exact);
          m = Number(exact);
        }
        const value = ldexp(m, e);
        if ((bits !== 0 && bits - 1 + e < -1022) || !Number.isFinite(value)) {
          malformed(fineAt, 'entry ' + j + ': ' + m + ' units of 2^' + e + ' is not a finite normal value');
        }
        values[j] = value;
        c += 1;
      }
      return values;
    }
    // §14.3's coarse integers: in Numbers (null as soon as one leaves the safe range), or
    // exactly in wrapping 64-bit BigInts.
    function coarseNumbers(entryStrokes, isException, residuals, order, fromPrevious) {
      const prev = new Float64Array(strokeCount), delta = new Float64Array(strokeCount);
      const seen = new Uint8Array(strokeCount);
      const coarse = new Float64Array(residuals.length);
      const anyException = residuals.length !== entryStrokes.length;
      let last = 0;
      for (let j = 0, c = 0; j < entryStrokes.length; j++) {
        if (anyException && isException[j]) continue;
        const s = entryStrokes[j];
        let p;
        if (seen[s]) p = order === 2 ? prev[s] + delta[s] : prev[s];
        else p = fromPrevious ? last : 0;
        const z = residuals[c];
        if (typeof z !== 'number' || !(p <= MAX_SAFE && p >= -MAX_SAFE)) return null;
        const n = p + (z < TWO32 ? (z >>> 1) ^ -(z & 1) : unzigzag(z));
        if (!(n <= MAX_SAFE && n >= -MAX_SAFE)) return null;
        if (seen[s]) {
          const d = n - prev[s];
          if (!(d <= MAX_SAFE && d >= -MAX_SAFE)) return null;
          delta[s] = d;
        }
        prev[s] = n;
        seen[s] = 1;
        last = n;
        coarse[c++] = n;
      }
      return coarse;
    }
    function coarseExact(entryStrokes, isException, residuals, order, fromPrevious) {
      const prev = new Array(strokeCount).fill(0n), delta = new Array(strokeCount).fill(0n);
      const seen = new Uint8Array(strokeCount);
      const coarse = new Array(residuals.length);
      let last = 0n;
      for (let j = 0, c = 0; j < entryStrokes.length; j++) {
        if (isException[j]) continue;
        const s = entryStrokes[j];
        let p;
        if (seen[s]) p = order === 2 ? BigInt.asIntN(64, prev[s] + delta[s]) : prev[s];
        else p = fromPrevious ? last : 0n;
        const n = BigInt.asIntN(64, p + big(unzigzag(residuals[c])));
        delta[s] = seen[s] ? BigInt.asIntN(64, n - prev[s]) : 0n;
        prev[s] = n;
        seen[s] = 1;
        last = n;
        coarse[c++] = canonical(n);
      }
      return coarse;
    }

    const column = differences ? column2 : column1;
    const xs = column(pointStrokes);
    const ys = column(pointStrokes);
    const pressureValues = column(pressureStrokes);
    const timeValues = column(timeStrokes);
    if (pos !== end) malformed(pos, (end - pos) + ' unexpected bytes after the last column');

    // Optional values spread per point, NaN where absent (no decoded value is NaN: refused below).
    const pressures = new Float64Array(points), times = new Float64Array(points);
    for (let i = 0, pp = 0, tt = 0; i < points; i++) {
      pressures[i] = flags[i] & 1 ? pressureValues[pp++] : NaN;
      times[i] = flags[i] & 2 ? timeValues[tt++] : NaN;
    }
    // §6.5: a checksum proves what some writer wrote, not that it followed the format.
    for (let i = 0; i < points; i++) {
      if (!Number.isFinite(xs[i]) || !Number.isFinite(ys[i])) malformed(0, 'point ' + i + ': coordinates must be finite');
      if (flags[i] & 1 && !Number.isFinite(pressures[i])) malformed(0, 'point ' + i + ': pressure must be finite');
      if (flags[i] & 2 && !Number.isFinite(times[i])) malformed(0, 'point ' + i + ': t must be finite');
    }
    for (const style of styles) {
      if (!(Number.isFinite(style.width) && style.width >= 0)) malformed(0, 'style width ' + style.width + ' must be finite and not negative');
    }
    return {
      largestLamport: largest,
      strokes: strokes, styles: styles, kinds: kinds, lamports: lamports, walls: walls, strokeRefs: strokeRefs,
      styleRefs: styleRefs, flags: flags, xs: xs, ys: ys, pressures: pressures, times: times,
    };
  }

  // ---- Inflate (FORMAT.md §5, check 9): exactly rawLength bytes, one whole stream ----
  // Whether this browser refuses input after the end of a DEFLATE stream itself (Chromium
  // does); where it does not, a body is inflated once more without its last byte, and a
  // stream that still ends had bytes after its end.
  let junkRefusal = null;
  function junkRefused() {
    if (!junkRefusal) junkRefusal = inflateExactly(new Uint8Array([0x4B, 0x4C, 0x4A, 0x06, 0x00, 0x00]), 3).then(() => false, () => true);
    return junkRefusal;
  }
  async function inflate(body, rawLength) {
    const out = await inflateExactly(body, rawLength);
    if (!(await junkRefused())) {
      let ended = true;
      try { await inflateExactly(body.subarray(0, body.length - 1), rawLength); } catch (error) { ended = false; }
      if (ended) throw new BodyError('input left after the end of the compressed stream');
    }
    return out;
  }
  async function inflateExactly(body, rawLength) {
    const stream = new DecompressionStream('deflate-raw');
    const writer = stream.writable.getWriter();
    const reader = stream.readable.getReader();
    const out = new Uint8Array(rawLength);
    let filled = 0;
    // The browser refuses a stream that does not end, and input after its end; errors of
    // the writable side reach the reader too.
    const written = writer.write(body).then(() => writer.close());
    written.catch(() => {});
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      if (chunk.value.length > rawLength - filled) {
        reader.cancel().catch(() => {});
        throw new BodyError('inflates to more than its raw length ' + rawLength);
      }
      out.set(chunk.value, filled);
      filled += chunk.value.length;
    }
    await written;
    if (filled !== rawLength) throw new BodyError('inflates to ' + filled + ' bytes, its raw length is ' + rawLength);
    return out;
  }

  function u32(bytes, at) { return (bytes[at] | bytes[at + 1] << 8 | bytes[at + 2] << 16 | bytes[at + 3] << 24) >>> 0; }
  function u64(bytes, at) {
    const low = u32(bytes, at), high = u32(bytes, at + 4);
    return high < 0x200000 ? high * TWO32 + low : (BigInt(high) << 32n) | BigInt(low);
  }
  // a + b, a a seq (Number or BigInt), b a small Number.
  function plus(a, b) {
    if (typeof a === 'number' && isSafe(a + b)) return a + b;
    return canonical(big(a) + BigInt(b));
  }

  // ---- The message: a segment header (§4), then block frames (§5), seqs increasing ----
  async function decode(input) {
    const bytes = input instanceof Uint8Array ? input : new Uint8Array(input);
    const headerProblem = (reason) => new SegmentMessageError('segment message: header: ' + reason);
    if (bytes.length < FILE_HEADER) throw headerProblem('file header is cut short (' + bytes.length + ' of ' + FILE_HEADER + ' bytes)');
    for (let i = 0; i < FILE_MAGIC.length; i++) {
      if (bytes[i] !== FILE_MAGIC.charCodeAt(i)) throw headerProblem('not a StrokeJournal segment (bad magic)');
    }
    if (crc32(bytes, 0, 28, 0) !== u32(bytes, 28)) throw headerProblem('file header checksum mismatch');
    const version = bytes[8] | bytes[9] << 8;
    if (!DRAWING_VERSIONS.includes(version)) {
      const last = DRAWING_VERSIONS.length - 1;
      throw headerProblem('unsupported format version ' + version + ' (this page reads versions ' +
        DRAWING_VERSIONS.slice(0, last).join(', ') + ' and ' + DRAWING_VERSIONS[last] + ')');
    }
    const headerLength = bytes[10] | bytes[11] << 8;
    if (headerLength !== FILE_HEADER) throw headerProblem('unexpected header length ' + headerLength);
    const replica = hex(bytes, 12, 16);

    // Every frame is checked before anything is inflated.
    const frames = [];
    let offset = FILE_HEADER, previousLast = 0;
    const blockProblem = (at, reason) =>
      new SegmentMessageError('segment message of replica ' + replica + ': block at offset ' + at + ': ' + reason);
    while (offset < bytes.length) {
      const left = bytes.length - offset;
      if (left < BLOCK_HEADER) throw blockProblem(offset, 'block is cut short');
      if (BLOCK_MAGIC.split('').some((c, i) => bytes[offset + i] !== c.charCodeAt(0))) {
        throw blockProblem(offset, 'no block starts here (bad block magic)');
      }
      const compressed = u32(bytes, offset + 4), rawLength = u32(bytes, offset + 8), count = u32(bytes, offset + 12);
      const firstSeq = u64(bytes, offset + 16), maxLamport = u64(bytes, offset + 24), stored = u32(bytes, offset + 32);
      const bound = (field, value) => blockProblem(offset, field + ' ' + value + " is outside the format's bounds");
      if (rawLength > MAX_RAW) throw bound('raw length', rawLength);
      if (compressed > MAX_COMPRESSED) throw bound('compressed length', compressed);
      if (count < 1 || count > MAX_EVENTS || count > rawLength) throw bound('event count', count);
      if (firstSeq < 1 || (typeof firstSeq === 'bigint' && firstSeq >= BIG_TWO62 - BigInt(count))) throw bound('first seq', firstSeq);
      if (BLOCK_HEADER + compressed > left) throw blockProblem(offset, 'block is cut short');
      if (!(firstSeq > previousLast)) throw blockProblem(offset, 'block starts at seq ' + firstSeq + ', expected ' + plus(previousLast, 1));
      const bodyStart = offset + BLOCK_HEADER, bodyEnd = bodyStart + compressed;
      const computed = crc32(bytes, bodyStart, bodyEnd, crc32(bytes, offset, offset + 32, 0));
      if (computed !== stored) {
        const eight = (v) => v.toString(16).padStart(8, '0');
        throw blockProblem(offset, 'block checksum mismatch (stored ' + eight(stored) + ', computed ' + eight(computed) + ')');
      }
      frames.push({ offset: offset, rawLength: rawLength, count: count, firstSeq: firstSeq, maxLamport: maxLamport,
                    body: bytes.subarray(bodyStart, bodyEnd) });
      previousLast = plus(firstSeq, count - 1);
      offset = bodyEnd;
    }
    if (!frames.length) throw new SegmentMessageError('segment message of replica ' + replica + ' holds no block');

    const inflated = frames.map((f) => inflate(f.body, f.rawLength).then((raw) => ({ raw: raw }), (error) => ({ error: error })));
    const blocks = [];
    for (let i = 0; i < frames.length; i++) {
      const frame = frames[i];
      const result = await inflated[i];
      if (result.error) {
        const reason = result.error instanceof BodyError ? result.error.message : String(result.error && result.error.message || result.error);
        throw blockProblem(frame.offset, 'block body does not inflate: ' + reason);
      }
      let block;
      try {
        block = decodeBody(result.raw, frame.count, version);
      } catch (error) {
        if (!(error instanceof BodyError)) throw error;
        throw blockProblem(frame.offset, 'block body is malformed: ' + error.message);
      }
      if (block.largestLamport !== frame.maxLamport) {
        throw blockProblem(frame.offset, 'block body is malformed: frame says max lamport ' + frame.maxLamport + ', events hold ' + block.largestLamport + ' at byte 0');
      }
      block.firstSeq = frame.firstSeq;
      block.count = frame.count;
      blocks.push(block);
    }
    return { replica: replica, version: version, blocks: blocks };
  }

  // The events of a decoded message, in seq order, as the relay's event messages name their
  // fields (stroke ids as 32 lowercase hex digits; pressure and t only when present).
  function events(message) {
    const out = [];
    for (const block of message.blocks) {
      for (let i = 0, p = 0; i < block.count; i++) {
        const kind = block.kinds[i];
        const event = { type: KIND_NAMES[kind] };
        if (kind !== CLEAR) event.stroke = block.strokes[block.strokeRefs[i]];
        if (kind === POINT) {
          const style = block.styles[block.styleRefs[p]];
          event.x = block.xs[p];
          event.y = block.ys[p];
          event.color = style.color;
          event.width = style.width;
          if (block.flags[p] & 1) event.pressure = block.pressures[p];
          if (block.flags[p] & 2) event.t = block.times[p];
          p += 1;
        }
        event.replica = message.replica;
        event.seq = plus(block.firstSeq, i);
        event.lamport = block.lamports[i];
        event.time = block.walls[i];
        out.push(event);
      }
    }
    return out;
  }

  global.StrokeJournalSegments = {
    decode: decode, events: events, kindNames: KIND_NAMES, plus: plus, SegmentMessageError: SegmentMessageError,
    constants: {
      fileMagic: FILE_MAGIC, blockMagic: BLOCK_MAGIC, fileHeader: FILE_HEADER, blockHeader: BLOCK_HEADER,
      maxRaw: MAX_RAW, maxCompressed: MAX_COMPRESSED, maxEvents: MAX_EVENTS,
      drawingVersions: DRAWING_VERSIONS, maxDecimalScale: MAX_DECIMAL_SCALE, thirds: THIRDS, binaryBase: BINARY_BASE,
      maxBinaryExponent: MAX_BINARY_EXPONENT, ordered32: ORDERED32, ordered64: ORDERED64,
      minFineExponent: MIN_FINE_EXPONENT, maxFineExponent: MAX_FINE_EXPONENT, kindNames: KIND_NAMES,
    },
  };
})(typeof window !== 'undefined' ? window : globalThis);
