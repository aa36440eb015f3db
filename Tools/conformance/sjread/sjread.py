#!/usr/bin/env python3
"""sjread: an independent reader of StrokeJournal journals, format versions 1 to 7.

This reader was written from docs/FORMAT.md alone, without the Swift sources, and is kept
that way: it is a conformance check of the document and of the reference implementation.
If `sjread.py` and `journal` disagree, either the document is wrong or incomplete, or one of
the two readers has a bug; the Swift code is the reference, so fix FORMAT.md (and then this
file) or the code, never just one side silently. Tests/CLITests/IndependentReaderTests.swift
runs it against the built `journal` binary.

Usage (Python 3.8+; the standard library, plus the `cryptography` package for versions 4 and 5):

    sjread.py log JOURNAL_DIR       every unique event in total order, one canonical NDJSON
                                    line each: byte-identical to `journal log -C JOURNAL_DIR`
    sjread.py digest JOURNAL_DIR    the drawing's SHA-256, as `journal digest -C JOURNAL_DIR`
    sjread.py verify JOURNAL_DIR    every problem found (torn tails as notes); exit status 1
                                    if there is any problem other than a torn tail
    sjread.py members JOURNAL_DIR   the folded membership (§17.3, §17.6) as one JSON line:
                                    {"open":…,"board":…,"founder":…,"members":[…]}

JOURNAL_DIR is a journal (it has `local/replica`; its open segment `local/open.sjo` is read
too) or a shared folder (only `replicas/`). Each file's header version (1 to 7) says what its
blocks hold: drawing events coded as §6 (version 1), §14 (versions 2 and 3) or §14 with §18's
range-coded streams (versions 6 and 7), or membership statements (version 4, §17.2; version 5,
§17.6, whose statements may also be invitations, action 5); a journal may mix them. A version 3
or 7 file ends in a seal record (§15.1), whose structure is always checked here. Ed25519
signatures (the statements of version 4 and 5 files, and the seal records §17.4 needs) are
checked with the `cryptography` package when it imports; without it a journal holding a
version 4 or 5 file is refused (exit status 2) rather than read differently from `journal`.
A board with a genesis (§17.3) applies what its membership counts (§17.4); a journal without
one is open and read as §1-§16 and §18 say, except that a journal with a trust list
(`local/trust`, §15.3) is refused (exit status 2): this reader does not apply trust lists. On
a board with a genesis `local/trust` is ignored.
Section numbers (§) below refer to FORMAT.md.
Problem reasons are worded independently of `journal`'s; kinds, files, offsets and seq
ranges follow the document.
"""
import argparse
import hashlib
import json
import math
import os
import stat
import struct
import sys
import zlib

try:  # Ed25519 (RFC 8032) for §15.1 seal records and §17.2 statements; optional
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
except Exception:  # not installed, or a broken install: journals with membership files are refused
    InvalidSignature = Ed25519PublicKey = None

# §5.1, §12 (FormatV1)
HEADER_SIZE = 32
FRAME_SIZE = 36
MAX_RAW = 8 << 20
MAX_COMPRESSED = MAX_RAW + (MAX_RAW >> 8) + 64
MAX_EVENTS = 1 << 16
MAX_SEQ = 1 << 62
MAX_LAMPORT = 1 << 62
MAX_SCALE = 9
MAX_FILE = 1 << 30
VERSIONS = (1, 2, 3, 4, 5, 6, 7)  # §1.1, §4
BODY2_VERSIONS = (2, 3, 6, 7)  # block bodies of §14 (§15, §18)
RANGE_CODED_VERSIONS = (6, 7)  # §18: a stream(C) may be range coded
SEALED_VERSIONS = (3, 7)  # §15, §18: the file ends in a seal record; signed-file rules apply
SEAL_SIZE = 108  # §15.1
SEAL_LABEL = b"StrokeJournal sealed segment v1\0"  # §15.1, 32 bytes
REPLICA_KEY_LABEL = b"StrokeJournal replica key v1\0"  # §15.1, 29 bytes
# §17 (FormatV4): membership statements; §17.6 (FormatV5): the same, and invitations
MEMBERSHIP = 4
INVITATIONS = 5
MEMBERSHIP_VERSIONS = (MEMBERSHIP, INVITATIONS)
MEMBER_KEY_LABEL = b"StrokeJournal member key v1\0"  # §17.1, 28 bytes
STATEMENT_LABEL = b"StrokeJournal membership v1\0"  # §17.2, 28 bytes
STATEMENT_HEAD = struct.Struct("<QqBB16s32sQQB")  # §17.2, bytes 0..82
STATEMENT_FIXED = 179  # §17.2: 179 bytes plus the label
MAX_LABEL = 64
CREATE, GRANT, REVOKE, ROTATE, INVITE = 1, 2, 3, 4, 5
ACTIONS = {CREATE: "create", GRANT: "grant", REVOKE: "revoke", ROTATE: "rotate", INVITE: "invite"}
ROLE_NONE, ROLE_VIEW, ROLE_DRAW, ROLE_RELAY, ROLE_ADMIN = range(5)
ROLES = ["none", "view", "draw", "relay", "admin"]
SEAL_REPLICA, SEAL_HOST = 1, 2
M64 = (1 << 64) - 1
KINDS = ["point", "end", "undo", "redo", "erase", "clear"]
POINT, END, UNDO, REDO, ERASE, CLEAR = range(6)
LOWER_HEX = b"0123456789abcdef"
DIGITS = b"0123456789"
# §14.3 (FormatV2): real-column grids and shape bits
GRID_THIRDS, GRID_FLOAT32, GRID_BINARY64 = 16, 64, 65
GRIDS = frozenset(list(range(0, 10)) + [GRID_THIRDS] + list(range(33, 63)) + [GRID_FLOAT32, GRID_BINARY64])
MIN_EXPONENT, MAX_EXPONENT = -1074, 960
FINE_LIMIT = 1 << 62


class Malformed(Exception):
    pass


