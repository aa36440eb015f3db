#!/usr/bin/env bash
# What a seal costs in a journal of many replicas (issue 38: "a hosted seal costs the same
# whatever the number of replicas"). Builds a journal holding N replicas (default 2000, one
# small sealed segment each, merged from N one-event journals), then times
# `journal record` of one event into it (open a writer, append, seal) with two binaries,
# BASE and NEW, through farm-bench: the seal no longer lists every replica folder (it adds
# its file to the local index as saved), the writer's open still does.
#
# Usage: Tools/bench/seal-many-replicas.sh BASE_JOURNAL NEW_JOURNAL [N]
set -euo pipefail
base=${1:?usage: seal-many-replicas.sh BASE_JOURNAL NEW_JOURNAL [N]}
new=${2:?usage: seal-many-replicas.sh BASE_JOURNAL NEW_JOURNAL [N]}
n=${3:-2000}
work=$(mktemp -d /tmp/seal-many-XXXXXX)
mkdir -p "$work/shared/replicas"
for i in $(seq 1 "$n"); do
    "$new" init "$work/src" >/dev/null
    printf '{"type":"point","stroke":"%032x","x":%d,"y":1,"color":"#000000FF","width":1}\n' "$i" "$i" \
        | "$new" record -C "$work/src" >/dev/null
    cp -r "$work/src/replicas/." "$work/shared/replicas/"
    rm -rf "$work/src"
    if [ -t 2 ] && [ $((i % 200)) -eq 0 ]; then echo "  $i of $n replicas" >&2; fi
done
"$new" init "$work/target" >/dev/null
printf '{"type":"clear"}\n' | "$new" record -C "$work/target" >/dev/null
"$new" merge -C "$work/target" "$work/shared" >/dev/null
echo "journal of $(ls "$work/target/replicas" | wc -l) replica folders in $work/target"
printf '{"type":"point","stroke":"%032x","x":0,"y":0,"color":"#000000FF","width":1}\n' 1 > "$work/one.ndjson"
farm-bench -n 15 --vs "$base record -C $work/target $work/one.ndjson" -- "$new" record -C "$work/target" "$work/one.ndjson"
