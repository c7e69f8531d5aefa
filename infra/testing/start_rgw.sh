#!/usr/bin/env bash
# A throwaway single-node Ceph (mon + memstore OSD + radosgw) serving real S3 on 127.0.0.1:$RGW_PORT.
# No auth between the daemons; S3 itself checks SigV4 against one user ($RGW_AK / $RGW_SK).
# Ports: MON_PORT (6789), RGW_PORT (7480) and the messenger range MSGR_MIN..MSGR_MAX (6800..6899):
# change them together to run beside another instance. State lives in $DIR (memstore: RAM only).
# BIND (127.0.0.1): the S3 listener's address; 0.0.0.0 lets pods reach it at their bridge's gateway.
# Ready in about 15 s. Needs infra/testing/install.sh (ceph-mon ceph-osd radosgw ceph-common).
# Server-side encryption: RGW's built-in "testing" KMS holds one key, id $RGW_KMS_KEY_ID (SSE-KMS works over
# plain http; SSE-S3 "AES256" is accepted but not applied by this Ceph release, so request aws:kms here).
set -euo pipefail
MON_PORT=${MON_PORT:-6789}; RGW_PORT=${RGW_PORT:-7480}; MSGR_MIN=${MSGR_MIN:-6800}; MSGR_MAX=${MSGR_MAX:-6899}
BIND=${BIND:-127.0.0.1}; RGW_AK=${RGW_AK:-testing}; RGW_SK=${RGW_SK:-testing}; RGW_KMS_KEY_ID=${RGW_KMS_KEY_ID:-testkey-1}
D=${DIR:-${TMPDIR:-/tmp}/mlops-test-rgw}
# Daemons log to files, not to the terminal: on any failure show which step failed and the logs' tails.
trap 'rc=$?; echo "start_rgw.sh: \"$BASH_COMMAND\" failed (exit $rc)" >&2; tail -n 5 "$D"/log/*.log >&2 2>/dev/null; exit $rc' ERR
"$(dirname "$0")/stop_rgw.sh" >/dev/null 2>&1 || true
rm -rf "$D"; mkdir -p "$D/mon/ceph-a" "$D/osd/ceph-0" "$D/run" "$D/log" "$D/rgw"
FSID=$(cat /proc/sys/kernel/random/uuid)
cat > "$D/ceph.conf" <<CONF
[global]
fsid = $FSID
mon_host = v1:127.0.0.1:$MON_PORT
public_network = 127.0.0.0/8
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
auth_allow_insecure_global_id_reclaim = true
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
osd_crush_chooseleaf_type = 0
ms_bind_msgr2 = false
ms_bind_port_min = $MSGR_MIN
ms_bind_port_max = $MSGR_MAX
run_dir = $D/run
admin_socket = $D/run/\$name.asok
log_file = $D/log/\$name.log
pid_file = $D/run/\$name.pid
[mon]
mon_data = $D/mon/ceph-\$id
# The monitor refuses to start when its disk has under 5% free; a throwaway monitor's store is a few MB, and
# on a large shared disk 5% is many GB that the test run itself needs. Disk-full still fails, as ENOSPC.
mon_data_avail_crit = 1
mon_data_avail_warn = 2
[osd]
osd_data = $D/osd/ceph-\$id
osd_objectstore = memstore
memstore_device_bytes = 1073741824
# Under auth=none the OSD cannot update the crush map or class info itself at start.
osd_crush_update_on_start = false
osd_class_update_on_start = false
osd_max_object_name_len = 256
osd_max_object_namespace_len = 64
[client.rgw.a]
rgw_frontends = beast endpoint=$BIND:$RGW_PORT
rgw_data = $D/rgw
rgw_crypt_require_ssl = false
rgw_crypt_s3_kms_backend = testing
rgw_crypt_s3_kms_encryption_keys = $RGW_KMS_KEY_ID=$(head -c 32 /dev/urandom | base64 -w0)
CONF
export CEPH_CONF=$D/ceph.conf
# The monmap must name the mon with --addv v1:… for a non-default port, or start-up hangs.
monmaptool --create --clobber --addv a "v1:127.0.0.1:$MON_PORT" --fsid "$FSID" "$D/monmap" >/dev/null
ceph-mon --mkfs -i a --monmap "$D/monmap"
ceph-mon -i a
U=$(cat /proc/sys/kernel/random/uuid)
ID=$(ceph osd create "$U")
ceph-osd -i "$ID" --mkfs --osd-uuid "$U" 2>/dev/null
ceph osd crush add-bucket localhost host >/dev/null 2>&1
ceph osd crush move localhost root=default >/dev/null 2>&1
ceph osd crush add "osd.$ID" 1.0 host=localhost >/dev/null 2>&1
ceph-osd -i "$ID" 2>/dev/null
deadline=$((SECONDS + 90))
until ceph osd stat 2>/dev/null | grep -q '1 up'; do
  [ $SECONDS -lt $deadline ] || { echo "OSD not up after 90 s; see $D/log" >&2; exit 1; }; sleep 0.2
done
radosgw -n client.rgw.a
until curl -s -o /dev/null "http://127.0.0.1:$RGW_PORT/"; do
  [ $SECONDS -lt $deadline ] || { echo "radosgw not answering on $RGW_PORT; see $D/log" >&2; exit 1; }; sleep 0.2
done
radosgw-admin user create --uid=test --display-name=test --access-key="$RGW_AK" --secret-key="$RGW_SK" >/dev/null
echo "http://127.0.0.1:$RGW_PORT"
