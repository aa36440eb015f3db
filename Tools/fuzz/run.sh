#!/usr/bin/env bash
# Builds StrokeJournal's libFuzzer harnesses with the fuzzer and address sanitizers, then runs
# each one for a fixed number of executions, one after the other.
#
#   Tools/fuzz/run.sh [SEGMENT_RUNS [NDJSON_RUNS]]     # defaults: 200000 and 200000
#
# Environment:
#   FUZZ_TARGETS   which harnesses to run, in order (default "fuzz-segment fuzz-ndjson")
#   FUZZ_ARGS      extra libFuzzer flags for every harness (e.g. "-seed=1 -use_value_profile=1")
#   FUZZ_RESET=1   start from the committed seeds only (drop the working corpora)
#   FUZZ_NO_BUILD=1  reuse the last build
#
# Everything it writes stays under Tools/fuzz/.build (ignored by the root's `.build*/` rule):
#   .build/sanitized/         the SwiftPM scratch path of the sanitized build
#   .build/corpus/<target>/   the working corpus: the seeds of corpus/<kind>/ plus what
#                             libFuzzer adds (the committed corpus is never written to)
#   .build/artifacts/<target>/  crash-*, timeout-*, oom-*, leak-* inputs
#   .build/logs/<target>.log  libFuzzer's output
# Exit status: 0 when every harness ran its executions without finding anything.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

segment_runs="${1:-200000}"
ndjson_runs="${2:-200000}"
targets="${FUZZ_TARGETS:-fuzz-segment fuzz-ndjson}"
scratch="$here/.build/sanitized"

# Swift's backtracer under ASan reports a false error and hangs: keep it off.
export SWIFT_BACKTRACE=enable=no
# ASAN_OPTIONS is left to the caller: LeakSanitizer stays on (libFuzzer's -detect_leaks=1),
# and Swift's runtime caches have not given a false leak report so far.

if [[ "${FUZZ_NO_BUILD:-0}" != 1 ]]; then
    echo "== building (release, -sanitize=fuzzer,address) into $scratch"
    mkdir -p "$here/.build/logs"
    build_log="$here/.build/logs/build.log"
    # Why both spellings: SwiftPM hands swiftc "-sanitize=fuzzer" "-sanitize=address" as two
    # flags, and swift-frontend keeps only the LAST -sanitize= it sees. The objects then get
    # ASan but no SanitizerCoverage, while the link still pulls in libFuzzer's main: a binary
    # that runs, finds nothing and prints "no interesting inputs were found ... Is the code
    # instrumented for coverage?". The comma form, passed after SwiftPM's own flags, asks for
    # both (checked below on the built objects).
    if ! swift build -c release --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address \
        --scratch-path "$scratch" >"$build_log" 2>&1; then
        cat "$build_log" >&2
        echo "build failed" >&2
        exit 2
    fi
    # ld.gold's "Cannot export local symbol '__asan_extra_spill_area'" warnings are harmless.
    grep -v -e '^\[' -e "__asan_extra_spill_area" "$build_log" || true
fi
bin="$scratch/release"
# Refuse to "fuzz" blind: the library's objects must carry coverage counters and ASan checks.
probe="$bin/JournalFormat.build/BlockCodec.swift.o"
sections="$(objdump -h "$probe")"; symbols="$(nm "$probe")"
if [[ "$sections" != *__sancov_cntrs* || "$symbols" != *__asan_* ]]; then
    echo "$probe lacks SanitizerCoverage or ASan instrumentation: the harnesses would not fuzz" >&2
    exit 2
fi

total=0
status=0
summary=""
for target in $targets; do
    case "$target" in
        fuzz-segment) kind=segment; runs="$segment_runs"; max_len=65536 ;;
        fuzz-ndjson)  kind=ndjson;  runs="$ndjson_runs";  max_len=4096 ;;
        *) echo "unknown target $target" >&2; exit 2 ;;
    esac
    corpus="$here/.build/corpus/$target"
    artifacts="$here/.build/artifacts/$target"
    log="$here/.build/logs/$target.log"
    [[ "${FUZZ_RESET:-0}" == 1 ]] && rm -rf "$corpus"
    mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
    cp -n "$here/corpus/$kind/"* "$corpus/" 2>/dev/null || true

    echo "== $target: $runs runs, -max_len=$max_len, corpus $corpus ($(ls "$corpus" | wc -l) files)"
    started=$(date +%s.%N)
    set +e
    # shellcheck disable=SC2086
    "$bin/$target" "$corpus" \
        -runs="$runs" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" ${FUZZ_ARGS:-} >"$log" 2>&1
    code=$?
    set -e
    finished=$(date +%s.%N)
    wall=$(awk -v a="$started" -v b="$finished" 'BEGIN { printf "%.1f", b - a }')

    execs=$(awk '/^stat::number_of_executed_units/ { print $NF }' "$log" | tail -1)
    speed=$(awk '/^stat::average_exec_per_sec/ { print $NF }' "$log" | tail -1)
    rss=$(awk '/^stat::peak_rss_mb/ { print $NF }' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    if [[ -z "$execs" ]]; then
        # Stopped on a finding: no final stats, take the last status line's count.
        execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
    fi
    execs="${execs:-0}"
    total=$((total + execs))
    echo "   exit $code, $execs executions in ${wall}s, ${speed:-?} exec/s, peak RSS ${rss:-?} MB"
    echo "   last status: $last"
    if grep -q 'Is the code instrumented for coverage' "$log"; then
        echo "   !! libFuzzer saw no coverage: this run did not fuzz" >&2
        status=1
    fi
    if [[ $code -ne 0 ]]; then
        status=1
        echo "   !! libFuzzer stopped on a finding; see $log and:"
        ls -la "$artifacts" | sed 's/^/      /'
        grep -E '^(==[0-9]+==ERROR|SUMMARY|Fatal error|.*precondition|.*Crash|.*deadly signal)' "$log" | head -5 | sed 's/^/      /' || true
    fi
    summary+="$target execs=$execs wall=${wall}s exec/s=${speed:-?} peak_rss_mb=${rss:-?} exit=$code"$'\n'
done

echo "== summary"
printf '%s' "$summary"
echo "total executions: $total"
exit $status
