#!/usr/bin/env python3
"""Live recording against batch recording, before and after compaction (issue 24).

A live board seals a segment at every pause between strokes. This benchmark replays one
replica's session the way a board does, one `journal record` per stroke (with whatever follows
it: undo, erase, clear), so that each stroke lands in a sealed segment of its own, and compares
the journal it leaves with the same events recorded in one go:

  live-raw      one sealed segment per stroke, no compaction (`record --no-compact`, synced
                with `sync --no-compact`): what main did before covers
  live          the same seals with the production compaction policy (each `record` compacts
                after its seal, as `Board` and relay writers do)
  batch         one `journal record` of the whole file

For each: bytes per point of `replicas/`, sealed files, and the median wall time over --runs of
`journal sync` into an empty folder (first sync), `journal sync` again (no-op sync), and
`journal merge` into an empty journal; each also as a ratio to batch, measured in the same run.
Then the issue's 1,008-segment journal: the first 60,480 events as 1,008 segments of 60 events,
`journal compact` timed on --runs fresh copies, with its bytes against the same events in batch.

Usage: live_compaction.py --journal-bin .build/release/journal --workload DIR [--runs 5] [--json OUT] [--keep DIR]
  DIR holds replica-0.ndjson, e.g. from
  python3 GENERATOR --replicas 1 --strokes 1440 --points 150 --seed 7 --out DIR
  (1440 strokes of 150 points at 120 Hz: 30 minutes of one drawer), where GENERATOR is
  ../shared/bench/gen_session.py (the standard one, docs/PERFORMANCE.md) or, without it,
  Tools/bench/workload/session.py (figures then not comparable with that file).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(argv)}\n{r.stderr}")
    return r


def timed(argv):
    start = time.monotonic()
    run(argv)
    return time.monotonic() - start


def sealed_files(journal):
    root = os.path.join(journal, "replicas")
    files = []
    for replica in os.listdir(root):
        for name in os.listdir(os.path.join(root, replica)):
            if name.endswith(".sjs"):
                files.append(os.path.join(root, replica, name))
    return files


def strokes_of(lines):
    """Chunks of lines, each ending after a stroke's "end" and the non-point lines after it."""
    chunk, chunks = [], []
    for line in lines:
        kind = json.loads(line).get("type")
        if kind == "point" and chunk and json.loads(chunk[-1]).get("type") != "point":
            chunks.append(chunk)
            chunk = []
        chunk.append(line)
    if chunk:
        chunks.append(chunk)
    return chunks


def record_chunks(j, journal, chunks, compact, progress):
    run([j, "init", journal])
    extra = [] if compact else ["--no-compact"]
    for number, chunk in enumerate(chunks):
        run([j, "record", "-C", journal] + extra, input="".join(chunk))
        if progress and number % 50 == 0:
            print(f"\r  {os.path.basename(journal)}: {number + 1}/{len(chunks)} seals", end="", file=sys.stderr)
    if progress:
        print(file=sys.stderr)


def measure(j, journal, points, runs, work, sync_flags=()):
    files = sealed_files(journal)
    size = sum(os.path.getsize(f) for f in files)
    first, noop, merge = [], [], []
    for attempt in range(runs):
        target = os.path.join(work, f"target-{attempt}")
        into = os.path.join(work, f"merged-{attempt}")
        # A copy of the journal, so that every first sync starts from the same state.
        copy = os.path.join(work, f"copy-{attempt}")
        shutil.copytree(journal, copy, symlinks=True)
        first.append(timed([j, "sync", "-C", copy, target, "--create", *sync_flags]))
        noop.append(timed([j, "sync", "-C", copy, target, *sync_flags]))
        merge.append(timed([j, "merge", target, "--into", into]))
        for path in (target, into, copy):
            shutil.rmtree(path, ignore_errors=True)
    return {"files": len(files), "bytes": size, "bytesPerPoint": size / points,
            "firstSync": statistics.median(first), "noopSync": statistics.median(noop),
            "merge": statistics.median(merge)}



sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ci"))
from journal_bin import journal_binary  # noqa: E402  (Tools/ci/journal_bin.py)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--journal-bin", type=journal_binary, required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--keep", help="leave the journals in this folder")
    a = ap.parse_args()
    j = os.path.abspath(a.journal_bin)
    lines = open(os.path.join(a.workload, "replica-0.ndjson")).read().splitlines(keepends=True)
    points = sum(1 for line in lines if '"type":"point"' in line)
    chunks = strokes_of(lines)
    progress = sys.stderr.isatty()
    work = a.keep or tempfile.mkdtemp(prefix="live-compaction-")
    os.makedirs(work, exist_ok=True)
    result = {"events": len(lines), "points": points, "seals": len(chunks)}
    try:
        journals = {}
        journals["batch"] = os.path.join(work, "batch")
        run([j, "init", journals["batch"]])
        run([j, "record", "-C", journals["batch"], os.path.join(a.workload, "replica-0.ndjson")])
        journals["live-raw"] = os.path.join(work, "live-raw")
        record_chunks(j, journals["live-raw"], chunks, compact=False, progress=progress)
        journals["live"] = os.path.join(work, "live")
        start = time.monotonic()
        record_chunks(j, journals["live"], chunks, compact=True, progress=progress)
        result["liveRecordSeconds"] = time.monotonic() - start
        digests = {name: run([j, "digest", "-C", path]).stdout.strip() for name, path in journals.items()}
        result["digestsEqual"] = len(set(digests.values())) == 1
        for name, path in journals.items():
            # live-raw is synced as main synced it: without compacting first.
            result[name] = measure(j, path, points, a.runs, work, ["--no-compact"] if name == "live-raw" else [])
        for name in ("live-raw", "live"):
            for key in ("bytesPerPoint", "firstSync", "noopSync", "merge"):
                result[name][key + "VsBatch"] = result[name][key] / result["batch"][key]

        # The 1,008-segment journal.
        head = lines[:60 * 1008]
        small = [head[i:i + 60] for i in range(0, len(head), 60)]
        many = os.path.join(work, "many")
        record_chunks(j, many, small, compact=False, progress=progress)
        one = os.path.join(work, "one")
        run([j, "init", one])
        run([j, "record", "-C", one], input="".join(head))
        one_bytes = sum(os.path.getsize(f) for f in sealed_files(one))
        head_points = sum(1 for line in head if '"type":"point"' in line)
        seconds = []
        for attempt in range(a.runs):
            copy = os.path.join(work, f"many-{attempt}")
            shutil.copytree(many, copy, symlinks=True)
            seconds.append(timed([j, "compact", "-C", copy]))
            after = sealed_files(copy)
            if attempt < a.runs - 1:
                shutil.rmtree(copy)
        after_bytes = sum(os.path.getsize(f) for f in after)
        before_bytes = sum(os.path.getsize(f) for f in sealed_files(many))
        result["compact1008"] = {
            "segmentsBefore": len(sealed_files(many)), "segmentsAfter": len(after),
            "bytesPerPointBefore": before_bytes / head_points, "bytesPerPointAfter": after_bytes / head_points,
            "bytesPerPointBatch": one_bytes / head_points, "afterVsBatch": after_bytes / one_bytes,
            "beforeVsBatch": before_bytes / one_bytes, "seconds": statistics.median(seconds),
            "digestEqual": run([j, "digest", "-C", copy]).stdout == run([j, "digest", "-C", one]).stdout,
        }
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)

    def row(name):
        r = result[name]
        ratio = (lambda k: f" ({r[k + 'VsBatch']:.2f}×)") if name != "batch" else (lambda k: "")
        return (f"{name:9} {r['files']:5} files  {r['bytesPerPoint']:.3f} B/pt{ratio('bytesPerPoint')}  "
                f"first sync {r['firstSync'] * 1000:.0f} ms{ratio('firstSync')}  no-op {r['noopSync'] * 1000:.0f} ms{ratio('noopSync')}  "
                f"merge {r['merge'] * 1000:.0f} ms{ratio('merge')}")
    print(f"live compaction: {result['events']} events, {result['points']} points, {result['seals']} seals (one per stroke); "
          f"digests equal: {result['digestsEqual']}")
    for name in ("batch", "live-raw", "live"):
        print(row(name))
    c = result["compact1008"]
    print(f"compact of {c['segmentsBefore']} segments: {c['seconds'] * 1000:.0f} ms median of {a.runs}, "
          f"{c['segmentsAfter']} file(s) after, {c['bytesPerPointBefore']:.3f} -> {c['bytesPerPointAfter']:.3f} B/pt "
          f"({c['afterVsBatch']:.3f}× batch {c['bytesPerPointBatch']:.3f}), digest equal: {c['digestEqual']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
