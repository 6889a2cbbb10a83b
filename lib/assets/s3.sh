#!/bin/sh
# trainsonnet: S3 staging of a job's workers, with the aws CLI.
#
#   sh /etc/trainsonnet/s3.sh s3-download|s3-upload
#
# POSIX sh, in the job's ConfigMap with runtime.sh, which it builds on.
#
# Environment (defaults in brackets):
#   TS_CONFIG_DIR [/etc/trainsonnet]   where runtime.sh is
#   TS_S3_ENDPOINT                     optional: an S3-compatible store
# s3-download: an init container of a worker. TS_S3_FROM (s3://...), TS_S3_TO
#              (a local path).
# s3-upload:   a sidecar of a worker: once the worker has left
#              $TS_RUN_DIR/finished (or the launcher has gone), copies
#              TS_S3_FROM (a local path) to
#              TS_S3_TO/TS_NAMESPACE/TS_JOB_NAME/TS_POD_NAME. TS_RUN_DIR
#              [/var/run/trainsonnet], TS_LAUNCHER (optional here),
#              TS_LAUNCHER_GRACE [60], TS_INIT_TIMEOUT, TS_POLL_INTERVAL.
#
# Exit codes: runtime.sh's (1 also: nothing to upload); aws's when it fails.

# shellcheck source-path=SCRIPTDIR source=runtime.sh
. "${TS_CONFIG_DIR:-/etc/trainsonnet}/runtime.sh"

usage() {
    cat <<'EOF'
usage: sh s3.sh <subcommand>
  s3-download  copy TS_S3_FROM (s3://) to TS_S3_TO (local) with the aws CLI
  s3-upload    after the worker finished, copy TS_S3_FROM to
               TS_S3_TO/TS_NAMESPACE/TS_JOB_NAME/TS_POD_NAME
Configuration is read from TS_* environment variables (see the script header).
EOF
}

# aws_cp WHAT FROM TO: aws s3 cp --recursive, with TS_S3_ENDPOINT if set;
# exits with aws's code when it fails.
aws_cp() {
    _ac_what=$1 _ac_from=$2 _ac_to=$3
    set -- s3 cp --recursive "$2" "$3"
    [ -n "${TS_S3_ENDPOINT:-}" ] && set -- --endpoint-url "$TS_S3_ENDPOINT" "$@"
    aws "$@"
    _ac_rc=$?
    [ "$_ac_rc" -eq 0 ] || die "$_ac_rc" "$_ac_what of $_ac_from to $_ac_to failed (aws exit code $_ac_rc)"
}

cmd_s3_download() {
    require TS_S3_FROM TS_S3_TO
    need aws "use an aws-cli image"
    log "downloading $TS_S3_FROM to $TS_S3_TO"
    aws_cp download "$TS_S3_FROM" "$TS_S3_TO"
    log "downloaded $TS_S3_FROM to $TS_S3_TO"
}

cmd_s3_upload() {
    TS_RUN_DIR=${TS_RUN_DIR:-/var/run/trainsonnet}
    TS_LAUNCHER_GRACE=${TS_LAUNCHER_GRACE:-60}
    runtime_config
    seconds TS_LAUNCHER_GRACE
    require TS_S3_FROM TS_S3_TO TS_NAMESPACE TS_JOB_NAME TS_POD_NAME
    need aws "use an aws-cli image"
    trap stop_helpers EXIT
    trap_signals
    _su_dest=${TS_S3_TO%/}/$TS_NAMESPACE/$TS_JOB_NAME/$TS_POD_NAME
    if [ -z "${TS_LAUNCHER:-}" ]; then
        log "note: TS_LAUNCHER not set; waiting for $TS_RUN_DIR/finished only"
    elif ! watch_init "$TS_LAUNCHER" "$TS_LAUNCHER_GRACE"; then
        log "warning: getent not found; waiting for $TS_RUN_DIR/finished only"
    fi
    log "waiting for the worker to finish ($TS_RUN_DIR/finished) before uploading"
    while [ ! -e "$TS_RUN_DIR/finished" ]; do
        watch_check
        case $WATCH in
        never)
            log "launcher $TS_LAUNCHER never resolved within ${TS_INIT_TIMEOUT}s; uploading what there is"
            break
            ;;
        gone | lost)
            log "launcher $TS_LAUNCHER has not resolved for ${TS_LAUNCHER_GRACE}s; uploading what there is"
            break
            ;;
        esac
        nap "$TS_POLL_INTERVAL"
    done
    # The upload is not cut short by the pod's end (the kubelet's SIGKILL
    # still ends it after the grace period).
    trap - TERM INT
    [ -e "$TS_S3_FROM" ] || die 1 "nothing to upload: $TS_S3_FROM does not exist"
    log "uploading $TS_S3_FROM to $_su_dest"
    aws_cp upload "$TS_S3_FROM" "$_su_dest"
    log "uploaded $TS_S3_FROM to $_su_dest"
}

set -f
case ${1:-} in
s3-download) cmd_s3_download ;;
s3-upload) cmd_s3_upload ;;
-h | --help | help) usage ;;
'') usage_error "missing subcommand" ;;
*) usage_error "unknown subcommand '$1'" ;;
esac