def s64(v):
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def bits_to_float(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def float_to_bits(value):
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def finite(bits):
    return (bits >> 52) & 0x7FF != 0x7FF


# ---------------------------------------------------------------------------------------------
# Problems (§8.2)

class Problem:
    def __init__(self, kind, path, reason, offset=None, replica=None, seqs=None):
        self.kind, self.path, self.reason = kind, path, reason
        self.offset, self.replica, self.seqs = offset, replica, seqs

    def __str__(self):
        text = self.path
        if self.offset is not None:
            text += " @%d" % self.offset
        text += ": %s: %s" % (self.kind, self.reason)
        if self.replica is not None:
            text += " [replica " + self.replica.hex()
            if self.seqs is not None:
                text += " seq %d...%d" % self.seqs
            text += "]"
        return text


# ---------------------------------------------------------------------------------------------
# Primitive encodings (§3)

class Reader:
    def __init__(self, data):
        self.data = data
        self.offset = 0

    def left(self):
        return len(self.data) - self.offset

    def byte(self):
        if self.offset >= len(self.data):
            raise Malformed("truncated")
        value = self.data[self.offset]
        self.offset += 1
        return value

    def take(self, count):
        if self.left() < count:
            raise Malformed("truncated")
        value = self.data[self.offset:self.offset + count]
        self.offset += count
        return value

    def varint(self):
        result, shift = 0, 0
        while True:
            b = self.byte()
            if shift == 63 and b > 1:
                raise Malformed("varint overflows 64 bits")
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    def svarint(self):
        u = self.varint()
        return (u >> 1) ^ -(u & 1)

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def f64bits(self):
        return struct.unpack("<Q", self.take(8))[0]

    def count(self, item_size, what):
        value = self.varint()
        if value > self.left() // item_size:
            raise Malformed("%s count %d exceeds the bytes left" % (what, value))
        return value


# ---------------------------------------------------------------------------------------------
# Block body (§6)

def real_column(r, strokes_of_entries, stroke_count):
    scale, order = r.byte(), r.byte()
    if scale > MAX_SCALE:
        raise Malformed("decimal scale %d" % scale)
    if order not in (1, 2):
        raise Malformed("prediction order %d" % order)
    divisor = float(10 ** scale)
    seen = [False] * stroke_count
    prev = [0] * stroke_count
    delta = [0] * stroke_count
    values = []
    for s in strokes_of_entries:
        if not seen[s]:
            p = 0
        elif order == 2:
            p = s64(prev[s] + delta[s])
        else:
            p = prev[s]
        n = s64(p + r.svarint())
        delta[s] = s64(n - prev[s]) if seen[s] else 0
        prev[s], seen[s] = n, True
        values.append(float_to_bits(float(n) / divisor))
    for index, bits in read_exceptions(r, len(values)).items():
        values[index] = bits
    return values


def read_exceptions(r, k):
    """§6.4 / §14.3: E, then E (gap, bits) pairs; returns {index: bits}."""
    count = r.count(9, "exception")
    if count > k:
        raise Malformed("more exceptions than values")
    exceptions, index = {}, -1
    for _ in range(count):
        gap = r.varint()
        if gap >= k:
            raise Malformed("exception gap")
        index += gap + 1
        if index >= k:
            raise Malformed("exception index")
        exceptions[index] = r.f64bits()
    return exceptions


# ---------------------------------------------------------------------------------------------
# Version 2 block body (§14)

def read_varints(r, count):
    """`count` varints (§3.1) in a row, as a list; the same rules as Reader.varint, faster."""
    data, offset, end = r.data, r.offset, len(r.data)
    out = []
    append = out.append
    for _ in range(count):
        if offset >= end:
            raise Malformed("truncated")
        b = data[offset]
        offset += 1
        if b < 0x80:
            append(b)
            continue
        result, shift = b & 0x7F, 7
        while True:
            if offset >= end:
                raise Malformed("truncated")
            b = data[offset]
            offset += 1
            if shift == 63 and b > 1:
                raise Malformed("varint overflows 64 bits")
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
        append(result)
    r.offset = offset
    return out


def reference_column2(r, count, bound, what):
    """§14.2: `count` svarint differences; the running reference must stay in 0 ..< bound."""
    refs, ref = [], 0
    for u in read_varints(r, count):
        ref += (u >> 1) ^ -(u & 1)  # exact: a sum outside 0 ..< bound is refused either way
        if not 0 <= ref < bound:
            raise Malformed("%s reference out of range" % what)
        refs.append(ref)
    return refs


def stream(r, count, ages=None):
    """§14.3 stream(C): the C unsigned 64-bit integers (high << 8·low) | low bytes.

    With `ages` (versions 6 and 7: the column's coded entries' ages, §18.2) the stream may also
    be range coded (first byte FF, §18.1); without, FF is malformed like any low above 7."""
    low = r.byte()
    if low == RANGE_CODED and ages is not None:
        return range_stream(r, ages)
    if low > 7:
        raise Malformed("stream low byte count %d (0 to 7%s)"
                        % (low, "" if ages is None else ", or 0xff for a range-coded stream"))
    if r.left() < count * (1 + low):
        raise Malformed("stream ends early")
    highs = read_varints(r, count)
    if low == 0:
        return highs
    shift = 8 * low
    if highs and max(highs) >> (64 - shift):
        raise Malformed("stream high part exceeds %d bits" % (64 - shift))
    data = r.take(count * low)
    if low == 1:
        lows = data
    elif low == 2:
        lows = struct.unpack("<%dH" % count, data)
    elif low == 4:
        lows = struct.unpack("<%dI" % count, data)
    else:
        lows = [int.from_bytes(data[i:i + low], "little") for i in range(0, count * low, low)]
    return [(high << shift) | lo for high, lo in zip(highs, lows)]


# §18 (FormatV6, FormatV7): range-coded streams. Every probability of a stream, one flat list:
# L[a][q][node] (a 0..2, q 0..15, node 1..15) at (a·16 + q)·15 + node − 1, X[node] (node 1..63)
# at RC_X + node − 1, T[n][node][y] (n 0..64, node 1..3, y 0..1) at RC_T + (n·3 + node − 1)·2 + y,
# B[n][p] (n 0..64, p 0..63) at RC_B + n·64 + p.
RANGE_CODED = 0xFF
RC_X = 3 * 16 * 15
RC_T = RC_X + 63
RC_B = RC_T + 65 * 3 * 2
RC_PROBABILITIES = RC_B + 65 * 64  # 5,333 (§18.4)
RC_MIN_CODED = 5


def column_ages(coded_strokes, stroke_count):
    """§18.2: each coded entry's age, min(earlier coded entries of its stroke in the column, 2)."""
    counts = [0] * stroke_count
    ages = []
    append = ages.append
    for s in coded_strokes:
        c = counts[s]
        append(c)
        if c < 2:
            counts[s] = c + 1
    return ages


def range_stream(r, ages):
    """§18.1, §18.2: a range-coded stream(C) after its FF byte; C = len(ages).

    The binary decoder's steps are written out inline (four times) for speed: each is §18.2's
    bit(P) with P = prob[i]."""
    coded_length = r.varint()
    raw_length = r.varint()
    if coded_length < RC_MIN_CODED:
        raise Malformed("range-coded stream of %d coded bytes (at least %d)" % (coded_length, RC_MIN_CODED))
    if coded_length + raw_length > r.left():
        raise Malformed("range-coded stream ends early: %d coded and %d raw bytes, %d bytes left in the body"
                        % (coded_length, raw_length, r.left()))
    data, start = r.data, r.offset
    coded = data[start:start + coded_length]
    raw = data[start + coded_length:start + coded_length + raw_length]
    r.offset = start + coded_length + raw_length
    raw_bits = 8 * raw_length

    prob = [2048] * RC_PROBABILITIES
    rng = 0xFFFFFFFF
    code = int.from_bytes(coded[1:5], "big")  # coded[0] is not used
    nxt = 5
    pos = 0  # raw bits read
    q = 0
    out = []
    append = out.append
    from_bytes = int.from_bytes

    def ends_early():
        # Reading coded[next] with next >= codedLength leaves next > codedLength at the end
        # (§18.2 reads 0 and fails the final check); stopping here is the same verdict.
        return Malformed("range-coded stream ends early: it reads past its %d coded bytes (integer %d of %d)"
                         % (coded_length, len(out), len(ages)))

    for a in ages:
        # Bit length: tree(L[a][min(q, 15)], 4), then tree(X, 6) above 14.
        base = (a * 16 + (q if q < 15 else 15)) * 15 - 1
        node = 1
        while node < 16:
            i = base + node
            p = prob[i]
            bound = (rng >> 12) * p
            if code < bound:
                rng = bound
                prob[i] = p + ((4096 - p) >> 5)
                node += node
            else:
                code -= bound
                rng -= bound
                prob[i] = p - (p >> 5)
                node += node + 1
            if rng < 0x1000000:
                if nxt >= coded_length:
                    raise ends_early()
                rng <<= 8
                code = ((code << 8) & 0xFFFFFFFF) | coded[nxt]
                nxt += 1
        n = node - 16
        if n == 15:
            node = 1
            while node < 64:
                i = RC_X - 1 + node
                p = prob[i]
                bound = (rng >> 12) * p
                if code < bound:
                    rng = bound
                    prob[i] = p + ((4096 - p) >> 5)
                    node += node
                else:
                    code -= bound
                    rng -= bound
                    prob[i] = p - (p >> 5)
                    node += node + 1
                if rng < 0x1000000:
                    if nxt >= coded_length:
                        raise ends_early()
                    rng <<= 8
                    code = ((code << 8) & 0xFFFFFFFF) | coded[nxt]
                    nxt += 1
            n = 15 + node - 64
            if n > 64:
                raise Malformed("range-coded stream: integer %d has bit length %d (at most 64)" % (len(out), n))
        if n < 2:
            append(n)  # bit length 0: 0; bit length 1: 1
        else:
            # The two bits below the leading one: T[n][node][min(a, 1)].
            v = 1
            node = 1
            base = RC_T + (n * 3 - 1) * 2 + (a if a < 2 else 1)
            for _ in range(2 if n > 2 else 1):
                i = base + 2 * node
                p = prob[i]
                bound = (rng >> 12) * p
                if code < bound:
                    rng = bound
                    prob[i] = p + ((4096 - p) >> 5)
                    node += node
                    v += v
                else:
                    code -= bound
                    rng -= bound
                    prob[i] = p - (p >> 5)
                    node += node + 1
                    v += v + 1
                if rng < 0x1000000:
                    if nxt >= coded_length:
                        raise ends_early()
                    rng <<= 8
                    code = ((code << 8) & 0xFFFFFFFF) | coded[nxt]
                    nxt += 1
            if n > 3:
                # The next two: B[n][p] for bit positions p = n − 4 and n − 5 (when >= 0).
                base = RC_B + n * 64 + n - 4
                for i in (base, base - 1) if n > 4 else (base,):
                    p = prob[i]
                    bound = (rng >> 12) * p
                    if code < bound:
                        rng = bound
                        prob[i] = p + ((4096 - p) >> 5)
                        v += v
                    else:
                        code -= bound
                        rng -= bound
                        prob[i] = p - (p >> 5)
                        v += v + 1
                    if rng < 0x1000000:
                        if nxt >= coded_length:
                            raise ends_early()
                        rng <<= 8
                        code = ((code << 8) & 0xFFFFFFFF) | coded[nxt]
                        nxt += 1
                if n > 5:
                    # The rest: n − 5 raw bits, most significant first.
                    w = n - 5
                    end = pos + w
                    if end > raw_bits:
                        raise Malformed("range-coded stream ends early: integer %d reads past its %d raw bytes"
                                        % (len(out), raw_length))
                    first, last = pos >> 3, (end + 7) >> 3
                    v = (v << w) | ((from_bytes(raw[first:last], "big") >> ((last << 3) - end)) & ((1 << w) - 1))
                    pos = end
            append(v)
        if a:
            q = n
    if nxt != coded_length:
        raise Malformed("range-coded stream has bytes left: %d of its %d coded bytes read" % (nxt, coded_length))
    if pos <= raw_bits - 8:
        raise Malformed("range-coded stream has bytes left: %d raw bits read from %d raw bytes" % (pos, raw_length))
    return out


def floats_to_bits(values):
    return list(struct.unpack("<%dQ" % len(values), struct.pack("<%dd" % len(values), *values)))


def narrow(value):
    """Rounded to float32 (nearest, ties to even) and widened back; overflow gives infinity."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def real_column2(r, strokes_of_entries, stroke_count, ranged=False):
    """§14.3: one real column of a version 2 body, as a list of 64-bit patterns.

    `ranged` (versions 6 and 7, §18): its coarse and fine streams may be range coded."""
    grid, shape = r.byte(), r.byte()
    if grid not in GRIDS:
        raise Malformed("unknown real-column grid %d" % grid)
    order, start, narrowed, fine = shape & 3, (shape >> 2) & 1, (shape >> 3) & 1, (shape >> 4) & 3
    if order not in (1, 2) or shape >> 6 or (grid >= GRID_FLOAT32 and shape & 0x38):
        raise Malformed("unknown real-column shape 0x%02x" % shape)
    k = len(strokes_of_entries)
    # Exceptions first: no coarse residual, no fine integer, no predictor update.
    exceptions = read_exceptions(r, k)
    exception_count = len(exceptions)
    coded = k - exception_count
    if exceptions:
        coded_strokes = [s for j, s in enumerate(strokes_of_entries) if j not in exceptions]
    else:
        coded_strokes = strokes_of_entries
    # §18.2: the coarse and the fine stream share the coded entries' ages.
    ages = column_ages(coded_strokes, stroke_count) if ranged else None
    coarse = stream(r, coded, ages)
    exponents = None
    if fine == 3:
        exponents = [r.svarint() for _ in range(stroke_count)]
        if any(not MIN_EXPONENT <= e <= MAX_EXPONENT for e in exponents):
            raise Malformed("stroke exponent out of range")
    fines = stream(r, coded, ages) if fine else None

    # Coarse integers: per-stroke predictor, optionally starting from the previous coded entry.
    seen = [False] * stroke_count
    prev = [0] * stroke_count
    delta = [0] * stroke_count
    last = 0
    ints = []
    for z, s in zip(coarse, coded_strokes):
        if seen[s]:
            p = s64(prev[s] + delta[s]) if order == 2 else prev[s]
            n = s64(p + ((z >> 1) ^ -(z & 1)))
            delta[s] = s64(n - prev[s])
        else:
            p = last if start else 0
            n = s64(p + ((z >> 1) ^ -(z & 1)))
            delta[s] = 0
            seen[s] = True
        prev[s] = n
        last = n
        ints.append(n)

    # Grid values.
    if grid == GRID_BINARY64:
        bits = [n if n >= 0 else (1 << 63) | (-(n + 1)) for n in ints]
    elif grid == GRID_FLOAT32:
        words = []
        for n in ints:
            if not -(1 << 31) <= n < (1 << 31):
                raise Malformed("ordered float32 index %d out of range" % n)
            words.append(n if n >= 0 else 0x80000000 | (-(n + 1)))
        widened = struct.unpack("<%df" % len(words), struct.pack("<%dI" % len(words), *words))
        bits = floats_to_bits(widened)
    else:
        if grid <= 9:
            divisor = float(10 ** grid)
        elif grid == GRID_THIRDS:
            divisor = 3.0
        else:
            divisor = float(2 ** (grid - 32))
        grid_values = [float(n) / divisor for n in ints]
        if narrowed:
            grid_values = [narrow(g) for g in grid_values]
        if fine:
            grid_values = fine_values(grid_values, fines, fine, exponents, coded_strokes)
        bits = floats_to_bits(grid_values)

    if not exceptions:
        return bits
    values, coded_bits = [], iter(bits)
    for j in range(k):
        values.append(exceptions[j] if j in exceptions else next(coded_bits))
    return values


def fine_values(grid_values, fines, fine, exponents, coded_strokes):
    """§14.3, values with a fine part: m = floor(g · 2^−e) + c, value = m · 2^e."""
    out = []
    frexp, ldexp, floor, isfinite = math.frexp, math.ldexp, math.floor, math.isfinite
    for j, (g, f) in enumerate(zip(grid_values, fines)):
        c = (f >> 1) ^ -(f & 1)
        if fine == 3:
            e = exponents[coded_strokes[j]]
        elif fine == 1:
            e = -1074 if g == 0 else max(frexp(g)[1] - 1, -1022) - 52
        else:
            e = -149 if g == 0 else max(frexp(g)[1] - 1, -126) - 23
        try:
            scaled = ldexp(g, -e)
        except OverflowError:
            raise Malformed("fine part: grid value out of range")
        if not isfinite(scaled):
            raise Malformed("fine part: grid value not finite")
        m = floor(scaled)
        if abs(m) >= FINE_LIMIT:
            raise Malformed("fine part: |F| >= 2^62")
        m += c
        if abs(m) >= FINE_LIMIT:
            raise Malformed("fine part: |m| >= 2^62")
        if m and m.bit_length() - 1 + e < -1022:
            raise Malformed("fine part: subnormal value")
        try:
            value = ldexp(float(m), e)
        except OverflowError:
            raise Malformed("fine part: value not finite")
        if not isfinite(value):
            raise Malformed("fine part: value not finite")
        out.append(value)
    return out


def decode_body(raw, replica, first_seq, n, version=1):
    """The block's events as dicts (§6.5) and its style table; doubles are 64-bit patterns.

    version 1 bodies are coded as §6, versions 2 and 3 as §14 (reference and real columns differ),
    versions 6 and 7 as §14 whose streams may be range coded (§18)."""
    r = Reader(raw)
    strokes = [bytes(r.take(16)) for _ in range(r.count(16, "stroke"))]
    styles = [(r.u32(), r.f64bits()) for _ in range(r.count(12, "style"))]
    if r.left() < n:
        raise Malformed("kind column truncated")
    kinds = list(r.take(n))
    for kind in kinds:
        if kind > CLEAR:
            raise Malformed("unknown event kind %d" % kind)
    lamports, previous = [], 0
    for _ in range(n):
        previous = (previous + (r.svarint() & M64) + 1) & M64
        if not 1 <= previous < MAX_LAMPORT:
            raise Malformed("lamport clock out of range")
        lamports.append(previous)
    walls, previous = [], 0
    for _ in range(n):
        previous = s64(previous + r.svarint())
        walls.append(previous)
    m = sum(1 for kind in kinds if kind != CLEAR)
    p = kinds.count(POINT)
    body2 = version in BODY2_VERSIONS  # version 3 bodies are version 2 bodies (§15), 6 and 7 nearly (§18)
    if body2:
        stroke_refs = reference_column2(r, m, len(strokes), "stroke")
        style_refs = reference_column2(r, p, len(styles), "style")
    else:
        stroke_refs = [r.varint() for _ in range(m)]
        if any(ref >= len(strokes) for ref in stroke_refs):
            raise Malformed("stroke reference out of range")
        style_refs = [r.varint() for _ in range(p)]
        if any(ref >= len(styles) for ref in style_refs):
            raise Malformed("style reference out of range")
    if r.left() < p:
        raise Malformed("point flags truncated")
    flags = list(r.take(p))
    if any(f & ~3 for f in flags):
        raise Malformed("unknown point flags")
    point_strokes, pressure_strokes, t_strokes = [], [], []
    refs = iter(stroke_refs)
    point_index = 0
    for kind in kinds:
        if kind == CLEAR:
            continue
        ref = next(refs)
        if kind == POINT:
            point_strokes.append(ref)
            if flags[point_index] & 1:
                pressure_strokes.append(ref)
            if flags[point_index] & 2:
                t_strokes.append(ref)
            point_index += 1
    if body2:
        ranged = version in RANGE_CODED_VERSIONS

        def column(reader, entry_strokes, stroke_count):
            return real_column2(reader, entry_strokes, stroke_count, ranged)
    else:
        column = real_column
    xs = column(r, point_strokes, len(strokes))
    ys = column(r, point_strokes, len(strokes))
    pressures = iter(column(r, pressure_strokes, len(strokes)))
    ts = iter(column(r, t_strokes, len(strokes)))
    if r.left() != 0:
        raise Malformed("unexpected bytes after the last column")
    events = []
    refs = iter(stroke_refs)
    point_index = 0
    for i, kind in enumerate(kinds):
        event = {"replica": replica, "seq": first_seq + i, "lamport": lamports[i], "wall": walls[i], "kind": kind}
        if kind != CLEAR:
            event["stroke"] = strokes[next(refs)]
        if kind == POINT:
            f = flags[point_index]
            event["x"], event["y"] = xs[point_index], ys[point_index]
            event["pressure"] = next(pressures) if f & 1 else None
            event["t"] = next(ts) if f & 2 else None
            event["color"], event["width"] = styles[style_refs[point_index]]
            point_index += 1
        events.append(event)
    return events, styles


def validate(events, styles, max_lamport):
    """§6.5: values no writer may store, and the frame's maxLamport, make the block malformed."""
    for event in events:
        if event["kind"] != POINT:
            continue
        for field in ("x", "y", "pressure", "t"):
            bits = event[field]
            if bits is not None and not finite(bits):
                raise Malformed("event %d: %s is not finite" % (event["seq"], field))
    for _, width in styles:  # every style of the table, used by a point or not
        if not finite(width) or bits_to_float(width) < 0:
            raise Malformed("style width %r is not finite and >= 0" % bits_to_float(width))
    actual = max(event["lamport"] for event in events)
    if actual != max_lamport:
        raise Malformed("frame says max lamport %d, events hold %d" % (max_lamport, actual))


def inflate(member, frame):
    """Check 9 of §5.1: the block's body inflated within its bounds."""
    start = frame["offset"] + FRAME_SIZE
    body = member["bytes"][start:start + frame["compressed"]]
    inflater = zlib.decompressobj(-15)
    try:
        raw = inflater.decompress(body, frame["raw"] + 1)
    except zlib.error as error:
        raise Malformed("block body does not inflate: %s" % error)
    if not (len(raw) == frame["raw"] and inflater.eof and not inflater.unused_data
            and not inflater.unconsumed_tail):
        raise Malformed("block body does not inflate to exactly %d bytes" % frame["raw"])
    return raw


def block_events(member, frame):
    """Checks 9 and 10 of §5.1: inflate within bounds, decode, validate."""
    raw = inflate(member, frame)
    try:
        events, styles = decode_body(raw, member["replica"], frame["first"], frame["count"], member["version"])
        validate(events, styles, frame["max_lamport"])
    except Malformed as error:
        raise Malformed("block body is malformed: %s" % error)
    return events


# ---------------------------------------------------------------------------------------------
# Segments (§4, §5, §8.4)

def check_frame(data, offset):
    """(frame, None) if checks 1-8 pass, else (frame or None, (reason, is_short))."""
    if len(data) - offset < FRAME_SIZE:
        return None, ("block is cut short", True)
    if data[offset:offset + 4] != b"SJBK":
        return None, ("bad block magic", False)
    compressed, raw, count, first, max_lamport, crc = struct.unpack_from("<IIIQQI", data, offset + 4)
    if raw > MAX_RAW:
        return None, ("raw length %d is outside the bounds" % raw, False)
    if compressed > MAX_COMPRESSED:
        return None, ("compressed length %d is outside the bounds" % compressed, False)
    if not (1 <= count <= MAX_EVENTS and count <= raw):
        return None, ("event count %d is outside the bounds" % count, False)
    if not (1 <= first < MAX_SEQ - count):
        return None, ("first seq %d is outside the bounds" % first, False)
    frame = {"offset": offset, "compressed": compressed, "raw": raw, "count": count, "first": first,
             "last": first + count - 1, "max_lamport": max_lamport}
    if len(data) - offset < FRAME_SIZE + compressed:
        return frame, ("block is cut short", True)
    body = data[offset + FRAME_SIZE:offset + FRAME_SIZE + compressed]
    if zlib.crc32(body, zlib.crc32(data[offset:offset + 32])) != crc:
        return frame, ("block checksum mismatch", False)
    return frame, None


def resynchronise(data, start):
    offset = data.find(b"SJBK", start)
    while offset != -1 and offset + FRAME_SIZE <= len(data):
        if check_frame(data, offset)[1] is None:
            return offset
        offset = data.find(b"SJBK", offset + 1)
    return None


def scan(path, sealed):
    """Reads one segment file and checks its header and frames (not bodies)."""
    short = "incomplete" if sealed else "torn-tail"
    result = {"path": path, "replica": None, "version": None, "blocks": [], "problems": [], "bytes": b"",
              "tail_only": True, "sealed": sealed}
    problems = result["problems"]
    try:
        size = os.stat(path).st_size
        if size > MAX_FILE:
            problems.append(Problem("ignored", path, "file of %d bytes exceeds the segment size bound" % size))
            return result
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        problems.append(Problem("unreadable", path, str(error)))
        return result
    result["bytes"] = data
    if len(data) < HEADER_SIZE:
        problems.append(Problem(short, path, "file header is cut short", offset=0))
        return result
    version, header_length = struct.unpack_from("<HH", data, 8)
    reason = None
    if data[0:8] != b"SJOURNAL":
        reason = "bad magic"
    elif struct.unpack_from("<I", data, 28)[0] != zlib.crc32(data[0:28]):
        reason = "file header checksum mismatch"
    elif version not in VERSIONS:
        reason = "unsupported format version %d" % version
    elif header_length != HEADER_SIZE:
        reason = "unexpected header length %d" % header_length
    if reason:
        problems.append(Problem("corrupt", path, reason, offset=0))
        return result
    replica = result["replica"] = bytes(data[12:28])
    result["version"] = version  # how every block body of this file is coded (§4)

    def report(kind, reason, offset, seqs):
        problems.append(Problem(kind, path, reason, offset=offset, replica=replica, seqs=seqs))

    offset, expected, gap_allowed = HEADER_SIZE, None, False
    while offset < len(data):
        if version in SEALED_VERSIONS and data[offset:offset + 4] == b"SJSG":
            record = data[offset:]
            if len(record) < SEAL_SIZE:
                report(short, "seal record of %d bytes" % len(record), offset, None)
            elif len(record) > SEAL_SIZE:
                report("corrupt", "seal record is not the last %d bytes" % SEAL_SIZE, offset, None)
            elif struct.unpack_from("<I", record, 104)[0] != zlib.crc32(record[:104]):
                report("corrupt", "seal record checksum mismatch", offset, None)
            elif record[4] not in (1, 2):
                report("corrupt", "seal record role %d" % record[4], offset, None)
            elif record[5:8] != b"\0\0\0":
                report("corrupt", "seal record reserved bytes are not zero", offset, None)
            else:
                result["seal"] = offset
            return result
        frame, error = check_frame(data, offset)
        if error is None:
            seqs = (frame["first"], frame["last"])
            if expected is not None and (frame["first"] < expected if gap_allowed else frame["first"] != expected):
                report("corrupt", "block starts at seq %d, expected %d" % (frame["first"], expected), offset, seqs)
            else:
                if problems:
                    result["tail_only"] = False
                result["blocks"].append(frame)
                expected, gap_allowed = frame["last"] + 1, False
            offset += FRAME_SIZE + frame["compressed"]
        else:
            following = resynchronise(data, offset + 1)
            kind = short if (following is None and error[1]) else "corrupt"
            report(kind, error[0], offset, (frame["first"], frame["last"]) if frame else None)
            gap_allowed = True
            if following is None:
                return result
            offset = following
    if version in SEALED_VERSIONS and sealed and result["blocks"]:
        report(short, "version %d segment without its seal record" % version, len(data), None)
    return result


# ---------------------------------------------------------------------------------------------
# Files and names (§2, §8.5)

def parse_name(name):
    """(first, last, check) of a canonical sealed name given as bytes, else None (§2.1).

    check is ("crc32", int) for a version 1 name, ("sha256", 32 hex digits) for version 2."""
    check_length = len(name) - 46
    if check_length not in (8, 32) or name[20:21] != b"-" or name[41:42] != b"-" or name[42 + check_length:] != b".sjs":
        return None
    first, last, check = name[0:20], name[21:41], name[42:42 + check_length]
    if not all(c in DIGITS for c in first + last) or not all(c in LOWER_HEX for c in check):
        return None
    first, last = int(first), int(last)
    if last >= 1 << 62 or not 1 <= first <= last:
        return None
    if check_length == 8:
        return first, last, ("crc32", int(check, 16))
    return first, last, ("sha256", check.decode())


def name_matches(check, data):
    """Whether a file's bytes are the ones its name's check stands for (§2.1)."""
    kind, value = check
    if kind == "crc32":
        return zlib.crc32(data) == value
    return hashlib.sha256(data).hexdigest()[:32] == value


def is_replica_folder(name):
    return len(name) == 32 and all(c in LOWER_HEX for c in name)


def load(root):
    """The loaded segments (members) and the problems of §8.2 found before decoding."""
    members, problems = [], []
    replicas = os.path.join(os.fsencode(root), b"replicas")
    try:
        folders = sorted(os.listdir(replicas))
    except FileNotFoundError:
        folders = []
    except OSError as error:
        problems.append(Problem("unreadable", os.fsdecode(replicas), str(error)))
        folders = []
    for folder in folders:
        folder_path = os.path.join(replicas, folder)
        if not (stat.S_ISDIR(os.lstat(folder_path).st_mode) and is_replica_folder(folder)):
            problems.append(Problem("ignored", os.fsdecode(folder_path), "not a replica folder"))
            continue
        folder_replica = bytes.fromhex(folder.decode())
        try:
            names = sorted(os.listdir(folder_path))
        except OSError as error:
            problems.append(Problem("unreadable", os.fsdecode(folder_path), str(error), replica=folder_replica))
            continue
        for name in names:
            path = os.fsdecode(os.path.join(folder_path, name))
            parsed = parse_name(name)
            if not stat.S_ISREG(os.lstat(path).st_mode) or parsed is None:
                problems.append(Problem("ignored", path, "not a sealed segment", replica=folder_replica))
                continue
            first, last, check = parsed
            segment = scan(path, sealed=True)
            problems.extend(segment["problems"])
            if segment["replica"] is None:
                continue
            if segment["replica"] != folder_replica:
                problems.append(Problem("corrupt", path, "header names replica %s but the file is in the folder of %s"
                                        % (segment["replica"].hex(), folder.decode()), offset=0, replica=segment["replica"]))
                continue
            if not segment["blocks"] and not segment["problems"]:
                problems.append(Problem("corrupt", path, "a sealed segment with no blocks",
                                        replica=folder_replica, seqs=(first, last)))
                continue
            segment["damaged"] = bool(segment["problems"])  # §8.5, for §17.4
            if not name_matches(check, segment["bytes"]):
                kind = "incomplete" if segment["tail_only"] and segment["problems"] else "corrupt"
                problems.append(Problem(kind, path, "file checksum does not match its name",
                                        replica=folder_replica, seqs=(first, last)))
                segment["damaged"] = True
            if segment["blocks"] and not segment["problems"]:
                held = (segment["blocks"][0]["first"], segment["blocks"][-1]["last"])
                if held != (first, last):
                    problems.append(Problem("corrupt", path, "blocks hold seq %d...%d, the name says %d...%d"
                                            % (held + (first, last)), replica=folder_replica, seqs=held))
                    segment["blocks"] = []
                    segment["damaged"] = True
            members.append(segment)
    local = os.path.join(root, "local")
    open_path = os.path.join(local, "open.sjo")
    if os.path.exists(os.path.join(local, "replica")) and os.path.exists(open_path):
        segment = scan(open_path, sealed=False)
        problems.extend(segment["problems"])
        if segment["version"] in MEMBERSHIP_VERSIONS:  # §17.1, §17.6: open segments are never version 4 or 5
            problems.append(Problem("corrupt", open_path, "an open segment of version %d: membership statements "
                                    "are only ever sealed" % segment["version"], offset=0))
        elif segment["replica"] is not None:
            members.append(segment)
    return members, problems


# ---------------------------------------------------------------------------------------------
# Duplicates and forks (§8.8)

def canonical_bytes(e):
    out = struct.pack(">QQB", e["lamport"], (e["wall"] & M64) ^ (1 << 63), e["kind"])
    if e["kind"] != CLEAR:
        out += e["stroke"]
    if e["kind"] == POINT:
        out += struct.pack(">QQ", e["x"], e["y"])
        for field in ("pressure", "t"):
            out += struct.pack(">BQ", 0 if e[field] is None else 1, e[field] or 0)
        out += struct.pack(">QQ", e["color"], e["width"])
    return out


def unique_events(members, problems, admitted=None):
    """Decodes every accepted block and returns one event per id, forks resolved.

    With `admitted` (a board with a genesis, §17.4: replica -> its drawing key's admitted seq
    ranges), events at seqs the membership does not admit are reported and left out."""
    by_replica = {}
    for member in members:
        by_replica.setdefault(member["replica"], []).extend((member, frame) for frame in member["blocks"])
    events, forked = [], set()
    for replica in sorted(by_replica):
        blocks = sorted(by_replica[replica], key=lambda ref: (ref[1]["first"], ref[1]["last"]))
        start = 0
        while start < len(blocks):
            # Blocks whose seq ranges overlap are merged together.
            end, reach = start + 1, blocks[start][1]["last"]
            while end < len(blocks) and blocks[end][1]["first"] <= reach:
                reach = max(reach, blocks[end][1]["last"])
                end += 1
            variants = {}
            for member, frame in blocks[start:end]:
                try:
                    decoded = block_events(member, frame)
                except Malformed as error:
                    problems.append(Problem("corrupt", member["path"], str(error), offset=frame["offset"],
                                            replica=replica, seqs=(frame["first"], frame["last"])))
                    continue
                for event in decoded:
                    known = variants.get(event["seq"])
                    if known is None:
                        variants[event["seq"]] = event
                    elif known != event:
                        if (replica, event["seq"]) not in forked:
                            forked.add((replica, event["seq"]))
                            problems.append(Problem("fork", member["path"], "event exists with different contents",
                                                    offset=frame["offset"], replica=replica,
                                                    seqs=(event["seq"], event["seq"])))
                        if canonical_bytes(event) < canonical_bytes(known):
                            variants[event["seq"]] = event
            group = [variants[seq] for seq in sorted(variants)]
            if admitted is not None:
                ranges = admitted.get(replica, ())
                refused = [e for e in group if not in_ranges(e["seq"], ranges)]
                if refused:
                    member, frame = blocks[start]
                    problems.append(Problem("quarantined", member["path"], "the board's membership does not count "
                                            "these events", offset=frame["offset"], replica=replica,
                                            seqs=(refused[0]["seq"], refused[-1]["seq"])))
                    group = [e for e in group if in_ranges(e["seq"], ranges)]
            events.extend(group)
            start = end
    return quarantine(events, by_replica, problems)


def quarantine(events, by_replica, problems):
    """Leaves out events whose seq or lamport exceeds the plausibility bound (§8.9)."""
    distinct = 0
    for refs in by_replica.values():
        following = 0
        for first, last in sorted((frame["first"], frame["last"]) for _, frame in refs):
            start = max(first, following)
            if last >= start:
                distinct += last - start + 1
            following = max(following, last + 1)
    limit = min((1 << 32) + 2 * distinct, 1 << 62)
    kept = [e for e in events if e["seq"] <= limit and e["lamport"] <= limit]
    for event in events:
        if event["seq"] > limit or event["lamport"] > limit:
            problems.append(Problem("quarantined", "(set)", "seq or lamport beyond the plausibility bound %d" % limit,
                                    replica=event["replica"], seqs=(event["seq"], event["seq"])))
    return kept


# ---------------------------------------------------------------------------------------------
# Versions 4 and 5: membership (§17), invitations (§17.6)

def ed25519_verifies(key, signature, message):
    """Whether `signature` is `key`'s Ed25519 signature (RFC 8032) of `message`."""
    try:
        Ed25519PublicKey.from_public_bytes(bytes(key)).verify(bytes(signature), bytes(message))
        return True
    except (InvalidSignature, ValueError):
        return False


MAX_PASSES = 8  # §17.3


def membership_replica(key, board):
    """§17.1: the replica of `key`'s membership (version 4 and 5) segments about `board`."""
    return hashlib.sha256(MEMBER_KEY_LABEL + board + key).digest()[:16]


def drawing_replica(key):
    """§15.1: the replica `key` draws as (and names in a `replica` seal)."""
    return hashlib.sha256(REPLICA_KEY_LABEL + key).digest()[:16]


def decode_statements(raw, replica, first_seq, n, version=MEMBERSHIP):
    """The `n` statements of a version 4 or 5 block body (§17.2, §17.6), as dicts; bytes kept for §17.2's checks.

    Action 5 (invite) exists in version 5 files only: in a version 4 file it is malformed (§17.6)."""
    statements, offset = [], 0
    for index in range(n):
        seq = first_seq + index
        if len(raw) - offset < STATEMENT_HEAD.size:
            raise Malformed("statement %d is cut short" % seq)
        lamport, wall, action, role, board, subject, draw_cut, member_cut, length = \
            STATEMENT_HEAD.unpack_from(raw, offset)
        if not 1 <= lamport < MAX_LAMPORT:
            raise Malformed("statement %d: lamport clock out of range" % seq)
        if action not in ACTIONS or (action == INVITE and version < INVITATIONS):
            raise Malformed("statement %d: unknown action %d in a version %d file" % (seq, action, version))
        if role >= len(ROLES):
            raise Malformed("statement %d: unknown role %d" % (seq, role))
        if length > MAX_LABEL:
            raise Malformed("statement %d: label of %d bytes" % (seq, length))
        size = STATEMENT_FIXED + length
        if len(raw) - offset < size:
            raise Malformed("statement %d is cut short" % seq)
        label_end = offset + STATEMENT_HEAD.size + length
        try:
            label = bytes(raw[label_end - length:label_end]).decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed("statement %d: label is not UTF-8" % seq)
        statements.append({
            "replica": replica, "seq": seq, "lamport": lamport, "wall": wall, "action": action, "role": role,
            "board": bytes(board), "subject": bytes(subject), "draw_cut": draw_cut, "member_cut": member_cut,
            "label": label, "signer": bytes(raw[label_end:label_end + 32]),
            "signature": bytes(raw[label_end + 32:offset + size]), "signed": bytes(raw[offset:label_end + 32]),
            "bytes": bytes(raw[offset:offset + size])})
        offset += size
    if offset != len(raw):
        raise Malformed("unexpected bytes after the last statement")
    return statements


def block_statements(member, frame):
    """Checks 9 and 10 of §5.1 for a version 4 or 5 block: inflate, decode the statements, maxLamport."""
    raw = inflate(member, frame)
    try:
        statements = decode_statements(raw, member["replica"], frame["first"], frame["count"], member["version"])
        actual = max(s["lamport"] for s in statements)
        if actual != frame["max_lamport"]:
            raise Malformed("frame says max lamport %d, statements hold %d" % (frame["max_lamport"], actual))
    except Malformed as error:
        raise Malformed("block body is malformed: %s" % error)
    return statements


def statement_problem(statement, kind, reason):
    return Problem(kind, statement["path"], reason, offset=statement["offset"], replica=statement["replica"],
                   seqs=(statement["seq"], statement["seq"]))


def membership_statements(members, problems):
    """Every verifying statement of the loaded version 4 and 5 files, one per id (§17.2)."""
    kept, seen, forked = {}, set(), set()
    for member in members:
        if member["version"] not in MEMBERSHIP_VERSIONS:
            continue
        for frame in member["blocks"]:
            try:
                statements = block_statements(member, frame)
            except Malformed as error:
                problems.append(Problem("corrupt", member["path"], str(error), offset=frame["offset"],
                                        replica=member["replica"], seqs=(frame["first"], frame["last"])))
                continue
            for s in statements:
                identity = (s["replica"], s["seq"])
                if identity + (s["bytes"],) in seen:
                    continue  # a duplicate (§8.8), or a copy of one already reported
                seen.add(identity + (s["bytes"],))
                s["path"], s["offset"] = member["path"], frame["offset"]
                if membership_replica(s["signer"], s["board"]) != s["replica"]:
                    problems.append(statement_problem(s, "quarantined", "signature does not verify: the signer's "
                                                      "membership replica is %s"
                                                      % membership_replica(s["signer"], s["board"]).hex()))
                    continue
                message = STATEMENT_LABEL + s["replica"] + struct.pack("<Q", s["seq"]) + s["signed"]
                if not ed25519_verifies(s["signer"], s["signature"], message):
                    problems.append(statement_problem(s, "quarantined", "signature does not verify"))
                    continue
                known = kept.get(identity)
                if known is None:
                    kept[identity] = s
                    continue
                if identity not in forked:
                    forked.add(identity)
                    problems.append(statement_problem(s, "fork", "equivocation: key %s signed two statements "
                                                      "under one id" % s["signer"].hex()))
                if s["bytes"] < known["bytes"]:
                    kept[identity] = s
    return list(kept.values())


def read_pin(root):
    """§17.5: (board, founder key) pinned by `local/board`, or None if absent or unparsable."""
    try:
        with open(os.path.join(root, "local", "board"), "rb") as handle:
            text = handle.read(200)
    except OSError:
        return None
    lines = text.split(b"\n")
    if len(lines) != 3 or lines[0] != b"strokejournal-board v1" or lines[2] != b"":
        return None
    fields = lines[1].split(b" ")
    if (len(fields) != 2 or len(fields[0]) != 32 or len(fields[1]) != 64
            or not all(c in LOWER_HEX for c in fields[0] + fields[1])):
        return None
    return bytes.fromhex(fields[0].decode()), bytes.fromhex(fields[1].decode())


def new_record(label=""):
    """A member record (§17.3); `invitation` is (role, expiry) for an invitation key (§17.6), else None."""
    return {"role": ROLE_NONE, "label": label, "revoked": False, "rotated_to": None, "closed": [], "since": None,
            "stopped": False, "invitation": None}


def active(record):
    return record is not None and not record["revoked"] and record["rotated_to"] is None


def stop(record, cut):
    """§17.3 stop(cut)."""
    if record["since"] is not None and cut >= record["since"]:
        record["closed"].append((record["since"], cut))
    record["since"], record["stopped"] = None, True


def set_role(record, role, cut):
    """§17.3 setRole(new, cut)."""
    if record["role"] < ROLE_DRAW <= role:
        record["since"] = cut + 1 if record["stopped"] else 1
    if role < ROLE_DRAW <= record["role"]:
        stop(record, cut)
    record["role"] = role


def membership_pass(ordered, genesis, cuts, refuse):
    """One pass of §17.3 over the statements in total order: (member records, memberCut map)."""
    records, member_cuts, folded = {}, {}, False
    for s in ordered:
        signer, subject = s["signer"], s["subject"]
        if s["action"] == CREATE:
            if s is genesis:
                record = records[signer] = new_record(s["label"])
                record["role"], record["since"], folded = ROLE_ADMIN, 1, True
            else:
                refuse(s, "a create that is not the board's genesis")
            continue
        record = records.get(signer)
        if not folded:
            refuse(s, "ordered before the board's genesis")
        elif s["board"] != genesis["board"]:
            refuse(s, "a statement of board %s, not of this board" % s["board"].hex())
        elif signer in cuts and s["seq"] > cuts[signer]:
            refuse(s, "signed after its signer's memberCut %d" % cuts[signer])
        elif record is None:
            refuse(s, "its signer is not a member")
        elif record["revoked"] or record["rotated_to"] is not None:
            refuse(s, "its signer was %s" % ("revoked" if record["revoked"] else "rotated"))
        elif record["invitation"] is not None:  # rule 7 (§17.6), instead of rules 3-5: a redemption or nothing
            invited_role, expiry = record["invitation"]
            if s["action"] != GRANT:
                refuse(s, "an invitation key signs only its redemption, a grant")
            elif s["role"] != invited_role:
                refuse(s, "a redemption for role %s of an invitation to %s" % (ROLES[s["role"]], ROLES[invited_role]))
            elif s["wall"] > expiry:
                refuse(s, "a redemption at wall %d after the invitation's expiry %d" % (s["wall"], expiry))
            elif subject in records:
                refuse(s, "a redemption for a key that already has a member record")
            else:
                target = records[subject] = new_record(record["label"])
                set_role(target, invited_role, 0)
                record["rotated_to"] = subject
        elif s["action"] == GRANT:
            target = records.get(subject)
            admins = [r for r in records.values() if active(r) and r["role"] == ROLE_ADMIN]
            if record["role"] != ROLE_ADMIN:
                refuse(s, "a grant by a key that is not an admin")
            elif s["role"] == ROLE_NONE:
                refuse(s, "a grant of role none")
            elif target is not None and not active(target):
                refuse(s, "a grant to a key that was %s" % ("revoked" if target["revoked"] else "rotated"))
            elif target is not None and target["invitation"] is not None:  # rule 8 (§17.6)
                refuse(s, "a grant to an invitation key: an invitation is redeemed or revoked, never granted")
            elif (target is not None and target["role"] == ROLE_ADMIN and s["role"] != ROLE_ADMIN
                  and len(admins) == 1 and admins[0] is target):
                refuse(s, "a grant that would leave the board without an admin")
            else:
                if target is None:
                    target = records[subject] = new_record()
                set_role(target, s["role"], s["draw_cut"])
                target["label"] = s["label"]
        elif s["action"] == REVOKE:
            target = records.get(subject)
            admins = [r for r in records.values() if active(r) and r["role"] == ROLE_ADMIN]
            if record["role"] != ROLE_ADMIN:
                refuse(s, "a revoke by a key that is not an admin")
            elif not active(target):
                refuse(s, "a revoke of a key that is not an active member")
            elif len(admins) == 1 and admins[0] is target and subject != signer:
                refuse(s, "a revoke of the only active admin by another key")
            else:
                stop(target, s["draw_cut"])
                target["revoked"] = True
                member_cuts[subject] = s["member_cut"]
        elif s["action"] == INVITE:  # rule 6 (§17.6)
            if record["role"] != ROLE_ADMIN:
                refuse(s, "an invite by a key that is not an admin")
            elif s["role"] == ROLE_NONE:
                refuse(s, "an invite to role none")
            elif subject in records:
                refuse(s, "an invite whose invitation key already has a member record")
            else:
                target = records[subject] = new_record(s["label"])
                target["invitation"] = (s["role"], s["draw_cut"])  # drawCut holds the expiry
        else:  # ROTATE, by any active member
            if subject in records:
                refuse(s, "a rotation to a key that already has a member record")
            else:
                target = records[subject] = new_record(s["label"] or record["label"])
                set_role(target, record["role"], 0)
                stop(record, s["draw_cut"])
                record["rotated_to"] = subject
                member_cuts[signer] = s["member_cut"]
    return records, member_cuts


def fold_membership(statements, pin, problems):
    """§17.3: the board's genesis and member records, or None for an open board."""
    ordered = sorted(statements, key=order_key)
    candidates = [s for s in ordered if s["action"] == CREATE and s["role"] == ROLE_ADMIN
                  and s["subject"] == s["signer"]]
    if pin is not None:
        candidates_pinned = [s for s in candidates if (s["board"], s["signer"]) == pin]
    else:
        candidates_pinned = candidates
    if not candidates_pinned:
        for s in candidates:
            problems.append(statement_problem(s, "quarantined", "a create of board %s by %s, not the genesis "
                                              "local/board pins" % (s["board"].hex(), s["signer"].hex())))
        return None
    genesis = candidates_pinned[0]
    # Passes repeat with the previous pass's cuts until they no longer change, at most
    # MAX_PASSES passes in all; the last pass is the membership.
    refused = []
    records, next_cuts = membership_pass(ordered, genesis, {}, lambda s, reason: refused.append((s, reason)))
    cuts = {}
    for _ in range(1, MAX_PASSES):
        if next_cuts == cuts:
            break
        cuts = next_cuts
        refused = []
        records, next_cuts = membership_pass(ordered, genesis, cuts, lambda s, reason: refused.append((s, reason)))
    for s, reason in refused:
        problems.append(statement_problem(s, "quarantined", "%s does not count: %s" % (ACTIONS[s["action"]], reason)))
    return {"genesis": genesis, "records": records}


def admitted_ranges(record):
    """§17.3: a key's admitted seqs, as sorted closed ranges, merged where they overlap or touch."""
    since = record["since"]  # drawCut is unbounded (§17.2): an open period may start past the last seq
    ranges = sorted(record["closed"] + ([(since, MAX_SEQ - 1)] if since is not None and since < MAX_SEQ else []))
    merged = []
    for first, last in ranges:
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return merged


def in_ranges(seq, ranges):
    return any(first <= seq <= last for first, last in ranges)


def admitted_by_replica(membership):
    """§17.4: the replica each member key draws as -> its admitted seqs."""
    return {drawing_replica(key): admitted_ranges(record) for key, record in membership["records"].items()}


def seal_refusal(member, records):
    """Why §17.4 does not apply a sealed drawing segment, or None if it does."""
    if member["damaged"]:
        return "a damaged sealed file: the board's membership applies only undamaged ones"
    if member["version"] not in SEALED_VERSIONS or member.get("seal") is None:
        return "an unsigned sealed file (version %d): the board's membership applies only signed ones" \
            % member["version"]
    record = member["bytes"][member["seal"]:]
    role, key, signature = record[4], bytes(record[8:40]), bytes(record[40:104])
    message = SEAL_LABEL + bytes([role]) + hashlib.sha256(member["bytes"][:member["seal"]]).digest()
    if not ed25519_verifies(key, signature, message):
        return "seal record signature does not verify"
    if role == SEAL_REPLICA:
        if drawing_replica(key) != member["replica"]:
            return "replica seal by key %s, which names replica %s" % (key.hex(), drawing_replica(key).hex())
        return None
    holder = records.get(key)
    if not (active(holder) and holder["role"] in (ROLE_RELAY, ROLE_ADMIN)):
        return "host seal by key %s, which is not an active relay or admin member" % key.hex()
    return None


def membership_files(members, membership, problems):
    """§17.4: the drawing segments a board with a genesis applies; sealed ones it refuses are reported."""
    applied = []
    for member in members:
        reason = seal_refusal(member, membership["records"]) if member["sealed"] else None
        if reason is None:
            applied.append(member)
            continue
        blocks = member["blocks"]
        problems.append(Problem("quarantined", member["path"], reason, replica=member["replica"],
                                seqs=(blocks[0]["first"], blocks[-1]["last"]) if blocks else None))
    return applied


def members_json(membership):
    """The `members` command's line: the folded membership (§17.3, §17.6)."""
    if membership is None:
        value = {"open": True, "board": None, "founder": None, "members": []}
    else:
        genesis, records = membership["genesis"], membership["records"]
        value = {"open": False, "board": genesis["board"].hex(), "founder": genesis["signer"].hex(), "members": [
            {"key": key.hex(), "role": ROLES[record["role"]] if active(record) else "none",
             "label": record["label"], "active": active(record), "revoked": record["revoked"],
             "rotatedTo": record["rotated_to"].hex() if record["rotated_to"] is not None else None,
             "invitation": None if record["invitation"] is None else
             {"role": ROLES[record["invitation"][0]], "expires": record["invitation"][1]},
             "admitted": admitted_ranges(record)}
            for key, record in sorted(records.items())]}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# Output (§9.2) and digest (§9.1, §9.3)

def order_key(e):
    return (e["lamport"], e["wall"], e["replica"], e["seq"])


def number(bits):
    """Shortest round-trip text, written like Swift's Double.description (§9.2)."""
    value = bits_to_float(bits)
    if not finite(bits):
        return "null"
    text = repr(value)
    if abs(value) > 2.0 ** 53 and "e" not in text:
        # Python writes 2^53 < |v| < 1e16 positionally, Swift with an exponent.
        sign = "-" if value < 0 else ""
        whole = text.lstrip("-").split(".")[0]
        digits = whole.rstrip("0")
        text = sign + digits[0] + ("." + digits[1:] if len(digits) > 1 else "") + "e+%02d" % (len(whole) - 1)
    return text


def uuid_text(b):
    h = b.hex().upper()
    return "%s-%s-%s-%s-%s" % (h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])


