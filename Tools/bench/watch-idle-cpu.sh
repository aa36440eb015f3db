#!/usr/bin/env bash
# What an idle `journal sync --watch` costs: CPU time (utime + stime of /proc/PID/stat) over
# SECONDS on a journal and shared folder where nothing happens, and how many rounds it ran
# (each interval round lists both replicas/ trees; nothing wakes it in between).
#
#   Tools/bench/watch-idle-cpu.sh [SECONDS] [JOURNAL_BIN]      (Linux: reads /proc)
#
# The default binary is the debug build; a release build (swift build -c release) costs less.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-20}
bin=${2:-$here/.build/debug/journal}
[ -x "$bin" ] || { echo "no journal binary at $bin (swift build first, or pass its path)" >&2; exit 64; }
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

# A journal with some history, synced once, so that rounds have real listings to compare.
"$bin" demo "$work/demo" >/dev/null
"$bin" sync -C "$work/demo/board" "$work/shared" --create >/dev/null

"$bin" sync -C "$work/demo/board" "$work/shared" --watch --json >"$work/out" 2>"$work/err" &
pid=$!
sleep 1   # past start-up (loading the binary, the first round)

ticks_per_second=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }   # utime + stime, after the ")"-free fields
before=$(cpu_ticks)
start=$(date +%s.%N)
sleep "$seconds"
after=$(cpu_ticks)
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
kill -TERM "$pid"
wait "$pid" && status=0 || status=$?

used=$((after - before))
printf 'idle sync --watch for %.1f s: %d CPU ticks (%d ms; CLK_TCK %d) = %.3f%% of one core; ' \
    "$elapsed" "$used" $((used * 1000 / ticks_per_second)) "$ticks_per_second" \
    "$(echo "$used / $ticks_per_second / $elapsed * 100" | bc -l)"
printf 'rounds that printed: %d; exit after SIGTERM: %d\n' "$(wc -l <"$work/out")" "$status"
