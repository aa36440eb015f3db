# Sourced by the scripts beside it, with `work` set to their working folder: builds the
# release `journal` ($J) and generates the standard session ($session: 4 replicas × 500k
# points, ../shared/bench/gen_session.py) unless it is there already.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
shared_bench=${SHARED_BENCH:-$here/../shared/bench}
mkdir -p "$work"
work=$(cd "$work" && pwd)

(cd "$here" && swift build -c release --product journal >/dev/null)
J="$here/.build/release/journal"

session="$work/std-session"
if [ ! -f "$session/replica-3.ndjson" ]; then
    python3 "$shared_bench/gen_session.py" --replicas 4 --strokes 2500 --points 200 --seed 1 --out "$session"
fi
