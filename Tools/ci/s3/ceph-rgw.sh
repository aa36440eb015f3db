#!/usr/bin/env bash
# A real S3 server on 127.0.0.1 for tests: a throwaway single-node Ceph cluster (one monitor,
# one memstore OSD, pool size 1, cephx on, no manager) and its RADOS Gateway, from Debian's
# packages, without systemd. ObjectStoreSyncTests and Tools/bench/objectstore-sync.sh start
# one to sync against.
#
#   Tools/ci/s3/ceph-rgw.sh start DIR   # DIR must not exist; prints the endpoint when ready
#   . DIR/env                          # S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, and an
#                                      # rclone remote "rgw:" configured from the environment
#   Tools/ci/s3/ceph-rgw.sh stop DIR    # stops the daemons (TERM, then KILL) and removes DIR
#
# Needs: apt-get install --no-install-recommends ceph-mon ceph-osd radosgw jq curl (about 65 MB).
# Measured 2026-11-27 on the 2-core CI machine: ready about 15 s after start, stopped in 7 s,
# about 160 MB of memory for the three daemons.
#
# Traps found by trying:
# - rclone's S3 backend refuses to start when AWS_CA_BUNDLE is set and the endpoint is plain
#   http ("LoadCustomCABundleError: unable to load custom CA bundle"): DIR/env unsets it.
# - radosgw makes up to seven pools itself; with the default 32 placement groups each, one OSD
#   is over its limit (250) and radosgw fails with ERANGE: 8 per pool, limit 1000 below.
# - The monitor stops itself when its disk is nearly full (mon_data_avail_crit, 5%).
# - `ceph` waits for ever for a monitor that is not there: every call has --connect-timeout.
set -Eeuo pipefail

die() { echo "ceph-rgw: $*" >&2; exit 1; }

