# Sourced by the scripts beside it, with `work` set to their working folder: builds the
# release `journal` ($J) and generates the standard session ($session: 4 replicas × 500k
# points) unless it is there already.
#
# `generate ARGS…` runs the session generator: the team's standard one ($SHARED_BENCH/
# gen_session.py, else ../shared/bench/gen_session.py beside the repository; the figures in
# docs/PERFORMANCE.md were measured with it) or, when it is missing, the repository's own
# Tools/bench/workload/session.py, with one line saying that the figures are then not
# comparable with docs/PERFORMANCE.md (Tools/bench/workload/which_generator.py picks).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)

# Its progress on stderr: the first release build takes minutes, and silence looks like a hang.
echo "$(basename "$0"): building the release journal (swift build -c release --product journal)" >&2
(cd "$here" && swift build -c release --product journal >&2)
J="$here/.build/release/journal"

generate() {
    [ -n "${generator:-}" ] || generator=$(python3 "$here/Tools/bench/workload/which_generator.py" "$(basename "$0" .sh)")
    python3 "$generator" "$@"
}

session="$work/std-session"
if [ ! -f "$session/replica-3.ndjson" ]; then
    generate --replicas 4 --strokes 2500 --points 200 --seed 1 --out "$session"
fi

# `generate_extra`: the +1% session in $extra (100 strokes of 200 points on top of the
# 2,000,000), for the syncs after new events.
extra="$work/extra-session"
generate_extra() {
    [ -f "$extra/replica-0.ndjson" ] || generate --replicas 1 --strokes 100 --points 200 --seed 7 --out "$extra"
}
