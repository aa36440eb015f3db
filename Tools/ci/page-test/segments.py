"""Segment messages for the drawing page's tests (docs/FORMAT.md §4-§6, docs/PROTOCOL.md
"Catch-up in blocks"): split golden segments into frames, frame bodies again with correct
checksums, make damaged copies, and encode small version 1 blocks for a relay the test plays.

Standard library only. The encoder is deliberately plain: every real value is a §6.4
exception (scale 0, order 1, residual 0), which any reader must decode to the exact bits.
"""
import struct
import zlib

FILE_MAGIC = b"SJOURNAL"
BLOCK_MAGIC = b"SJBK"
KINDS = {"point": 0, "end": 1, "undo": 2, "redo": 3, "erase": 4, "clear": 5}


def header(replica_hex, version):
    head = FILE_MAGIC + struct.pack("<HH", version, 32) + bytes.fromhex(replica_hex)
    return head + struct.pack("<I", zlib.crc32(head))


def split(segment):
    """(header bytes, [frame dict]) of a whole segment; a frame keeps its own bytes."""
    frames, offset = [], 32
    while offset < len(segment):
        compressed, raw, count, first, max_lamport, crc = struct.unpack_from("<IIIQQI", segment, offset + 4)
        body = segment[offset + 36:offset + 36 + compressed]
        frames.append({"raw_length": raw, "count": count, "first": first, "max_lamport": max_lamport,
                       "crc": crc, "body": body, "bytes": segment[offset:offset + 36 + compressed]})
        offset += 36 + compressed
    return segment[:32], frames


def frame(body, raw_length, count, first, max_lamport):
    """A block frame around an already compressed body, with its checksum."""
    head = BLOCK_MAGIC + struct.pack("<IIIQQ", len(body), raw_length, count, first, max_lamport)
    return head + struct.pack("<I", zlib.crc32(body, zlib.crc32(head))) + body


def deflate(raw):
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(raw) + compressor.flush()


def inflate(body):
    return zlib.decompressobj(-15).decompress(body)


def reframe(f, raw=None, body=None, **fields):
    """The frame `f` again, with a new raw body (compressed here), a new compressed body, or
    other header fields; the checksum always matches, so only the reader's later checks can
    refuse it."""
    if raw is not None:
        body = deflate(raw)
        fields.setdefault("raw_length", len(raw))
    body = f["body"] if body is None else body
    return frame(body, fields.get("raw_length", f["raw_length"]), fields.get("count", f["count"]),
                 fields.get("first", f["first"]), fields.get("max_lamport", f["max_lamport"]))


def flip(data, offset):
    out = bytearray(data)
    out[offset] ^= 0x41
    return bytes(out)


def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag(value):
    return (value << 1) ^ (value >> 63)


def block_v1(events):
    """A version 1 block frame for events of one replica with consecutive seqs, each a dict as
    the relay's event messages name its fields (stroke as 32 hex digits; seq, lamport, time)."""
    strokes, styles = [], []
    for e in events:
        if e["type"] != "clear" and bytes.fromhex(e["stroke"]) not in strokes:
            strokes.append(bytes.fromhex(e["stroke"]))
        if e["type"] == "point":
            style = (int(e["color"][1:], 16), struct.pack("<d", e["width"]))
            if style not in styles:
                styles.append(style)
    out = bytearray(varint(len(strokes)) + b"".join(strokes) + varint(len(styles)))
    for color, width in styles:
        out += struct.pack("<I", color) + width
    out += bytes(KINDS[e["type"]] for e in events)
    previous = 0
    for e in events:
        out += varint(zigzag(e["lamport"] - previous - 1))
        previous = e["lamport"]
    previous = 0
    for e in events:
        out += varint(zigzag(e["time"] - previous))
        previous = e["time"]
    for e in events:
        if e["type"] != "clear":
            out += varint(strokes.index(bytes.fromhex(e["stroke"])))
    points = [e for e in events if e["type"] == "point"]
    for e in points:
        out += varint(styles.index((int(e["color"][1:], 16), struct.pack("<d", e["width"]))))
    out += bytes(("pressure" in e) | ("t" in e) << 1 for e in points)
    for name in ("x", "y", "pressure", "t"):
        values = [e[name] for e in points if name in e]
        out += b"\x00\x01" + b"\x00" * len(values) + varint(len(values))
        for value in values:
            out += b"\x00" + struct.pack("<d", value)
    raw = bytes(out)
    return frame(deflate(raw), len(raw), len(events), events[0]["seq"], max(e["lamport"] for e in events))


def message_v1(replica_hex, runs):
    """A SegmentMessage of version 1 blocks, one per run of events (each run consecutive seqs)."""
    return header(replica_hex, 1) + b"".join(block_v1(run) for run in runs)


# ---- Random bodies for a differential test: the page's reader against Tools/conformance/sjread ----
# Values are drawn to reach what the page's fast path cannot hold in Numbers (integers past
# 2^53, wrapping 64-bit sums, ordered grids, fine parts near their bounds) as well as tidy
# ones; some draws break a rule on purpose, and then both readers must refuse the block.

M64 = (1 << 64) - 1


def _u64(rng):
    return rng.choice([
        rng.randrange(0, 256), rng.randrange(0, 1 << 20), (1 << 53) - rng.randrange(0, 64),
        (1 << 53) + rng.randrange(0, 64), rng.randrange(0, 1 << 63), rng.randrange(0, 1 << 64),
        M64 - rng.randrange(0, 8)])


def _rare(rng, chance=0.01):
    return rng.random() < chance


def _small_or_u64(rng, small=0.8):
    return zigzag(rng.randrange(-40, 40)) if rng.random() < small else _u64(rng)


