#!/usr/bin/env bash
# The user-facing speed rows as ratios against gzip, measured side by side in one run
# (release build, standard 2M-point session):
#
#   Tools/bench/cli-ratios.sh [WORKDIR] [RUNS]
#
#   record   `journal record` of the four NDJSON files  vs  `gzip -1` of the same files
#   strokes  `journal strokes > file` on the merged journal  vs  `gzip -dc` of the NDJSON.gz
#   digest   `journal digest` (snapshot valid)               vs  the same `gzip -dc`
#   first    `journal digest` with no snapshot (full replay, hash, writes the snapshot)
#   --at M   `journal digest --at M --json` at 100, 500000, 1000000, 1500000 and 2000000 events
#            (snapshot and keyframes valid)           vs  the same `gzip -dc`; issue 42's target
#            is 150 ms whatever the machine, printed beside it
#
# Runs alternate (gzip, journal, gzip, journal, ...) so that load from elsewhere hits both
# alike; the table shows medians, minimums and the ratio of medians. Ratios are the result;
# seconds depend on the machine and what else it runs.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$here/.build-bench}
runs=${2:-5}
source "$here/Tools/bench/standard-workload.sh"
gz="$work/std-session-gz"
mkdir -p "$gz"
for i in 0 1 2 3; do
    [ -f "$gz/replica-$i.ndjson.gz" ] || gzip -6 -c "$session/replica-$i.ndjson" > "$gz/replica-$i.ndjson.gz"
done
scratch="$work/cli-ratios"

now() { date +%s.%N; }
record_journal() {
    rm -rf "$scratch/rec"; mkdir -p "$scratch/rec"
    for i in 0 1 2 3; do
        "$J" init "$scratch/rec/m$i" >/dev/null
        "$J" record -C "$scratch/rec/m$i" "$session/replica-$i.ndjson" >/dev/null
    done
}
record_gzip() { for i in 0 1 2 3; do gzip -1 -c "$session/replica-$i.ndjson" > "$scratch/gz1-$i"; done; }
gunzip_all() { for i in 0 1 2 3; do gzip -dc "$gz/replica-$i.ndjson.gz"; done > "$scratch/plain.ndjson"; }
strokes() { "$J" strokes -C "$scratch/all" > "$scratch/strokes.json"; }
digest() { "$J" digest -C "$scratch/all" > /dev/null; }
first_digest() { rm -rf "$scratch/all/local/snapshots"; "$J" digest -C "$scratch/all" > /dev/null; }
moments="100 500000 1000000 1500000 2000000"
moment() { "$J" digest -C "$scratch/all" --at "$1" --json > /dev/null; }
timed() { local t0; t0=$(now); "$@"; python3 -c "print($(now) - $t0)"; }

mkdir -p "$scratch"
declare -A samples
for run in $(seq 1 "$runs"); do
    samples[gzip1]+="$(timed record_gzip) "
    samples[record]+="$(timed record_journal) "
    if [ "$run" = 1 ]; then
        rm -rf "$scratch/all"; "$J" init "$scratch/all" >/dev/null
        for i in 0 1 2 3; do cp -r "$scratch/rec/m$i/replicas/." "$scratch/all/replicas/"; done
        strokes   # the first open writes the automatic snapshot
    fi
    samples[gunzip]+="$(timed gunzip_all) "
    samples[strokes]+="$(timed strokes) "
    samples[digest]+="$(timed digest) "
    samples[first]+="$(timed first_digest) "
    strokes  # leaves the snapshot valid for the next digest run
    moment 1 2> /dev/null  # the first moment of a journal without keyframes builds them
    for m in $moments; do samples[at$m]+="$(timed moment "$m") "; done
done

at_samples=()
for m in $moments; do at_samples+=("${samples[at$m]}"); done
python3 - "${samples[gzip1]}" "${samples[record]}" "${samples[gunzip]}" "${samples[strokes]}" "${samples[digest]}" "${samples[first]}" "${at_samples[@]}" <<'EOF'
import statistics, sys
moments = [100, 500000, 1000000, 1500000, 2000000]
names = ["gzip -1 (4 files)", "journal record (4 files)", "gzip -dc (4 files)", "journal strokes > file",
         "journal digest (snapshot)", "journal digest (no snapshot)"] + ["journal digest --at %d" % m for m in moments]
rows = [[float(x) for x in arg.split()] for arg in sys.argv[1:]]
med = [statistics.median(r) for r in rows]
print(f"{'row':32} {'median s':>9} {'min s':>8}")
for name, r, m in zip(names, rows, med):
    print(f"{name:32} {m:9.3f} {min(r):8.3f}")
print()
print(f"record / gzip -1          {med[1] / med[0]:.2f}   (target <= 0.6)")
print(f"strokes / gzip -dc        {med[3] / med[2]:.2f}")
print(f"digest / gzip -dc         {med[4] / med[2]:.2f}")
print(f"digest with / without snapshot {med[4] / med[5]:.3f}")
for index, m in enumerate(moments):
    at = med[6 + index]
    print(f"digest --at {m:<8} / gzip -dc  {at / med[2]:.3f}   ({at * 1000:.0f} ms; target <= 150 ms)")
EOF