def log_line(e):
    out = '{"type":"%s"' % KINDS[e["kind"]]
    if e["kind"] != CLEAR:
        out += ',"stroke":"%s"' % uuid_text(e["stroke"])
    if e["kind"] == POINT:
        out += ',"x":%s,"y":%s,"color":"#%08X","width":%s' % (
            number(e["x"]), number(e["y"]), e["color"], number(e["width"]))
        if e["pressure"] is not None:
            out += ',"pressure":%s' % number(e["pressure"])
        if e["t"] is not None:
            out += ',"t":%s' % number(e["t"])
    return out + ',"replica":"%s","seq":%d,"lamport":%d,"time":%d}' % (
        e["replica"].hex(), e["seq"], e["lamport"], e["wall"])


def digest(events):
    strokes, latest_clear = {}, None
    for e in events:
        key = order_key(e)
        if e["kind"] == CLEAR:
            latest_clear = key if latest_clear is None or latest_clear < key else latest_clear
            continue
        stroke = strokes.setdefault(e["stroke"], {"points": [], "ended": False, "op": None})
        if e["kind"] == POINT:
            stroke["points"].append((key, e))
        elif e["kind"] == END:
            stroke["ended"] = True
        elif stroke["op"] is None or stroke["op"][0] < key:
            stroke["op"] = (key, e["kind"] == REDO)
    created = []
    for stroke_id, stroke in strokes.items():
        if stroke["points"]:
            stroke["points"].sort(key=lambda point: point[0])
            created.append((stroke["points"][0][0], stroke_id, stroke))
    created.sort(key=lambda c: c[0])
    # Digest version 2 (FORMAT.md §9.3): each stroke's bytes hashed on their own, then the
    # visible flags and stroke hashes hashed in z-order.
    h = hashlib.sha256(b"StrokeJournal drawing v2\n")
    h.update(struct.pack("<Q", len(created)))
    for creation, stroke_id, stroke in created:
        op = stroke["op"]
        visible = op[1] if op else True
        if latest_clear is not None and creation < latest_clear and (op is None or op[0] < latest_clear):
            visible = False
        s = hashlib.sha256(stroke_id + bytes([int(stroke["ended"])]))
        s.update(struct.pack("<Q", len(stroke["points"])))
        for _, e in stroke["points"]:
            p, t = e["pressure"], e["t"]
            s.update(bytes([(p is not None) | (t is not None) << 1]) + struct.pack("<QQ", e["x"], e["y"]))
            if p is not None:
                s.update(struct.pack("<Q", p))
            if t is not None:
                s.update(struct.pack("<Q", t))
            s.update(struct.pack("<IQ", e["color"], e["width"]))
        h.update(bytes([int(visible)]) + s.digest())
    return h.hexdigest()


