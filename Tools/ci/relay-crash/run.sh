#!/bin/sh
# A longer crash campaign than CI's: RelayCrashTests (Tests/JournalServeTests) with more kills,
# clients and strokes, one seed after another. Each run kills a real `journal serve` with
# SIGKILL at seeded random moments while clients draw, then checks the board with the CLI
# (every acknowledged point there, verify clean, clients equal to the journal, every
# duplicate point explained by a frame unacknowledged at a kill) and prints one summary line.
#
#   Tools/ci/relay-crash/run.sh [runs] [kills] [clients] [strokes]     (defaults: 5 40 4 200)
#
# Builds first (swift build --build-tests, with the README test command's trait, so that the
# build folder is not rebuilt for it), then runs `swift test --skip-build` per seed.
set -eu
runs=${1:-5} kills=${2:-40} clients=${3:-4} strokes=${4:-200}
cd "$(dirname "$0")/../../.."
swift build --build-tests --traits FaultInjection >/dev/null
failed=0
seed=1
while [ "$seed" -le "$runs" ]; do
    if ! out=$(RELAY_CRASH_SEED=$seed RELAY_CRASH_KILLS=$kills RELAY_CRASH_CLIENTS=$clients RELAY_CRASH_STROKES=$strokes \
        swift test --skip-build --traits FaultInjection --filter RelayCrashTests 2>&1); then
        failed=$((failed + 1))
        echo "seed $seed FAILED:"
        echo "$out" | grep -E '✘|↳' | head -20
    fi
    echo "$out" | grep '^relay crash' || true
    seed=$((seed + 1))
done
echo "$runs runs, $failed failed"
[ "$failed" -eq 0 ]
