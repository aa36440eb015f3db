#!/usr/bin/env bash
# Runs the whole test suite N times in a row (issue 41: "the suite never crashes the test
# process") and says how many runs passed; the log of every run that did not is kept.
#
#   Tools/ci/suite/repeat.sh [N] [--skip-build] [--scratch-path DIR]
#
# N defaults to 10; each run is the README's test command. --skip-build runs what is built
# (`swift test --traits FaultInjection --skip-build`), so that a copy
# of a build folder (--scratch-path) can be tested while the working copy is rebuilt.
set -uo pipefail
runs=10
extra=(--traits FaultInjection)
while [ $# -gt 0 ]; do
    case "$1" in
        --skip-build) extra+=(--skip-build); shift ;;
        --scratch-path) extra+=(--scratch-path "$2"); shift 2 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) runs="$1"; shift ;;
    esac
done
logs=$(mktemp -d /tmp/suite-repeat.XXXXXX)
passed=0
for run in $(seq 1 "$runs"); do
    started=$(date +%s)
    # Under the watchdog (as in .ci/run): a run silent for 15 minutes ends with its stacks.
    python3 "$(dirname "$0")/watchdog.py" --silence 900 -- swift test "${extra[@]}" > "$logs/run-$run.log" 2>&1
    status=$?
    summary=$(grep -E "Test run with [0-9]+ tests? .* (passed|failed)" "$logs/run-$run.log" | tail -1)
    if [ "$status" -eq 0 ]; then
        passed=$((passed + 1))
        rm -f "$logs/run-$run.log"
        echo "run $run: passed in $(( $(date +%s) - started )) s: ${summary:-?}"
    else
        echo "run $run: FAILED (status $status) in $(( $(date +%s) - started )) s: ${summary:-no summary: the process died}; log: $logs/run-$run.log"
    fi
done
echo "suite: $passed of $runs runs passed"
[ "$passed" -eq "$runs" ]
