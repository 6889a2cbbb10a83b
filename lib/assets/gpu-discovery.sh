#!/bin/sh
# trainsonnet: Spark's GPU discovery script (spark.worker.resource.gpu.discoveryScript).
#
# Prints the GPUs this container may use, as Spark wants them:
#   {"name": "gpu", "addresses": ["0", "1"]}
# Addresses are the container's own GPU indices: those nvidia-smi lists, or
# without nvidia-smi 0..n-1 for the n devices of NVIDIA_VISIBLE_DEVICES
# (the device plugin's; the container runtime numbers them from 0), or for
# TS_GPUS (the worker's gpu parameter) when neither says. Exit 1 when no
# source names a GPU: Spark then refuses to start the worker, which is
# better than a worker that offers GPUs it does not have.
#
# POSIX sh (dash, busybox sh, bash --posix).

set -f

indices=''
if command -v nvidia-smi >/dev/null 2>&1; then
    indices=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' \r')
fi
if [ -z "$indices" ]; then
    n=0
    case ${NVIDIA_VISIBLE_DEVICES:-} in
    '' | all | none | void) n=${TS_GPUS:-0} ;;
    *)
        IFS=,
        for _dev in $NVIDIA_VISIBLE_DEVICES; do
            [ -n "$_dev" ] && n=$((n + 1))
        done
        unset IFS
        ;;
    esac
    case $n in '' | *[!0-9]*) n=0 ;; esac
    i=0
    while [ "$i" -lt "$n" ]; do
        indices="$indices $i"
        i=$((i + 1))
    done
fi
if [ -z "$indices" ]; then
    echo "trainsonnet: no GPU found (no nvidia-smi, NVIDIA_VISIBLE_DEVICES or TS_GPUS)" >&2
    exit 1
fi
out='' sep=''
for i in $indices; do
    out="$out$sep\"$i\"" sep=', '
done
printf '{"name": "gpu", "addresses": [%s]}\n' "$out"
