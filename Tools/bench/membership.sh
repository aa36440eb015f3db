#!/usr/bin/env bash
# What a board's membership costs (issue 38; docs/PERFORMANCE.md "Membership"), as ratios of
# runs alternated in one call (release build, standard 2M-point session):
#
#   Tools/bench/membership.sh [WORKDIR] [RUNS]
#
#   verify   `journal verify`: every segment read, every block decoded and checked, as replay
#            does before folding: a board whose membership grants the four keys (every
#            statement verified, every seal checked against it, every block's seqs against
#            what its key is admitted) vs the same files with no membership (an open board)
#   replay   `journal digest` with no snapshot read or written, the same two boards (both
#            still fold and encode the snapshot they would keep; a file where the snapshots
#            folder goes keeps them from writing it)
#   bytes    the membership's files against the whole journal's segments
#
# Every pair also checks that both sides print the same digest.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$here/.build-bench}
runs=${2:-7}
source "$here/Tools/bench/standard-workload.sh"
scratch="$work/membership"
rm -rf "$scratch"; mkdir -p "$scratch"

now() { date +%s.%N; }
timed() { local t0; t0=$(now); "$@" >/dev/null; python3 -c "print($(now) - $t0)"; }
# A file where the snapshots folder goes: neither side reads or writes a snapshot (each would
# otherwise write one on the first run and open from it afterwards).
replay() { rm -rf "$scratch/$1/local/snapshots"; : > "$scratch/$1/local/snapshots"; "$J" digest -C "$scratch/$1"; }

for i in 0 1 2 3; do
    "$J" init "$scratch/m$i" >/dev/null
    "$J" record -C "$scratch/m$i" "$session/replica-$i.ndjson" >/dev/null
done
for board in members open; do
    "$J" init "$scratch/$board" >/dev/null
    for i in 0 1 2 3; do cp -r "$scratch/m$i/replicas/." "$scratch/$board/replicas/"; done
done
"$J" members init -C "$scratch/members" --label owner >/dev/null
for i in 0 1 2 3; do
    "$J" members grant -C "$scratch/members" "$("$J" trust key -C "$scratch/m$i")" --role draw --label "drawer $i" >/dev/null
done
"$J" verify -C "$scratch/members" >/dev/null

declare -A samples
verify() { "$J" verify -C "$scratch/$1"; }
for run in $(seq 1 "$runs"); do
    samples[verify_members]+="$(timed verify members) "
    samples[verify_open]+="$(timed verify open) "
    samples[members]+="$(timed replay members) "
    samples[open]+="$(timed replay open) "
done
[ "$("$J" digest -C "$scratch/members")" = "$("$J" digest -C "$scratch/open")" ] || { echo "digests differ" >&2; exit 1; }
# The membership's files: the folders of version 4 segments (header bytes 8-9 = 04 00).
statements=0
for file in "$scratch"/members/replicas/*/*.sjs; do
    if [ "$(od -An -tx1 -j8 -N2 "$file" | tr -d ' ')" = "0400" ]; then statements=$((statements + $(stat -c %s "$file"))); fi
done
total=$(du -cb "$scratch"/members/replicas/*/*.sjs | tail -1 | cut -f1)

python3 - "${samples[verify_members]}" "${samples[verify_open]}" "${samples[members]}" "${samples[open]}" \
          "$statements" "$total" <<'PY'
import statistics, sys
rows = [[float(x) for x in arg.split()] for arg in sys.argv[1:5]]
med = [statistics.median(r) for r in rows]
print(f"{'row':26} {'median s':>9} {'min s':>8}")
names = ["verify, membership board", "verify, open board", "replay, membership board", "replay, open board"]
for name, r, m in zip(names, rows, med):
    print(f"{name:26} {m:9.3f} {min(r):8.3f}")
print()
print(f"verify membership / open   {med[0] / med[1]:.3f}   (target <= 1.05)")
print(f"replay membership / open   {med[2] / med[3]:.3f}   (target <= 1.05)")
statements, total = int(sys.argv[5]), int(sys.argv[6])
print(f"membership bytes / journal {statements / total:.6f} ({statements} of {total} bytes; target <= 0.01)")
PY
