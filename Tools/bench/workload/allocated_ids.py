#!/usr/bin/env python3
"""Rewrites a session's stroke ids into the shape StrokeIDAllocator gives (and the drawing page).

A session's files (replica-*.ndjson) name strokes by random UUIDs. This writes the same events
with each stroke renamed, in order of first appearance, to what a `StrokeIDAllocator` of its
replica file would have made: a random 60-bit prefix per file (version 8), then a counter
(variant 1). References to the stroke (end, undo, redo, erase, from any file) follow it. What
it measures: a session's bytes with ids a drawing client assigns against the same session with
random ids (docs/PERFORMANCE.md, the Hershey rows).

  python3 Tools/bench/workload/allocated_ids.py IN_DIR OUT_DIR [--seed N]
"""
import argparse
import os
import random
import re
import sys

STROKE = re.compile(r'"stroke":"([0-9A-Fa-f-]{32,36})"')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    files = sorted(f for f in os.listdir(args.input) if f.startswith("replica-") and f.endswith(".ndjson"))
    if not files:
        print("allocated_ids: no replica-*.ndjson in %s" % args.input, file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    renamed = {}
    for name in files:
        prefix = rng.getrandbits(64) & ~0xF000 | 0x8000
        counter = 0
        with open(os.path.join(args.input, name)) as lines:
            for line in lines:
                match = STROKE.search(line)
                if match and line.startswith('{"type":"point"') and match.group(1).upper() not in renamed:
                    counter += 1
                    low = (0x8 << 60) | counter
                    text = "%016X%016X" % (prefix, low)
                    renamed[match.group(1).upper()] = "%s-%s-%s-%s-%s" % (text[0:8], text[8:12], text[12:16], text[16:20], text[20:32])
    os.makedirs(args.output, exist_ok=True)
    for name in files:
        with open(os.path.join(args.input, name)) as lines, open(os.path.join(args.output, name), "w") as out:
            for line in lines:
                out.write(STROKE.sub(lambda m: '"stroke":"%s"' % renamed.get(m.group(1).upper(), m.group(1)), line))
    print("allocated_ids: %d strokes renamed in %d files" % (len(renamed), len(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