def _stream(rng, values):
    low = rng.randrange(0, 8)
    out = bytearray([low])
    for v in values:
        out += varint(v >> (8 * low))
    for v in values:
        out += (v & ((1 << (8 * low)) - 1)).to_bytes(low, "little")
    return bytes(out)


def _float_bits(rng):
    pick = rng.random()
    if pick < 0.05:
        return struct.unpack("<Q", struct.pack("<d", float("nan")))[0]
    if pick < 0.5:
        return struct.unpack("<Q", struct.pack("<d", rng.choice([-0.0, 5e-324, 1e300, 0.1 + 0.2, -123.456, 2.0 ** 60])))[0]
    return rng.getrandbits(64) & ~(0x7FF << 52) | (rng.randrange(1, 0x7FF) << 52)


def _exceptions(rng, k):
    chosen = sorted(rng.sample(range(k), rng.randrange(0, k + 1) if rng.random() < 0.3 else 0))
    out, previous = bytearray(varint(len(chosen))), -1
    for index in chosen:
        out += varint(index - previous - 1) + struct.pack("<Q", _float_bits(rng))
        previous = index
    return bytes(out), len(chosen)


def _column(rng, version, k, stroke_count):
    if version == 1:
        scale, order = 10 if _rare(rng) else rng.randrange(0, 10), 3 if _rare(rng) else rng.choice([1, 2])
        out = bytearray([scale, order])
        for _ in range(k):
            out += varint(_small_or_u64(rng))
        return bytes(out + _exceptions(rng, k)[0])
    grid = rng.choice([10, 63]) if _rare(rng) else rng.choice([rng.randrange(0, 10), 16, rng.randrange(33, 63), 64, 65])
    ordered = grid in (64, 65)
    fine = 0 if ordered or rng.random() < 0.4 else rng.randrange(1, 4)
    shape = (3 if _rare(rng) else rng.choice([1, 2])) | rng.randrange(2) << 2 | (0 if ordered else rng.randrange(2) << 3) | fine << 4
    exceptions, count = _exceptions(rng, k)
    coded = k - count
    small = 0.97 if grid == 64 or fine else 0.8
    out = bytearray([grid, shape]) + exceptions + _stream(rng, [_small_or_u64(rng, small) for _ in range(coded)])
    if fine == 3:
        for _ in range(stroke_count):
            exponent = rng.choice([-1075, 961]) if _rare(rng) else rng.choice([rng.randrange(-1074, 961), rng.randrange(-60, 10)])
            out += varint(zigzag(exponent))
    if fine:
        out += _stream(rng, [_small_or_u64(rng, 0.97) for _ in range(coded)])
    return bytes(out)


def random_block(rng, version, first):
    """A block frame of random events from seq `first`, its maxLamport what its events hold
    (when their clocks decode at all)."""
    count = rng.randrange(1, 24)
    strokes = [rng.randbytes(16) for _ in range(rng.randrange(1, 4))]
    widths = [3.0, 0.0, -0.0, 5e-324, 1e300]
    styles = [(rng.getrandbits(32), rng.choice([-1.0, float("inf")] if _rare(rng) else widths)) for _ in range(rng.randrange(1, 3))]
    kinds = [rng.choice([0] * 8 + [1, 2, 3, 4, 5]) for _ in range(count)]
    out = bytearray(varint(len(strokes)) + b"".join(strokes) + varint(len(styles)))
    for color, width in styles:
        out += struct.pack("<Id", color, width)
    out += bytes(kinds)
    lamport = rng.choice([0, (1 << 53) - 3, (1 << 62) - 60, rng.randrange(0, (1 << 62) - 60)])
    lamports, previous = [], 0
    for i in range(count):
        if _rare(rng, 0.002):
            residual = _u64(rng)
        else:
            lamport += rng.randrange(1, 3)
            residual = zigzag(lamport - previous - 1)
        out += varint(residual)
        previous = (previous + ((residual >> 1) ^ -(residual & 1)) + 1) & M64
        lamports.append(previous)
    # Wall clocks from near ±2^53 too, where one-byte steps leave the safe integers.
    edge = rng.choice([None, (1 << 53) - 4, 4 - (1 << 53)])
    for i in range(count):
        out += varint(zigzag(edge) if i == 0 and edge else _small_or_u64(rng, 0.5))
    refs = [rng.randrange(len(strokes)) for kind in kinds if kind != 5]
    style_refs = [rng.randrange(len(styles)) for kind in kinds if kind == 0]
    for table, chosen in ((strokes, refs), (styles, style_refs)):
        previous = 0
        for ref in chosen:
            if _rare(rng, 0.002):
                ref = len(table)
            out += varint(zigzag(ref - previous) if version == 2 else ref)
            previous = ref
    flags = [4 if _rare(rng, 0.002) else rng.randrange(0, 4) for _ in style_refs]
    out += bytes(flags)
    point_strokes = [ref for kind, ref in zip([k for k in kinds if k != 5], refs) if kind == 0]
    for bit in (None, None, 1, 2):
        k = len(point_strokes) if bit is None else sum(1 for f in flags if f & bit)
        out += _column(rng, version, k, len(strokes))
    raw = bytes(out)
    return frame(deflate(raw), len(raw), count, first, max(lamports) & M64)


def random_message(rng):
    """(version, message bytes): one to three random blocks, seqs increasing with gaps."""
    version = rng.choice([1, 2])
    replica = rng.randbytes(16).hex()
    first = rng.choice([1, (1 << 53) - 10, rng.randrange(1, (1 << 62) - 200)])
    blocks = []
    for _ in range(rng.randrange(1, 4)):
        block = random_block(rng, version, first)
        blocks.append(block)
        first += struct.unpack_from("<I", block, 12)[0] + rng.choice([0, 0, 1, 1000])
    return version, header(replica, version) + b"".join(blocks)
