#!/usr/bin/env bash
# Engine and sync benchmark on the standard workload (release build).
#
#   Tools/bench/engine-and-sync.sh [WORKDIR]
#
# Generates the standard session (4 replicas × 500k points; Tools/bench/standard-workload.sh)
# unless WORKDIR has it, records each replica into its own journal, replays the merged journal,
# and times sync through a shared folder: a full first sync, a no-op second sync, and a sync
# after +1% events.
# Prints medians of 3 runs; ratios are against the full first sync measured in the same run.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$here/.build-bench}
source "$here/Tools/bench/standard-workload.sh"
generate_extra

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.3f}')"; }
median() { python3 -c "import sys,statistics; print(f'{statistics.median(map(float, sys.argv[1:])):.3f}')" "$@"; }

runs=3
record_times=(); strokes_times=(); first_sync=(); noop_sync=(); plus_sync=()
for run in $(seq 1 $runs); do
    rm -rf "$work/run"; mkdir -p "$work/run"
    t0=$(now)
    for i in 0 1 2 3; do
        "$J" init "$work/run/m$i" >/dev/null
        "$J" record -C "$work/run/m$i" "$session/replica-$i.ndjson" >/dev/null
    done
    t1=$(now); record_times+=("$(elapsed "$t0" "$t1")")

    "$J" init "$work/run/all" >/dev/null
    for i in 0 1 2 3; do cp -r "$work/run/m$i/replicas/." "$work/run/all/replicas/"; done
    t0=$(now); "$J" strokes -C "$work/run/all" >/dev/null; t1=$(now)
    strokes_times+=("$(elapsed "$t0" "$t1")")

    # The shared folder gets every machine's segments; then a fresh laptop syncs for the first time.
    mkdir -p "$work/run/shared"
    for i in 0 1 2 3; do "$J" sync -C "$work/run/m$i" "$work/run/shared" >/dev/null; done
    "$J" init "$work/run/laptop" >/dev/null
    t0=$(now); "$J" sync -C "$work/run/laptop" "$work/run/shared" >/dev/null; t1=$(now)
    first_sync+=("$(elapsed "$t0" "$t1")")
    t0=$(now); "$J" sync -C "$work/run/laptop" "$work/run/shared" >/dev/null; t1=$(now)
    noop_sync+=("$(elapsed "$t0" "$t1")")
    "$J" record -C "$work/run/m0" "$extra/replica-0.ndjson" >/dev/null
    "$J" sync -C "$work/run/m0" "$work/run/shared" >/dev/null
    t0=$(now); "$J" sync -C "$work/run/laptop" "$work/run/shared" >/dev/null; t1=$(now)
    plus_sync+=("$(elapsed "$t0" "$t1")")
done

digest_all=$("$J" digest -C "$work/run/all")
bytes=$("$J" stats -C "$work/run/all" --json)
first=$(median "${first_sync[@]}")
noop=$(median "${noop_sync[@]}")
plus=$(median "${plus_sync[@]}")
cat <<REPORT
StrokeJournal engine + sync benchmark ($(date -u +%Y-%m-%d), $(nproc) cores, median of $runs)
workload: 4 replicas x 500,000 points ($session)
stats (merged journal): $bytes
record, 4 journals, end to end:     $(median "${record_times[@]}") s
strokes (merge + reconstruct, 4):  $(median "${strokes_times[@]}") s
sync, full first (import 2M points): $first s
sync, no-op second:                  $noop s  (ratio to first: $(python3 -c "print(f'{$noop / $first:.4f}')"))
sync, after +1% events:              $plus s  (ratio to first: $(python3 -c "print(f'{$plus / $first:.4f}')"))
digest of the merged journal: $digest_all
REPORT
