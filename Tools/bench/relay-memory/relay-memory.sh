#!/usr/bin/env bash
# Resident memory of `journal serve` for one board: empty, after a late joiner opened the board
# (catch-up in blocks, `journal join`), and after a second joiner. One JSON line on stdout.
#
#   Tools/bench/relay-memory/relay-memory.sh JOURNAL_BIN DATA BOARD [PORT]
#
# DATA holds the board's journal as DATA/BOARD (journal init + journal record). Run it with two
# builds on the same DATA to compare them (docs/history/PERFORMANCE-RUNS.md, "Relay memory per open board").
set -euo pipefail
if [ $# -lt 3 ]; then sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; fi
bin=$1; data=$2; board=$3; port=${4:-18431}
log=$(mktemp -d)
"$bin" serve --open --data "$data" --port "$port" > "$log/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$log"' EXIT
for _ in $(seq 150); do grep -q "listening" "$log/serve.log" 2>/dev/null && break; sleep 0.2; done
grep -q "listening" "$log/serve.log" || { echo "relay-memory: the relay did not start:" >&2; cat "$log/serve.log" >&2; exit 1; }
sleep 1
rss() { awk '/VmRSS/{print $2 * 1024}' "/proc/$pid/status"; }
empty=$(rss)
join() {
    "$bin" join "ws://127.0.0.1:$port/boards/$board/ws" --timeout 600 --json > "$log/join.json" 2> "$log/join.err" \
        || { echo "relay-memory: join failed:" >&2; cat "$log/join.err" >&2; exit 1; }
    sleep 2
}
join; first=$(rss)
points=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["points"])' "$log/join.json")
join; second=$(rss)
echo "{\"bin\":\"$bin\",\"board\":\"$board\",\"points\":$points,\"emptyBytes\":$empty,\"afterJoinBytes\":$first,\"afterSecondJoinBytes\":$second,\"boardBytes\":$((second - empty))}"
