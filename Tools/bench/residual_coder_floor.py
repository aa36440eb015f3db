#!/usr/bin/env python3
"""What an adaptive binary range coder would spend on a session's real columns, against deflate
of the same residuals: the measured side of "what remains" for Hershey's 3.0 B/pt (issue 42,
docs/PERFORMANCE.md, "Format v2 on device values").

Reads DIR/replica-*.ndjson (the standard generator's form: x, y and pressure on 2 decimals, t on
3) and cuts each file into blocks of 32,768 points, as `journal record` seals them. Per block and
column it predicts each value from its stroke's previous ones (FORMAT.md §14.3: order 1 or 2,
a stroke's first value from 0 or from the column's previous value; the combination whose
residuals deflate smallest, as the writer's estimate picks), then prints per column, in bytes
a point:

  deflate   the zigzag varints of the residuals deflated alone at level 6 (about what a block
            spends on the column; the writer codes x, y and t at its block level and pressure by
            runs, so its own figure differs by a few percent)
  order-0   the residuals' Shannon entropy within the block (a static coder's floor)
  adaptive  the ideal code length (the sum of -log2 p, no coder overhead) of an LZMA-style
            binary coder: 12-bit probabilities moved 1/32 towards each bit; a residual's bit
            length n (7 bits, MSB first) in a context of its stroke's age in the block (first
            entry, second, later) and the previous non-first entry's n (capped at 15); its bits
            below the leading one, the two highest in a tree per (n, first entry or not), the
            others one probability per (n, position)

  python3 Tools/bench/residual_coder_floor.py DIR
"""
import collections
import json
import math
import os
import sys
import zlib

from column_entropy import SCALES, replica_files

BLOCK = 32768
COST = [0.0] + [-math.log2(i / 4096) for i in range(1, 4097)]


def zigzag(value):
    return value << 1 if value >= 0 else ((-value) << 1) - 1


def varints(values):
    out = bytearray()
    for value in values:
        while value >= 0x80:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out)


def deflated(data):
    stream = zlib.compressobj(6, zlib.DEFLATED, -15)
    return len(stream.compress(data) + stream.flush())


def residuals(points, column, order, start):
    strokes, last, out, ages = {}, 0, [], []
    for point in points:
        if column not in point:
            continue
        n = round(point[column] * SCALES[column])
        state = strokes.get(point["stroke"])
        if state is None:
            predicted, age = (last if start else 0), 0
        else:
            predicted, age = (state[0] + state[1] if order == 2 else state[0]), state[2] + 1
        out.append(zigzag(n - predicted))
        ages.append(age)
        strokes[point["stroke"]] = (n, n - state[0] if state else 0, age)
        last = n
    return out, ages


def adaptive_bits(values, ages):
    lengths, below = collections.defaultdict(lambda: 2048), collections.defaultdict(lambda: 2048)
    bits, previous = 0.0, 0

    def code(table, key, bit):
        nonlocal bits
        p = table[key]
        if bit:
            bits += COST[4096 - p]
            table[key] = p - (p >> 5)
        else:
            bits += COST[p]
            table[key] = p + ((4096 - p) >> 5)

    for value, age in zip(values, ages):
        n = value.bit_length()
        context = (min(age, 2), min(previous, 15))
        node = 1
        for shift in range(6, -1, -1):
            bit = (n >> shift) & 1
            code(lengths, (context, node), bit)
            node = node * 2 + bit
        node = 1
        for position in range(n - 2, -1, -1):
            bit = (value >> position) & 1
            if position >= n - 3:
                code(below, (n, node, min(age, 1)), bit)
                node = node * 2 + bit
            else:
                code(below, (n, position), bit)
        if age > 0:
            previous = n
    return bits


def entropy_bits(values):
    counts = collections.Counter(values)
    total = len(values)
    return -sum(c * math.log2(c / total) for c in counts.values())


def main():
    folder, files, status = replica_files("residual_coder_floor", __doc__)
    if status:
        return status
    totals = {column: collections.Counter() for column in SCALES}
    points = 0
    for name in files:
        with open(os.path.join(folder, name)) as lines:
            events = [json.loads(line) for line in lines]
        samples = [event for event in events if event.get("type") == "point"]
        points += len(samples)
        for first in range(0, len(samples), BLOCK):
            block = samples[first:first + BLOCK]
            for column in SCALES:
                best = None
                for order in (1, 2):
                    for start in (0, 1):
                        values, ages = residuals(block, column, order, start)
                        size = deflated(varints(values))
                        if best is None or size < best[0]:
                            best = (size, values, ages)
                size, values, ages = best
                totals[column]["deflate"] += size
                totals[column]["order-0"] += entropy_bits(values) / 8 if values else 0
                totals[column]["adaptive"] += adaptive_bits(values, ages) / 8
    print("%-9s %9s %9s %9s   (bytes a point, %d points)" % ("column", "deflate", "order-0", "adaptive", points))
    sums = collections.Counter()
    for column in SCALES:
        row = totals[column]
        sums.update(row)
        print("%-9s %9.3f %9.3f %9.3f" % (column, row["deflate"] / points, row["order-0"] / points, row["adaptive"] / points))
    print("%-9s %9.3f %9.3f %9.3f" % ("all four", sums["deflate"] / points, sums["order-0"] / points, sums["adaptive"] / points))
    return 0


if __name__ == "__main__":
    sys.exit(main())