# Runs a daemon with no signal blocked, TERM, INT and HUP at their defaults, and no descriptor
# but 0-2. A caller may have blocked or ignored some signals (a test runner spawns from a thread
# that blocks nearly all), a child inherits both, and bash cannot undo either: a daemon that
# ignored TERM would never stop. The daemons outlive this script, so they must not hold what its
# caller gave it: a pipe the caller reads to the end, or the socket Foundation's Process watches
# for this script's exit, would keep the caller waiting for as long as the cluster runs. Only
# the daemons close them; the script keeps its own until it exits. (It once closed them itself,
# first thing: Foundation took that for its exit and its one watching thread then waited in
# waitpid for the whole start, so no other child of the test process was seen to end meanwhile.)
# A command prefix, not a function: `"${with_plain_signals[@]}" daemon &` leaves the daemon's
# own pid in $!, python exec-ing it in place.
with_plain_signals=(python3 -c 'import os, signal, sys
signal.pthread_sigmask(signal.SIG_SETMASK, [])
for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(number, signal.SIG_DFL)
for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
    if fd > 2:
        try: os.close(fd)
        except OSError: pass
os.execvp(sys.argv[1], sys.argv[1:])')

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Runs `check` until it succeeds, for at most `seconds`; on timeout prints the log and fails.
wait_for() {
    local what=$1 seconds=$2 log=$3; shift 3
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "ceph-rgw: $what not ready after $seconds s; the end of $log:" >&2
            tail -20 "$log" >&2 || true
            return 1
        fi
        sleep 0.5
    done
}

start() {
    local dir=$1
    [ -e "$dir" ] && die "$dir exists: give a folder to create"
    for tool in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool monmaptool jq curl python3; do
        command -v "$tool" >/dev/null || die "$tool is missing (apt-get install --no-install-recommends ceph-mon ceph-osd radosgw jq curl)"
    done
    mkdir -p "$dir"/{run,log,crash,mon,osd,rgw}
    dir=$(cd "$dir" && pwd)
    # A failed start leaves no daemon behind; its logs stay in DIR/log.
    trap 'echo "ceph-rgw: start failed; daemons stopped, logs in '"$dir"'/log" >&2; stop_daemons "'"$dir"'"' ERR
    local conf=$dir/ceph.conf fsid mon_v2 mon_v1 rgw_port
    fsid=$(cat /proc/sys/kernel/random/uuid)
    mon_v2=$(free_port); mon_v1=$(free_port); rgw_port=$(free_port)
    cat >"$conf" <<EOF
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$mon_v2,v1:127.0.0.1:$mon_v1]
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
run_dir = $dir/run
crash_dir = $dir/crash
log_file = $dir/log/\$name.log
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_max_pg_per_osd = 1000
mon_warn_on_pool_no_redundancy = false

[mon]
mon_data = $dir/mon/\$cluster-\$id
mon_data_avail_warn = 2
mon_data_avail_crit = 1
mon_cluster_log_file = $dir/log/cluster.log
admin_socket = $dir/run/\$name.asok

[osd]
osd_data = $dir/osd/\$cluster-\$id
osd_objectstore = memstore
memstore_device_bytes = 4294967296
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
admin_socket = $dir/run/\$name.asok

[client]
keyring = $dir/keyring
log_file = $dir/log/\$name.\$pid.log
admin_socket = $dir/run/\$name.\$pid.asok
rados_mon_op_timeout = 30
rados_osd_op_timeout = 30

[client.rgw.test]
rgw_frontends = beast endpoint=127.0.0.1:$rgw_port
rgw_data = $dir/rgw
rgw_init_timeout = 120
rgw_thread_pool_size = 32
admin_socket = $dir/run/rgw.test.asok
log_file = $dir/log/rgw.test.log
EOF
    local ceph=(ceph -c "$conf" --connect-timeout 5)

    # The monitor: keys, map, store, then the daemon in the foreground (-f), in the background.
    ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
    ceph-authtool "$dir/keyring" --gen-key -n client.admin \
        --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
    monmaptool --create --clobber --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_v2,v1:127.0.0.1:$mon_v1]" "$dir/monmap" >/dev/null
    ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring"
    "${with_plain_signals[@]}" ceph-mon -c "$conf" -i a -f >"$dir/log/mon.out" 2>&1 &
    echo $! >"$dir/mon.pid"
    wait_for "the monitor" 60 "$dir/log/mon.a.log" "${ceph[@]}" mon stat

    # One OSD in memory.
    local osd_uuid osd_secret osd_id
    osd_uuid=$(cat /proc/sys/kernel/random/uuid)
    osd_secret=$(ceph-authtool --gen-print-key)
    printf '{"cephx_secret": "%s"}\n' "$osd_secret" >"$dir/osd/new.json"
    osd_id=$("${ceph[@]}" osd new "$osd_uuid" -i "$dir/osd/new.json")
    mkdir -p "$dir/osd/ceph-$osd_id"
    ceph-osd -c "$conf" -i "$osd_id" --mkfs --key "$osd_secret" --osd-uuid "$osd_uuid" >/dev/null 2>&1
    printf '[osd.%s]\n\tkey = %s\n' "$osd_id" "$osd_secret" >"$dir/osd/ceph-$osd_id/keyring"
    "${with_plain_signals[@]}" ceph-osd -c "$conf" -i "$osd_id" -f >"$dir/log/osd.out" 2>&1 &
    echo $! >"$dir/osd.pid"
    wait_for "the OSD" 60 "$dir/log/osd.$osd_id.log" \
        sh -c "$(printf '%q ' "${ceph[@]}") osd stat -f json | jq -e '.num_up_osds >= 1'"

    # The gateway and its one S3 user (radosgw-admin makes the zone's pools on the way).
    "${ceph[@]}" auth get-or-create client.rgw.test mon 'allow rw' osd 'allow rwx' mgr 'allow rw' >>"$dir/keyring"
    local access secret
    access=$(python3 -c 'import secrets; print(secrets.token_hex(10).upper())')
    secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(30))')
    timeout 120 radosgw-admin -c "$conf" user create --uid=test --display-name=test \
        --access-key="$access" --secret-key="$secret" >/dev/null
    "${with_plain_signals[@]}" radosgw -c "$conf" -n client.rgw.test -f >"$dir/log/rgw.out" 2>&1 &
    echo $! >"$dir/rgw.pid"
    wait_for "the gateway" 120 "$dir/log/rgw.test.log" curl -sf -o /dev/null "http://127.0.0.1:$rgw_port/"

    cat >"$dir/env" <<EOF
export S3_ENDPOINT=http://127.0.0.1:$rgw_port
export S3_ACCESS_KEY=$access
export S3_SECRET_KEY=$secret
export RCLONE_CONFIG=/dev/null
export RCLONE_CONFIG_RGW_TYPE=s3
export RCLONE_CONFIG_RGW_PROVIDER=Ceph
export RCLONE_CONFIG_RGW_ENDPOINT=http://127.0.0.1:$rgw_port
export RCLONE_CONFIG_RGW_ACCESS_KEY_ID=$access
export RCLONE_CONFIG_RGW_SECRET_ACCESS_KEY=$secret
unset AWS_CA_BUNDLE
EOF
    echo "ceph-rgw: S3 on http://127.0.0.1:$rgw_port (. $dir/env for keys and the rclone remote rgw:)"
}

# Gateway first, monitor last, as the cluster was built; KILL after 15 s.
stop_daemons() {
    local dir=$1 pid
    for name in rgw osd mon; do
        [ -f "$dir/$name.pid" ] || continue
        pid=$(cat "$dir/$name.pid")
        kill -TERM "$pid" 2>/dev/null || continue
        # KILL, not TERM, ends the wait: this script's own children may have TERM blocked.
        timeout -s KILL 15 tail --pid="$pid" -f /dev/null || kill -KILL "$pid" 2>/dev/null || true
    done
}

stop() {
    local dir=$1
    [ -f "$dir/ceph.conf" ] || die "$dir is not a folder this script started"
    stop_daemons "$dir"
    rm -rf "$dir"
}

case "${1:-}" in
    start) [ $# -eq 2 ] || die "usage: $0 start DIR"; start "$2" ;;
    stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
    *) die "usage: $0 start DIR | stop DIR" ;;
esac
