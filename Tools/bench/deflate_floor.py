#!/usr/bin/env python3
"""What deflate alone costs on a journal's block bodies, per zlib level: the floor under
`append` and `record` (docs/PERFORMANCE.md, "Append's floor").

Inflates every block of every sealed segment under JOURNAL (docs/FORMAT.md §4-§5: a 32-byte
file header, then frames of a 36-byte header and a raw-DEFLATE body), then deflates the bodies
again at levels 1-6 and reports the bytes and the CPU seconds of each level (best of three).

  python3 Tools/bench/deflate_floor.py JOURNAL [--points N]
"""
import argparse
import glob
import os
import struct
import sys
import time
import zlib


def bodies(journal):
    for path in sorted(glob.glob(os.path.join(journal, "replicas", "*", "*.sjs"))):
        with open(path, "rb") as f:
            data = f.read()
        offset = 32
        while offset + 36 <= len(data) and data[offset:offset + 4] == b"SJBK":
            compressed, _, _ = struct.unpack_from("<III", data, offset + 4)
            yield zlib.decompressobj(-15).decompress(data[offset + 36:offset + 36 + compressed])
            offset += 36 + compressed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("journal")
    parser.add_argument("--points", type=int, default=0, help="points in the journal, for B/pt and points per second")
    args = parser.parse_args()
    raw = list(bodies(args.journal))
    if not raw:
        print("deflate_floor: no sealed segment under %s/replicas" % args.journal, file=sys.stderr)
        return 2
    print("blocks %d, raw bytes %d (zlib %s)" % (len(raw), sum(map(len, raw)), zlib.ZLIB_RUNTIME_VERSION))
    for level in range(1, 7):
        best = None
        for _ in range(3):
            started = time.process_time()
            size = 0
            for body in raw:
                deflater = zlib.compressobj(level, zlib.DEFLATED, -15)
                size += len(deflater.compress(body)) + len(deflater.flush())
            spent = time.process_time() - started
            best = spent if best is None else min(best, spent)
        line = "level %d: %d bytes, %.3f s of CPU" % (level, size, best)
        if args.points:
            line += ", %.3f B/pt, at most %.2f M pt/s on one core" % (size / args.points, args.points / best / 1e6)
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
