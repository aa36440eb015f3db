#!/usr/bin/env bash
# What signed segments cost (issue 23; docs/PERFORMANCE.md "Signed segments"), as ratios of
# runs alternated in one call (release build, standard 2M-point session):
#
#   Tools/bench/signing.sh [WORKDIR] [RUNS]
#
#   record   `journal record` of replica-0 into a fresh journal: signed (made by `init`)
#            vs unsigned (the same with local/replica.key deleted: the writer seals v2)
#   replay   `journal digest` with no snapshot, the four replicas' segments: with a trust
#            list of their keys (every seal verified) vs the same files with no list
#   join     a fresh `journal serve --open` and one `journal join` (the board opens for it):
#            trust list vs none
#
# Every pair also checks that both sides print the same digest.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$here/.build-bench}
runs=${2:-7}
source "$here/Tools/bench/standard-workload.sh"
scratch="$work/signing"
rm -rf "$scratch"; mkdir -p "$scratch/boards"

now() { date +%s.%N; }
timed() { local t0; t0=$(now); "$@" >/dev/null; python3 -c "print($(now) - $t0)"; }
record() { rm -rf "$scratch/rec-$1"; "$J" init "$scratch/rec-$1" >/dev/null
           if [ "$1" = unsigned ]; then rm "$scratch/rec-$1/local/replica.key"; fi
           "$J" record -C "$scratch/rec-$1" "$session/replica-0.ndjson"; }
replay() { rm -rf "$scratch/boards/$1/local/snapshots"; "$J" digest -C "$scratch/boards/$1"; }
join() {
    local port pid
    port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
    rm -rf "$scratch/boards/$1/local/snapshots"
    "$J" serve --open --port "$port" --data "$scratch/boards" >/dev/null 2>&1 & pid=$!
    python3 -c "
import socket, time
while True:
    try: socket.create_connection(('127.0.0.1', $port), timeout=1).close(); break
    except OSError: time.sleep(0.05)"
    "$J" join "ws://127.0.0.1:$port/boards/$1/ws" --json > "$scratch/join-$1.json"
    kill "$pid"; wait "$pid" || true
}

# The four replicas, each signed by its own journal, gathered twice: with and without a list.
for i in 0 1 2 3; do
    "$J" init "$scratch/m$i" >/dev/null
    "$J" record -C "$scratch/m$i" "$session/replica-$i.ndjson" >/dev/null
done
for board in listed open; do
    "$J" init "$scratch/boards/$board" >/dev/null
    for i in 0 1 2 3; do cp -r "$scratch/m$i/replicas/." "$scratch/boards/$board/replicas/"; done
done
for i in 0 1 2 3; do "$J" trust add -C "$scratch/boards/listed" "$("$J" trust key -C "$scratch/m$i")" >/dev/null; done
"$J" verify -C "$scratch/boards/listed" >/dev/null

declare -A samples
for run in $(seq 1 "$runs"); do
    samples[record_signed]+="$(timed record signed) "
    samples[record_unsigned]+="$(timed record unsigned) "
    samples[replay_listed]+="$(timed replay listed) "
    samples[replay_open]+="$(timed replay open) "
    samples[join_listed]+="$(timed join listed) "
    samples[join_open]+="$(timed join open) "
    [ "$("$J" digest -C "$scratch/boards/listed")" = "$("$J" digest -C "$scratch/boards/open")" ] || { echo "digests differ" >&2; exit 1; }
    cmp -s <(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['digest'])" "$scratch/join-listed.json") \
           <(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['digest'])" "$scratch/join-open.json") \
        || { echo "joiners' digests differ" >&2; exit 1; }
done
signed=$(du -cb "$scratch"/rec-signed/replicas/*/*.sjs | tail -1 | cut -f1)
unsigned=$(du -cb "$scratch"/rec-unsigned/replicas/*/*.sjs | tail -1 | cut -f1)

python3 - "${samples[record_signed]}" "${samples[record_unsigned]}" "${samples[replay_listed]}" \
          "${samples[replay_open]}" "${samples[join_listed]}" "${samples[join_open]}" "$signed" "$unsigned" <<'PY'
import statistics, sys
rows = [[float(x) for x in arg.split()] for arg in sys.argv[1:7]]
med = [statistics.median(r) for r in rows]
names = ["record, signed", "record, unsigned", "replay, trust list", "replay, open", "join, trust list", "join, open"]
print(f"{'row':22} {'median s':>9} {'min s':>8}")
for name, r, m in zip(names, rows, med):
    print(f"{name:22} {m:9.3f} {min(r):8.3f}")
print()
print(f"record signed / unsigned   {med[0] / med[1]:.3f}   (target <= 1.05)")
print(f"replay verified / open     {med[2] / med[3]:.3f}   (target <= 1.10)")
print(f"join verified / open       {med[4] / med[5]:.3f}   (target <= 1.10)")
signed, unsigned = int(sys.argv[7]), int(sys.argv[8])
print(f"replica-0 bytes signed / unsigned {signed / unsigned:.5f} ({signed} vs {unsigned}; 108 B per sealed segment)")
PY
