#!/usr/bin/env python3
"""The order-0 entropy of a session's real columns under the block coder's own predictors: a
floor for what any coder of those residuals can reach (docs/PERFORMANCE.md, the Hershey rows).

Reads DIR/replica-*.ndjson (the standard generator's form: x, y and pressure on 2 decimals, t on
3) and, per replica file, predicts each point's value on that grid from its stroke's previous
points (order 1: the last value; order 2: the last value plus the last step) or, for a stroke's
first point, from the column's previous value (FORMAT.md §14.3, start rule 1). It prints, per
column, the Shannon entropy of the residuals under each order, and the better one in bytes per
point: a coder that spends exactly the residuals' order-0 entropy would need that much.

  python3 Tools/bench/column_entropy.py DIR
"""
import collections
import json
import math
import os
import sys

SCALES = {"x": 100, "y": 100, "pressure": 100, "t": 1000}


def entropy(counts):
    total = sum(counts.values())
    return -sum(c / total * math.log2(c / total) for c in counts.values()), total


def replica_files(tool, usage):
    """The folder named on the command line and its replica-*.ndjson files, or the exit status
    after saying what was wrong (for this script and residual_coder_floor.py)."""
    if len(sys.argv) != 2:
        print(usage, file=sys.stderr)
        return None, None, 64
    folder = sys.argv[1]
    files = sorted(f for f in os.listdir(folder) if f.startswith("replica-") and f.endswith(".ndjson"))
    if not files:
        print("%s: no replica-*.ndjson in %s" % (tool, folder), file=sys.stderr)
        return None, None, 2
    return folder, files, 0


def main():
    folder, files, status = replica_files("column_entropy", __doc__)
    if status:
        return status
    residuals = {column: {1: collections.Counter(), 2: collections.Counter()} for column in SCALES}
    points = 0
    for name in files:
        strokes = {}
        last = {column: 0 for column in SCALES}
        with open(os.path.join(folder, name)) as lines:
            for line in lines:
                event = json.loads(line)
                if event.get("type") != "point":
                    continue
                points += 1
                state = strokes.setdefault(event["stroke"], {})
                for column, scale in SCALES.items():
                    if column not in event:
                        continue
                    n = round(event[column] * scale)
                    if column in state:
                        previous, step = state[column]
                        residuals[column][1][n - previous] += 1
                        residuals[column][2][n - previous - step] += 1
                        state[column] = (n, n - previous)
                    else:
                        residuals[column][1][n - last[column]] += 1
                        residuals[column][2][n - last[column]] += 1
                        state[column] = (n, 0)
                    last[column] = n
    total = 0.0
    for column in SCALES:
        first, count = entropy(residuals[column][1])
        second, _ = entropy(residuals[column][2])
        best = min(first, second) * count / 8 / points
        total += best
        print("%-8s order 1: %.2f bits, order 2: %.2f bits an entry; the better: %.3f B/pt" % (column, first, second, best))
    print("the four columns at their residuals' order-0 entropy: %.3f B/pt (%d points)" % (total, points))
    return 0


if __name__ == "__main__":
    sys.exit(main())