def refuse_trust(journal, reason):
    sys.stderr.write("sjread.py: %s has a trust list (local/trust, FORMAT.md §15.3): %s; refusing rather than "
                     "showing events `journal` would quarantine\n" % (journal, reason))
    return 2


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="sjread.py", description="Independent reader of StrokeJournal formats v1 to v7 (docs/FORMAT.md).")
    parser.add_argument("command", choices=["log", "digest", "verify", "members"])
    parser.add_argument("journal", metavar="JOURNAL_DIR")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.journal):
        parser.error("%s is not a directory" % args.journal)
    trusts = os.path.exists(os.path.join(args.journal, "local", "trust"))
    if trusts and args.command != "members" and Ed25519PublicKey is None:
        return refuse_trust(args.journal, "applying it needs Ed25519, which this reader checks only with the "
                                          "`cryptography` package, and that does not import")
    members, problems = load(args.journal)
    if any(m["version"] in MEMBERSHIP_VERSIONS for m in members):
        if Ed25519PublicKey is None:
            sys.stderr.write("sjread.py: %s holds membership segments (versions 4 and 5, FORMAT.md §17), whose "
                             "statements are signed with Ed25519, which this reader checks only with the "
                             "`cryptography` package, and that does not import; refusing rather than showing events "
                             "`journal` would not\n" % args.journal)
            return 2
        statements = membership_statements(members, problems)
    else:
        statements = []
    journal = os.path.exists(os.path.join(args.journal, "local", "replica"))
    membership = fold_membership(statements, read_pin(args.journal) if journal else None, problems)
    serious = [p for p in problems if p.kind != "torn-tail"]
    out = sys.stdout
    if args.command == "members":
        for problem in serious:
            sys.stderr.write("sjread: warning: %s\n" % problem)
        out.flush()
        out.buffer.write((members_json(membership) + "\n").encode("utf-8"))
        return 0
    drawing = [m for m in members if m["version"] not in MEMBERSHIP_VERSIONS]
    if membership is None:
        if trusts:
            return refuse_trust(args.journal, "this reader does not apply trust lists")
        events = unique_events(drawing, problems)
    else:
        if trusts:
            sys.stderr.write("sjread: note: local/trust is ignored: the board's membership decides what counts "
                             "(FORMAT.md §17.4)\n")
        applied = membership_files(drawing, membership, problems)
        events = unique_events(applied, problems, admitted_by_replica(membership))
    events.sort(key=order_key)
    serious = [p for p in problems if p.kind != "torn-tail"]
    if args.command == "verify":
        for problem in serious:
            out.write("%s\n" % problem)
        for problem in problems:
            if problem.kind == "torn-tail":
                out.write("note: %s\n" % problem)
        if serious:
            out.write("%d problem(s) in %d segments\n" % (len(serious), len(members)))
        elif statements:
            out.write("clean: %d segments, %d events, %d statements\n"
                      % (len(members), len(events), len(statements)))
        else:
            out.write("clean: %d segments, %d events\n" % (len(members), len(events)))
        return 1 if serious else 0
    for problem in serious:
        sys.stderr.write("sjread: warning: %s\n" % problem)
    if args.command == "log":
        out.write("".join(log_line(e) + "\n" for e in events))
    else:
        out.write(digest(events) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
