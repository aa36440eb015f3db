#!/usr/bin/env bash
# Sync through an object store against sync through a shared folder, on the standard workload
# (release build), with a real S3 server: a one-node Ceph RADOS Gateway on 127.0.0.1
# (Tools/ci/s3/ceph-rgw.sh; needs rclone ceph-mon ceph-osd radosgw jq curl).
#
#   Tools/bench/objectstore-sync.sh [WORKDIR]
#
# Four machines record the standard session (4 replicas × 500k points) and publish it to a
# folder and to a bucket. Then, per run, in the same run for both: a new laptop's first sync
# from the folder and from the bucket (the ratio is the figure), its no-op second sync, and its
# sync after one machine added 1% more events (bytes moved against the new segment's bytes).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$here/.build-bench}
source "$here/Tools/bench/standard-workload.sh"
generate_extra

s3="$work/s3-server"
[ -e "$s3" ] && "$here/Tools/ci/s3/ceph-rgw.sh" stop "$s3" >/dev/null 2>&1 || true
"$here/Tools/ci/s3/ceph-rgw.sh" start "$s3" >/dev/null
trap '"$here/Tools/ci/s3/ceph-rgw.sh" stop "$s3" >/dev/null 2>&1 || true' EXIT
# shellcheck disable=SC1091
source "$s3/env"
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY AWS_ENDPOINT_URL=$S3_ENDPOINT

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.3f}')"; }
median() { python3 -c "import sys,statistics; print(f'{statistics.median(map(float, sys.argv[1:])):.3f}')" "$@"; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

rm -rf "$work/os"; mkdir -p "$work/os"
for i in 0 1 2 3; do
    "$J" init "$work/os/m$i" >/dev/null
    "$J" record -C "$work/os/m$i" "$session/replica-$i.ndjson" >/dev/null
    "$J" sync -C "$work/os/m$i" "$work/os/shared" --create >/dev/null
    "$J" sync -C "$work/os/m$i" s3://bench/base --create >/dev/null
done

runs=5
folder_first=(); store_first=(); ratios=(); store_noop=(); folder_noop=()
for run in $(seq 1 $runs); do
    rm -rf "$work/os/laptop-f" "$work/os/laptop-s"
    "$J" init "$work/os/laptop-f" >/dev/null
    "$J" init "$work/os/laptop-s" >/dev/null
    t0=$(now); "$J" sync -C "$work/os/laptop-f" "$work/os/shared" >/dev/null; t1=$(now)
    "$J" sync -C "$work/os/laptop-s" s3://bench/base >/dev/null; t2=$(now)
    folder_first+=("$(elapsed "$t0" "$t1")"); store_first+=("$(elapsed "$t1" "$t2")")
    ratios+=("$(python3 -c "print(($t2 - $t1) / ($t1 - $t0))")")
    t0=$(now); "$J" sync -C "$work/os/laptop-f" "$work/os/shared" >/dev/null; t1=$(now)
    "$J" sync -C "$work/os/laptop-s" s3://bench/base >/dev/null; t2=$(now)
    folder_noop+=("$(elapsed "$t0" "$t1")"); store_noop+=("$(elapsed "$t1" "$t2")")
done

# +1%: machine 0 records more and publishes; the laptop fetches it.
own=$(cat "$work/os/m0/local/replica")
files() { find "$work/os/m0/replicas/$own" -type f -printf '%P %s\n' | sort; }
before=$(files)
"$J" record -C "$work/os/m0" "$extra/replica-0.ndjson" >/dev/null
published=$("$J" sync -C "$work/os/m0" s3://bench/base --json)
# The bytes of the files this sync added to machine 0's own replica (the sealed +1%).
new_bytes=$(comm -13 <(echo "$before") <(files) | awk '{ sum += $2 } END { print sum + 0 }')
fetched=$("$J" sync -C "$work/os/laptop-s" s3://bench/base --json)
digest_f=$("$J" sync -C "$work/os/m0" "$work/os/shared" >/dev/null && "$J" sync -C "$work/os/laptop-f" "$work/os/shared" >/dev/null && "$J" digest -C "$work/os/laptop-f")
digest_s=$("$J" digest -C "$work/os/laptop-s")

cat <<REPORT
StrokeJournal sync through an object store ($(date -u +%Y-%m-%d), $(nproc) cores, median of $runs)
store: Ceph RADOS Gateway $(radosgw --version | awk '{print $3}') on 127.0.0.1, through $(rclone version | head -1)
workload: 4 replicas x 500,000 points ($session), published by 4 machines
first sync of a new laptop, folder:  $(median "${folder_first[@]}") s
first sync of a new laptop, store:   $(median "${store_first[@]}") s  (store ÷ folder, pair by pair: $(median "${ratios[@]}")×)
no-op sync, folder:                  $(median "${folder_noop[@]}") s
no-op sync, store:                   $(median "${store_noop[@]}") s
+1% events (20,100): new segment bytes $new_bytes; published $(echo "$published" | field publishedBytes) B; fetched by the laptop $(echo "$fetched" | field bytesRead) B
digests equal (folder laptop, store laptop): $([ "$digest_f" = "$digest_s" ] && echo yes || echo "NO: $digest_f $digest_s")
REPORT
